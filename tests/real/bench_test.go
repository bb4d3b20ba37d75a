package real

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"
)

// BenchmarkRealStarts starts each real agent 50 times in a row as a
// worker (one at a time, each closed before the next) and reports how many
// starts went undelivered, and the time st adds to a start beyond the
// agent's own time to its input box (st's start minus the launch-to-box
// time measured on the same agent by polling its screen).
//
//	go test -run '^$' -bench RealStarts -benchtime 1x ./tests/real/
//
// (every kind of kinds(); ST_COMPAT_KIND=opencode for one).
func BenchmarkRealStarts(b *testing.B) {
	n := 50
	if v := os.Getenv("ST_BENCH_STARTS"); v != "" {
		fmt.Sscan(v, &n)
	}
	for _, kind := range kinds(b) {
		b.Run(kind, func(b *testing.B) {
			r := newRig(b)
			r.installHooks()
			task := r.writeTask("s.md", "SAY: started\n")
			ad := mustAdapter(b, kind)
			var starts, boxes []time.Duration
			failed := 0
			for i := 0; i < n; i++ {
				name := fmt.Sprintf("s%d", i)
				t0 := time.Now()
				_, errs, code := r.st1("worker", "start", "--agent", kind, "--task", task, "--name", name)
				if code != 0 {
					failed++
					b.Logf("%s start %d: %s", kind, i, errs)
					continue
				}
				starts = append(starts, time.Since(t0))
				r.st1("worker", "stop", name, "--yes")
				// The agent's own launch-to-box time, on a window st does not drive.
				t1 := time.Now()
				r.tmuxMust("new-window", "-d", "-t", "main:", "-n", "probe", "-c", r.work(), strings.Join(ad.Command(launchFor(r, kind)), " "))
				// (opencode took over 60 s at a load of 30 on 2 cores.)
				for r.view("probe", ad).Screen.String() != "ready" && time.Since(t1) < 240*time.Second {
					time.Sleep(5 * time.Millisecond)
				}
				boxes = append(boxes, time.Since(t1))
				r.tmux("kill-window", "-t", "main:probe")
			}
			med := func(d []time.Duration) time.Duration {
				if len(d) == 0 {
					return 0
				}
				s := append([]time.Duration(nil), d...)
				sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
				return s[len(s)/2]
			}
			fmt.Printf("FIGURE %s-starts %d of %d delivered\n", kind, n-failed, n)
			fmt.Printf("FIGURE %s-start-median %.0f ms\n", kind, float64(med(starts))/1e6)
			fmt.Printf("FIGURE %s-own-box-median %.0f ms\n", kind, float64(med(boxes))/1e6)
			fmt.Printf("FIGURE %s-st-adds-median %.0f ms\n", kind, float64(med(starts)-med(boxes))/1e6)
		})
	}
}
