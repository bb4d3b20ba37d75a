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

	"github.com/sophonz/st/internal/testutil"
)

// BenchmarkRemote measures workers on another machine, on two "machines"
// on this box (own ST_HOME, tmux server and 127.0.0.N, a control plane
// between them): what st adds to a start on beta asked from alpha beyond
// the same start asked on beta itself (interleaved, so that both see the
// same load), and the time from the report there (`st worker done` on
// beta) to the return of `st worker wait` on alpha.
func BenchmarkRemote(b *testing.B) {
	const starts, reports = 10, 30
	c := testutil.NewCluster(b)
	c.Extra = []string{"ST_HEARTBEAT=2s"}
	alpha, beta := c.Machine("alpha", "127.0.0.2"), c.Machine("beta", "127.0.0.3")
	alpha.Login("acme")
	beta.Login("acme")
	pa, pb := alpha.Up(), beta.Up()
	beta.MustST("", "orch", "accept-remote", "on")
	quick := c.TaskFile("quick.md", "answer: hi\nsummary: quick\n")

	idRe := regexp.MustCompile(`(?m)^(\S+) `)
	var local, remote []time.Duration
	b.ResetTimer()
	for i := 0; i < starts+1; i++ {
		t0 := time.Now()
		out := beta.MustST(pb, "worker", "start", "--agent", "sim", "--task", quick, "--name", fmt.Sprintf("l%d", i))
		dl := time.Since(t0)
		t0 = time.Now()
		out2 := alpha.MustST(pa, "worker", "start", "--machine", "beta", "--agent", "sim", "--task", quick, "--name", fmt.Sprintf("r%d", i))
		dr := time.Since(t0)
		if i > 0 { // the first of each warms caches (the access file, the st-remote session)
			local, remote = append(local, dl), append(remote, dr)
		}
		for _, o := range []struct {
			m    *testutil.Machine
			pane string
			out  string
		}{{beta, pb, out}, {alpha, pa, out2}} {
			if m := idRe.FindStringSubmatch(o.out); m != nil {
				o.m.In(o.pane, "worker", "stop", m[1], "--yes")
			}
		}
	}

	// Report there -> wait here.
	slow := c.TaskFile("slow.md", "sleep: 600s\n")
	out := alpha.MustST(pa, "worker", "start", "--machine", "beta", "--agent", "sim", "--task", slow, "--name", "w")
	id := idRe.FindStringSubmatch(out)[1]
	_, wpane, _ := strings.Cut(id, "/")
	waitOut := filepath.Join(c.Dir, "wait.out")
	var lat, doneWall []time.Duration
	for i := 0; i < reports; i++ {
		// Its turn starts again on beta, and alpha sees it working.
		hook := exec.Command(beta.Bin(), "hook", "sim", "UserPromptSubmit")
		hook.Env = beta.Env("TMUX_PANE="+wpane, "TMUX="+beta.Tmux.Socket+",1,0")
		hook.Stdin = strings.NewReader(`{"session_id":"b","hook_event_name":"UserPromptSubmit","prompt":"x"}`)
		if out, err := hook.CombinedOutput(); err != nil {
			b.Fatalf("hook: %v\n%s", err, out)
		}
		testutil.WaitFor(b, 10*time.Second, func() (bool, string) {
			out, _ := alpha.In(pa, "worker", "list")
			return regexp.MustCompile(regexp.QuoteMeta(id) + `\s+w\s+sim\s+working`).MatchString(out), out
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
		beta.MustST(wpane, "worker", "done", "--summary", "n")
		doneWall = append(doneWall, time.Since(t0))
		var t1 time.Time
		select {
		case t1 = <-exited:
		case <-time.After(30 * time.Second):
			wait.Process.Kill()
			b.Fatalf("report %d: the wait on alpha did not return within 30 s", i)
		}
		if text, _ := os.ReadFile(waitOut); !strings.Contains(string(text), "done") {
			b.Fatalf("report %d: the wait said:\n%s", i, text)
		}
		lat = append(lat, t1.Sub(t0))
	}
	b.StopTimer()

	l, r, w, d := newStats(local), newStats(remote), newStats(lat), newStats(doneWall)
	fmt.Printf("start on beta asked on beta: median %.0f ms; asked from alpha: median %.0f ms (p90 %.0f ms) over %d starts each; "+
		"report on beta -> wait on alpha returns: median %.1f ms, p99 %.1f ms over %d reports (the st worker done process on beta: median %.1f ms)\n",
		ms(l.median()), ms(r.median()), ms(r.pct(90)), len(local), ms(w.median()), ms(w.pct(99)), len(lat), ms(d.median()))
	figure(b, "remote_start_local_median", ms(l.median()), "ms")
	figure(b, "remote_start_remote_median", ms(r.median()), "ms")
	figure(b, "remote_start_added_median", ms(r.median()-l.median()), "ms")
	figure(b, "remote_start_ratio", float64(r.median())/float64(l.median()), "x")
	figure(b, "remote_wait_after_done_median", ms(w.median()), "ms")
	figure(b, "remote_wait_after_done_p99", ms(w.pct(99)), "ms")
	figure(b, "remote_done_process_median", ms(d.median()), "ms")
}
