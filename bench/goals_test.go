package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/sophonz/st/bench/benchfig"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/client"
	"github.com/sophonz/st/internal/orch"
	"github.com/sophonz/st/internal/store"
)

// BenchmarkGoals measures the scale goals of issue 36 item 8, each
// against its floor in the same run, with 100 sim workers working (each
// in a `sleep: 600s` turn, so that a report ends a live turn):
//
//   - goal_report_to_wait: a worker's `st worker done` process started
//     to the return of the coordinator's `st worker wait` that waited for
//     it (one report at a time, 31 workers of their own, the first a warm-up; medians),
//     against floorWrite: a process that starts, writes the same run.json
//     durably (write, fsync, rename: store.WriteFile, what st uses) and
//     exits. Goal: ratio <= 1.2.
//   - goal_report_in_pane_to_wait: the same for a report made as an
//     agent makes it, in the worker's pane under the sim
//     (goalReportInPane), against the same floor. Goal: ratio <= 1.2.
//   - goal_list_json_n100: `st worker list --json` with the 100 workers,
//     against `st status` (a process and one round trip to the daemon),
//     20 of each interleaved, medians. Goal: ratio <= 1.3.
//     goal_list_json_round_trip_n100 is the same two as calls from the
//     benchmark's own process (no process start): the daemon's share.
//   - goal_burst_wait_max_n100: the 100 workers' `st worker done`
//     processes started at once, each with its own `st worker wait`
//     already waiting; from the start of the first to the return of each
//     wait (the last, and the median), against one report's time above
//     (goal_report_to_wait). Goal: ratio <= 3. goal_burst_writes_n100
//     counts the writes of run.json (renames onto it, from inotify)
//     between the first report's start and the last wait's return. Goal:
//     <= 10. goal_burst_list_json_n100 is one `st worker list --json`
//     started with the reports, against goal_list_json_n100's median.
//     goal_burst_wait_max_vs_100_floors_n100 is the burst's last wait
//     against 100 floor processes started at once (the least 100
//     processes cost on this machine, which one report's time leaves
//     out).
func BenchmarkGoals(b *testing.B) {
	const n, singles = 100, 31
	r := newRig(b)
	r.up()
	sleep := r.writeFile("goal-sleep.md", "sleep: 600s\n", 0o644)

	burst := startWorking(b, r, same(sleep), "g", n)
	fmt.Printf("%d of %d workers working\n", len(burst), n)
	benchfig.Figure(b, "goal_workers_working", float64(len(burst)), fmt.Sprintf("of_%d", n))
	listMedian := goalList(b, r)
	one, src := goalReport(b, r, startWorking(b, r, same(sleep), "s", singles))
	goalReportInPane(b, r, src)
	goalBurst(b, r, burst, one, listMedian, src)
}

// goalList times st worker list --json against st status (as processes,
// then as round trips from this process), and returns the list's median.
func goalList(b *testing.B, r *rig) time.Duration {
	var list, status []time.Duration
	for i := 0; i < 21; i++ {
		t0 := time.Now()
		r.mustRun(r.st(r.coord, "worker", "list", "--json"))
		l := time.Since(t0)
		t0 = time.Now()
		r.mustRun(r.st(r.coord, "status"))
		s := time.Since(t0)
		if i > 0 { // the first of each is a warm-up
			list, status = append(list, l), append(status, s)
		}
	}
	listMedian := benchfig.NewStats(list).Median()
	benchfig.RatioMs(b, "goal_list_json_n100", listMedian, benchfig.NewStats(status).Median())
	// The same two as round trips from this process (no process start):
	// what of the list's time is the daemon's and the answer's.
	c := client.New(r.home, r.tmuxVar)
	list, status = nil, nil
	for i := 0; i < 51; i++ {
		t0 := time.Now()
		if _, err := c.ListJSON(context.Background(), api.IDRequest{Pane: r.coord}); err != nil {
			b.Fatal(err)
		}
		l := time.Since(t0)
		t0 = time.Now()
		if _, err := c.Status(context.Background()); err != nil {
			b.Fatal(err)
		}
		if i > 0 {
			list, status = append(list, l), append(status, time.Since(t0))
		}
	}
	benchfig.RatioMs(b, "goal_list_json_round_trip_n100", benchfig.NewStats(list).Median(), benchfig.NewStats(status).Median())
	return listMedian
}

// goalReport times one report at a time (each of ones, the first a
// warm-up) to its waiting st worker wait, against the floor process; it
// returns the median and the copy of run.json the floor writes.
func goalReport(b *testing.B, r *rig, ones []string) (time.Duration, string) {
	runPath := runJSONPath(b, r)
	data, err := os.ReadFile(runPath)
	if err != nil {
		b.Fatal(err)
	}
	src := r.writeFile("floor-run.json", string(data), 0o600)
	dst := filepath.Join(r.dir, "floor", "run.json")
	var report, floor []time.Duration
	for i, id := range ones {
		wait := r.startWaitTo(fmt.Sprintf("wait-one-%d.out", i), id)
		t0 := time.Now()
		r.mustRun(r.st(id, "worker", "done", "--summary", "one report"))
		t1 := wait.end(b, 30*time.Second)
		if text := wait.text(); exitCode(wait.err) != 0 || !strings.Contains(text, "done") {
			b.Fatalf("st worker wait %s: %v:\n%s\n%s", id, wait.err, text, r.explain(id))
		}
		f := floorWrite(b, src, dst)
		if i > 0 { // the first is a warm-up
			report, floor = append(report, t1.Sub(t0)), append(floor, f)
		}
	}
	one := benchfig.NewStats(report).Median()
	benchfig.RatioMs(b, "goal_report_to_wait", one, benchfig.NewStats(floor).Median())
	benchfig.Figure(b, "goal_report_to_wait_p99", benchfig.Ms(benchfig.NewStats(report).Pct(99)), "ms")
	return one, src
}

// goalReportInPane is goalReport for a report as an agent makes it: `st
// worker done` run by the sim agent in the worker's pane, as a Bash tool
// call of its turn (its parents the tool's sh, the sim, the pane), so
// the daemon reads who asked from /proc and finds the pane among the
// caller's parents, as it does for a real agent's report. goalReport's
// reports come from this process, which no agent started, and take no
// such path. Each worker's tool call waits at a FIFO of its own; the
// time runs from the benchmark's write to it (the sh reads the line and
// execs st worker done) to the return of the coordinator's wait, against
// the same floor process, interleaved. Its name is
// goal_report_in_pane_to_wait; src is the floor's run.json.
func goalReportInPane(b *testing.B, r *rig, src string) {
	const k = 21 // the first a warm-up
	fifos := filepath.Join(r.dir, "fifo")
	if err := os.MkdirAll(fifos, 0o700); err != nil {
		b.Fatal(err)
	}
	task := func(i int) string {
		fifo := filepath.Join(fifos, fmt.Sprintf("p%d", i))
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			b.Fatal(err)
		}
		return r.writeFile(fmt.Sprintf("goal-pane-%d.md", i), fmt.Sprintf(
			"run: read go < '%s' && exec '%s' worker done --summary 'in-pane report'\n", fifo, r.bin), 0o644)
	}
	ids := startWorking(b, r, task, "p", k)
	var run orch.Run
	if !readRun(r, &run) {
		b.Fatal("run.json could not be read")
	}
	fifoOf := map[string]string{}
	for _, w := range run.Workers {
		if strings.HasPrefix(w.Name, "p") {
			fifoOf[w.ID] = filepath.Join(fifos, w.Name)
		}
	}
	dst := filepath.Join(r.dir, "floor", "run.json")
	var report, floor []time.Duration
	for i, id := range ids {
		wait := r.startWaitTo(fmt.Sprintf("wait-pane-%d.out", i), id)
		w := openWhenRead(b, fifoOf[id])
		t0 := time.Now()
		if _, err := w.Write([]byte("go\n")); err != nil {
			b.Fatal(err)
		}
		w.Close()
		t1 := wait.end(b, 30*time.Second)
		if text := wait.text(); exitCode(wait.err) != 0 || !strings.Contains(text, "done") {
			b.Fatalf("st worker wait %s: %v:\n%s\n%s", id, wait.err, text, r.explain(id))
		}
		f := floorWrite(b, src, dst)
		if i > 0 {
			report, floor = append(report, t1.Sub(t0)), append(floor, f)
		}
	}
	if len(report) == 0 {
		b.Fatalf("no worker of the %d held its report at its FIFO", k)
	}
	benchfig.RatioMs(b, "goal_report_in_pane_to_wait", benchfig.NewStats(report).Median(), benchfig.NewStats(floor).Median())
	benchfig.Figure(b, "goal_report_in_pane_to_wait_p99", benchfig.Ms(benchfig.NewStats(report).Pct(99)), "ms")
}

// openWhenRead opens the FIFO path to write once its reader has it open
// (the sim's tool call at its read), polling for up to a minute: an open
// that does not block, so that the time taken after it is the report's.
func openWhenRead(b *testing.B, path string) *os.File {
	b.Helper()
	var f *os.File
	waitFor(b, time.Minute, "the tool call at "+path, func() bool {
		fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err != nil {
			return false // ENXIO: no reader yet
		}
		f = os.NewFile(uintptr(fd), path)
		return true
	})
	return f
}

// goalBurst has the workers of burst report at once, each with a wait of
// its own, and counts run.json's writes meanwhile; one is one report's
// time, listMedian the list's, src the floor's run.json.
func goalBurst(b *testing.B, r *rig, burst []string, one, listMedian time.Duration, src string) {
	waits := make([]*waiting, len(burst))
	for i, id := range burst {
		waits[i] = r.startWaitTo(fmt.Sprintf("wait-burst-%d.out", i), id)
	}
	writes := watchRenames(b, filepath.Dir(runJSONPath(b, r)), "run.json")
	var wg sync.WaitGroup
	errs := make([]string, len(burst))
	var listTook time.Duration
	w0 := writes.Load()
	t0 := time.Now()
	for i, id := range burst {
		wg.Add(1)
		go func(i int, id string) {
			defer wg.Done()
			if out, err := r.st(id, "worker", "done", "--summary", "burst report").CombinedOutput(); err != nil {
				errs[i] = fmt.Sprintf("%s: %v: %s", id, err, out)
			}
		}(i, id)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		l0 := time.Now()
		r.mustRun(r.st(r.coord, "worker", "list", "--json"))
		listTook = time.Since(l0)
	}()
	var each []time.Duration
	var last time.Time
	var w1 uint64
	for i, w := range waits {
		t := w.end(b, 60*time.Second)
		if t.After(last) {
			last, w1 = t, writes.Load()
		}
		if text := w.text(); exitCode(w.err) != 0 || !strings.Contains(text, "done") {
			b.Fatalf("st worker wait %s: %v:\n%s", burst[i], w.err, text)
		}
		each = append(each, t.Sub(t0))
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			b.Fatalf("st worker done: %s", e)
		}
	}
	e := benchfig.NewStats(each)
	fmt.Printf("%d reports at once: every wait returned after %.1f ms (median %.1f ms), %d writes of run.json; one report: %.1f ms\n",
		len(burst), benchfig.Ms(e[len(e)-1]), benchfig.Ms(e.Median()), w1-w0, benchfig.Ms(one))
	benchfig.RatioMs(b, "goal_burst_wait_max_n100", e[len(e)-1], one)
	benchfig.RatioMs(b, "goal_burst_wait_median_n100", e.Median(), one)
	benchfig.Figure(b, "goal_burst_writes_n100", float64(w1-w0), "writes")
	benchfig.RatioMs(b, "goal_burst_list_json_n100", listTook, listMedian)
	benchfig.RatioMs(b, "goal_burst_wait_max_vs_100_floors_n100", e[len(e)-1], manyFloors(b, r, src, len(burst)))
}

// manyFloors is the time k floor processes (floorWrite, each to a file
// of its own) started at once take until the last ends: what k processes
// at once cost by themselves on this machine.
func manyFloors(b *testing.B, r *rig, src string, k int) time.Duration {
	var fw sync.WaitGroup
	errs := make([]error, k)
	f0 := time.Now()
	for i := 0; i < k; i++ {
		fw.Add(1)
		go func(i int) {
			defer fw.Done()
			_, errs[i] = floorRun(src, filepath.Join(r.dir, "floor", fmt.Sprintf("run-%d.json", i)))
		}(i)
	}
	fw.Wait()
	d := time.Since(f0)
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	return d
}

// same is a task of startWorking: path for every worker.
func same(path string) func(int) string { return func(int) string { return path } }

// startWorking starts k sim workers named prefix0.. (10 starts at a
// time), the i-th on task(i), and returns the ids of those st shows
// working.
func startWorking(b *testing.B, r *rig, task func(int) string, prefix string, k int) []string {
	b.Helper()
	sem := make(chan struct{}, 10)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ids []string
	for i := 0; i < k; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out, err := r.st(r.coord, "worker", "start", "--agent", "sim", "--task", task(i), "--name", fmt.Sprintf("%s%d", prefix, i), "--json").CombinedOutput()
			var v api.WorkerView
			if err != nil || json.Unmarshal(out, &v) != nil || v.ID == "" {
				fmt.Printf("note: start of %s%d failed: %v: %s\n", prefix, i, err, out)
				return
			}
			mu.Lock()
			ids = append(ids, v.ID)
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	var working []string
	waitFor(b, 2*time.Minute, "the workers working", func() bool {
		var run orch.Run
		if !readRun(r, &run) {
			return false
		}
		state := map[string]api.State{}
		for _, w := range run.Workers {
			state[w.ID] = w.State
		}
		working = working[:0]
		for _, id := range ids {
			if state[id] == api.Working {
				working = append(working, id)
			}
		}
		return len(working) == len(ids)
	})
	return working
}

// runJSONPath is the rig's one run.json.
func runJSONPath(b *testing.B, r *rig) string {
	b.Helper()
	m, _ := filepath.Glob(filepath.Join(r.home, "orch", "*", "run.json"))
	if len(m) != 1 {
		b.Fatalf("run.json files: %v, want one", m)
	}
	return m[0]
}

// startWaitTo is startWait with its output in a file of its own.
func (r *rig) startWaitTo(out string, args ...string) *waiting {
	r.b.Helper()
	w := &waiting{out: filepath.Join(r.dir, out), exited: make(chan time.Time, 1)}
	f, err := os.Create(w.out)
	if err != nil {
		r.b.Fatal(err)
	}
	w.cmd = r.st(r.coord, append([]string{"worker", "wait"}, append(args, "--timeout", "90s")...)...)
	w.cmd.Stdout, w.cmd.Stderr = f, f
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

// end is when the wait exited; it fails the benchmark after d.
func (w *waiting) end(b *testing.B, d time.Duration) time.Time {
	b.Helper()
	select {
	case t := <-w.exited:
		return t
	case <-time.After(d):
		w.cmd.Process.Kill()
		b.Fatalf("%s did not return within %s:\n%s", strings.Join(w.cmd.Args, " "), d, w.text())
		return time.Time{}
	}
}

// floorEnv names the file a floor process copies durably: the test
// binary, started again with it set, does only that (TestMain).
const floorEnv = "ST_BENCH_FLOOR_WRITE"

// floorWrite times a process that starts, writes src's bytes to dst
// durably (store.WriteFile: a temp file, fsync, rename) and exits.
func floorWrite(b *testing.B, src, dst string) time.Duration {
	b.Helper()
	d, err := floorRun(src, dst)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// floorRun is floorWrite for any goroutine: the error is the caller's.
func floorRun(src, dst string) (time.Duration, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), floorEnv+"="+src+"\x1f"+dst)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	err = cmd.Run()
	d := time.Since(t0)
	if err != nil {
		return 0, fmt.Errorf("the floor process: %v: %s", err, out.String())
	}
	return d, nil
}

// floorMain is the floor process's whole work (see floorWrite); it
// reports whether it was one.
func floorMain() bool {
	v := os.Getenv(floorEnv)
	if v == "" {
		return false
	}
	src, dst, _ := strings.Cut(v, "\x1f")
	data, err := os.ReadFile(src)
	if err == nil {
		err = store.WriteFile(dst, data, 0o600)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
	return true
}

// watchRenames counts the files renamed onto dir/name (each durable
// write of it is one), until the benchmark ends.
func watchRenames(b *testing.B, dir, name string) *atomic.Uint64 {
	b.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_MOVED_TO); err != nil {
		syscall.Close(fd)
		b.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "inotify")
	b.Cleanup(func() { f.Close() })
	var count atomic.Uint64
	go func() {
		buf := make([]byte, 64<<10)
		for {
			k, err := f.Read(buf)
			if err != nil {
				return
			}
			for off := 0; off+syscall.SizeofInotifyEvent <= k; {
				ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
				nameBytes := buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+int(ev.Len)]
				if string(bytes.TrimRight(nameBytes, "\x00")) == name {
					count.Add(1)
				}
				off += syscall.SizeofInotifyEvent + int(ev.Len)
			}
		}
	}()
	return &count
}
