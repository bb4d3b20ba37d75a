package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sophonz/st/bench/benchfig"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/testutil"
)

// rig is one benchmark's world: the st binary, a private tmux server with
// a session whose first pane is a plain sh (the coordinator), and, once
// up is called, a daemon of a private ST_HOME. Cleanup kills that daemon
// (by the pid in $ST_HOME/st.pid) and that tmux server, nothing else.
type rig struct {
	b       *testing.B
	bin     string // the st binary
	dir     string // the short temporary folder everything lives in
	home    string // ST_HOME
	tm      *testutil.Tmux
	env     []string // the environment of every command: no outer TMUX, ST_*
	tmuxVar string   // $TMUX of a pane of the private server
	coord   string   // the coordinator's pane
	session string
}

func newRig(b *testing.B) *rig {
	b.Helper()
	r := &rig{b: b, bin: stUnderTest(b), dir: testutil.ShortTempDir(b), session: "bench"}
	r.home = filepath.Join(r.dir, "h")
	tdir := filepath.Join(r.dir, "t")
	for _, d := range []string{tdir, filepath.Join(r.dir, "home"), filepath.Join(r.dir, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			b.Fatal(err)
		}
	}
	r.tm = testutil.NewTmux(b, tdir)
	// tmux -S does not make the socket's folder.
	if err := os.MkdirAll(filepath.Dir(r.tm.Socket), 0o700); err != nil {
		b.Fatal(err)
	}
	var base []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ST_") {
			base = append(base, kv)
		}
	}
	r.env = testutil.Env(base,
		"ST_HOME="+r.home, "ST_WEB_PORT=auto",
		"TMUX_TMPDIR="+tdir,
		"HOME="+filepath.Join(r.dir, "home"),
		"TMPDIR="+filepath.Join(r.dir, "tmp"), // the sim's transcripts
		"PATH="+filepath.Dir(r.bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
	)
	if _, err := r.tmux("-f", "/dev/null", "new-session", "-d", "-s", r.session, "-x", "200", "-y", "50",
		"-c", r.dir, "-e", "ST_HOME="+r.home, "-e", "PATH="+r.getenv("PATH"), "sh"); err != nil {
		b.Fatal(err)
	}
	// After the daemon's end (cleanups run last-in first-out, and up
	// registers its own later): the server, whichever st last brought
	// back, is ended and waited for. With a hundred agents on it, tmux
	// takes seconds to end its panes on a loaded machine, longer than
	// the harness waits for a test's processes to go.
	b.Cleanup(func() {
		if out, err := r.tmux("display-message", "-p", "#{pid}"); err == nil {
			var pid int
			fmt.Sscan(out, &pid)
			endProcess(pid)
		}
	})
	out, err := r.tmux("display-message", "-p", "-t", r.session+":", "#{pane_id} #{pid}")
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		b.Fatalf("display-message said %q", out)
	}
	r.coord = f[0]
	r.tmuxVar = r.tm.Socket + "," + f[1] + ",0"
	return r
}

// stUnderTest is the st binary the benchmarks drive: the one built from
// this tree, or $ST_BENCH_ST, an st built elsewhere (an earlier commit's,
// for figures before and after a change in the same session, runs in
// turns).
func stUnderTest(b *testing.B) string {
	if p := os.Getenv("ST_BENCH_ST"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			b.Fatalf("ST_BENCH_ST=%s: %v", p, err)
		}
		return p
	}
	return testutil.BuildST(b)
}

func (r *rig) getenv(key string) string {
	for i := len(r.env) - 1; i >= 0; i-- {
		if k, v, _ := strings.Cut(r.env[i], "="); k == key {
			return v
		}
	}
	return ""
}

// tmux runs tmux on the private server only.
func (r *rig) tmux(args ...string) (string, error) { return runTmux(r.tm.Socket, r.env, args...) }

// runTmux runs tmux on the server of socket sock, with env.
func runTmux(sock string, env []string, args ...string) (string, error) {
	cmd := exec.Command("tmux", append([]string{"-S", sock}, args...)...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("tmux %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

// st is a command of the st binary acting for pane.
func (r *rig) st(pane string, args ...string) *exec.Cmd {
	cmd := exec.Command(r.bin, args...)
	cmd.Env = append(append([]string(nil), r.env...), "TMUX="+r.tmuxVar, "TMUX_PANE="+pane)
	cmd.Dir = r.dir
	return cmd
}

func (r *rig) mustRun(cmd *exec.Cmd) string {
	r.b.Helper()
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.b.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return string(out)
}

// up starts the daemon, and kills it by its pid at the end.
func (r *rig) up() {
	r.b.Helper()
	r.mustRun(r.st(r.coord, "up"))
	data, err := os.ReadFile(filepath.Join(r.home, "st.pid"))
	if err != nil {
		r.b.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 {
		r.b.Fatalf("st.pid holds %q", data)
	}
	r.b.Cleanup(func() {
		syscall.Kill(pid, syscall.SIGTERM)
		for i := 0; i < 200; i++ {
			if syscall.Kill(pid, 0) != nil {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		syscall.Kill(pid, syscall.SIGKILL)
	})
}

// explain is what a failure shows: the daemon's log and a pane's screen.
func (r *rig) explain(pane string) string {
	log, _ := os.ReadFile(filepath.Join(r.home, "daemon.log"))
	screen, _ := r.tmux("capture-pane", "-p", "-t", pane)
	return fmt.Sprintf("daemon.log:\n%s\nscreen of %s:\n%s", log, pane, screen)
}

// writeFile writes a file into the rig's folder. A task file must not be
// executable: the sim never takes an executable file for its task.
func (r *rig) writeFile(name, text string, mode os.FileMode) string {
	r.b.Helper()
	p := filepath.Join(r.dir, name)
	if err := os.WriteFile(p, []byte(text), mode); err != nil {
		r.b.Fatal(err)
	}
	return p
}

// requestSent reports whether process pid has a socket open and has
// written at least an HTTP request's worth of bytes: the st client's call
// is on its way to the daemon. ok is false when /proc cannot tell.
func requestSent(pid int) (sent, ok bool) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return false, false
	}
	sock := false
	for _, fd := range fds {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && strings.HasPrefix(l, "socket:") {
			sock = true
			break
		}
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return sock, false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "wchar: "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			// An HTTP request is a few hundred bytes; the Go runtime's
			// own writes (an eventfd's 8 bytes) are not.
			return sock && n >= 100, true
		}
	}
	return sock, false
}

// BenchmarkWaitAfterDone measures the time from `st worker done` (started
// as a process) to the return of an `st worker wait` that was already
// waiting, over 100 reports of one sim worker, against a bare
// `st version` process (one after each report: the floor, the least any
// st command costs). It also reports the wall time of the `st worker
// done` process itself, to show how much of it is a process's start-up.
// Every third round also ends a turn with the agent's Stop hook (`st hook
// sim Stop` with Claude's payload, run in the worker's pane by its hook
// relay, a child of the sim as an agent's hook is: see relayScript) and
// times the wait's return (the worker idle, exit 2): from the write that
// releases the relay, through the hook process's start, st's check that
// it runs in that pane and its event, to st's state showing the turn
// ended, against the same floor. (Before st checked where a hook event
// comes from, the benchmark ran the hook process itself with the
// worker's $TMUX_PANE; st now refuses that, and the relay's wake-up and
// the shell's fork stand in for the benchmark's exec.) relay_version is
// the relay's own floor: a bare `st version` that the relay starts, timed
// the same way, beside the one the benchmark starts.
func BenchmarkWaitAfterDone(b *testing.B) {
	const reports, warmup = 100, 3
	r := newRig(b)
	r.up()
	// The worker's task is its hook relay: its turn stays in that tool
	// call, as with a long sleep, and its hooks come from its pane.
	relay, line := newHookRelay(b, r.dir, "relay-w", r.bin)
	task := relay.taskFile(b, line)
	var v api.WorkerView
	out := r.mustRun(r.st(r.coord, "worker", "start", "--agent", "sim", "--task", task, "--name", "w", "--json"))
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.ID == "" {
		b.Fatalf("st worker start --json said %q (%v)", out, err)
	}
	relay.ready(b, 30*time.Second)
	w := &relayWorker{id: v.ID, session: v.AgentSession, relay: relay}
	var lat, doneWall, after, stop, version, relayVersion []time.Duration
	fallback := 0
	b.ResetTimer()
	for i := 0; i < reports+warmup; i++ {
		rt := waitAfterDone(b, r, w)
		var st reportTiming
		if i%3 == 0 {
			st = waitAfter(b, r, w, byStopHook)
		}
		vt := r.versionTime()
		if rt.fallback || st.fallback {
			fallback++
		}
		if i >= warmup {
			lat = append(lat, rt.lat)
			doneWall = append(doneWall, rt.doneWall)
			after = append(after, rt.after)
			version = append(version, vt)
			if i%3 == 0 {
				stop = append(stop, st.lat)
				relayVersion = append(relayVersion, relay.versionTime(b))
			}
		}
	}
	b.StopTimer()

	l, d, a, sv, sp := benchfig.NewStats(lat), benchfig.NewStats(doneWall), benchfig.NewStats(after), benchfig.NewStats(version), benchfig.NewStats(stop)
	if fallback > 0 {
		fmt.Printf("note: /proc could not tell when the wait had sent its request %d times; slept 30 ms instead\n", fallback)
	}
	fmt.Printf("wait after done over %d reports: median %.1f ms, p99 %.1f ms (min %.1f, max %.1f); "+
		"st worker done process: median %.1f ms, p99 %.1f ms; the wait's return after that process ended: median %.1f ms; "+
		"st version process: median %.1f ms; Stop hook to the wait's return over %d turns: median %.1f ms, p99 %.1f ms\n",
		len(l), benchfig.Ms(l.Median()), benchfig.Ms(l.Pct(99)), benchfig.Ms(l[0]), benchfig.Ms(l[len(l)-1]), benchfig.Ms(d.Median()), benchfig.Ms(d.Pct(99)), benchfig.Ms(a.Median()),
		benchfig.Ms(sv.Median()), len(sp), benchfig.Ms(sp.Median()), benchfig.Ms(sp.Pct(99)))
	benchfig.RatioMs(b, "wait_after_done_median", l.Median(), sv.Median())
	benchfig.Figure(b, "wait_after_done_p99", benchfig.Ms(l.Pct(99)), "ms")
	benchfig.Figure(b, "done_process_median", benchfig.Ms(d.Median()), "ms")
	benchfig.Figure(b, "done_process_p99", benchfig.Ms(d.Pct(99)), "ms")
	// How long after the done process ended the wait returned (negative
	// when the wait's exit was seen first).
	benchfig.Figure(b, "wait_after_done_exit_median", benchfig.Ms(a.Median()), "ms")
	benchfig.RatioMs(b, "stop_hook_to_idle_median", sp.Median(), sv.Median())
	benchfig.Figure(b, "stop_hook_to_idle_p99", benchfig.Ms(sp.Pct(99)), "ms")
	// The relay's own cost: a bare st version started by the relay (timed
	// as the Stop hook is) against one the benchmark starts.
	benchfig.RatioMs(b, "relay_version_median", benchfig.NewStats(relayVersion).Median(), sv.Median())
}

// BenchmarkStartOverhead measures what st adds to a worker's start beyond
// the sim agent's own start. The baseline opens a window running
// `st agent sim` directly, with ST_BIN a shell script that notes the
// UserPromptSubmit hook in a file, polls the screen every 5 ms for the
// empty input box, types a line like st's, presses Enter 80 ms later and
// stops the clock when the hook fires. The st figure is the wall time of
// `st worker start --agent sim`, which returns once the daemon has the
// same hook. The two are interleaved so that both see the same load.
func BenchmarkStartOverhead(b *testing.B) {
	const n, warmup = 20, 1
	r := newRig(b)
	r.up()
	task := r.writeFile("task.md", "sleep: 600s\n", 0o644)
	withST := func(i int) time.Duration {
		t0 := time.Now()
		out := r.mustRun(r.st(r.coord, "worker", "start", "--agent", "sim", "--task", task, "--name", fmt.Sprintf("w%d", i), "--json"))
		d := time.Since(t0)
		var v api.WorkerView
		if err := json.Unmarshal([]byte(out), &v); err != nil || v.Window == "" {
			b.Fatalf("st worker start --json said %q (%v)", out, err)
		}
		r.tmux("kill-window", "-t", v.Window)
		return d
	}

	var base, st []time.Duration
	b.ResetTimer()
	for i := 0; i < n+warmup; i++ {
		bd := baselineStart(b, r, i)
		sd := withST(i)
		if i >= warmup {
			base = append(base, bd)
			st = append(st, sd)
		}
	}
	b.StopTimer()

	bs, ss := benchfig.NewStats(base), benchfig.NewStats(st)
	diff := ss.Median() - bs.Median()
	ratio := float64(ss.Median()) / float64(bs.Median())
	fmt.Printf("start over %d starts each: sim with a minimal driver median %.1f ms, p90 %.1f ms; "+
		"st worker start median %.1f ms, p90 %.1f ms; st adds %.1f ms (x%.2f)\n",
		len(bs), benchfig.Ms(bs.Median()), benchfig.Ms(bs.Pct(90)), benchfig.Ms(ss.Median()), benchfig.Ms(ss.Pct(90)), benchfig.Ms(diff), ratio)
	// The floor is the sim's own start (start_st_median_floor).
	benchfig.RatioMs(b, "start_st_median", ss.Median(), bs.Median())
	benchfig.Figure(b, "start_baseline_p90", benchfig.Ms(bs.Pct(90)), "ms")
	benchfig.Figure(b, "start_st_p90", benchfig.Ms(ss.Pct(90)), "ms")
	benchfig.Figure(b, "start_overhead_median", benchfig.Ms(diff), "ms")
}

// emptyBox reports whether a captured screen has the sim's empty input
// box: a line that is ❯ and a no-break space.
func emptyBox(screen string) bool {
	for _, l := range strings.Split(screen, "\n") {
		if strings.TrimRight(l, " \r") == "❯\u00a0" {
			return true
		}
	}
	return false
}

// stats is a sample of durations, sorted (benchfig.Stats).
type stats = benchfig.Stats
