package faults

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/orch"
	"github.com/sophonz/st/internal/testutil"
)

// The restore of issue 24: a reboot (st and tmux both gone, the socket's
// folder with them, then st up), and an agent that cannot come back
// among others that can.

// restoreFig is one restore's figures, from st up (a reboot) or from
// tmux's own exit (a restart while st runs), beside tmux's own start of
// the same sessions (the floor, measured in the same trial).
type restoreFig struct {
	sessions, relations, agents time.Duration // st: sessions back, relations back, every agent's box back
	floorSessions, floorAgents  time.Duration // tmux's own start of the same windows and agents
}

// TestRebootRestore: st is killed (kill -9), then the tmux server
// (SIGKILL, as a reboot ends it), the socket's folder is removed (a
// reboot empties /tmp), and `st up` (what st up --at-login does after a
// reboot; in every other trial a person has opened tmux first) must bring
// back the sessions, each agent resuming its own
// conversation, the relations, and the report made before. Before issue
// 24 nothing came back and the workers stayed "working" for good.
// CI: 2 trials; scripts/faults: 10.
func TestRebootRestore(t *testing.T) {
	n := trials(2, 10)
	losses := 0
	var figs []restoreFig
	for trial := 0; trial < n; trial++ {
		lost, fig := rebootTrial(t, trial)
		losses += lost
		if lost == 0 {
			figs = append(figs, fig)
		}
	}
	reportFigures(t, "reboot", figs)
	report(t, "reboot-kill9-tmux-killed-socket-folder-removed-st-up", n, losses, "trials where a session, an agent's conversation, a relation or a report did not come back")
}

func rebootTrial(t *testing.T, trial int) (int, restoreFig) {
	w := newWorld(t, "")
	defer w.close()
	w.up()
	ws := w.startWorkers(3, 3, w.writeFile("long.md", "sleep: 600s\nsummary: never\n"), "long")
	ws = append(ws, w.startWorkers(1, 1, w.writeFile("short.md", "summary: short reported\n"), "short")...)
	waitFor(t, 30*time.Second, func() (bool, string) { return w.onDisk("short reported") == 1, "short has not reported" })
	w.waitPicture(len(ws))
	sessions := w.sessions()

	// The reboot.
	w.kill9()
	w.killTmuxHard()
	if err := os.RemoveAll(filepath.Dir(w.sock)); err != nil {
		t.Fatal(err)
	}
	if trial%2 == 1 {
		// A person opened tmux before st came up (its default path, so
		// tmux makes the folder): st's sessions come back in that server,
		// beside the person's.
		cmd := execCommand("tmux", "-f", "/dev/null", "new-session", "-d", "-s", "person", "sh")
		cmd.Env = w.env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("a person's tmux: %v %s", err, out)
		}
	}
	start := time.Now()
	w.up()
	fig, problems := w.checkBack(start, ws, sessions, map[string]string{"short0": "short reported"})
	if trial%2 == 1 {
		if _, err := w.tmux("has-session", "-t", "person"); err != nil {
			problems = append(problems, "the person's session is gone: "+err.Error())
		}
	}
	if len(problems) > 0 {
		t.Errorf("trial %d: not back after the reboot: %v\n%s", trial, problems, w.logTail())
		return 1, fig
	}
	fig.floorSessions, fig.floorAgents = w.tmuxFloor(len(ws))
	t.Logf("trial %d: st up to sessions %s, relations %s, agents %s; tmux's own start: sessions %s, agents %s",
		trial, fig.sessions.Round(time.Millisecond), fig.relations.Round(time.Millisecond), fig.agents.Round(time.Millisecond),
		fig.floorSessions.Round(time.Millisecond), fig.floorAgents.Round(time.Millisecond))
	return 0, fig
}

// TestAgentThatCannotComeBack: six sim workers, one of whose
// conversation is gone (its record removed, as a reboot that emptied its
// folder would), and the tmux server is killed while st runs. The five
// come back with their relations; the one is gone saying why (what the
// agent said: "No conversation found ..."); st ls answers in its usual
// time all the while (before issue 24 a real Claude not on st's PATH held
// up everything: "context deadline exceeded" every 10 s, st ls failing);
// and after st down; st up every relation is kept (before, every worker
// was "gone ⚠ (parent gone: %0)"). CI: 2 trials; scripts/faults: 10.
func TestAgentThatCannotComeBack(t *testing.T) {
	n := trials(2, 10)
	losses := 0
	var figs []restoreFig
	var slowest, usual []time.Duration
	for trial := 0; trial < n; trial++ {
		lost, fig, ls, us := cannotTrial(t, trial)
		losses += lost
		slowest, usual = append(slowest, ls), append(usual, us)
		if lost == 0 {
			figs = append(figs, fig)
		}
	}
	t.Logf("st ls during the restores: slowest %v; usual (median before the fault) %v", slowest, usual)
	reportFigures(t, "one-cannot-come-back", figs)
	report(t, "an-agent-that-cannot-come-back-among-5", n, losses,
		"trials where one of the 5 or a relation did not come back, the one was not gone with its reason, st ls went past its usual time, or st down; st up lost a relation")
}

func cannotTrial(t *testing.T, trial int) (lost int, fig restoreFig, slowestLs, usualLs time.Duration) {
	w := newWorld(t, "")
	defer w.close()
	w.up()
	ws := w.startWorkers(6, 3, w.writeFile("long.md", "sleep: 600s\nsummary: never\n"), "w")
	w.waitPicture(len(ws))
	sessions := w.sessions()
	vs, err := w.list()
	if err != nil {
		t.Fatal(err)
	}
	lostOne := vs[jitter(0, len(vs)-1)]
	if err := os.Remove(filepath.Join(w.dir, "home", ".st-sim", lostOne.AgentSession)); err != nil {
		t.Fatalf("the sim's record of %s's conversation: %v", lostOne.Name, err)
	}
	usualLs = w.lsMedian(5)
	ls := w.startLsLoop()
	defer ls.stop()
	start := time.Now()
	if _, err := w.tmux("kill-server"); err != nil {
		t.Fatal(err)
	}
	var others []api.WorkerView
	for _, v := range ws {
		if v.Name != lostOne.Name {
			others = append(others, v)
		}
	}
	fig, problems := w.checkBack(start, others, sessions, nil)
	// The one: gone, saying why.
	waitFor(t, 60*time.Second, func() (bool, string) {
		vs, _ := w.list()
		for _, v := range vs {
			if v.Name == lostOne.Name {
				return v.State == api.Gone, fmt.Sprintf("%s is %s", v.Name, v.State)
			}
		}
		return false, lostOne.Name + " not listed"
	})
	durs, lsErrs := ls.stop()
	vs, _ = w.list()
	for _, v := range vs {
		if v.Name == lostOne.Name && !strings.Contains(v.Error, "No conversation found with session ID: "+lostOne.AgentSession) {
			problems = append(problems, fmt.Sprintf("%s is gone without its reason: %q", v.Name, v.Error))
		}
	}
	for _, d := range durs {
		slowestLs = max(slowestLs, d)
	}
	if limit := max(time.Second, 10*usualLs); slowestLs > limit || len(lsErrs) > 0 {
		problems = append(problems, fmt.Sprintf("st ls during the restore: slowest %s (usual %s), %d failed: %q", slowestLs, usualLs, len(lsErrs), lsErrs))
	}
	// st down; st up: every relation kept.
	before := relations(vs)
	w.must(w.st("", "down"))
	w.up()
	after, _ := w.list()
	if got := relations(after); got != before {
		problems = append(problems, fmt.Sprintf("st down; st up changed the workers:\nbefore %s\nafter  %s", before, got))
	}
	if len(problems) > 0 {
		t.Errorf("trial %d: %v\n%s", trial, problems, w.logTail())
		return 1, fig, slowestLs, usualLs
	}
	fig.floorSessions, fig.floorAgents = w.tmuxFloor(len(others))
	t.Logf("trial %d: %s gone with its reason; the 5 back: sessions %s, relations %s, agents %s after tmux's exit; %d st ls, slowest %s (usual %s)",
		trial, lostOne.Name, fig.sessions.Round(time.Millisecond), fig.relations.Round(time.Millisecond), fig.agents.Round(time.Millisecond),
		len(durs), slowestLs.Round(time.Millisecond), usualLs.Round(time.Millisecond))
	return 0, fig, slowestLs, usualLs
}

// lsLoop runs st ls one after another until stopped, timing each.
type lsLoop struct {
	mu   sync.Mutex
	durs []time.Duration
	errs []string
	stop func() ([]time.Duration, []string)
}

func (w *world) startLsLoop() *lsLoop {
	l := &lsLoop{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			t0 := time.Now()
			out, err := run(w.st(w.coord, "ls"))
			l.mu.Lock()
			l.durs = append(l.durs, time.Since(t0))
			if err != nil {
				l.errs = append(l.errs, out)
			}
			l.mu.Unlock()
		}
	}()
	once := sync.OnceFunc(func() { close(done); wg.Wait() })
	l.stop = func() ([]time.Duration, []string) {
		once()
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.durs, l.errs
	}
	return l
}

// relations is the workers as st worker list says them, one line each,
// in name order: id, state, parent, and whether the parent is gone.
func relations(vs []api.WorkerView) string {
	var lines []string
	for _, v := range vs {
		lines = append(lines, fmt.Sprintf("%s %s %s parent=%s gone=%v", v.Name, v.ID, v.State, v.Parent, v.ParentGone))
	}
	sort.Strings(lines)
	return strings.Join(lines, "; ")
}

// waitPicture waits until st's picture of the server has every worker's
// conversation id (the panes' options first, then the file).
func (w *world) waitPicture(n int) {
	w.t.Helper()
	waitFor(w.t, 30*time.Second, func() (bool, string) {
		data := layoutText(w)
		return strings.Count(data, `"@st_agent_session"`) >= n, fmt.Sprintf("layout has %d conversation ids, want %d", strings.Count(data, `"@st_agent_session"`), n)
	})
}

// sessions is each worker's conversation id, by name.
func (w *world) sessions() map[string]string {
	w.t.Helper()
	vs, err := w.list()
	if err != nil {
		w.t.Fatal(err)
	}
	out := map[string]string{}
	for _, v := range vs {
		out[v.Name] = v.AgentSession
	}
	return out
}

// tmuxPid is the pid of this world's tmux server.
func (w *world) tmuxPid() int {
	w.t.Helper()
	out, err := w.tmux("display-message", "-p", "#{pid}")
	if err != nil {
		w.t.Fatal(err)
	}
	var pid int
	fmt.Sscan(out, &pid)
	if pid <= 1 {
		w.t.Fatalf("tmux pid %q", out)
	}
	return pid
}

// killTmuxHard ends this world's tmux server with SIGKILL, as a reboot
// does, and waits for it to go.
func (w *world) killTmuxHard() {
	w.t.Helper()
	pid := w.tmuxPid()
	syscall.Kill(pid, syscall.SIGKILL)
	if !testutil.WaitGone(pid, 30*time.Second) {
		w.t.Fatalf("tmux server %d still there", pid)
	}
}

// lsMedian is the median time of n st ls.
func (w *world) lsMedian(n int) time.Duration {
	var ds []time.Duration
	for i := 0; i < n; i++ {
		t0 := time.Now()
		w.must(w.st(w.coord, "ls"))
		ds = append(ds, time.Since(t0))
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[n/2]
}

// checkBack waits until every worker of ws is back whole after a
// restore that began at start, and returns the figures and what is not
// back (nothing when all is). reported are reports made before, by name.
func (w *world) checkBack(start time.Time, ws []api.WorkerView, sessions, reported map[string]string) (restoreFig, []string) {
	var fig restoreFig
	var problems []string
	deadline := time.Now().Add(90 * time.Second)
	for {
		problems = nil
		at, st := restoreStats(w)
		run := w.runs()
		switch {
		case at.Before(start):
			problems = append(problems, "no restore yet")
		case len(run) != 1:
			problems = append(problems, fmt.Sprintf("%d runs", len(run)))
		default:
			fig.sessions, fig.relations = at.Sub(start), at.Sub(start)+st.Relations
			problems = w.backWhole(run[0], ws, sessions, reported)
		}
		if len(problems) == 0 {
			// Every agent back, as st counts it (its last one settled); the
			// checks above take their own time.
			fig.agents = time.Since(start)
			for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				if at, st := restoreStats(w); st.AgentsBack > 0 {
					fig.agents = at.Sub(start) + st.AgentsBack
					break
				}
			}
			return fig, nil
		}
		if time.Now().After(deadline) {
			return fig, problems
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// backWhole is what is not back of ws in run: its pane on the server with
// its relations (run, name, parent: the coordinator as it is now), its
// agent resuming its own conversation with its box on screen, its state
// live (idle) or its report kept.
func (w *world) backWhole(run *orch.Run, ws []api.WorkerView, sessions, reported map[string]string) []string {
	out, err := w.tmux("list-panes", "-a", "-F", "#{pane_id}\t#{@st_run}\t#{@st_name}\t#{@st_parent}\t#{pane_start_command}")
	if err != nil {
		return []string{"tmux server not back: " + err.Error()}
	}
	panes := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.SplitN(l, "\t", 5); len(f) == 5 {
			panes[f[0]] = f
		}
	}
	if panes[run.Coordinator] == nil {
		return []string{"coordinator " + run.Coordinator + " not on the server"}
	}
	vs, err := w.list()
	if err != nil {
		return []string{err.Error()}
	}
	byName := map[string]api.WorkerView{}
	for _, v := range vs {
		byName[v.Name] = v
	}
	var problems []string
	for _, want := range ws {
		v, ok := byName[want.Name]
		p := panes[v.ID]
		switch {
		case !ok:
			problems = append(problems, want.Name+" not listed")
		case p == nil:
			problems = append(problems, fmt.Sprintf("%s: pane %s not on the server", v.Name, v.ID))
		case p[1] != run.ID || p[2] != v.Name || p[3] != run.Coordinator || v.Parent != run.Coordinator || v.ParentGone:
			problems = append(problems, fmt.Sprintf("%s: options run=%q name=%q parent=%q, record parent %s (gone %v), want run %s parent %s",
				v.Name, p[1], p[2], p[3], v.Parent, v.ParentGone, run.ID, run.Coordinator))
		case !strings.HasSuffix(p[4], "--resume "+sessions[v.Name]):
			problems = append(problems, fmt.Sprintf("%s runs %q, not its conversation %s", v.Name, p[4], sessions[v.Name]))
		case reported[v.Name] != "" && (v.State != api.Done || v.Summary != reported[v.Name]):
			problems = append(problems, fmt.Sprintf("%s reported %q before, now %s %q", v.Name, reported[v.Name], v.State, v.Summary))
		case reported[v.Name] == "" && v.State != api.Idle:
			problems = append(problems, fmt.Sprintf("%s is %s, want idle (its turn died with the server)", v.Name, v.State))
		default:
			if screen, _ := w.tmux("capture-pane", "-p", "-t", v.ID); !strings.Contains(screen, "❯") {
				problems = append(problems, v.Name+": no agent box on screen yet")
			}
		}
	}
	return problems
}

// restoreStats is st status's last restore.
func restoreStats(w *world) (time.Time, api.RestoreStats) {
	var st struct {
		LastRestore api.RestoreStats `json:"last_restore"`
	}
	out, err := w.st("", "status", "--json").Output()
	if err != nil || jsonUnmarshal(out, &st) != nil {
		return time.Time{}, api.RestoreStats{}
	}
	return st.LastRestore.At, st.LastRestore
}

// tmuxFloor is tmux's own start of the same sessions: a new server (a
// socket of its own) with the coordinator's shell and n windows each
// running the sim, made in one tmux command line; the time until the
// server answered with every window, and until every sim's box showed.
func (w *world) tmuxFloor(n int) (sessions, agents time.Duration) {
	w.t.Helper()
	sock := filepath.Join(w.dir, "floor.sock")
	home := filepath.Join(w.dir, "floor-home")
	os.MkdirAll(home, 0o700)
	args := []string{"-S", sock, "-f", "/dev/null", "new-session", "-d", "-s", "main", "-x", "200", "-y", "50", "sh"}
	for i := 0; i < n; i++ {
		args = append(args, ";", "new-window", "-d", "-t", "main:", "-e", "ST_HOME="+home, "-e", "HOME="+home, "-e", "ST_BIN="+w.bin, w.bin, "agent", "sim")
	}
	t0 := time.Now()
	if out, err := w.tmuxAt(args...); err != nil {
		w.t.Fatalf("tmux's own start: %v %s", err, out)
	}
	defer testutil.KillServer(func(a ...string) (string, error) { return w.tmuxAt(append([]string{"-S", sock}, a...)...) })
	out, _ := w.tmuxAt("-S", sock, "list-panes", "-a", "-F", "#{pane_id}")
	sessions = time.Since(t0)
	ids := strings.Fields(out)
	waitFor(w.t, 60*time.Second, func() (bool, string) {
		for _, id := range ids[1:] {
			if s, _ := w.tmuxAt("-S", sock, "capture-pane", "-p", "-t", id); !strings.Contains(s, "❯") {
				return false, id + " has no box yet"
			}
		}
		return true, ""
	})
	return sessions, time.Since(t0)
}

// tmuxAt runs tmux with this world's environment and args as given.
func (w *world) tmuxAt(args ...string) (string, error) {
	cmd := execCommand("tmux", args...)
	cmd.Env = w.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// reportFigures prints the medians of the restores' figures, and each
// as a ratio to tmux's own start of the same sessions:
//
//	FIGURE name st-sessions st-relations st-agents floor-sessions floor-agents
func reportFigures(t *testing.T, name string, figs []restoreFig) {
	t.Helper()
	if len(figs) == 0 {
		return
	}
	med := func(get func(restoreFig) time.Duration) time.Duration {
		ds := make([]time.Duration, len(figs))
		for i, f := range figs {
			ds[i] = get(f)
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	s, r, a := med(func(f restoreFig) time.Duration { return f.sessions }), med(func(f restoreFig) time.Duration { return f.relations }), med(func(f restoreFig) time.Duration { return f.agents })
	fs, fa := med(func(f restoreFig) time.Duration { return f.floorSessions }), med(func(f restoreFig) time.Duration { return f.floorAgents })
	line := fmt.Sprintf("FIGURE %s sessions+relations %s (%.2fx tmux's own %s); every agent back %s (%.2fx tmux's own %s); sessions alone %s; median of %d",
		name, r.Round(time.Millisecond), float64(r)/float64(fs), fs.Round(time.Millisecond), a.Round(time.Millisecond), float64(a)/float64(fa), fa.Round(time.Millisecond), s.Round(time.Millisecond), len(figs))
	fmt.Println(line)
	t.Log(line)
}

func execCommand(name string, args ...string) *exec.Cmd { return exec.Command(name, args...) }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
