package faults

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/orch"
	"github.com/sophonz/st/internal/testutil"
)

// world is one trial's st: the st binary, a private tmux server (its own
// TMUX_TMPDIR) with a session whose first pane is a plain sh that stands
// for a person at the coordinator pane, and a daemon of a private
// ST_HOME. close (also run in cleanup) kills every daemon pid this world
// saw in its st.pid and this tmux server, nothing else.
type world struct {
	t       testing.TB
	bin     string
	dir     string // short temporary folder
	home    string // ST_HOME
	tdir    string // TMUX_TMPDIR
	sock    string // the private tmux server's socket
	env     []string
	tmuxVar string // $TMUX of the coordinator's pane
	coord   string // the coordinator's pane
	session string

	mu      sync.Mutex
	pids    map[int]bool // daemons this world started
	closed  bool
	cleanup []func()
}

// newWorld makes a world. home, when not empty, is the ST_HOME to use
// (a mount point the test made); otherwise one in the world's folder.
func newWorld(t testing.TB, home string) *world {
	t.Helper()
	w := &world{t: t, bin: testutil.BuildST(t), session: "main", pids: map[int]bool{}}
	dir, err := os.MkdirTemp("/tmp", "stf")
	if err != nil {
		t.Fatal(err)
	}
	w.dir = dir
	w.cleanup = append(w.cleanup, func() { os.RemoveAll(dir) })
	// After close: no process of this world (its TMUX_TMPDIR, HOME and
	// TMPDIR are in the folder) may be left, whatever path the test took.
	testutil.CheckNoLeaks(t, dir)
	t.Cleanup(w.close)
	w.home = home
	if w.home == "" {
		w.home = filepath.Join(dir, "h")
	}
	w.tdir = filepath.Join(dir, "t")
	for _, d := range []string{w.tdir, filepath.Join(dir, "home"), filepath.Join(dir, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	w.sock = filepath.Join(w.tdir, fmt.Sprintf("tmux-%d", os.Getuid()), "default")
	if err := os.MkdirAll(filepath.Dir(w.sock), 0o700); err != nil { // tmux -S does not make it
		t.Fatal(err)
	}
	w.cleanup = append(w.cleanup, w.killServer)
	var base []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ST_") {
			base = append(base, kv)
		}
	}
	w.env = testutil.Env(base,
		"ST_HOME="+w.home, "ST_WEB_PORT=auto",
		"TMUX_TMPDIR="+w.tdir,
		"HOME="+filepath.Join(dir, "home"),
		"TMPDIR="+filepath.Join(dir, "tmp"),
		"PATH="+filepath.Dir(w.bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
	)
	if _, err := w.tmux("-f", "/dev/null", "new-session", "-d", "-s", w.session, "-x", "200", "-y", "50",
		"-c", dir, "-e", "ST_HOME="+w.home, "-e", "PATH="+w.getenv("PATH"), "sh"); err != nil {
		t.Fatal(err)
	}
	out, err := w.tmux("display-message", "-p", "-t", w.session+":", "#{pane_id} #{pid}")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		t.Fatalf("display-message said %q", out)
	}
	w.coord = f[0]
	w.tmuxVar = w.sock + "," + f[1] + ",0"
	return w
}

// close kills this world's daemons (by pid) and its tmux server, and
// removes its folder. It may be called early; cleanup calls it again.
func (w *world) close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	w.mu.Unlock()
	w.notePid()
	for pid := range w.pids {
		stopPid(pid)
	}
	for i := len(w.cleanup) - 1; i >= 0; i-- {
		w.cleanup[i]()
	}
}

// stopPid ends one process that this world started: SIGTERM, then
// SIGKILL if it is still there after 2 s.
func stopPid(pid int) {
	if syscall.Kill(pid, syscall.SIGTERM) != nil {
		return
	}
	for i := 0; i < 200; i++ {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
}

func (w *world) getenv(key string) string {
	for i := len(w.env) - 1; i >= 0; i-- {
		if k, v, _ := strings.Cut(w.env[i], "="); k == key {
			return v
		}
	}
	return ""
}

// tmux runs tmux on this world's server only.
func (w *world) tmux(args ...string) (string, error) {
	cmd := exec.Command("tmux", append([]string{"-S", w.sock}, args...)...)
	cmd.Env = w.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("tmux %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

// killServer ends this world's tmux server and waits for its process to
// go: a server with 100 windows takes seconds to exit on a loaded
// machine, and the leak check after it should see only real leftovers.
func (w *world) killServer() { testutil.KillServer(w.tmux) }

// st is a command of the st binary acting for pane ("" for none).
func (w *world) st(pane string, args ...string) *exec.Cmd {
	cmd := exec.Command(w.bin, args...)
	cmd.Env = append(append([]string(nil), w.env...), "TMUX="+w.tmuxVar, "TMUX_PANE="+pane)
	cmd.Dir = w.dir
	return cmd
}

// run runs a command and returns its combined output.
func run(cmd *exec.Cmd) (string, error) {
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (w *world) must(cmd *exec.Cmd) string {
	w.t.Helper()
	out, err := cmd.CombinedOutput()
	if err != nil {
		w.t.Fatalf("%s: %v\n%s\n%s", strings.Join(cmd.Args, " "), err, out, w.logTail())
	}
	return string(out)
}

// daemonPid is the pid in $ST_HOME/st.pid, 0 when there is none.
func (w *world) daemonPid() int { return testutil.DaemonPID(w.home) }

// notePid remembers the daemon now in st.pid, to stop it at the end.
func (w *world) notePid() int {
	pid := w.daemonPid()
	if pid > 0 {
		w.pids[pid] = true
	}
	return pid
}

// up runs st up and remembers the daemon's pid.
func (w *world) up() int {
	w.t.Helper()
	w.must(w.st(w.coord, "up"))
	pid := w.notePid()
	if pid == 0 {
		w.t.Fatal("st up left no pid in st.pid")
	}
	return pid
}

// kill9 kills this world's daemon with SIGKILL and waits until it is gone.
func (w *world) kill9() {
	w.t.Helper()
	pid := w.notePid()
	if pid == 0 {
		w.t.Fatal("no daemon to kill")
	}
	syscall.Kill(pid, syscall.SIGKILL)
	waitFor(w.t, 10*time.Second, func() (bool, string) {
		// A zombie would answer signal 0; the daemon is st up's
		// grandchild (setsid, reaped by init), so it goes.
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		return err != nil || strings.Contains(string(data), ") Z "), fmt.Sprintf("daemon %d still alive", pid)
	})
}

// logTail is the end of the daemon's log, for failure messages.
func (w *world) logTail() string {
	data, _ := os.ReadFile(filepath.Join(w.home, "daemon.log"))
	s := string(data)
	if len(s) > 4000 {
		s = "..." + s[len(s)-4000:]
	}
	return "daemon.log:\n" + s
}

// logFor is the daemon log's lines that name the lost workers' panes
// or names, and its restarts: what a lost report's story needs.
func (w *world) logFor(lost map[string]string) string {
	data, _ := os.ReadFile(filepath.Join(w.home, "daemon.log"))
	var keep []string
	for _, l := range strings.Split(string(data), "\n") {
		hit := strings.Contains(l, "listening") || strings.Contains(l, "skipping") || strings.Contains(l, "reconcile")
		for name := range lost {
			hit = hit || strings.Contains(l, "("+name+")")
		}
		if hit {
			keep = append(keep, l)
		}
	}
	return "daemon.log, the lines about the lost workers:\n" + strings.Join(keep, "\n")
}

func (w *world) writeFile(name, text string) string {
	w.t.Helper()
	p := filepath.Join(w.dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		w.t.Fatal(err)
	}
	return p
}

// startWorkers starts n sim workers on task, at most par at a time,
// named prefix0..prefixN-1, and returns them in that order.
func (w *world) startWorkers(n, par int, task, prefix string) []api.WorkerView {
	w.t.Helper()
	views := make([]api.WorkerView, n)
	errs := make([]error, n)
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out, err := run(w.st(w.coord, "worker", "start", "--agent", "sim", "--task", task, "--name", fmt.Sprintf("%s%d", prefix, i), "--json"))
			if err != nil {
				errs[i] = fmt.Errorf("st worker start %s%d: %v\n%s", prefix, i, err, out)
				return
			}
			if err := json.Unmarshal([]byte(out), &views[i]); err != nil || views[i].ID == "" {
				errs[i] = fmt.Errorf("st worker start --json said %q (%v)", out, err)
			}
		}(i)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			w.t.Fatalf("%v\n%s", err, w.logTail())
		}
	}
	return views
}

// list is st worker list --all --json.
func (w *world) list() ([]api.WorkerView, error) {
	out, err := w.st(w.coord, "worker", "list", "--all", "--json").Output()
	if err != nil {
		return nil, err
	}
	var vs []api.WorkerView
	if err := json.Unmarshal(out, &vs); err != nil {
		return nil, fmt.Errorf("st worker list --json: %v: %q", err, out)
	}
	return vs, nil
}

// runs reads every run.json under ST_HOME (written atomically, so a
// read never sees half a file).
func (w *world) runs() []*orch.Run {
	matches, _ := filepath.Glob(filepath.Join(w.home, "orch", "*", "run.json"))
	var rs []*orch.Run
	for _, m := range matches {
		data, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		var r orch.Run
		if json.Unmarshal(data, &r) == nil {
			rs = append(rs, &r)
		}
	}
	return rs
}

// onDisk counts the workers whose report on disk has the given summary
// prefix.
func (w *world) onDisk(prefix string) int {
	n := 0
	for _, r := range w.runs() {
		for _, wk := range r.Workers {
			// A later report of the same turn is kept after the first
			// ("Reported again: ...", issue 37): the attempt's is there
			// when it starts the summary or follows that mark.
			if wk.State == api.Done && (strings.HasPrefix(wk.Summary, prefix) || strings.Contains(wk.Summary, "Reported again: "+prefix)) {
				n++
			}
		}
	}
	return n
}

// waitFor polls cond with a deadline.
func waitFor(t testing.TB, d time.Duration, cond func() (bool, string)) {
	t.Helper()
	testutil.WaitFor(t, d, cond)
}

// trials is how many times each fault runs: small for CI, the full
// counts of issue 8 when ST_FAULTS_FULL=1 (scripts/faults).
func trials(ci, full int) int {
	if os.Getenv("ST_FAULTS_FULL") == "1" {
		return full
	}
	return ci
}

// report prints the line scripts/faults collects:
// FAULT name trials losses what-a-loss-is.
func report(t testing.TB, name string, trials, losses int, what string) {
	t.Helper()
	line := fmt.Sprintf("FAULT %s %d %d %s", name, trials, losses, what)
	fmt.Println(line)
	t.Log(line)
}

func jitter(lo, hi int) int { return lo + rand.IntN(hi-lo+1) }

// layoutText is st's picture of the tmux server, $ST_HOME/tmux-layout.json.
func layoutText(w *world) string {
	data, _ := os.ReadFile(filepath.Join(w.home, "tmux-layout.json"))
	return string(data)
}
