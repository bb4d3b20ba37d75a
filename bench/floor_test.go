package bench

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sophonz/st/bench/benchfig"
	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/orch"
	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/tmux"
)

// The floors: what st's figures are divided by. Each is measured in the
// same run as its figure, under the same load, so that the ratio holds
// where the absolute times move 2-5x with the machine's load.

// versionTime is the wall time of one bare `st version` process: the
// least any st command costs (the binary's start-up, a line, the exit).
func (r *rig) versionTime() time.Duration {
	t0 := time.Now()
	r.mustRun(r.st(r.coord, "version"))
	return time.Since(t0)
}

// plainServer is a second tmux server of the rig, one that st knows
// nothing of: floors measured on it pay nothing for st's daemon, which
// hears of every change on its own server. Its panes run the sim with
// ST_BIN a shell script that notes each hook as a line "PANE EVENT" in
// a file and does nothing else, so the sim's start costs what the sim
// itself costs.
type plainServer struct {
	r       *rig
	sock    string
	pid     int // the server's
	env     []string
	session string
	fake    string // the ST_BIN of its sims
	hooks   *hookLog
}

func newPlainServer(b *testing.B, r *rig, name string) *plainServer {
	b.Helper()
	// A folder of its own each time: a hook log of an earlier server
	// (with the same pane ids) must not answer for this one.
	plainServers++
	name = fmt.Sprintf("%s-%d", name, plainServers)
	dir := filepath.Join(r.dir, name)
	tm := testutil.NewTmux(b, dir) // kills the server at the end
	if err := os.MkdirAll(filepath.Dir(tm.Socket), 0o700); err != nil {
		b.Fatal(err)
	}
	log := filepath.Join(dir, "hooks.log")
	s := &plainServer{r: r, sock: tm.Socket, session: "plain", hooks: newHookLog(b, log)}
	s.fake = r.writeFile(name+"-fakest", "#!/bin/sh\ncat >/dev/null\n"+
		"if [ \"$1\" = hook ]; then echo \"$TMUX_PANE $3\" >>"+tmux.ShellJoin([]string{log})+"; fi\nexit 0\n", 0o755)
	// No ST_HOME of the rig's: nothing on this server can reach st.
	s.env = testutil.Env(r.env, "TMUX_TMPDIR="+dir, "ST_HOME="+filepath.Join(dir, "no-st"))
	if _, err := s.tmux("-f", "/dev/null", "new-session", "-d", "-s", s.session, "-x", "200", "-y", "50", "-c", r.dir, "sh"); err != nil {
		b.Fatal(err)
	}
	out, err := s.tmux("display-message", "-p", "#{pid}")
	if err != nil {
		b.Fatal(err)
	}
	fmt.Sscan(out, &s.pid)
	return s
}

// plainServers counts the plain servers made (benchmarks run one at a
// time).
var plainServers int

func (s *plainServer) tmux(args ...string) (string, error) { return runTmux(s.sock, s.env, args...) }

// openSim opens a window running the sim, as st opens a worker's, and
// returns its pane.
func (s *plainServer) openSim(name string) (string, error) {
	out, err := s.tmux("new-window", "-d", "-P", "-F", "#{pane_id}", "-t", s.session+":", "-n", name, "-c", s.r.dir,
		"-e", "ST_BIN="+s.fake, "-e", "PATH="+s.r.getenv("PATH"), tmux.ShellJoin([]string{s.r.bin, "agent", "sim"}))
	return strings.TrimSpace(out), err
}

// close ends the server (and so every sim on it), and waits for it to
// end: with a hundred sims, tmux takes seconds to end its panes on a
// loaded machine, which must not weigh on what is measured next.
func (s *plainServer) close() {
	s.hooks.stop()
	endProcess(s.pid)
}

// directOpens opens n windows running the sim at once, straight in tmux
// with no st, and drives each the least a driver can: it types the task
// line once the sim's SessionStart hook fired (the sim fires it as it
// draws its input box, ready for keys: no screen polling), presses Enter
// after the sim's Enter delay (the pause st keeps too), and is done at
// the UserPromptSubmit hook, which is when `st worker start` returns.
// It returns the time until every sim took its task, and the time until
// every box showed. It is the floor of n workers started at once and of
// n dependents of one task started.
func directOpens(b *testing.B, r *rig, n int, task string) (all, boxes time.Duration) {
	b.Helper()
	s := newPlainServer(b, r, fmt.Sprintf("direct%d", n))
	defer s.close()
	line := orch.TaskLine(r.bin, task)
	ad, err := agent.Lookup("sim")
	if err != nil {
		b.Fatal(err)
	}
	type result struct {
		box, done time.Time
		err       error
	}
	res := make([]result, n)
	var wg sync.WaitGroup
	t0 := time.Now()
	by := t0.Add(3 * time.Minute)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			rs := &res[i]
			pane, err := s.openSim(fmt.Sprintf("d%d", i))
			if err != nil {
				rs.err = err
				return
			}
			if rs.box, err = s.hooks.wait(pane, "SessionStart", by); err != nil {
				rs.err = err
				return
			}
			if _, err := s.tmux("send-keys", "-t", pane, "-l", "--", line); err != nil {
				rs.err = err
				return
			}
			time.Sleep(ad.EnterDelay()) // the sim's own pause, as st keeps it
			if _, err := s.tmux("send-keys", "-t", pane, "Enter"); err != nil {
				rs.err = err
				return
			}
			rs.done, rs.err = s.hooks.wait(pane, "UserPromptSubmit", by)
			if rs.err != nil {
				screen, _ := s.tmux("capture-pane", "-p", "-t", pane)
				rs.err = fmt.Errorf("%v; its screen:\n%s", rs.err, screen)
			}
		}(i)
	}
	wg.Wait()
	var last, lastBox time.Time
	for i, rs := range res {
		if rs.err != nil {
			b.Fatalf("direct open %d of %d: %v", i, n, rs.err)
		}
		if rs.done.After(last) {
			last = rs.done
		}
		if rs.box.After(lastBox) {
			lastBox = rs.box
		}
	}
	return last.Sub(t0), lastBox.Sub(t0)
}

// newWindowFloor is the median wall time of k `tmux new-window` processes
// that open a window running the sim (each closed again), on a server st
// does not follow: the least it takes to open a worker's window.
func newWindowFloor(b *testing.B, r *rig, k int) time.Duration {
	b.Helper()
	s := newPlainServer(b, r, "windows")
	defer s.close()
	var ds []time.Duration
	for i := 0; i < k; i++ {
		t0 := time.Now()
		pane, err := s.openSim(fmt.Sprintf("w%d", i))
		if err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
		s.tmux("kill-pane", "-t", pane)
	}
	return benchfig.NewStats(ds).Median()
}

// newSessionFloor is the median wall time of k `tmux new-session`
// processes, each of one session (a shell) on a server of its own that it
// starts, as st's restore must: the least it takes to bring a session
// back after the server went.
func newSessionFloor(b *testing.B, r *rig, k int) time.Duration {
	b.Helper()
	dir := filepath.Join(r.dir, "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	var ds []time.Duration
	for i := 0; i < k; i++ {
		sock := filepath.Join(dir, fmt.Sprintf("s%d", i))
		env := testutil.Env(r.env, "TMUX_TMPDIR="+dir)
		run := func(args ...string) error {
			_, err := runTmux(sock, env, args...)
			return err
		}
		b.Cleanup(func() { run("kill-server") })
		t0 := time.Now()
		if err := run("-f", "/dev/null", "new-session", "-d", "-s", "f", "-x", "200", "-y", "50", "-c", r.dir, "sh"); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
		run("kill-server")
	}
	return benchfig.NewStats(ds).Median()
}

// hookLog follows the file where a plainServer's fake ST_BIN notes
// hooks, with one reader for all waiters (a file read every 2 ms, so
// that a hundred waiters cost no more than one).
type hookLog struct {
	path string
	mu   sync.Mutex
	cond *sync.Cond
	seen map[string]time.Time // "PANE EVENT" -> when first read
	quit chan struct{}
	once sync.Once
}

func newHookLog(b *testing.B, path string) *hookLog {
	h := &hookLog{path: path, seen: map[string]time.Time{}, quit: make(chan struct{})}
	h.cond = sync.NewCond(&h.mu)
	go h.follow()
	b.Cleanup(h.stop)
	return h
}

func (h *hookLog) stop() { h.once.Do(func() { close(h.quit) }) }

func (h *hookLog) follow() {
	var off int64
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-h.quit:
			h.cond.Broadcast()
			return
		case <-tick.C:
		}
		if f, err := os.Open(h.path); err == nil {
			f.Seek(off, 0)
			sc := bufio.NewScanner(f)
			now := time.Now()
			h.mu.Lock()
			for sc.Scan() {
				l := sc.Text()
				off += int64(len(l)) + 1
				if _, ok := h.seen[l]; !ok {
					h.seen[l] = now
				}
			}
			h.mu.Unlock()
			f.Close()
		}
		// Every tick, so that waiters see their deadlines too.
		h.cond.Broadcast()
	}
}

// wait returns when pane's event was first read, or an error at by.
func (h *hookLog) wait(pane, event string, by time.Time) (time.Time, error) {
	key := pane + " " + event
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		if at, ok := h.seen[key]; ok {
			return at, nil
		}
		select {
		case <-h.quit:
			return time.Time{}, fmt.Errorf("no %s hook from %s: stopped", event, pane)
		default:
		}
		if time.Now().After(by) {
			return time.Time{}, fmt.Errorf("no %s hook from %s in time", event, pane)
		}
		h.cond.Wait()
	}
}
