package faults

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
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
		lost, _ := tmuxTrial(t, trial, long, short, false, false)
		losses += lost
	}
	report(t, fmt.Sprintf("tmux-killed-mid-run-%d-workers", long+short), n, losses, "workers, relations or reports not back over all trials")
}

// TestTmuxKilledRightAfterStart kills the server 0.2 s after the last
// start returned, with no wait for st to have its picture: st records
// the layout at every change it makes or hears of, so there is no moment
// at which a restore is impossible. (Before the tmux events, st took its
// picture once a second: a kill within that second brought nothing back,
// and the workers stayed "alive" for good.) CI: 2 trials; scripts/faults: 10.
func TestTmuxKilledRightAfterStart(t *testing.T) {
	n := trials(2, 10)
	losses := 0
	for trial := 0; trial < n; trial++ {
		lost, _ := tmuxTrial(t, trial, 3, 0, false, true)
		losses += lost
	}
	report(t, "tmux-killed-0.2s-after-3-starts", n, losses, "workers or relations not back over all trials")
}

// TestTmuxKilledListDuringRestore is TestTmuxKilledMidRun with a person
// (or a coordinator) running `st worker list` while st brings the server
// back, as anyone who notices the windows gone would. It found a bug,
// fixed since: List reconciled against the half-restored server, whose
// new panes carried no @st_run yet, so every worker was marked gone and
// a worker that had reported was no longer done. CI: 2 trials;
// scripts/faults: 10. A trial counts only when a list ran while the
// restore was under way (it returned before st said the restore was
// over); one where the restore was over first is tried again, and the
// test fails when too few attempts overlap the restore.
func TestTmuxKilledListDuringRestore(t *testing.T) {
	n := trials(2, 10)
	const long, short = 3, 3
	losses, trial, missed := 0, 0, 0
	// A restore now takes a few hundred ms, so under a loaded CI few
	// attempts overlap it: attempts go on for up to 6 minutes.
	deadline := time.Now().Add(6 * time.Minute)
	for attempt := 0; trial < n; attempt++ {
		if attempt >= 3*n+2 && time.Now().After(deadline) {
			t.Fatalf("only %d of %d attempts ran st worker list while st restored the server; the fault was not tested %d times", trial, attempt, n)
		}
		lost, during := tmuxTrial(t, attempt, long, short, true, false)
		losses += lost
		if during > 0 {
			trial++
		} else {
			missed++
		}
	}
	if missed > 0 {
		t.Logf("%d attempt(s) had the restore over before a list returned; tried again", missed)
	}
	report(t, fmt.Sprintf("tmux-killed-list-during-restore-%d-workers", long+short), n, losses, "workers, relations or reports not back over all trials")
}

// tmuxTrial runs one trial and returns how many workers did not come
// back whole (each is also reported as an error).
// With listDuring, st worker list runs in a loop from the kill until
// st says the restore is over, and during counts the lists that returned
// while it was not over yet. With quick, the kill comes 0.2 s after the
// last start returned, whatever st has recorded by then.
func tmuxTrial(t *testing.T, trial, long, short int, listDuring, quick bool) (lost, during int) {
	w := newWorld(t, "")
	defer w.close()
	w.up()
	ws := startTrialWorkers(w, long, short)
	waitForPicture(t, w, len(ws), quick)
	reported := map[string]string{}
	for _, r := range w.runs() {
		for _, wk := range r.Workers {
			if wk.State == api.Done {
				reported[wk.Name] = wk.Summary
			}
		}
	}
	during = killTmuxListing(t, w, trial, listDuring)
	if lost := waitBackWhole(t, w, trial, ws, reported); lost > 0 {
		return lost, during
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
	return 0, during
}

// startTrialWorkers starts long workers that never end and short ones
// whose reports land around the kill: some before, some cut off.
func startTrialWorkers(w *world, long, short int) []api.WorkerView {
	longTask := w.writeFile("long.md", "sleep: 600s\nsummary: never\n")
	var ws []api.WorkerView
	ws = append(ws, w.startWorkers(long, 3, longTask, "long")...)
	for i := 0; i < short; i++ {
		task := w.writeFile(fmt.Sprintf("short%d.md", i), fmt.Sprintf("sleep: %dms\nsummary: short%d reported\n", jitter(200, 2500), i))
		ws = append(ws, w.startWorkers(1, 1, task, fmt.Sprintf("short%d-", i))...)
	}
	return ws
}

// waitForPicture waits until every one of n workers and its conversation
// id is in st's picture of the server, then for a random moment of the
// run; with quick, only 0.2 s after the last start returned, whatever st
// has recorded by then.
func waitForPicture(t *testing.T, w *world, n int, quick bool) {
	if quick {
		time.Sleep(200 * time.Millisecond) // the fault's own timing, not a wait for st
		return
	}
	waitFor(t, 30*time.Second, func() (bool, string) {
		out, _ := w.tmux("list-panes", "-a", "-F", "#{@st_agent_session}")
		k := 0
		for _, l := range strings.Split(out, "\n") {
			if strings.TrimSpace(l) != "" {
				k++
			}
		}
		return k >= n, fmt.Sprintf("%d of %d panes have a conversation id", k, n)
	})
	waitFor(t, 30*time.Second, func() (bool, string) {
		out, err := w.st(w.coord, "status", "--json").Output()
		// The layout file is written after the panes' options change.
		data := layoutText(w)
		return err == nil && strings.Count(data, `"@st_agent_session"`) >= n, fmt.Sprintf("layout has %d conversation ids (status %s)", strings.Count(data, `"@st_agent_session"`), out)
	})
	time.Sleep(time.Duration(jitter(0, 1500)) * time.Millisecond) // a random moment of the run, not a wait
}

// killTmuxListing kills the tmux server and waits for st's own word that
// the restore is over (st status does not look at tmux). With
// listDuring, lists run all the while, four at a time (people and
// coordinators), so that some fall inside a restore that st now starts
// within milliseconds of the kill; it returns how many of them returned
// while st restored.
func killTmuxListing(t *testing.T, w *world, trial int, listDuring bool) (during int) {
	before := lastRestore(w)
	if _, err := w.tmux("kill-server"); err != nil {
		t.Fatalf("trial %d: %v", trial, err)
	}
	var lists, overlapped atomic.Int32
	stop := make(chan struct{})
	var listers sync.WaitGroup
	for i := 0; listDuring && i < 4; i++ {
		listers.Add(1)
		go func() {
			defer listers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				// A list counts when st already knew the server was gone
				// before it began and had not finished the restore when
				// it returned: it ran while st restored.
				_, down := restoreState(w)
				w.list()
				lists.Add(1)
				if at, _ := restoreState(w); down && !at.After(before) {
					overlapped.Add(1)
				}
			}
		}()
	}
	// Ended before the world closes, also when the wait fails the test.
	stopListers := sync.OnceFunc(func() { close(stop); listers.Wait() })
	defer stopListers()
	waitFor(t, 60*time.Second, func() (bool, string) {
		at, _ := restoreState(w)
		return at.After(before), "st status: no restore yet"
	})
	stopListers()
	if listDuring {
		t.Logf("trial %d: %d st worker list after the kill, %d of them while st restored", trial, lists.Load(), overlapped.Load())
	}
	return int(overlapped.Load())
}

// waitBackWhole waits until st brought every worker of ws back whole
// (tmuxBack), and returns how many did not come back so (each reported
// as an error): none when all did within a minute, or when what is wrong
// is final sooner.
func waitBackWhole(t *testing.T, w *world, trial int, ws []api.WorkerView, reported map[string]string) int {
	deadline := time.Now().Add(60 * time.Second)
	for {
		problems, msg := tmuxBack(w, ws, reported)
		if problems != nil && len(problems) == 0 {
			return 0
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
}

// tmuxBack looks at what st brought back: its one run, the coordinator
// in its session, and each worker of ws live in a pane with its
// relations and its agent's box, a report made before the kill kept.
// problems is nil (with msg) when the run or the server is not there at
// all, else what is wrong with each worker (empty: back whole).
func tmuxBack(w *world, ws []api.WorkerView, reported map[string]string) (problems map[string]string, msg string) {
	rs := w.runs()
	if len(rs) != 1 {
		return nil, fmt.Sprintf("%d runs on disk", len(rs))
	}
	run := rs[0]
	out, err := w.tmux("list-panes", "-a", "-F", "#{pane_id}\t#{session_name}\t#{@st_run}\t#{@st_name}\t#{@st_parent}\t#{@st_agent_session}")
	if err != nil {
		return nil, "tmux server not back: " + err.Error()
	}
	panes := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(l, "\t")
		if len(f) == 6 {
			panes[f[0]] = f
		}
	}
	if p := panes[run.Coordinator]; p == nil || p[1] != w.session {
		return nil, fmt.Sprintf("coordinator %s not a pane of session %s: %q", run.Coordinator, w.session, out)
	}
	vs, err := w.list()
	if err != nil {
		return nil, err.Error()
	}
	byName := map[string]api.WorkerView{}
	for _, v := range vs {
		byName[v.Name] = v
	}
	problems = map[string]string{}
	for _, v := range ws {
		if p := workerBack(w, run, byName, panes, v.Name, reported[v.Name]); p != "" {
			problems[v.Name] = p
		}
	}
	return problems, fmt.Sprint(problems)
}

// workerBack says what is wrong with worker name after the restore (""
// when it is back whole); a problem that will not mend starts with final.
func workerBack(w *world, run *orch.Run, byName map[string]api.WorkerView, panes map[string][]string, name, reported string) string {
	g, found := byName[name]
	if !found {
		return "not listed"
	}
	p := panes[g.ID]
	switch {
	case !g.State.Live():
		// The restore is over: gone stays gone.
		return fmt.Sprintf("%sstate %s", final, g.State)
	case p == nil:
		return fmt.Sprintf("pane %s not on the server", g.ID)
	case p[2] != run.ID || p[3] != name || p[4] != run.Coordinator || p[5] == "":
		return fmt.Sprintf("pane options run=%q name=%q parent=%q session=%q, want run %s, parent %s", p[2], p[3], p[4], p[5], run.ID, run.Coordinator)
	case g.Parent != run.Coordinator:
		return fmt.Sprintf("parent %s, coordinator %s", g.Parent, run.Coordinator)
	case reported != "" && (g.State != api.Done || g.Summary != reported):
		return fmt.Sprintf("%sreported %q before the kill, now %s %q", final, reported, g.State, g.Summary)
	}
	if screen, _ := w.tmux("capture-pane", "-p", "-t", g.ID); !strings.Contains(screen, "❯") {
		return "no agent box on screen yet"
	}
	return ""
}

// final marks a problem that waiting longer cannot mend: the restore is
// over and a worker or a report's state is lost.
const final = "LOST: "

// lastRestore is when st last brought the tmux server back, from st status.
func lastRestore(w *world) time.Time {
	at, _ := restoreState(w)
	return at
}

// restoreState is, from st status, when st last brought the tmux server
// back, and whether it knows the server is gone now (down: a restore is
// due or under way).
func restoreState(w *world) (last time.Time, down bool) {
	var st struct {
		LastRestore api.RestoreStats `json:"last_restore"`
		TmuxDown    *time.Time       `json:"tmux_down"`
	}
	out, err := w.st(w.coord, "status", "--json").Output()
	if err != nil || json.Unmarshal(out, &st) != nil {
		return time.Time{}, false
	}
	return st.LastRestore.At, st.TmuxDown != nil
}

// TestTmuxKilledNothingToRestore: the server goes and nothing can be
// brought back (here its socket's folder has become a file, so no server
// can start there again). Every worker that was on it is gone, saying
// why, and a wait that was waiting returns at once (exit 2) saying so;
// st status says the server is gone. CI: 2 trials; scripts/faults: 10.
func TestTmuxKilledNothingToRestore(t *testing.T) {
	n := trials(2, 10)
	losses := 0
	var took []time.Duration
	for trial := 0; trial < n; trial++ {
		d, lost := nothingTrial(t, trial)
		losses += lost
		took = append(took, d)
	}
	t.Logf("kill to every wait returned: %v", took)
	report(t, "tmux-killed-nothing-to-restore", n, losses, "trials where a worker stayed alive, a wait did not return, or no reason was given")
}

func nothingTrial(t *testing.T, trial int) (time.Duration, int) {
	w := newWorld(t, "")
	defer w.close()
	w.up()
	task := w.writeFile("long.md", "sleep: 600s\nsummary: never\n")
	ws := w.startWorkers(3, 3, task, "long")
	wait := w.st(w.coord, "worker", "wait", "--timeout", "5m")
	var out strings.Builder
	wait.Stdout, wait.Stderr = &out, &out
	if err := wait.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- wait.Wait() }()
	// The kill comes once st says the wait is waiting (its workers found),
	// so that the figure times a wait that began before the kill.
	waitFor(t, 30*time.Second, func() (bool, string) {
		var st struct {
			Orch api.Status `json:"orch"`
		}
		out, err := w.st("", "status", "--json").Output()
		return err == nil && json.Unmarshal(out, &st) == nil && st.Orch.Waits >= 1, "st status shows no wait waiting: " + string(out)
	})
	pidOut, err := w.tmux("display-message", "-p", "#{pid}")
	if err != nil {
		t.Fatalf("trial %d: %v", trial, err)
	}
	var pid int
	fmt.Sscan(pidOut, &pid)
	// No server can start there again: its socket's folder becomes a
	// file (the server runs on, unreachable by name), then it is killed.
	sockDir := filepath.Dir(w.sock)
	os.RemoveAll(sockDir)
	os.WriteFile(sockDir, []byte("not a folder"), 0o600)
	defer func() { os.Remove(sockDir); os.MkdirAll(sockDir, 0o700) }()
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatalf("trial %d: kill the tmux server %d: %v", trial, pid, err)
	}
	killed := time.Now()

	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		wait.Process.Kill()
		<-done
		t.Errorf("trial %d: st worker wait did not return within 30s of the kill\n%s", trial, w.logTail())
		return 30 * time.Second, 1
	}
	took := time.Since(killed)
	lost := 0
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Errorf("trial %d: wait ended with %v, want exit 2\n%s", trial, err, out.String())
		lost = 1
	}
	for _, v := range ws {
		if !regexp.MustCompile(v.Name + `\s+gone`).MatchString(out.String()) {
			t.Errorf("trial %d: the wait's answer does not say %s is gone:\n%s", trial, v.Name, out.String())
			lost = 1
		}
	}
	vs, _ := w.list()
	for _, v := range vs {
		if v.State != api.Gone || !strings.Contains(v.Error, "tmux server went down") {
			t.Errorf("trial %d: %s is %s (%q), want gone with the reason", trial, v.Name, v.State, v.Error)
			lost = 1
		}
	}
	if st, _ := run(w.st("", "status")); !strings.Contains(st, "the tmux server is gone") {
		t.Errorf("trial %d: st status does not say the server is gone:\n%s", trial, st)
		lost = 1
	}
	t.Logf("trial %d: kill to the wait's return %s\n%s", trial, took.Round(time.Millisecond), w.logTail())
	return took, lost
}
