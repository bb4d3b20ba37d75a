package faults

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/orch"
)

// TestTmuxKilledMidRun kills the tmux server in the middle of a run whose
// workers are working, some of them about to report, and checks what st
// brings back: the session and every worker's window, each agent running
// again (its input box on screen), each pane carrying its relations
// (@st_run, @st_name, @st_parent = the run's coordinator as it is now,
// @st_agent_session), no worker gone, every report made before the kill
// still there, and a line sent to a worker arriving. CI: 2 trials;
// scripts/faults: 10. Each trial is a fresh world.
func TestTmuxKilledMidRun(t *testing.T) {
	n := trials(2, 10)
	const long, short = 3, 3
	losses := 0
	for trial := 0; trial < n; trial++ {
		losses += tmuxTrial(t, trial, long, short, false)
	}
	report(t, fmt.Sprintf("tmux-killed-mid-run-%d-workers", long+short), n, losses, "workers, relations or reports not back over all trials")
}

// TestTmuxKilledListDuringRestore is TestTmuxKilledMidRun with a person
// (or a coordinator) running `st worker list` while st brings the server
// back, as anyone who notices the windows gone would. It found a bug,
// fixed since: List reconciled against the half-restored server, whose
// new panes carried no @st_run yet, so every worker was marked gone and
// a worker that had reported was no longer done. CI: 2 trials;
// scripts/faults: 10.
func TestTmuxKilledListDuringRestore(t *testing.T) {
	n := trials(2, 10)
	const long, short = 3, 3
	losses := 0
	for trial := 0; trial < n; trial++ {
		losses += tmuxTrial(t, trial, long, short, true)
	}
	report(t, fmt.Sprintf("tmux-killed-list-during-restore-%d-workers", long+short), n, losses, "workers, relations or reports not back over all trials")
}

// tmuxTrial runs one trial and returns how many workers did not come
// back whole (each is also reported as an error).
// With listDuring, st worker list runs in a loop from the kill until
// st says the restore is over.
func tmuxTrial(t *testing.T, trial, long, short int, listDuring bool) int {
	w := newWorld(t, "")
	defer w.close()
	w.up()
	longTask := w.writeFile("long.md", "sleep: 600s\nsummary: never\n")
	var ws []orch.WorkerView
	ws = append(ws, w.startWorkers(long, 3, longTask, "long")...)
	for i := 0; i < short; i++ {
		// Reports land around the kill: some before, some cut off.
		task := w.writeFile(fmt.Sprintf("short%d.md", i), fmt.Sprintf("sleep: %dms\nsummary: short%d reported\n", jitter(200, 2500), i))
		ws = append(ws, w.startWorkers(1, 1, task, fmt.Sprintf("short%d-", i))...)
	}
	// st keeps its picture of the server once a second; the kill comes
	// once every worker and its conversation id is in it.
	waitFor(t, 30*time.Second, func() (bool, string) {
		out, _ := w.tmux("list-panes", "-a", "-F", "#{@st_agent_session}")
		k := 0
		for _, l := range strings.Split(out, "\n") {
			if strings.TrimSpace(l) != "" {
				k++
			}
		}
		return k >= len(ws), fmt.Sprintf("%d of %d panes have a conversation id", k, len(ws))
	})
	waitFor(t, 30*time.Second, func() (bool, string) {
		out, err := w.st(w.coord, "status", "--json").Output()
		// The layout file is written after the panes' options change.
		data := layoutText(w)
		return err == nil && strings.Count(data, `"@st_agent_session"`) >= len(ws), fmt.Sprintf("layout has %d conversation ids (status %s)", strings.Count(data, `"@st_agent_session"`), out)
	})
	time.Sleep(time.Duration(jitter(0, 1500)) * time.Millisecond) // a random moment of the run, not a wait
	reported := map[string]string{}
	for _, r := range w.runs() {
		for _, wk := range r.Workers {
			if wk.State == orch.Done {
				reported[wk.Name] = wk.Summary
			}
		}
	}
	before := lastRestore(w)
	if _, err := w.tmux("kill-server"); err != nil {
		t.Fatalf("trial %d: %v", trial, err)
	}
	// st's own word that the restore is over (st status does not look
	// at tmux); with listDuring, a list is running all the while.
	lists := 0
	waitFor(t, 60*time.Second, func() (bool, string) {
		if listDuring {
			w.list()
			lists++
		}
		at := lastRestore(w)
		return at.After(before), "st status: no restore yet"
	})
	if listDuring {
		t.Logf("trial %d: %d st worker list during the restore", trial, lists)
	}

	// What st brings back.
	var run *orch.Run
	problems := map[string]string{}
	ok := func() (bool, string) {
		problems = map[string]string{}
		rs := w.runs()
		if len(rs) != 1 {
			return false, fmt.Sprintf("%d runs on disk", len(rs))
		}
		run = rs[0]
		out, err := w.tmux("list-panes", "-a", "-F", "#{pane_id}\t#{session_name}\t#{@st_run}\t#{@st_name}\t#{@st_parent}\t#{@st_agent_session}")
		if err != nil {
			return false, "tmux server not back: " + err.Error()
		}
		panes := map[string][]string{}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Split(l, "\t")
			if len(f) == 6 {
				panes[f[0]] = f
			}
		}
		if p := panes[run.Coordinator]; p == nil || p[1] != w.session {
			return false, fmt.Sprintf("coordinator %s not a pane of session %s: %q", run.Coordinator, w.session, out)
		}
		vs, err := w.list()
		if err != nil {
			return false, err.Error()
		}
		byName := map[string]orch.WorkerView{}
		for _, v := range vs {
			byName[v.Name] = v
		}
		for _, v := range ws {
			g, found := byName[v.Name]
			if !found {
				problems[v.Name] = "not listed"
				continue
			}
			p := panes[g.ID]
			switch {
			case !g.State.Live():
				// The restore is over: gone stays gone.
				problems[v.Name] = fmt.Sprintf("%sstate %s", final, g.State)
			case p == nil:
				problems[v.Name] = fmt.Sprintf("pane %s not on the server", g.ID)
			case p[2] != run.ID || p[3] != v.Name || p[4] != run.Coordinator || p[5] == "":
				problems[v.Name] = fmt.Sprintf("pane options run=%q name=%q parent=%q session=%q, want run %s, parent %s", p[2], p[3], p[4], p[5], run.ID, run.Coordinator)
			case g.Parent != run.Coordinator:
				problems[v.Name] = fmt.Sprintf("parent %s, coordinator %s", g.Parent, run.Coordinator)
			case reported[v.Name] != "" && (g.State != orch.Done || g.Summary != reported[v.Name]):
				problems[v.Name] = fmt.Sprintf("%sreported %q before the kill, now %s %q", final, reported[v.Name], g.State, g.Summary)
			}
			if problems[v.Name] == "" {
				screen, _ := w.tmux("capture-pane", "-p", "-t", g.ID)
				if !strings.Contains(screen, "❯") {
					problems[v.Name] = "no agent box on screen yet"
				}
			}
		}
		return len(problems) == 0, fmt.Sprint(problems)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		good, msg := ok()
		if good {
			break
		}
		allFinal := len(problems) > 0
		for _, p := range problems {
			allFinal = allFinal && strings.HasPrefix(p, final)
		}
		if time.Now().After(deadline) || allFinal {
			t.Errorf("trial %d: not back whole: %s\n%s", trial, msg, w.logTail())
			if len(problems) == 0 {
				return len(ws)
			}
			return len(problems)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A line sent to a long worker arrives in its new pane.
	vs, _ := w.list()
	for _, v := range vs {
		if v.Name == "long0" {
			w.must(w.st(w.coord, "worker", "send", "long0", "hello after the restart"))
			waitFor(t, 30*time.Second, func() (bool, string) {
				screen, _ := w.tmux("capture-pane", "-p", "-t", v.ID)
				return strings.Contains(screen, "Received: hello after the restart"), "screen of long0:\n" + screen
			})
		}
	}
	t.Logf("trial %d: %d workers (%d reported before the kill) back with their relations", trial, len(ws), len(reported))
	return 0
}

// final marks a problem that waiting longer cannot mend: the restore is
// over and a worker or a report's state is lost.
const final = "LOST: "

// lastRestore is when st last brought the tmux server back, from st status.
func lastRestore(w *world) time.Time {
	var st struct {
		LastRestore orch.RestoreStats `json:"last_restore"`
	}
	out, err := w.st(w.coord, "status", "--json").Output()
	if err != nil || json.Unmarshal(out, &st) != nil {
		return time.Time{}
	}
	return st.LastRestore.At
}
