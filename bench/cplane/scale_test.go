package cplane

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sophonz/st/bench/benchfig"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/testutil"
)

// BenchmarkControlPlaneScale runs one control plane (its own process,
// `st control-plane serve`) and N simulated machines (sim_test.go), for
// N = 10, 100, 500 and 1,000, before the move to SQLite and after it,
// one after the other for each N (so both see the same load). Each
// machine signs in, keeps its relay connection, heartbeats every 10 s
// (st's default; ST_BENCH_CP_INTERVAL changes it for every N alike) and
// lists the machines once a minute; a tenth of them relay a start to
// another machine, and that one a report back, spread over the window.
// Over a window of 40 s (ST_BENCH_CP_WINDOW), after every machine has
// beaten once, it reads the control plane's CPU (/proc/PID/stat), its
// memory (VmRSS, VmHWM), the heartbeats' latency (p50, p99), the
// lists', and the relayed start's and report's (median). Each figure at
// N is printed beside N = 10, as a ratio. ST_BENCH_CP_N picks the Ns
// (such as 10,100); ST_BENCH_CP_AFTER_ONLY=1 runs only the after's (to
// probe past 1,000 machines, which the before cannot take).
//
// The simulated machines run in the benchmark's process, on the same
// 2 cores as the control plane: at 1,000 machines they take a share of
// the CPU the control plane could use, and their own latencies include
// their scheduling.
func BenchmarkControlPlaneScale(b *testing.B) {
	after, before := testutil.BuildST(b), beforeST(b)
	cfg := scaleConfig{interval: envDuration("ST_BENCH_CP_INTERVAL", 10*time.Second), window: envDuration("ST_BENCH_CP_WINDOW", 40*time.Second),
		memCap: float64(envInts("ST_BENCH_CP_MEMCAP_MIB", []int{3072})[0])}
	ns := envInts("ST_BENCH_CP_N", []int{10, 100, 500, 1000})
	res := map[string]map[int]scaleResult{"before": {}, "after": {}}
	versions := []struct{ name, bin, imp string }{{"before", before, after}, {"after", after, ""}}
	if os.Getenv("ST_BENCH_CP_AFTER_ONLY") != "" { // a probe of more machines than the before can take
		versions = versions[1:]
	}
	b.ResetTimer()
	for _, n := range ns {
		for _, v := range versions {
			r := runScale(b, v.bin, n, cfg, v.imp)
			res[v.name][n] = r
			fmt.Printf("%s n=%d: %s\n", v.name, n, r)
			if v.imp != "" {
				fmt.Printf("  its state.json imported by the after st: %d machines in %s (%v)\n", r.imported, r.importTook.Round(time.Millisecond), r.importErr)
				benchfig.Figure(b, fmt.Sprintf("cp_import_n%d_machines", n), float64(r.imported), "n")
				benchfig.Figure(b, fmt.Sprintf("cp_import_n%d", n), benchfig.Ms(r.importTook), "ms")
			}
		}
	}
	b.StopTimer()
	for _, vv := range versions {
		v := vv.name
		floor := res[v][ns[0]]
		for _, n := range ns {
			r, name := res[v][n], fmt.Sprintf("cp_%s_n%d", v, n)
			benchfig.Ratio(b, name+"_cpu", r.cpuPct, floor.cpuPct, "%core")
			benchfig.Ratio(b, name+"_hwm", r.hwm, floor.hwm, "MiB")
			benchfig.Figure(b, name+"_rss", r.rss, "MiB")
			benchfig.Ratio(b, name+"_heartbeat_p50", benchfig.Ms(r.beat.Pct(50)), benchfig.Ms(floor.beat.Pct(50)), "ms")
			benchfig.Ratio(b, name+"_heartbeat_p99", benchfig.Ms(r.beat.Pct(99)), benchfig.Ms(floor.beat.Pct(99)), "ms")
			benchfig.Figure(b, name+"_heartbeats_failed", float64(r.beatFailed), "n")
			benchfig.Ratio(b, name+"_list_p50", benchfig.Ms(r.list.Pct(50)), benchfig.Ms(floor.list.Pct(50)), "ms")
			benchfig.Figure(b, name+"_list_size", float64(r.listBytes)/1024, "KiB")
			benchfig.Ratio(b, name+"_relayed_start", benchfig.Ms(r.start.Pct(50)), benchfig.Ms(floor.start.Pct(50)), "ms")
			benchfig.Figure(b, name+"_relayed_starts_failed", float64(r.startFailed), "n")
			benchfig.Ratio(b, name+"_relayed_report", benchfig.Ms(r.report.Pct(50)), benchfig.Ms(floor.report.Pct(50)), "ms")
			benchfig.Figure(b, name+"_signin_each", benchfig.Ms(r.signIn)/float64(n), "ms")
		}
	}
}

// scaleConfig is the heartbeat interval, the measuring window, and the
// memory (MiB) past which the control plane is killed: the one before
// SQLite grew past 7 GiB at 1,000 machines, on a machine others share.
type scaleConfig struct {
	interval, window time.Duration
	memCap           float64
}

// scaleResult is what one run measured.
type scaleResult struct {
	n                       int
	cpuPct                  float64 // the control plane's CPU over the window, % of one core
	rss, hwm                float64 // MiB at the window's end
	beat, list              stats
	beatFailed, listFailed  int64
	start, report           stats
	startFailed, repFailed  int64
	signIn                  time.Duration // all N signed in, 8 at a time
	firstBeatErr, startErr  string
	beats, lists, relayRuns int
	imported                int
	importTook              time.Duration
	importErr               error
	capped                  float64 // MiB at which it was killed, 0 when it was not
	listBytes               int     // the list of the machines, as JSON
}

func (r scaleResult) String() string {
	killed := ""
	if r.capped > 0 {
		killed = fmt.Sprintf("KILLED at %.0f MiB (the benchmark's cap, to spare the shared machine); ", r.capped)
	}
	return killed + fmt.Sprintf("CPU %.1f%% of a core, RSS %.1f MiB (peak %.1f); heartbeats %d: p50 %.1f ms p99 %.1f ms, %d failed %s; lists %d: p50 %.1f ms p99 %.1f ms, %d failed; relayed starts %d: median %.1f ms p99 %.1f ms, %d failed %s; reports: median %.1f ms, %d failed; sign-in %.1f ms each",
		r.cpuPct, r.rss, r.hwm, r.beats, benchfig.Ms(r.beat.Pct(50)), benchfig.Ms(r.beat.Pct(99)), r.beatFailed, r.firstBeatErr, r.lists, benchfig.Ms(r.list.Pct(50)), benchfig.Ms(r.list.Pct(99)), r.listFailed,
		r.relayRuns, benchfig.Ms(r.start.Pct(50)), benchfig.Ms(r.start.Pct(99)), r.startFailed, r.startErr, benchfig.Ms(r.report.Pct(50)), r.repFailed, benchfig.Ms(r.signIn)/float64(r.n))
}

// runScale runs one control plane with bin and n machines (see
// BenchmarkControlPlaneScale).
// With importBin, it then opens the folder with that st (the after's) and
// counts the machines it imported.
func runScale(b *testing.B, bin string, n int, cfg scaleConfig, importBin string) scaleResult {
	dir, err := os.MkdirTemp("", "st-cp-scale")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	p := startCP(b, bin, dir, "--offline-after", (3 * cfg.interval).String())
	defer p.stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ms, took := signInAll(b, ctx, p, dir, n)
	defer func() {
		for _, m := range ms {
			m.close()
		}
	}()
	pairs := max(1, n/10)
	for i := 0; i < 2*pairs; i++ {
		if err := ms[i].serve(); err != nil {
			b.Fatal(err)
		}
	}
	waitRelays(b, ms)
	var beat, list sample
	measuring := make(chan struct{})
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Add(2)
		go func() { defer wg.Done(); heartbeats(ctx, m, cfg.interval, measuring, &beat) }()
		go func() { defer wg.Done(); lists(ctx, m, 6*cfg.interval, measuring, &list) }()
	}
	// Every machine beats once (the first heartbeat writes: online, an
	// address) before the window opens.
	time.Sleep(cfg.interval + time.Second)
	// Each machine of a pair knows the other's access already, as after
	// its first call there: a start measures the relay, not a list.
	for i := 0; i < pairs; i++ {
		ms[i].id.Access(ctx, ms[pairs+i].id.Slug)
		ms[pairs+i].id.Access(ctx, ms[i].id.Slug)
	}
	stopWatch := p.watchMemory(cfg.memCap)
	defer stopWatch()
	cpu0, t0 := p.cpu(), time.Now()
	close(measuring)
	start, report := relayedStarts(ctx, ms[:pairs], ms[pairs:2*pairs], cfg.window)
	time.Sleep(time.Until(t0.Add(cfg.window)))
	cpu := p.cpu() - cpu0
	wall := time.Since(t0)
	rss, hwm := p.mem()
	capped := stopWatch()
	listBytes := 0
	if l, err := ms[0].id.Machines(ctx); err == nil {
		b, _ := json.Marshal(l)
		listBytes = len(b)
	}
	cancel()
	wg.Wait()
	r := scaleResult{n: n, cpuPct: 100 * float64(cpu) / float64(wall), rss: rss, hwm: hwm, signIn: took,
		beat: beat.stats(), list: list.stats(), beatFailed: beat.failed.Load(), listFailed: list.failed.Load(),
		start: start.stats(), report: report.stats(), startFailed: start.failed.Load(), repFailed: report.failed.Load(),
		firstBeatErr: beat.firstErr(), startErr: start.firstErr(), capped: capped, listBytes: listBytes}
	if capped > 0 {
		// Killed at the cap: its last reading is the cap's.
		r.rss, r.hwm = capped, capped
		r.cpuPct = 100 * float64(p.cpuAtKill-cpu0) / float64(p.killedAt.Sub(t0))
	}
	r.beats, r.lists, r.relayRuns = len(r.beat), len(r.list), len(r.start)
	if importBin != "" {
		// The after st reads the before's folder: its state.json is
		// imported into state.db at this first open.
		p.stop()
		t0 := time.Now()
		got, err := machinesOf(importBin, p.data)
		r.imported, r.importTook, r.importErr = got, time.Since(t0), err
	}
	return r
}

// signInAll signs n machines in, 8 at a time, and connects each to the
// relay.
func signInAll(b *testing.B, ctx context.Context, p *cpProc, dir string, n int) ([]*simMachine, time.Duration) {
	ms := make([]*simMachine, n)
	errs := make(chan error, n)
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range ms {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			m, err := signIn(ctx, p, dir, fmt.Sprintf("m%04d", i))
			if err != nil {
				errs <- err
				return
			}
			ms[i] = m
		}()
	}
	wg.Wait()
	took := time.Since(t0)
	close(errs)
	for err := range errs {
		b.Fatalf("sign-in: %v", err)
	}
	for _, m := range ms {
		m.connect()
	}
	return ms, took
}

// waitRelays waits until every machine's relay connection is up.
func waitRelays(b *testing.B, ms []*simMachine) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, m := range ms {
		if err := m.relay.WaitConnected(ctx); err != nil {
			b.Fatalf("%s: relay: %v", m.name, err)
		}
	}
}

// heartbeats beats every interval as st's daemon does (relay-only: no
// address), and records each once measuring is closed.
func heartbeats(ctx context.Context, m *simMachine, interval time.Duration, measuring chan struct{}, s *sample) {
	every(ctx, interval, func() {
		c, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		t0 := time.Now()
		err := m.id.Heartbeat(c, "", true, true)
		if ctx.Err() != nil {
			return
		}
		if isClosed(measuring) {
			s.add(time.Since(t0), err)
		}
	})
}

// lists lists the account's machines every period (as st machines, or a
// daemon finding a machine, would), and records each once measuring.
func lists(ctx context.Context, m *simMachine, period time.Duration, measuring chan struct{}, s *sample) {
	every(ctx, period, func() {
		c, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		t0 := time.Now()
		_, err := m.id.Machines(c)
		if ctx.Err() != nil {
			return
		}
		if isClosed(measuring) {
			s.add(time.Since(t0), err)
		}
	})
}

// relayedStarts has each of from relay starts to the machine of to at
// its index, spread over window, each followed by a report back; at
// least 30 starts in all (one pair does them one after another).
func relayedStarts(ctx context.Context, from, to []*simMachine, window time.Duration) (start, report *sample) {
	start, report = &sample{}, &sample{}
	each := max(1, (30+len(from)-1)/len(from))
	var wg sync.WaitGroup
	for i := range from {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < each && ctx.Err() == nil; k++ {
				slot := window * 9 / 10 / time.Duration(each)
				time.Sleep(jitter(slot))
				t0 := time.Now()
				c, cancel := context.WithTimeout(ctx, 20*time.Second)
				d, err := from[i].post(c, to[i].id.Slug, api.PeerPrefix+"start", startBody)
				start.add(d, err)
				if err == nil {
					d, err = to[i].post(c, from[i].id.Slug, api.PeerPrefix+"watch", reportBody)
					report.add(d, err)
				}
				cancel()
				time.Sleep(time.Until(t0.Add(slot)))
			}
		}()
	}
	wg.Wait()
	return start, report
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func envDuration(key string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(key)); err == nil && d > 0 {
		return d
	}
	return def
}

func envInts(key string, def []int) []int {
	var out []int
	for _, f := range strings.Split(os.Getenv(key), ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return def
	}
	return out
}

// machinesOf lists account acme's machines of the control plane folder
// data with bin (st control-plane machines --json), for the import check.
func machinesOf(bin, data string) (int, error) {
	out, err := exec.Command(bin, "control-plane", "machines", "--account", "acme", "--data", data, "--json").Output()
	if err != nil {
		return 0, err
	}
	var v struct {
		Machines []json.RawMessage `json:"machines"`
	}
	err = json.Unmarshal(out, &v)
	return len(v.Machines), err
}
