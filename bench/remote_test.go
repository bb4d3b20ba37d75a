package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/bench/benchfig"
	"github.com/sophonz/st/internal/testutil"
)

// BenchmarkRemote measures workers on other machines, on three "machines"
// on this box (own ST_HOME, tmux server and 127.0.0.N, a control plane
// between them): beta has a peer listener, so alpha reaches it directly;
// gamma has none (peer_listen off), so alpha reaches it through the
// control plane's relay. Figures:
//
//   - what st adds to a start on beta asked from alpha beyond the same
//     start asked on beta itself (interleaved, so that both see the same
//     load);
//   - a start on gamma (relayed) against the same start on beta (direct),
//     interleaved: the ratio is the relay's cost;
//   - the time from a report there (`st worker done` on beta or gamma) to
//     the return of `st worker wait` on alpha, directly and relayed,
//     alternating, as a ratio (goal: relayed within 2x of direct).
func BenchmarkRemote(b *testing.B) {
	const starts, reports = 10, 30
	c := testutil.NewCluster(b)
	c.Extra = []string{"ST_HEARTBEAT=2s"}
	alpha, beta, gamma := c.Machine("alpha", "127.0.0.2"), c.Machine("beta", "127.0.0.3"), c.Machine("gamma", "127.0.0.4")
	gamma.Extra = []string{"ST_PEER_LISTEN=off"}
	for _, m := range []*testutil.Machine{alpha, beta, gamma} {
		m.Login("acme")
	}
	pa, pb := alpha.Up(), beta.Up()
	gamma.Up()
	beta.MustST("", "orch", "accept-remote", "on")
	gamma.MustST("", "orch", "accept-remote", "on")
	quick := c.TaskFile("quick.md", "answer: hi\nsummary: quick\n")
	testutil.WaitFor(b, 20*time.Second, func() (bool, string) {
		out, _ := alpha.ST("machines")
		return regexp.MustCompile(`beta\s.*takes workers\s+direct`).MatchString(out) &&
			regexp.MustCompile(`gamma\s.*takes workers\s+relayed`).MatchString(out), out
	})

	idRe := regexp.MustCompile(`(?m)^(\S+) `)
	stop := func(m *testutil.Machine, pane, out string) {
		if id := idRe.FindStringSubmatch(out); id != nil {
			m.In(pane, "worker", "stop", id[1], "--yes")
		}
	}
	var local, direct, relayed []time.Duration
	b.ResetTimer()
	for i := 0; i < starts+1; i++ {
		t0 := time.Now()
		out := beta.MustST(pb, "worker", "start", "--agent", "sim", "--task", quick, "--name", fmt.Sprintf("l%d", i))
		dl := time.Since(t0)
		stop(beta, pb, out)
		t0 = time.Now()
		out = alpha.MustST(pa, "worker", "start", "--machine", "beta", "--agent", "sim", "--task", quick, "--name", fmt.Sprintf("d%d", i))
		dd := time.Since(t0)
		stop(alpha, pa, out)
		t0 = time.Now()
		out = alpha.MustST(pa, "worker", "start", "--machine", "gamma", "--agent", "sim", "--task", quick, "--name", fmt.Sprintf("r%d", i))
		dr := time.Since(t0)
		stop(alpha, pa, out)
		if i > 0 { // the first of each warms caches (the access file, the st-remote session)
			local, direct, relayed = append(local, dl), append(direct, dd), append(relayed, dr)
		}
	}

	// Report there -> wait here, alternating beta (direct) and gamma (relayed).
	ws := remoteRelayWorkers(b, c, alpha, pa, beta, gamma)
	waitOut := filepath.Join(c.Dir, "wait.out")
	for i := 0; i < reports; i++ {
		for _, w := range ws {
			lat, doneWall := reportToWait(b, alpha, pa, w.m, w.id, w.pane, w.relay, waitOut)
			w.lat, w.doneW, w.after = append(w.lat, lat), append(w.doneW, doneWall), append(w.after, lat-doneWall)
		}
	}
	b.StopTimer()

	l, d, r := benchfig.NewStats(local), benchfig.NewStats(direct), benchfig.NewStats(relayed)
	wd, wr, dd := benchfig.NewStats(ws[0].lat), benchfig.NewStats(ws[1].lat), benchfig.NewStats(ws[0].doneW)
	ad, ar := benchfig.NewStats(ws[0].after), benchfig.NewStats(ws[1].after)
	fmt.Printf("start on beta asked on beta: median %.0f ms; asked from alpha, direct: median %.0f ms (p90 %.0f ms); on gamma, relayed: median %.0f ms (p90 %.0f ms); %d starts each\n",
		benchfig.Ms(l.Median()), benchfig.Ms(d.Median()), benchfig.Ms(d.Pct(90)), benchfig.Ms(r.Median()), benchfig.Ms(r.Pct(90)), len(local))
	fmt.Printf("report there -> wait on alpha returns: direct median %.1f ms p99 %.1f ms; relayed median %.1f ms p99 %.1f ms; %d reports each (the st worker done process on beta: median %.1f ms; the wait returns after it exits: direct median %.1f ms, relayed %.1f ms)\n",
		benchfig.Ms(wd.Median()), benchfig.Ms(wd.Pct(99)), benchfig.Ms(wr.Median()), benchfig.Ms(wr.Pct(99)), reports, benchfig.Ms(dd.Median()), benchfig.Ms(ad.Median()), benchfig.Ms(ar.Median()))
	benchfig.Figure(b, "remote_start_local_median", benchfig.Ms(l.Median()), "ms")
	benchfig.Figure(b, "remote_start_remote_median", benchfig.Ms(d.Median()), "ms")
	benchfig.Figure(b, "remote_start_added_median", benchfig.Ms(d.Median()-l.Median()), "ms")
	benchfig.Figure(b, "remote_start_ratio", float64(d.Median())/float64(l.Median()), "x")
	benchfig.Figure(b, "remote_start_relayed_median", benchfig.Ms(r.Median()), "ms")
	benchfig.Figure(b, "remote_start_relayed_vs_direct", float64(r.Median())/float64(d.Median()), "x")
	benchfig.Figure(b, "remote_wait_after_done_median", benchfig.Ms(wd.Median()), "ms")
	benchfig.Figure(b, "remote_wait_after_done_p99", benchfig.Ms(wd.Pct(99)), "ms")
	benchfig.Figure(b, "remote_wait_relayed_median", benchfig.Ms(wr.Median()), "ms")
	benchfig.Figure(b, "remote_wait_relayed_p99", benchfig.Ms(wr.Pct(99)), "ms")
	benchfig.Figure(b, "remote_wait_relayed_vs_direct", float64(wr.Median())/float64(wd.Median()), "x")
	benchfig.Figure(b, "remote_wait_after_exit_direct_median", benchfig.Ms(ad.Median()), "ms")
	benchfig.Figure(b, "remote_wait_after_exit_relayed_median", benchfig.Ms(ar.Median()), "ms")
	benchfig.Figure(b, "remote_done_process_median", benchfig.Ms(dd.Median()), "ms")
}

// remoteWorker is a worker on another machine, asked for from alpha, with
// its figures.
type remoteWorker struct {
	m     *testutil.Machine
	id    string
	pane  string
	relay *hookRelay
	lat   []time.Duration // from the report's start
	after []time.Duration // from the report process's exit
	doneW []time.Duration
}

// remoteRelayWorkers starts one worker on each of machines, from alpha's
// pane pa. Each one's task is a hook relay (see relayScript): its turn
// stays in that tool call, as with a long sleep, and the UserPromptSubmit
// that starts each timed turn comes from its pane.
func remoteRelayWorkers(b *testing.B, c *testutil.Cluster, alpha *testutil.Machine, pa string, machines ...*testutil.Machine) []*remoteWorker {
	b.Helper()
	idRe := regexp.MustCompile(`(?m)^(\S+) `)
	var ws []*remoteWorker
	for _, m := range machines {
		relay, line := newHookRelay(b, c.Dir, "relay-"+m.Name, m.Bin())
		out := alpha.MustST(pa, "worker", "start", "--machine", m.Name, "--agent", "sim", "--task", relay.taskFile(b, line), "--name", "w-"+m.Name)
		id := idRe.FindStringSubmatch(out)
		if id == nil {
			b.Fatalf("st worker start on %s said %q", m.Name, out)
		}
		_, pane, _ := strings.Cut(id[1], "/")
		relay.ready(b, 30*time.Second)
		ws = append(ws, &remoteWorker{m: m, id: id[1], pane: pane, relay: relay})
	}
	return ws
}

// reportToWait makes the worker id (pane on machine m, running relay)
// start a turn, has alpha's `st worker wait` wait for it, then reports
// with `st worker done` on m, and returns the time from the report's
// start to the wait's return, and the wall time of the report process.
func reportToWait(b *testing.B, alpha *testutil.Machine, pa string, m *testutil.Machine, id, pane string, relay *hookRelay, waitOut string) (time.Duration, time.Duration) {
	b.Helper()
	// Its turn starts again there (its UserPromptSubmit hook, from its
	// pane; not timed), and alpha sees it working.
	relay.fire(b, "UserPromptSubmit", `{"session_id":"b","hook_event_name":"UserPromptSubmit","prompt":"x"}`)
	name := regexp.QuoteMeta(id) + `\s+\S+\s+sim\s+working`
	testutil.WaitFor(b, 10*time.Second, func() (bool, string) {
		out, _ := alpha.In(pa, "worker", "list")
		return regexp.MustCompile(name).MatchString(out), out + "\nthe hook said: " + relay.out("UserPromptSubmit")
	})
	f, _ := os.Create(waitOut)
	wait := exec.Command(alpha.Bin(), "worker", "wait", id, "--timeout", "60s")
	wait.Env = alpha.Env("TMUX_PANE="+pa, "TMUX="+alpha.Tmux.Socket+",1,0")
	wait.Stdout, wait.Stderr = f, f
	if err := wait.Start(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	exited := make(chan time.Time, 1)
	go func() { wait.Wait(); exited <- time.Now() }()
	// Let the wait reach the daemon (and through it the machine's record).
	by := time.Now().Add(10 * time.Second)
	for {
		if sent, ok := requestSent(wait.Process.Pid); !ok || sent || time.Now().After(by) {
			break
		}
		time.Sleep(200 * time.Microsecond)
	}
	time.Sleep(20 * time.Millisecond)
	t0 := time.Now()
	m.MustST(pane, "worker", "done", "--summary", "n")
	doneWall := time.Since(t0)
	var t1 time.Time
	select {
	case t1 = <-exited:
	case <-time.After(30 * time.Second):
		wait.Process.Kill()
		b.Fatalf("%s: the wait on alpha did not return within 30 s", id)
	}
	if text, _ := os.ReadFile(waitOut); !strings.Contains(string(text), "done") {
		b.Fatalf("%s: the wait said:\n%s", id, text)
	}
	return t1.Sub(t0), doneWall
}
