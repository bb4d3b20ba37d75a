package faults

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sophonz/st/internal/orch"
)

// TestKillDaemonWhileReporting kills the daemon with SIGKILL while many
// workers report at once (`st worker done` from each worker's pane, as
// its agent runs it), starts it again with st up, and checks that every
// report is there: each reporter said "reported", and st worker list
// shows each worker done with this trial's summary. CI: 30 reporters, 2
// trials; scripts/faults: 100 reporters, 20 trials.
func TestKillDaemonWhileReporting(t *testing.T) {
	n, reporters := trials(2, 20), trials(30, 100)
	w := newWorld(t, "")
	w.up()
	task := w.writeFile("task.md", "sleep: 600s\n")
	ws := w.startWorkers(reporters, 6, task, "r")

	losses, notMid := 0, 0
	for trial := 0; trial < n; trial++ {
		// Every worker is in a turn again: working, not done.
		for _, v := range ws {
			if err := w.hook(v.ID, "UserPromptSubmit"); err != nil {
				t.Fatalf("trial %d: %v\n%s", trial, err, w.logTail())
			}
		}
		prefix := fmt.Sprintf("trial %d:", trial)
		killAt := jitter(1, reporters/3)

		type reporter struct {
			cmd *exec.Cmd
			out bytes.Buffer
		}
		rs := make([]*reporter, len(ws))
		for i, v := range ws {
			r := &reporter{cmd: w.st(v.ID, "worker", "done", "--summary", prefix+" "+v.Name)}
			r.cmd.Stdout, r.cmd.Stderr = &r.out, &r.out
			rs[i] = r
		}
		for _, r := range rs {
			if err := r.cmd.Start(); err != nil {
				t.Fatal(err)
			}
		}
		// Kill when some, not all, of the reports are on disk.
		waitFor(t, 60*time.Second, func() (bool, string) {
			c := w.onDisk(prefix)
			return c >= killAt, fmt.Sprintf("trial %d: %d reports on disk, waiting for %d", trial, c, killAt)
		})
		w.kill9()
		atKill := w.onDisk(prefix)
		if atKill >= reporters {
			notMid++
		}
		w.up()

		var wg sync.WaitGroup
		errs := make([]error, len(rs))
		for i, r := range rs {
			wg.Add(1)
			go func(i int, r *reporter) {
				defer wg.Done()
				errs[i] = r.cmd.Wait()
			}(i, r)
		}
		wg.Wait()
		lost := map[string]string{}
		for i, r := range rs {
			if errs[i] != nil || !strings.Contains(r.out.String(), "reported: ") {
				lost[ws[i].Name] = fmt.Sprintf("st worker done: %v: %s", errs[i], r.out.String())
			}
		}
		var vs []orch.WorkerView
		waitFor(t, 30*time.Second, func() (bool, string) {
			var err error
			vs, err = w.list()
			return err == nil, fmt.Sprint("st worker list: ", err)
		})
		got := map[string]orch.WorkerView{}
		for _, v := range vs {
			got[v.Name] = v
		}
		for _, v := range ws {
			g, ok := got[v.Name]
			switch {
			case !ok:
				lost[v.Name] = "not in st worker list"
			case g.State != orch.Done || g.Summary != prefix+" "+v.Name:
				if _, seen := lost[v.Name]; !seen {
					lost[v.Name] = fmt.Sprintf("st worker list: %s %q", g.State, g.Summary)
				}
			}
		}
		t.Logf("trial %d: killed with %d/%d reports on disk; after st up %d/%d done, %d lost",
			trial, atKill, reporters, reporters-len(lost), reporters, len(lost))
		if len(lost) > 0 {
			losses += len(lost)
			for name, why := range lost {
				t.Errorf("trial %d: report of %s lost: %s", trial, name, why)
			}
			t.Logf("trial %d: %s", trial, w.logFor(lost))
		}
	}
	if notMid > 0 {
		t.Logf("%d of %d trials had every report on disk before the kill landed", notMid, n)
	}
	report(t, fmt.Sprintf("kill9-daemon-%d-reporting", reporters), n, losses, "reports lost over all trials")
}
