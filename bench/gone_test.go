package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sophonz/st/bench/benchfig"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/orch"
)

// BenchmarkTmuxGone measures how soon st tells the truth when its tmux
// server goes and nothing can be brought back, over 5 trials, each a
// fresh world (as tests/faults' TestTmuxKilledNothingToRestore does it):
// 3 sim workers at work, a `st worker wait` for them waiting, the
// server's socket folder replaced by a file (no server can start there
// again), the server sent SIGTERM by its pid. Figures, medians of the
// trials, each against a bare `st version` (6 after each trial):
//
//   - the kill to the wait's return (exit 2, every worker gone);
//   - the kill to a `st status --json` that shows tmux_down (st status
//     run back to back from the kill);
//
// and the daemon's own time of the exit (tmux_down) after the kill,
// tmux's own time to end its server after the SIGTERM (st cannot hear of
// the exit before it), and the trials in which every worker was gone with
// the reason.
func BenchmarkTmuxGone(b *testing.B) {
	const trials = 5
	var waits, says, noticed, exits, waitsAfter, version []time.Duration
	whole := 0
	for i := 0; i < trials; i++ {
		b.Run(fmt.Sprintf("trial=%d", i), func(b *testing.B) {
			t := goneTrial(b)
			waits, says, noticed, exits = append(waits, t.wait), append(says, t.says), append(noticed, t.noticed), append(exits, t.exit)
			waitsAfter = append(waitsAfter, t.wait-t.exit)
			if t.whole {
				whole++
			}
			for k := 0; k < 6; k++ {
				version = append(version, t.r.versionTime())
			}
		})
	}
	if len(waits) == 0 {
		return
	}
	floor := benchfig.NewStats(version).Median()
	fmt.Printf("tmux gone with nothing to restore, %d trials: kill to the wait's return %v, to st status saying so %v, noticed by st %v, the server's process ended %v after the kill\n",
		len(waits), waits, says, noticed, exits)
	benchfig.RatioMs(b, "tmux_gone_wait_returns_median", benchfig.NewStats(waits).Median(), floor)
	benchfig.Figure(b, "tmux_gone_wait_returns_max", benchfig.Ms(benchfig.NewStats(waits).Pct(100)), "ms")
	benchfig.RatioMs(b, "tmux_gone_status_says_median", benchfig.NewStats(says).Median(), floor)
	benchfig.Figure(b, "tmux_gone_noticed_median", benchfig.Ms(benchfig.NewStats(noticed).Median()), "ms")
	benchfig.Figure(b, "tmux_gone_server_exit_median", benchfig.Ms(benchfig.NewStats(exits).Median()), "ms")
	// st's own share: the server's process ended to the wait's return.
	benchfig.Figure(b, "tmux_gone_wait_returns_after_exit_median", benchfig.Ms(benchfig.NewStats(waitsAfter).Median()), "ms")
	benchfig.Figure(b, "tmux_gone_trials_whole", float64(whole), fmt.Sprintf("of_%d", len(waits)))
}

// goneResult is one trial of BenchmarkTmuxGone.
type goneResult struct {
	r       *rig
	wait    time.Duration // the kill -> the wait's exit
	says    time.Duration // the kill -> a st status --json with tmux_down returned
	noticed time.Duration // the kill -> tmux_down, the daemon's own time
	exit    time.Duration // the kill -> the tmux server's process ended
	whole   bool          // every worker gone with the reason, the wait exit 2 naming each
}

func goneTrial(b *testing.B) goneResult {
	r := newRig(b)
	r.up()
	res := goneResult{r: r}
	task := r.writeFile("long.md", "sleep: 600s\nsummary: never\n", 0o644)
	var names []string
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("long%d", i)
		r.mustRun(r.st(r.coord, "worker", "start", "--agent", "sim", "--task", task, "--name", name))
		names = append(names, name)
	}
	wait := r.startWait()

	pidOut, err := r.tmux("display-message", "-p", "#{pid}")
	if err != nil {
		b.Fatal(err)
	}
	var server int
	fmt.Sscan(pidOut, &server)
	// No server can start there again: its socket's folder becomes a
	// file (the server runs on, unreachable by name), then it is killed.
	sockDir := filepath.Dir(r.tm.Socket)
	os.RemoveAll(sockDir)
	if err := os.WriteFile(sockDir, []byte("not a folder"), 0o600); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.Remove(sockDir); os.MkdirAll(sockDir, 0o700) })
	kill := time.Now()
	if err := syscall.Kill(server, syscall.SIGTERM); err != nil {
		b.Fatalf("kill the tmux server %d: %v", server, err)
	}
	ended := processEnd(server)
	var s statusJSON
	waitFor(b, 60*time.Second, "st status to say the tmux server is gone", func() bool {
		return s.poll(r) && s.TmuxDown != nil
	})
	res.says = time.Since(kill)
	res.noticed = s.TmuxDown.Sub(kill)

	var t1 time.Time
	select {
	case t1 = <-wait.exited:
	case <-time.After(60 * time.Second):
		wait.cmd.Process.Kill()
		<-wait.exited
		b.Fatalf("st worker wait did not return within 60 s of the kill\n%s", r.explain(r.coord))
	}
	res.wait = t1.Sub(kill)
	if e := <-ended; !e.IsZero() {
		res.exit = e.Sub(kill)
	}
	text := wait.text()
	res.whole = exitCode(wait.err) == 2
	for _, n := range names {
		if !regexp.MustCompile(regexp.QuoteMeta(n) + `\s+gone`).MatchString(text) {
			res.whole = false
		}
	}
	// The workers' records, on disk: gone, saying why.
	var run orch.Run
	readRun(r, &run)
	var states []string
	for _, w := range run.Workers {
		states = append(states, fmt.Sprintf("%s %s %q", w.Name, w.State, w.Error))
		if w.State != api.Gone || w.Error == "" {
			res.whole = false
		}
	}
	if len(run.Workers) != len(names) {
		res.whole = false
	}
	if !res.whole {
		fmt.Printf("note: a trial did not end whole: the wait %v:\n%s\nthe workers: %s\n", wait.err, text, strings.Join(states, "; "))
	}
	return res
}
