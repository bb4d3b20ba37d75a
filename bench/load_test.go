package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sophonz/st/bench/benchfig"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/orch"
	"github.com/sophonz/st/internal/tmux"
)

// BenchmarkScale runs the same figures with 1, 20 and 100 sim workers in
// one run, to show how each grows (figures ending in _nN):
//
//   - all N started at once (N `st worker start` processes side by side),
//     each reporting by itself (`summary:` task): the time until every
//     start returned, against the floor of the same N sims opened at once
//     straight in tmux (directOpens); how many reports arrive
//     (load_reports_arrived_nN, out of N) and the time until the last one;
//   - the daemon's peak memory (VmHWM of its pid, from /proc) after that;
//   - `st worker list --json` with the N workers, against a bare
//     `st version` (30 of each, interleaved, medians);
//   - with N=100 only: the daemon's CPU over 60 s while the 100 workers
//     sit idle (utime+stime of its pid, from /proc/PID/stat, as % of one
//     core);
//   - report to a waiting `st worker wait` returning, over 30 reports
//     spread over the N workers (median, p99), against a bare
//     `st version` (one after each report); each of those (up to 30)
//     workers first gets a second task that runs a hook relay in its
//     pane (see relayScript), whose UserPromptSubmit starts each timed
//     turn, and its sim ends that turn before the next step;
//   - what st adds to a start with the N workers live: 10 starts of
//     `st worker start` interleaved with 10 of a minimal driver of the
//     sim (as BenchmarkStartOverhead), medians and their ratio;
//   - tmux killed with the N workers (its server's pid sent SIGTERM), 3
//     times: the kill to a `st status --json` that says so (tmux_down or
//     restoring; st status polled back to back), to the sessions back (the
//     daemon's own record, last_restore.at), and to st status showing the
//     restore done, each against tmux's own `new-session` of one session
//     on a new server; st's own figures of the restore (sessions,
//     relations); and tmux's own time to end the server after the
//     SIGTERM (its process gone: st cannot hear of the exit before it,
//     and with a hundred agents it takes seconds), with st status's
//     saying so after that end (st's own share);
//   - a task's report to its N dependents: to each one's window (median,
//     p99), and to the last of them started (its task typed and its turn
//     begun: the worker's working since), against the N direct opens.
func BenchmarkScale(b *testing.B) {
	for _, n := range []int{1, 20, 100} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) { scaleAt(b, n) })
	}
}

func scaleAt(b *testing.B, n int) {
	r := newRig(b)
	r.up()
	pid := daemonPid(b, r)
	sfx := fmt.Sprintf("_n%d", n)

	// 1. N workers at once, each reporting by itself; first the floor:
	// the same N sims with the same task, opened at once with no st.
	task := r.writeFile("report.md", "summary: load report\n", 0o644)
	direct, directBoxes := directOpens(b, r, n, task)
	benchfig.Figure(b, "direct_boxes_all"+sfx, benchfig.Ms(directBoxes), "ms")
	t0 := time.Now()
	var wg sync.WaitGroup
	startErrs := make([]string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			out, err := r.st(r.coord, "worker", "start", "--agent", "sim", "--task", task, "--name", fmt.Sprintf("w%d", i)).CombinedOutput()
			if err != nil {
				startErrs[i] = fmt.Sprintf("w%d: %v: %s", i, err, out)
			}
		}(i)
	}
	wg.Wait()
	startedAll := time.Since(t0)
	failed := 0
	for _, e := range startErrs {
		if e != "" {
			failed++
			fmt.Printf("note: start failed: %s\n", e)
		}
	}
	arrived := 0
	deadline := time.Now().Add(3 * time.Minute)
	for {
		arrived = countReports(r, "load report")
		if arrived >= n-failed || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	allDone := time.Since(t0)
	fmt.Printf("%d workers started at once: %d starts failed, all starts returned after %.1f s (the same sims opened straight in tmux: %.1f s), %d/%d reports arrived after %.1f s\n",
		n, failed, startedAll.Seconds(), direct.Seconds(), arrived, n, allDone.Seconds())
	benchfig.Figure(b, "load_reports_arrived"+sfx, float64(arrived), fmt.Sprintf("of_%d", n))
	benchfig.Figure(b, "load_starts_failed"+sfx, float64(failed), fmt.Sprintf("of_%d", n))
	benchfig.RatioMs(b, "load_start_all_wall"+sfx, startedAll, direct)
	benchfig.Figure(b, "load_all_reported_wall"+sfx, benchfig.Ms(allDone), "ms")
	// A failed start is a figure, not the end of the benchmark: the rest
	// goes on with the workers that exist.
	ids, sessions := workerIDs(b, r)
	if len(ids) < n {
		fmt.Printf("note: %d of %d workers reported; the figures below are with those %d\n", len(ids), n, len(ids))
	}
	n = len(ids)
	benchfig.Figure(b, "daemon_peak_rss"+sfx, float64(procStatusKB(b, pid, "VmHWM"))/1024, "MiB")

	// 2. st worker list --json with the N workers.
	var list, version []time.Duration
	for i := 0; i < 31; i++ {
		t0 := time.Now()
		r.mustRun(r.st(r.coord, "worker", "list", "--json"))
		l := time.Since(t0)
		if v := r.versionTime(); i > 0 { // the first of each is a warm-up
			list, version = append(list, l), append(version, v)
		}
	}
	benchfig.RatioMs(b, "list_json_median"+sfx, benchfig.NewStats(list).Median(), benchfig.NewStats(version).Median())

	// 3. CPU while the workers sit idle (the 100 only: it takes a minute).
	if sfx == "_n100" {
		// Let the starts' aftermath (st's picture of the server) settle.
		waitFor(b, 60*time.Second, "every worker in st's picture of the server", func() bool {
			data, _ := os.ReadFile(filepath.Join(r.home, "tmux-layout.json"))
			return strings.Count(string(data), `"@st_agent_session"`) >= n
		})
		const idle = 60 * time.Second
		c0, w0 := cpuTicks(b, pid), time.Now()
		time.Sleep(idle) // a measurement window, not a wait for a condition
		c1, w1 := cpuTicks(b, pid), time.Now()
		pct := float64(c1-c0) / clockTicks / w1.Sub(w0).Seconds() * 100
		fmt.Printf("daemon CPU with %d idle workers over %.0f s: %d ticks (%.3f%% of a core)\n", n, w1.Sub(w0).Seconds(), c1-c0, pct)
		benchfig.Figure(b, "daemon_idle_cpu"+sfx, pct, "%core")
	}

	// 4. Report to a waiting st worker wait, from up to 30 workers, each
	// given a hook relay first (its hooks come from its pane).
	ws := relayWorkers(b, r, ids[:min(30, len(ids))], sessions)
	var lat []time.Duration
	version = nil
	for i := 0; i < 30; i++ {
		lat = append(lat, waitAfterDone(b, r, ws[i%len(ws)]).lat)
		version = append(version, r.versionTime())
	}
	endRelays(b, r, ws)
	l := benchfig.NewStats(lat)
	benchfig.RatioMs(b, "wait_after_done_median"+sfx, l.Median(), benchfig.NewStats(version).Median())
	benchfig.Figure(b, "wait_after_done_p99"+sfx, benchfig.Ms(l.Pct(99)), "ms")

	// 5. What st adds to a start, with the N workers live.
	long := r.writeFile("long.md", "sleep: 600s\n", 0o644)
	var base, st []time.Duration
	for i := 0; i < 11; i++ {
		bd := baselineStart(b, r, i)
		t0 := time.Now()
		out := r.mustRun(r.st(r.coord, "worker", "start", "--agent", "sim", "--task", long, "--name", fmt.Sprintf("x%d", i), "--json"))
		sd := time.Since(t0)
		var v api.WorkerView
		if err := json.Unmarshal([]byte(out), &v); err != nil || v.Window == "" {
			b.Fatalf("st worker start --json said %q (%v)", out, err)
		}
		r.tmux("kill-window", "-t", v.Window)
		if i > 0 { // the first is a warm-up
			base, st = append(base, bd), append(st, sd)
		}
	}
	bs, ss := benchfig.NewStats(base), benchfig.NewStats(st)
	benchfig.RatioMs(b, "start_st_median"+sfx, ss.Median(), bs.Median())
	benchfig.Figure(b, "start_overhead_median"+sfx, benchfig.Ms(ss.Median()-bs.Median()), "ms")

	// 6. tmux killed with the N workers.
	if !restoreFigures(b, r, n, sfx) {
		return
	}
	// The coordinator has a new pane id now.
	r.coord = coordinatorPane(b, r)

	// 7. One task's report to its N dependents' starts. Each dependent
	// sleeps, so that its worker stays working from the start of its
	// turn on (its since is when its task was taken). The floor again
	// first, now, under the load of now: the same N sims with the same
	// task opened at once straight in tmux.
	root := r.writeFile("root.md", "sleep: 1s\nsummary: root done\n", 0o644)
	dep := r.writeFile("dep.md", "sleep: 600s\n", 0o644)
	direct, _ = directOpens(b, r, n, dep)
	r.mustRun(r.st(r.coord, "task", "create", "root", "--task", root, "--agent", "sim"))
	for i := 0; i < n; i++ {
		r.mustRun(r.st(r.coord, "task", "create", fmt.Sprintf("d%03d", i), "--task", dep, "--agent", "sim", "--deps", "root"))
	}
	var run orch.Run
	byName := map[string]*orch.Worker{}
	waitFor(b, 5*time.Minute, "every dependent started", func() bool {
		run = orch.Run{}
		readRun(r, &run)
		byName = map[string]*orch.Worker{}
		for _, w := range run.Workers {
			byName[w.Name] = w
		}
		started := 0
		for _, t := range run.Tasks {
			if w := byName[t.Name]; t.Name != "root" && w != nil && w.State != api.Starting {
				started++
			}
		}
		return started == n
	})
	rw := byName["root"]
	if rw == nil || rw.ReportedAt == nil {
		b.Fatalf("the root task's worker has no report")
	}
	var gaps []time.Duration
	var lastStart time.Time
	notWorking := 0
	for _, t := range run.Tasks {
		w := byName[t.Name]
		if t.Name == "root" || w == nil {
			continue
		}
		gaps = append(gaps, w.StartedAt.Sub(*rw.ReportedAt))
		if w.State != api.Working {
			notWorking++
			continue
		}
		if w.Since.After(lastStart) {
			lastStart = w.Since
		}
	}
	if notWorking > 0 {
		fmt.Printf("note: %d of %d dependents are not working (failed or blocked starts); the last start is of the others\n", notWorking, n)
	}
	g := benchfig.NewStats(gaps)
	benchfig.Figure(b, "task_report_to_dependents_median"+sfx, benchfig.Ms(g.Median()), "ms")
	benchfig.Figure(b, "task_report_to_dependents_p99"+sfx, benchfig.Ms(g.Pct(99)), "ms")
	benchfig.RatioMs(b, "task_report_to_dependents_all_started"+sfx, lastStart.Sub(*rw.ReportedAt), direct)
	benchfig.Figure(b, "daemon_peak_rss_end"+sfx, float64(procStatusKB(b, pid, "VmHWM"))/1024, "MiB")
}

// relayWorkers gives each worker of ids (with its conversation id in
// sessions) a hook relay: a second task, typed in by `st worker send`,
// whose tool call runs the relay in the sim's pane. The workers' own
// turns end first (st worker read waits for that): a late Stop hook after
// the benchmark's UserPromptSubmit would make one idle.
func relayWorkers(b *testing.B, r *rig, ids, sessions []string) []*relayWorker {
	b.Helper()
	ws := make([]*relayWorker, len(ids))
	for i, id := range ids {
		r.mustRun(r.st(r.coord, "worker", "read", id))
		h, line := newHookRelay(b, r.dir, fmt.Sprintf("relay-%d", i), r.bin)
		task := h.taskFile(b, line)
		r.mustRun(r.st(r.coord, "worker", "send", id, "Your next task is in the file "+task+" - read it and do it."))
		ws[i] = &relayWorker{id: id, session: sessions[i], relay: h}
	}
	for _, w := range ws {
		w.relay.ready(b, 30*time.Second)
	}
	return ws
}

// endRelays ends the workers' relays and waits for their sims to be idle
// at their box again, as the rest of BenchmarkScale had them before the
// relays.
func endRelays(b *testing.B, r *rig, ws []*relayWorker) {
	b.Helper()
	relays, panes := make([]*hookRelay, len(ws)), make([]string, len(ws))
	for i, w := range ws {
		relays[i], panes[i] = w.relay, w.id
	}
	endAndSettle(b, r, relays, panes)
}

// awaitRestore asks st status, back to back (each poll is a process: its
// own time is the resolution), until it shows a restore after last; it
// answers that status, whose TmuxDown is the first one that said the
// server was gone (nil when none did), and when st first said anything of
// the kill. st status only: a st worker list during the restore marks
// done workers gone (see tests/faults).
func awaitRestore(b *testing.B, r *rig, kill, last time.Time) (statusJSON, time.Time) {
	var s, first statusJSON
	var saidAt time.Time
	for deadline := kill.Add(3 * time.Minute); ; {
		if s.poll(r) {
			restored := s.LastRestore.At.After(last)
			if saidAt.IsZero() && (s.TmuxDown != nil || s.Restoring || restored) {
				saidAt, first = time.Now(), s
			}
			if restored {
				s.TmuxDown = first.TmuxDown
				return s, saidAt
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("st did not bring the tmux server back within 3 minutes of the kill\n%s", r.explain(r.coord))
		}
	}
}

// restoreFigures kills the tmux server with the n workers on it, 3 times,
// and reports how soon st said so and brought it back (see
// BenchmarkScale). It returns false, after a note, when the workers did
// not all come back.
func restoreFigures(b *testing.B, r *rig, n int, sfx string) bool {
	layout := filepath.Join(r.home, "tmux-layout.json")
	inPicture := func() bool {
		data, _ := os.ReadFile(layout)
		return strings.Count(string(data), `"@st_agent_session"`) >= n
	}
	waitFor(b, 60*time.Second, "every worker in st's picture of the server", inPicture)
	floor := newSessionFloor(b, r, 5)
	var sessions, relations, total, said, noticed, back, exits, afterExit []time.Duration
	var last time.Time
	for i := 0; i < 3; i++ {
		// st has seen the server back (the last restore over, and a read
		// of the new server since), so that tmux_down is of this kill.
		var seen statusJSON
		waitFor(b, 60*time.Second, "st to see the tmux server back", func() bool {
			return seen.poll(r) && seen.TmuxDown == nil && !seen.Restoring
		})
		pidOut, err := r.tmux("display-message", "-p", "#{pid}")
		if err != nil {
			b.Fatal(err)
		}
		var server int
		fmt.Sscan(pidOut, &server)
		kill := time.Now()
		if err := syscall.Kill(server, syscall.SIGTERM); err != nil {
			b.Fatalf("kill the tmux server %d: %v", server, err)
		}
		ended := processEnd(server)
		s, saidAt := awaitRestore(b, r, kill, last)
		if s.TmuxDown != nil {
			noticed = append(noticed, s.TmuxDown.Sub(kill))
		}
		last = s.LastRestore.At
		if e := <-ended; !e.IsZero() {
			exits = append(exits, e.Sub(kill))
			afterExit = append(afterExit, saidAt.Sub(e))
		}
		total = append(total, time.Since(kill))
		said = append(said, saidAt.Sub(kill))
		back = append(back, s.LastRestore.At.Sub(kill))
		sessions = append(sessions, s.LastRestore.Sessions)
		relations = append(relations, s.LastRestore.Relations)
		if s.LastRestore.Panes < n+1 {
			b.Fatalf("restore %d moved %d panes, want %d\n%s", i, s.LastRestore.Panes, n+1, r.explain(r.coord))
		}
		if !pollUntil(2*time.Minute, inPicture) {
			data, _ := os.ReadFile(layout)
			log, _ := os.ReadFile(filepath.Join(r.home, "daemon.log"))
			var lines []string
			for _, l := range strings.Split(string(log), "\n") {
				if strings.Contains(l, "restore") {
					lines = append(lines, l)
				}
			}
			back := strings.Count(string(data), `"@st_agent_session"`)
			// A finding, not the end of scripts/bench: print it and skip
			// what needs the workers back.
			fmt.Printf("note: restore %d: after 2 min only %d of %d agents are back with a conversation id; the daemon's log on restores:\n%s\n",
				i, back, n, strings.Join(lines, "\n"))
			benchfig.Figure(b, "restore_agents_back"+sfx, float64(back), fmt.Sprintf("of_%d", n))
			return false
		}
	}
	if len(exits) > 0 {
		// tmux's own time to end its server after the SIGTERM: st cannot
		// hear of the exit before it.
		benchfig.Figure(b, "tmux_killed_server_exit_median"+sfx, benchfig.Ms(benchfig.NewStats(exits).Median()), "ms")
		// st's own share: that exit to st status saying so.
		benchfig.Figure(b, "tmux_killed_status_says_after_exit_median"+sfx, benchfig.Ms(benchfig.NewStats(afterExit).Median()), "ms")
	}
	benchfig.RatioMs(b, "tmux_killed_status_says"+sfx, benchfig.NewStats(said).Median(), floor)
	if len(noticed) > 0 {
		// The daemon's own time of the server's exit (st status's
		// tmux_down), when a status caught it before the restore ended.
		benchfig.Figure(b, "tmux_killed_noticed_median"+sfx, benchfig.Ms(benchfig.NewStats(noticed).Median()), "ms")
	}
	benchfig.RatioMs(b, "tmux_killed_sessions_back"+sfx, benchfig.NewStats(back).Median(), floor)
	benchfig.Figure(b, "restore_sessions_back_median"+sfx, benchfig.Ms(benchfig.NewStats(sessions).Median()), "ms")
	benchfig.Figure(b, "restore_relations_median"+sfx, benchfig.Ms(benchfig.NewStats(relations).Median()), "ms")
	benchfig.RatioMs(b, "restore_kill_to_status_median"+sfx, benchfig.NewStats(total).Median(), floor)
	return true
}

// processEnd watches process pid (not a child of ours) every
// millisecond, and sends when it was seen gone or a zombie; the zero time
// when it still ran after a minute.
func processEnd(pid int) <-chan time.Time {
	ch := make(chan time.Time, 1)
	go func() {
		by := time.Now().Add(time.Minute)
		for time.Now().Before(by) {
			data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if s := string(data); err != nil || strings.HasPrefix(s[strings.LastIndexByte(s, ')')+1:], " Z") {
				ch <- time.Now()
				return
			}
			time.Sleep(time.Millisecond)
		}
		ch <- time.Time{}
	}()
	return ch
}

// endProcess sends SIGTERM to pid (a tmux server of ours) and waits up
// to a minute for it to end.
func endProcess(pid int) {
	if pid <= 1 || syscall.Kill(pid, syscall.SIGTERM) != nil {
		return
	}
	<-processEnd(pid)
}

// statusJSON is what the benchmarks read of `st status --json`.
type statusJSON struct {
	LastRestore api.RestoreStats `json:"last_restore"`
	TmuxDown    *time.Time       `json:"tmux_down"`
	Restoring   bool             `json:"restoring"`
}

// poll reads st status --json into s; false when it could not.
func (s *statusJSON) poll(r *rig) bool {
	out, err := r.st(r.coord, "status", "--json").Output()
	*s = statusJSON{}
	return err == nil && json.Unmarshal(out, s) == nil
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times (100 on
// every Linux that Go supports).
const clockTicks = 100

func daemonPid(b *testing.B, r *rig) int {
	b.Helper()
	data, err := os.ReadFile(filepath.Join(r.home, "st.pid"))
	if err != nil {
		b.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 {
		b.Fatalf("st.pid holds %q", data)
	}
	return pid
}

// cpuTicks is utime+stime of pid, in clock ticks.
func cpuTicks(b *testing.B, pid int) int64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	// After the command: state is field 3, utime 14, stime 15.
	if len(f) < 13 {
		b.Fatalf("/proc/%d/stat: %q", pid, s)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: %q", pid, s)
	}
	return u + st
}

// procStatusKB is a kB field of /proc/PID/status (VmHWM, VmRSS).
func procStatusKB(b *testing.B, pid int, key string) int64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	b.Fatalf("/proc/%d/status has no %s", pid, key)
	return 0
}

// readRun reads the rig's one run.json into run.
func readRun(r *rig, run *orch.Run) bool {
	matches, _ := filepath.Glob(filepath.Join(r.home, "orch", "*", "run.json"))
	for _, m := range matches {
		data, err := os.ReadFile(m)
		if err == nil && json.Unmarshal(data, run) == nil {
			return true
		}
	}
	return false
}

// countReports counts the workers done with this summary, on disk.
func countReports(r *rig, summary string) int {
	var run orch.Run
	if !readRun(r, &run) {
		return 0
	}
	k := 0
	for _, w := range run.Workers {
		if w.State == api.Done && w.Summary == summary {
			k++
		}
	}
	return k
}

// workerIDs are the workers that reported (a start that failed under
// load leaves a window whose worker is failed), with their agents'
// conversation ids.
func workerIDs(b *testing.B, r *rig) (ids, sessions []string) {
	b.Helper()
	var run orch.Run
	if !readRun(r, &run) {
		b.Fatal("no run.json")
	}
	for _, w := range run.Workers {
		if w.State == api.Done {
			ids = append(ids, w.ID)
			sessions = append(sessions, w.AgentSession)
		}
	}
	return ids, sessions
}

// coordinatorPane is the run's coordinator pane as run.json has it now.
func coordinatorPane(b *testing.B, r *rig) string {
	b.Helper()
	var run orch.Run
	if !readRun(r, &run) || run.Coordinator == "" {
		b.Fatal("no coordinator in run.json")
	}
	return run.Coordinator
}

// reportTiming is one end of a turn timed against a waiting st worker wait.
type reportTiming struct {
	lat      time.Duration // the turn's end starts (see turnEnd) -> the wait returns
	doneWall time.Duration // the ending command's process
	after    time.Duration // that process ends -> the wait returns
	fallback bool          // /proc could not tell when the wait had sent its request
}

// A turnEnd is what ends a worker's turn in a timing, and what st worker
// wait then says.
type turnEnd struct {
	// run ends the turn; start is the start of the timed interval, end
	// when the command that ended it was over.
	run  func(b *testing.B, r *rig, w *relayWorker) (start, end time.Time)
	code int    // the wait's exit status
	word string // the worker's state in the wait's answer
}

// byReport ends the turn with the worker's report, a `st worker done`
// process started by the benchmark (with the worker's $TMUX_PANE); the
// interval starts before its exec.
var byReport = turnEnd{
	run: func(b *testing.B, r *rig, w *relayWorker) (time.Time, time.Time) {
		t0 := time.Now()
		r.mustRun(r.st(w.id, "worker", "done", "--summary", "n"))
		return t0, time.Now()
	},
	code: 0, word: "done",
}

// byStopHook ends the turn the way an agent does when it stops without a
// report: its Stop hook, with Claude's payload (the sim is a Claude-like
// agent: st maps its hooks with Claude's mapper), run in its pane by the
// worker's hook relay (see relayScript: the interval starts at the write
// that releases the relay, so it holds the st hook process's start as
// before, and no tmux command). The wait then says idle, exit 2.
var byStopHook = turnEnd{
	run: func(b *testing.B, r *rig, w *relayWorker) (time.Time, time.Time) {
		return w.relay.fire(b, "Stop", hookPayload(w.session, "Stop", map[string]any{
			"stop_hook_active": false, "last_assistant_message": "stopped", "cwd": r.dir,
			"transcript_path": filepath.Join(r.dir, "transcript.jsonl"), "permission_mode": "default",
		}))
	},
	code: 2, word: "idle",
}

// hookPayload is a Claude-shaped hook payload. An empty session leaves
// session_id out, so that st keeps the one it knows.
func hookPayload(session, event string, extra map[string]any) string {
	p := map[string]any{"hook_event_name": event}
	if session != "" {
		p["session_id"] = session
	}
	for k, v := range extra {
		p[k] = v
	}
	data, _ := json.Marshal(p)
	return string(data)
}

// waitAfterDone times a report: see waitAfter.
func waitAfterDone(b *testing.B, r *rig, w *relayWorker) reportTiming {
	return waitAfter(b, r, w, byReport)
}

// waitAfter starts the worker's turn again (a UserPromptSubmit hook, from
// its pane through its relay; not timed), starts st worker wait for it,
// ends the turn with end once the wait's request is out, and times the
// wait's return.
func waitAfter(b *testing.B, r *rig, w *relayWorker, end turnEnd) reportTiming {
	b.Helper()
	var rt reportTiming
	w.relay.fire(b, "UserPromptSubmit", hookPayload(w.session, "UserPromptSubmit", map[string]any{"prompt": "x"}))
	wait := r.startWait(w.id)
	rt.fallback = wait.fallback
	select {
	case <-wait.exited:
		b.Fatalf("st worker wait returned before the turn's end (%v):\n%s\nthe UserPromptSubmit hook said: %s\n%s",
			wait.err, wait.text(), w.relay.out("UserPromptSubmit"), r.explain(w.id))
	default:
	}
	t0, tDone := end.run(b, r, w)
	var t1 time.Time
	select {
	case t1 = <-wait.exited:
	case <-time.After(30 * time.Second):
		wait.cmd.Process.Kill()
		b.Fatalf("st worker wait did not return within 30 s of the turn's end (%s)\n%s", end.word, r.explain(w.id))
	}
	if text := wait.text(); exitCode(wait.err) != end.code || !strings.Contains(text, end.word) {
		b.Fatalf("st worker wait: %v (want exit %d, %s):\n%s\n%s", wait.err, end.code, end.word, text, r.explain(w.id))
	}
	rt.lat, rt.doneWall, rt.after = t1.Sub(t0), tDone.Sub(t0), t1.Sub(tDone)
	return rt
}

// waiting is a st worker wait running in the background.
type waiting struct {
	cmd      *exec.Cmd
	out      string         // the file of its output
	exited   chan time.Time // sends when it exited; err is set then
	err      error
	fallback bool // /proc could not tell when it had sent its request
}

// startWait starts st worker wait with args from the coordinator's pane,
// and returns once its request is out (see awaitRequest).
func (r *rig) startWait(args ...string) *waiting {
	r.b.Helper()
	w := &waiting{out: filepath.Join(r.dir, "wait.out"), exited: make(chan time.Time, 1)}
	f, err := os.Create(w.out)
	if err != nil {
		r.b.Fatal(err)
	}
	w.cmd = r.st(r.coord, append([]string{"worker", "wait"}, append(args, "--timeout", "60s")...)...)
	w.cmd.Stdout, w.cmd.Stderr = f, f // a file: Wait returns at the exit, with no copying
	if err := w.cmd.Start(); err != nil {
		r.b.Fatal(err)
	}
	f.Close()
	go func() {
		w.err = w.cmd.Wait()
		w.exited <- time.Now()
	}()
	w.fallback = !awaitRequest(r.b, w.cmd.Process.Pid)
	return w
}

// text is what the wait printed.
func (w *waiting) text() string {
	data, _ := os.ReadFile(w.out)
	return string(data)
}

// exitCode is a finished command's exit status (0 for no error, -1 when
// it did not exit by itself).
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// awaitRequest gives a client process time to reach the daemon: its
// request written, then a little for the daemon to read it and start
// waiting. It returns false when /proc could not tell (it slept 30 ms).
func awaitRequest(b *testing.B, pid int) bool {
	b.Helper()
	regBy := time.Now().Add(10 * time.Second)
	for {
		sent, ok := requestSent(pid)
		if !ok {
			time.Sleep(30 * time.Millisecond)
			return false
		}
		if sent {
			time.Sleep(5 * time.Millisecond)
			return true
		}
		if time.Now().After(regBy) {
			b.Fatalf("process %d never sent its request", pid)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// baselineStart is the start of the sim with no st (BenchmarkStartOverhead
// and BenchmarkScale compare st's start with it): a window running the sim
// directly, driven by polling its screen, until its UserPromptSubmit hook
// fires.
func baselineStart(b *testing.B, r *rig, i int) time.Duration {
	b.Helper()
	task := r.writeFile("btask.md", "sleep: 600s\n", 0o644)
	hookLog := filepath.Join(r.dir, "bhooks.log")
	fake := r.writeFile("bfakest", "#!/bin/sh\ncat >/dev/null\n"+
		"if [ \"$3\" = UserPromptSubmit ]; then echo \"$3\" >>"+tmux.ShellJoin([]string{hookLog})+"; fi\nexit 0\n", 0o755)
	line := orch.TaskLine(r.bin, task)
	os.Remove(hookLog)
	t0 := time.Now()
	out, err := r.tmux("new-window", "-d", "-P", "-F", "#{window_id} #{pane_id}", "-t", r.session+":",
		"-n", fmt.Sprintf("b%d", i), "-c", r.dir, "-e", "ST_BIN="+fake, "-e", "PATH="+r.getenv("PATH"),
		tmux.ShellJoin([]string{r.bin, "agent", "sim"}))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		b.Fatalf("new-window said %q", out)
	}
	win, pane := f[0], f[1]
	defer r.tmux("kill-window", "-t", win)
	by := time.Now().Add(30 * time.Second)
	var screen string
	for !emptyBox(screen) {
		if time.Now().After(by) {
			b.Fatalf("baseline %d: the sim never showed an empty box; last screen:\n%s", i, screen)
		}
		time.Sleep(5 * time.Millisecond)
		screen, _ = r.tmux("capture-pane", "-p", "-t", pane)
	}
	if _, err := r.tmux("send-keys", "-t", pane, "-l", "--", line); err != nil {
		b.Fatal(err)
	}
	time.Sleep(80 * time.Millisecond)
	if _, err := r.tmux("send-keys", "-t", pane, "Enter"); err != nil {
		b.Fatal(err)
	}
	for {
		if data, err := os.ReadFile(hookLog); err == nil && strings.Contains(string(data), "UserPromptSubmit") {
			return time.Since(t0)
		}
		if time.Now().After(by) {
			screen, _ = r.tmux("capture-pane", "-p", "-t", pane)
			b.Fatalf("baseline %d: no UserPromptSubmit hook; last screen:\n%s", i, screen)
		}
		time.Sleep(time.Millisecond)
	}
}

// pollUntil polls cond every 20 ms until it holds or d passes.
func pollUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}
