package daemon

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// BenchmarkTellWhoAsked is what telling who asked costs a request of the
// socket that an agent may do only to its own (internal/authz): reading
// the caller's parents and environment in /proc (readCaller), against a
// floor measured in the same run, one read of the caller's stat file.
// Routes open to every local process (status, hooks, waits) skip it.
func BenchmarkTellWhoAsked(b *testing.B) {
	pid := os.Getpid()
	stat := "/proc/" + strconv.Itoa(pid) + "/stat"
	floor := measure(b.N, func() { os.ReadFile(stat) })
	t0 := time.Now()
	for i := 0; i < b.N; i++ {
		if c := readCaller(realProc, pid, nil); c.err != "" {
			b.Fatal(c.err)
		}
	}
	per := time.Since(t0) / time.Duration(b.N)
	b.ReportMetric(float64(per.Microseconds()), "µs/tell")
	b.ReportMetric(float64(floor.Microseconds()), "µs/floor")
	b.ReportMetric(float64(per)/float64(floor), "ratio")
}

func measure(n int, fn func()) time.Duration {
	t0 := time.Now()
	for i := 0; i < n; i++ {
		fn()
	}
	return time.Since(t0) / time.Duration(n)
}
