package guard

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// typical are commands as agents run them.
var typical = []string{
	"git status",
	"git diff --stat HEAD~1",
	"git log --oneline -20",
	"go test ./internal/... -run TestFoo -count=1 2>&1 | tail -40",
	"cd /work/repo && go build ./... && go vet ./...",
	"rg -n 'func (r \\*reader)' internal/ | head -50",
	"sed -n '120,200p' internal/shell/walk.go",
	"cat package.json | jq '.scripts'",
	"ls -la src/ && wc -l src/*.go",
	"npm test -- --watch=false 2>&1 | tail -n 100",
	"python3 -c 'import json,sys; print(json.load(open(\"config.json\"))[\"name\"])'",
	"find . -name '*.go' -not -path './vendor/*' | xargs grep -l 'TODO' | head",
	"for f in $(git diff --name-only); do gofmt -l \"$f\"; done",
	"mkdir -p build && cd build && cmake .. && make -j2",
	"cat > /tmp/notes.md <<'EOF'\n# Notes\n\n- check the guard\n- run the tests\nEOF",
	"tmux list-panes -a -F '#{pane_id} #{pane_current_command}'",
	"st worker wait w1 w2 --timeout 10m",
	"curl -s http://127.0.0.1:8080/health || echo down",
	"export GOFLAGS=-mod=mod; go mod tidy && git diff go.mod",
	"apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: src/a.go\n@@\n-old\n+new\n*** End Patch\nPATCH",
	"if [ -f Makefile ]; then make test; else go test ./...; fi",
	"docker ps --format '{{.Names}}' | grep -v redis || true",
	"kill %1; wait",
	"ps aux | grep '[n]ode server.js' | awk '{print $2}' | xargs -r kill",
}

// BenchmarkGuard prints the guard's time for a typical agent command
// (median and p99 over the commands above, many rounds) and for the worst
// input the fuzz tests and the bound tests know, each also as a ratio to
// a floor measured in the same run (the guard on `true`), since absolute
// times on a shared machine move with its load. Run it with
//
//	go test -run '^$' -bench Guard -benchtime 1x ./internal/guard/
//
// (scripts/bench runs it too).
func BenchmarkGuard(b *testing.B) {
	g := Context{TmuxSocket: "/tmp/tmux-1000/default,123,0", UID: 1000, Cwd: "/work/repo"}
	timeOf := func(cmd string, rounds int) []time.Duration {
		out := make([]time.Duration, rounds)
		for i := range out {
			t0 := time.Now()
			Check(cmd, g)
			out[i] = time.Since(t0)
		}
		return out
	}
	for _, c := range typical {
		Check(c, g) // warm up
	}
	floor := median(timeOf("true", 200))
	var all []time.Duration
	for r := 0; r < 40; r++ {
		for _, c := range typical {
			all = append(all, timeOf(c, 1)...)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	med, p99 := all[len(all)/2], all[len(all)*99/100]

	// The worst known input: the fuzz corpora, the bound tests' commands,
	// each timed three times (its best of three, to leave out the noise).
	var worst time.Duration
	var worstCmd string
	var worstAlloc uint64
	for _, c := range worstCandidates(b) {
		best := time.Hour
		var alloc uint64
		for i := 0; i < 3; i++ {
			a, d := measure(func() { Check(c, g) })
			if d < best {
				best, alloc = d, a
			}
		}
		if best > worst {
			worst, worstCmd, worstAlloc = best, c, alloc
		}
	}
	b.ReportMetric(ms(med), "typical_median_ms")
	b.ReportMetric(ms(p99), "typical_p99_ms")
	b.ReportMetric(ms(worst), "worst_ms")
	fmt.Printf("guard over %d typical commands: median %.3f ms (%.1fx the floor), p99 %.3f ms (%.1fx); floor (`true`) %.3f ms\n",
		len(all), ms(med), ratio(med, floor), ms(p99), ratio(p99, floor), ms(floor))
	fmt.Printf("worst known input: %.1f ms (%.0fx the floor), %.1f MB allocated, %d bytes: %.60q...\n",
		ms(worst), ratio(worst, floor), float64(worstAlloc)/1e6, len(worstCmd), worstCmd)
	fmt.Printf("FIGURE guard_typical_median %.3f ms\n", ms(med))
	fmt.Printf("FIGURE guard_typical_p99 %.3f ms\n", ms(p99))
	fmt.Printf("FIGURE guard_floor %.3f ms\n", ms(floor))
	fmt.Printf("FIGURE guard_worst %.2f ms\n", ms(worst))
	fmt.Printf("FIGURE guard_worst_alloc %.1f MB\n", float64(worstAlloc)/1e6)
}

// worstCandidates are the inputs the fuzz corpora and the bound tests
// hold, and the largest commands the hook reads.
func worstCandidates(tb testing.TB) []string {
	var out []string
	for _, dir := range []string{"testdata/fuzz/FuzzGuard", "testdata/fuzz/FuzzDifferential"} {
		out = append(out, corpus(tb, dir)...)
	}
	if files, _ := filepath.Glob(filepath.Join(os.Getenv("GOCACHE"), "fuzz", "*", "FuzzGuard", "*")); len(files) > 0 {
		for _, f := range files {
			out = append(out, corpus(tb, filepath.Dir(f))...)
			break
		}
	}
	nested := "tmux kill-server"
	for i := 0; i < 10; i++ {
		nested = "bash -c " + shellQuote(nested)
	}
	out = append(out, nested,
		strings.Repeat("$(", 5000)+"tmux kill-server"+strings.Repeat(")", 5000),
		strings.Repeat("echo a; ", 5000)+"tmux kill-server",
		strings.Repeat("eval ", 3000)+"tmux kill-server",
		"cat > f <<'EOF'\n"+strings.Repeat("x := f(a, b) // $y `z` (\n", 40000)+"EOF\n",
		"cat > f <<EOF\n"+strings.Repeat("x := f(a, b) // y z (\n", 40000)+"EOF\n",
		strings.Repeat("a=$a$a; ", 100000),
		strings.Repeat("x ", 500000),
		strings.Repeat("echo a | ", 4000)+"cat",
		strings.Repeat("(", 1400)+"true"+strings.Repeat(")", 1400),
		"echo $(("+strings.Repeat("(", 1490)+"1"+strings.Repeat(")", 1490)+"))",
		strings.Repeat("f() { f; }; ", 2000)+"f",
		"if false; then x=a; "+strings.Repeat("x=$x$x; ", 30)+"fi",
		strings.Repeat("for i in 1 2 3 4 5 6 7 8; do ", 6)+"tmux ls"+strings.Repeat("; done", 6),
	)
	return out
}

func median(ds []time.Duration) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}
