package real

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/client"
	"github.com/sophonz/st/internal/hooks"
	"github.com/sophonz/st/internal/testutil"
)

// BenchmarkRealHookState measures hook → state for each real agent: from
// the moment the agent's own hook process starts (its turn's prompt
// submitted, its turn ended) to st's API first showing the state that
// hook moves the worker to (working, idle). A hook speaks only for its
// own pane, so the hooks are the real agent's: st's hooks are installed
// with the path of a small program (internal/testutil/hookstamp) in place
// of st's, which notes its start on the benchmark's socket and then runs
// st with the same arguments. For opencode the hook is st's plugin inside
// opencode: the start is the st process the plugin spawns for the event
// (the plugin's own handler, JavaScript in opencode's process, comes
// before it and is not counted).
//
// The benchmark starts a worker of the kind, waits for its first turn to
// end, then sends it ST_BENCH_TURNS lines (default 5), one turn each, and
// for each turn reads st's state through the daemon's socket (st worker
// read's route) from the hook's start until it shows the new state;
// "first seen" is the return of the first read that shows it, so the
// figure includes one read (its median printed as _poll). The floor, in
// the same run, before each turn: a bare `st version` started through the
// same program, start to exit; beside it, a bare hook (hook_bare_KIND):
// `st hook KIND EVENT` with a payload of {} from outside any pane, which
// reaches the daemon and moves nothing. It also prints where the time went: to
// the daemon's log line of the move (_in_memory: the state set, before
// the change is on disk, which a read waits for), to the agent's closing
// the hook's stdin (hook_payload_KIND: the event's payload handed over),
// the hook's own process, start to exit (hook_process_KIND), the CPU
// time st used in it and in the floor (hook_process_cpu_KIND,
// hook_floor_cpu_KIND: a hook whose wall time is many times its CPU time
// waited), and the time st's main thread waited for a core in them
// (hook_process_waited_KIND, hook_floor_waited_KIND, the scheduler's own
// count).
//
//	go test -run '^$' -bench RealHookState -benchtime 1x ./tests/real/
//
// (every kind of kinds(); ST_COMPAT_KIND=gemini for one).
func BenchmarkRealHookState(b *testing.B) {
	n := 5
	if v := os.Getenv("ST_BENCH_TURNS"); v != "" {
		if _, err := fmt.Sscan(v, &n); err != nil || n < 1 {
			b.Fatalf("ST_BENCH_TURNS=%q: want a number of turns, 1 or more", v)
		}
	}
	for _, kind := range kinds(b) {
		b.Run(kind, func(b *testing.B) {
			h := newHookBench(b, kind)
			h.run(n)
			h.print()
		})
	}
}

// stamp is one note of the hookstamp program.
type stamp struct {
	what   string // start, stdin (the payload's end) or end
	pid    int
	at     time.Time
	status int
	cpu    time.Duration // st's CPU time, user and system (end)
	faults int           // st's major page faults (end)
	waited time.Duration // st's main thread's time waiting for a core (end; < 0: unknown)
	args   []string
}

// hookBench is one kind's run.
type hookBench struct {
	b       *testing.B
	r       *rig
	kind    string
	name    string
	means   map[string]agent.EventKind // the kind's hook events
	wrapper string
	stamps  chan stamp
	c       *client.Client
	// The samples.
	toWorking, toIdle, procs, floor, polls []time.Duration
	inMemory                               []time.Duration // to the daemon's log line of the move
	payloads                               []time.Duration // to the agent's closing the hook's stdin
	procCPU, floorCPU                      []time.Duration // st's CPU time in the hook, in the floor
	procWaited, floorWaited                []time.Duration // st's main thread's wait for a core, the same
	bareHook                               []time.Duration // st hook from outside any pane, start to exit
	faults                                 int             // major page faults of the measured hooks' st
	missed                                 int             // turns whose state never showed
	quiet                                  int             // turns st ended from the screen, not the hook
}

func newHookBench(b *testing.B, kind string) *hookBench {
	r := newRig(b)
	h := &hookBench{b: b, r: r, kind: kind, name: "hs-" + kind, means: map[string]agent.EventKind{}}
	for _, e := range mustAdapter(b, kind).Hear.Events {
		h.means[e.Name] = e.Means
	}
	sock := filepath.Join(r.dir, "stamps.sock")
	h.stamps = listenStamps(b, sock)
	h.wrapper = buildHookStamp(b, r.dir, r.st, sock)
	env := map[string]string{}
	for _, kv := range r.env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	rep, err := hooks.Install(context.Background(), hooks.Options{
		Getenv: func(k string) string { return env[k] }, Environ: r.env, St: h.wrapper, Agents: []string{kind},
	})
	if err != nil {
		b.Fatalf("install %s's hooks with hookstamp: %v", kind, err)
	}
	for _, a := range rep.Agents {
		if a.Error != "" || len(a.Missing) > 0 {
			b.Fatalf("install %s's hooks with hookstamp: %s %s (missing %v)", a.Agent, a.Error, a.Hint, a.Missing)
		}
	}
	h.c = client.New(r.stHome, r.sock+",1,0")
	return h
}

// buildHookStamp builds internal/testutil/hookstamp into dir, to run st
// and note on sock. It is named st, in a folder of its own: st takes a
// hook command whose program is named st as its own (hooks.stProgram), so
// the hooks it installs with it are st's hooks to st hooks status.
func buildHookStamp(b *testing.B, dir, st, sock string) string {
	b.Helper()
	bin := filepath.Join(dir, "hookstamp", "st")
	cmd := exec.Command("go", "build", "-o", bin,
		"-ldflags", "-X main.stBin="+st+" -X main.stampSock="+sock, "./internal/testutil/hookstamp")
	cmd.Dir = testutil.ModuleRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build hookstamp: %v\n%s", err, out)
	}
	return bin
}

// listenStamps receives hookstamp's notes on sock until the benchmark
// ends. A note that is not one is dropped: the socket takes datagrams from
// any process of this user.
func listenStamps(b *testing.B, sock string) chan stamp {
	b.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		b.Fatalf("listen for hookstamp's notes: %v", err)
	}
	b.Cleanup(func() { conn.Close() })
	c := make(chan stamp, 4096)
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, _, err := conn.ReadFromUnix(buf)
			if err != nil {
				return
			}
			if s, ok := parseStamp(string(buf[:n])); ok {
				select {
				case c <- s:
				default: // full: the benchmark is not reading
				}
			}
		}
	}()
	return c
}

func parseStamp(line string) (stamp, bool) {
	f := strings.Fields(line)
	if len(f) < 7 || (f[0] != "start" && f[0] != "stdin" && f[0] != "end") {
		return stamp{}, false
	}
	pid, err1 := strconv.Atoi(f[1])
	ns, err2 := strconv.ParseInt(f[2], 10, 64)
	status, err3 := strconv.Atoi(f[3])
	cpu, err4 := strconv.ParseInt(f[4], 10, 64)
	faults, err5 := strconv.Atoi(f[5])
	waited, err6 := strconv.ParseInt(f[6], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || err5 != nil || err6 != nil {
		return stamp{}, false
	}
	return stamp{what: f[0], pid: pid, at: time.Unix(0, ns), status: status, cpu: time.Duration(cpu) * time.Microsecond,
		faults: faults, waited: time.Duration(waited) * time.Microsecond, args: f[7:]}, true
}

// run starts the worker, lets its first turn end, and measures n turns.
func (h *hookBench) run(n int) {
	r := h.r
	task := r.writeTask(h.name+".md", "Say you are ready.\nSAY: ready\n")
	if o, e, code := r.st1("worker", "start", "--agent", h.kind, "--task", task, "--name", h.name); code != 0 {
		h.b.Fatalf("%s: st worker start: exit %d\n%s%s\n%s\n%s", h.kind, code, o, e, r.capture("main:"+h.name), r.daemonLog())
	}
	if o, e, code := r.st1("worker", "wait", h.name, "--timeout", "240s"); code != 2 || !strings.Contains(o, "idle") {
		h.b.Fatalf("%s: its first turn: st worker wait: exit %d\n%s%s\n%s", h.kind, code, o, e, r.capture("main:"+h.name))
	}
	for i := 0; i < n; i++ {
		for j := 0; j < 3; j++ {
			h.floors()
		}
		h.turn(i)
	}
	r.st1("worker", "stop", h.name, "--yes")
}

// floorRun runs st with args through hookstamp, in the rig's environment
// and outside any pane, with payload on its stdin, and returns its note of
// st's end and st's time from start to exit.
func (h *hookBench) floorRun(payload string, args ...string) (stamp, time.Duration) {
	h.drain()
	cmd := exec.Command(h.wrapper, args...)
	cmd.Env = h.r.env
	cmd.Stdin = strings.NewReader(payload)
	if out, err := cmd.CombinedOutput(); err != nil {
		h.b.Fatalf("hookstamp %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	var start time.Time
	deadline := time.After(10 * time.Second)
	for {
		select {
		case s := <-h.stamps:
			if s.pid != cmd.Process.Pid {
				continue
			}
			if s.what == "start" {
				start = s.at
			} else if s.what == "end" && !start.IsZero() {
				return s, s.at.Sub(start)
			}
		case <-deadline:
			h.b.Fatalf("hookstamp's notes of st %s never came", strings.Join(args, " "))
		}
	}
}

// floors measures the two floors once each: a bare `st version`, and a
// bare hook, `st hook KIND EVENT` (the turn's end) with a payload of {}
// from outside any pane, which reaches the daemon and moves nothing.
func (h *hookBench) floors() {
	s, d := h.floorRun("", "version")
	h.floor = append(h.floor, d)
	h.floorCPU = append(h.floorCPU, s.cpu)
	if s.waited >= 0 {
		h.floorWaited = append(h.floorWaited, s.waited)
	}
	_, d = h.floorRun("{}", "hook", h.kind, h.endEvent())
	h.bareHook = append(h.bareHook, d)
}

// endEvent is the kind's event of a turn's end.
func (h *hookBench) endEvent() string {
	for _, e := range mustAdapter(h.b, h.kind).Hear.Events {
		if e.Means == agent.EvTurnEnd {
			return e.Name
		}
	}
	h.b.Fatalf("%s has no event of a turn's end", h.kind)
	return ""
}

// drain drops the notes of hooks that are not measured (a turn's tools,
// the end of the last one's processes).
func (h *hookBench) drain() {
	for {
		select {
		case <-h.stamps:
		default:
			return
		}
	}
}

// turn sends one line to the worker and measures the two hooks of its
// turn that move its state: its prompt submitted (to working) and its end
// (to idle).
func (h *hookBench) turn(i int) {
	r := h.r
	logPath := filepath.Join(r.stHome, "daemon.log")
	logFrom := logSize(logPath)
	h.drain()
	sent := make(chan string, 1)
	go func() { sent <- h.send(fmt.Sprintf("SAY: turn-%d", i)) }()
	deadline := time.After(180 * time.Second)
	measured := map[int]time.Time{} // the measured hooks' pids: their start
	starts := map[api.State]time.Time{}
	want := api.Working
	for want != "" || len(measured) > 0 {
		var s stamp
		select {
		case s = <-h.stamps:
		case <-deadline:
			h.b.Fatalf("%s: turn %d: no hook moved it to %q within 180 s (or a hook's end was not noted)\n%s\n%s",
				h.kind, i, want, r.capture("main:"+h.name), r.daemonLog())
		}
		if t0, ok := measured[s.pid]; ok && s.what == "stdin" {
			h.payloads = append(h.payloads, s.at.Sub(t0))
		}
		if t0, ok := measured[s.pid]; ok && s.what == "end" {
			h.procs = append(h.procs, s.at.Sub(t0))
			h.procCPU = append(h.procCPU, s.cpu)
			if s.waited >= 0 {
				h.procWaited = append(h.procWaited, s.waited)
			}
			h.faults += s.faults
			delete(measured, s.pid)
		}
		if s.what != "start" {
			continue
		}
		ev := h.event(s)
		if !(want == api.Working && ev == agent.EvTurnStart) && !(want == api.Idle && ev == agent.EvTurnEnd) {
			continue
		}
		measured[s.pid] = s.at
		starts[want] = s.at
		h.seen(want, s.at)
		if want == api.Working {
			want = api.Idle
		} else {
			want = ""
		}
	}
	if e := <-sent; e != "" {
		h.b.Fatalf("%s: turn %d: %s", h.kind, i, e)
	}
	log := logSince(logPath, logFrom)
	if strings.Contains(log, "its turn was interrupted") {
		h.quiet++ // st ended the turn from its screen: the hook was late
	}
	h.applied(log, "idle", api.Working, starts[api.Working])
	h.applied(log, "working", api.Idle, starts[api.Idle])
}

// applied keeps the time from the hook's start at t0 to the daemon's log
// line of the worker's move from one state to want: when st set the state
// in memory, before the change went to disk and a read could show it. The
// log's clock has milliseconds, cut (not rounded): the figure may be up
// to 1 ms short.
func (h *hookBench) applied(log, from string, want api.State, t0 time.Time) {
	mark := fmt.Sprintf(" (%s): %s -> %s", h.name, from, want)
	for _, line := range strings.Split(log, "\n") {
		if !strings.HasSuffix(line, mark) {
			continue
		}
		clock, _, _ := strings.Cut(line, " ")
		at, err := time.ParseInLocation("15:04:05.000", clock, time.Local)
		if err != nil || t0.IsZero() {
			break
		}
		y, m, d := t0.Date()
		at = time.Date(y, m, d, at.Hour(), at.Minute(), at.Second(), at.Nanosecond(), time.Local)
		h.inMemory = append(h.inMemory, at.Sub(t0))
		return
	}
	h.b.Logf("%s: the daemon's log has no line%s", h.kind, mark)
}

// event is what a note's hook means for the kind ("" for a note of
// another command).
func (h *hookBench) event(s stamp) agent.EventKind {
	if len(s.args) != 3 || s.args[0] != "hook" || s.args[1] != h.kind {
		return ""
	}
	return h.means[s.args[2]]
}

// send types line into the worker with st worker send, as a coordinator
// does; it returns what went wrong, or "".
func (h *hookBench) send(line string) string {
	r := h.r
	cmd := exec.Command(r.st, "worker", "send", h.name, line)
	cmd.Dir = r.work()
	cmd.Env = append(append([]string{}, r.env...), "TMUX_PANE="+r.coord, "TMUX="+r.sock+",1,0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Sprintf("st worker send: %v\n%s", err, out)
	}
	return ""
}

// seen reads the worker's state through st's socket, from the hook's
// start at t0, until it is want, and keeps the time from t0 to the return
// of the first read that shows it. Reads are 0.1 ms apart, so that they
// do not crowd the daemon that applies the hook.
func (h *hookBench) seen(want api.State, t0 time.Time) {
	ctx := context.Background()
	req := api.IDRequest{Pane: h.r.coord, ID: h.name}
	for time.Since(t0) < 30*time.Second {
		q := time.Now()
		v, err := h.c.Read(ctx, req)
		now := time.Now()
		if err != nil {
			h.b.Fatalf("%s: read the worker: %v", h.kind, err)
		}
		h.polls = append(h.polls, now.Sub(q))
		if v.State == want {
			if want == api.Working {
				h.toWorking = append(h.toWorking, now.Sub(t0))
			} else {
				h.toIdle = append(h.toIdle, now.Sub(t0))
			}
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
	h.missed++
	h.b.Logf("%s: st never said %s within 30 s of the hook", h.kind, want)
}

// print prints the figures: the medians, with the range and the number of
// samples after them (scripts/bench's table shows the first two fields).
func (h *hookBench) print() {
	k := h.kind
	both := append(append([]time.Duration(nil), h.toWorking...), h.toIdle...)
	floor := medianOf(h.floor)
	fig := func(name string, d []time.Duration, withFloor bool) {
		if len(d) == 0 {
			fmt.Printf("FIGURE %s none - (no samples)\n", name)
			return
		}
		lo, hi := rangeOf(d)
		fmt.Printf("FIGURE %s %.2f ms (n=%d, range %.2f-%.2f)\n", name, ms(medianOf(d)), len(d), ms(lo), ms(hi))
		if withFloor && floor > 0 {
			fmt.Printf("FIGURE %s_floor %.2f ms (bare st version through hookstamp, n=%d)\n", name, ms(floor), len(h.floor))
			fmt.Printf("FIGURE %s_ratio %.2f x\n", name, float64(medianOf(d))/float64(floor))
		}
	}
	fig("hook_to_state_"+k, both, true)
	fig("hook_to_state_"+k+"_working", h.toWorking, true)
	fig("hook_to_state_"+k+"_idle", h.toIdle, true)
	fig("hook_to_state_"+k+"_in_memory", h.inMemory, true)
	fig("hook_process_"+k, h.procs, true)
	fig("hook_bare_"+k, h.bareHook, true)
	if b := medianOf(h.bareHook); b > 0 && len(both) > 0 {
		fmt.Printf("FIGURE hook_to_state_%s_over_bare_hook %.2f x\n", k, float64(medianOf(both))/float64(b))
	}
	fig("hook_payload_"+k, h.payloads, false)
	fig("hook_process_cpu_"+k, h.procCPU, false)
	fig("hook_floor_cpu_"+k, h.floorCPU, false)
	fig("hook_process_waited_"+k, h.procWaited, false)
	fig("hook_floor_waited_"+k, h.floorWaited, false)
	fig("hook_to_state_"+k+"_poll", h.polls, false)
	fmt.Printf("FIGURE hook_faults_%s %d pages (major page faults of st in the %d hooks measured)\n", k, h.faults, len(h.procs))
	fmt.Printf("FIGURE hook_to_state_%s_missed %d turns (no state within 30 s: %d; ended by st from the screen: %d)\n", k, h.missed+h.quiet, h.missed, h.quiet)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func medianOf(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func rangeOf(d []time.Duration) (lo, hi time.Duration) {
	lo, hi = d[0], d[0]
	for _, x := range d {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}
