package history

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/bench/benchfig"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/testutil"
)

// counts are the numbers of finished runs under $ST_HOME/orch; the first
// is every figure's floor.
var counts = []int{1, 300, 3000}

// BenchmarkHistory measures `st up` and the daemon's memory with 1, 300
// and 3,000 finished runs of 10 workers under $ST_HOME/orch, for the st
// of this checkout ("after") and of beforeCommit ("before"), in the same
// run: each round starts every daemon once (before and after, each
// count), and the figures are medians of 5 rounds:
//
//   - `st up`'s time (it returns when the daemon answers);
//   - the daemon's memory once it answers: its peak (VmHWM) and now
//     (VmRSS);
//   - after only: the first start of the after's st on a history it has
//     not seen (it reads every run once and lists the finished ones);
//   - `st orch show RUN` of the oldest run, `st worker read` of one of its
//     workers and `st worker list --all`: the after's read the history
//     from disk (beside the same at 1 run), the before's have every run
//     in memory.
//
// Goal (issue 27): `st up` and the daemon's memory at 3,000 runs within
// 1.5x of 1 run.
func BenchmarkHistory(b *testing.B) {
	r := newRig(b)
	after, before := testutil.BuildST(b), beforeST(b)
	tmpl := finishedRun(b, r, after)
	fmt.Printf("the finished run: %s, %d workers, %d bytes of run.json\n", tmpl.ID, len(tmpl.Workers), len(encode(b, tmpl)))
	type key struct {
		bin string
		n   int
	}
	homes := map[key]string{}
	firstUp := map[int]time.Duration{}
	for _, n := range counts {
		for _, bin := range []string{before, after} {
			h := r.home()
			fill(b, h, tmpl, n)
			homes[key{bin, n}] = h
		}
		// The after's first start lists the finished runs, once.
		t0 := time.Now()
		r.must(after, homes[key{after, n}], "", "up")
		firstUp[n] = time.Since(t0)
		r.down(after, homes[key{after, n}])
	}
	up := map[key][]float64{}
	hwm := map[key][]float64{}
	rss := map[key][]float64{}
	for round := 0; round < 5; round++ {
		for _, n := range counts {
			for _, bin := range []string{before, after} {
				k := key{bin, n}
				t0 := time.Now()
				r.must(bin, homes[k], "", "up")
				up[k] = append(up[k], benchfig.Ms(time.Since(t0)))
				pid := daemonPID(b, homes[k])
				hwm[k] = append(hwm[k], float64(procKB(b, pid, "VmHWM"))/1024)
				rss[k] = append(rss[k], float64(procKB(b, pid, "VmRSS"))/1024)
				r.down(bin, homes[k])
			}
		}
	}
	most := counts[len(counts)-1]
	reads := readTimes(b, r, after, homes[key{after, counts[0]}], homes[key{after, most}], before, homes[key{before, most}])
	for _, n := range counts {
		for _, v := range []struct {
			name string
			bin  string
		}{{"before", before}, {"after", after}} {
			k, f := key{v.bin, n}, key{v.bin, counts[0]}
			sfx := fmt.Sprintf("_%s_n%d", v.name, n)
			fmt.Printf("%s, %d runs: st up %.0f ms (1 run: %.0f), peak memory %.1f MiB (1 run: %.1f), now %.1f MiB\n",
				v.name, n, benchfig.Median(up[k]), benchfig.Median(up[f]), benchfig.Median(hwm[k]), benchfig.Median(hwm[f]), benchfig.Median(rss[k]))
			scaled(b, "history_up"+sfx, benchfig.Median(up[k]), benchfig.Median(up[f]), "ms")
			scaled(b, "history_peak_rss"+sfx, benchfig.Median(hwm[k]), benchfig.Median(hwm[f]), "MiB")
			scaled(b, "history_rss"+sfx, benchfig.Median(rss[k]), benchfig.Median(rss[f]), "MiB")
		}
		scaled(b, fmt.Sprintf("history_first_up_after_n%d", n), benchfig.Ms(firstUp[n]), benchfig.Median(up[key{after, counts[0]}]), "ms")
	}
	for _, x := range reads {
		scaled(b, x.name, x.v, x.floor, "ms")
	}
}

// finishedRun makes a real finished run with bin: a coordinator (a
// shell in a window of its own) starts 10 sim workers that report, their
// windows close, the coordinator's window closes, and st sees them all
// gone. It returns the run as st kept it.
func finishedRun(b *testing.B, r *rig, bin string) api.Run {
	b.Helper()
	home := r.home()
	r.must(bin, home, "", "up")
	out, err := r.tm.Run("new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "main", "-n", "lead", "sh")
	if err != nil {
		b.Fatal(err)
	}
	lead := strings.TrimSpace(out)
	r.must(bin, home, lead, "orch", "start", "--objective", "Split the API tests in ten parts and make each pass")
	for i := 1; i <= 10; i++ {
		task := filepath.Join(r.dir, fmt.Sprintf("part-%d.md", i))
		os.WriteFile(task, []byte(fmt.Sprintf("summary: part %d of the API tests: 14 tests fixed; go test ./api/... passes\n", i)), 0o644)
		r.must(bin, home, lead, "worker", "start", "--agent", "sim", "--task", task, "--name", fmt.Sprintf("part-%d", i))
	}
	var v api.RunView
	testutil.WaitFor(b, 2*time.Minute, func() (bool, string) {
		out, err := r.st(bin, home, lead, "orch", "show", "--json")
		if err != nil || json.Unmarshal([]byte(out), &v) != nil {
			return false, out
		}
		done := 0
		for _, w := range v.Views {
			if w.State == api.Done {
				done++
			}
		}
		return done == 10, fmt.Sprintf("%d of 10 workers done", done)
	})
	for _, w := range v.Views {
		r.tm.Run("kill-window", "-t", w.Window)
	}
	r.tm.Run("kill-pane", "-t", lead)
	testutil.WaitFor(b, time.Minute, func() (bool, string) {
		r.st(bin, home, r.pane, "worker", "list", "--all") // st looks at tmux first
		out, err := r.st(bin, home, r.pane, "orch", "show", v.ID, "--json")
		if err != nil || json.Unmarshal([]byte(out), &v) != nil {
			return false, out
		}
		for _, w := range v.Views {
			if w.State != api.Gone {
				return false, fmt.Sprintf("%s is %s", w.ID, w.State)
			}
		}
		return true, ""
	})
	r.down(bin, home)
	var run api.Run
	data, err := os.ReadFile(filepath.Join(home, "orch", v.ID, "run.json"))
	if err != nil || json.Unmarshal(data, &run) != nil {
		b.Fatalf("run.json of %s: %v", v.ID, err)
	}
	return run
}

func encode(b *testing.B, r api.Run) []byte {
	b.Helper()
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		b.Fatal(err)
	}
	return append(data, '\n')
}

// fill writes n copies of tmpl under home/orch, as st keeps them: each
// with its own id, panes of its own (a tmux server's panes are numbered
// on, and never named twice in its life), and made 45 minutes before the
// one after it (3,000 runs span about three months).
func fill(b *testing.B, home string, tmpl api.Run, n int) {
	b.Helper()
	for i := 0; i < n; i++ {
		r := tmpl
		shift := -time.Duration(n-1-i) * 45 * time.Minute
		r.ID = fmt.Sprintf("run-h%05d", i)
		base := 100000 + i*20
		ids := map[string]string{tmpl.Coordinator: fmt.Sprintf("%%%d", base)}
		r.Coordinator = ids[tmpl.Coordinator]
		r.Created = tmpl.Created.Add(shift)
		r.Workers = nil
		for j, w0 := range tmpl.Workers {
			ids[w0.ID] = fmt.Sprintf("%%%d", base+j+1)
		}
		for _, w0 := range tmpl.Workers {
			w := *w0
			w.ID, w.Parent = ids[w0.ID], ids[w0.Parent]
			w.Since, w.StartedAt = w.Since.Add(shift), w.StartedAt.Add(shift)
			if w.ReportedAt != nil {
				t := w.ReportedAt.Add(shift)
				w.ReportedAt = &t
			}
			r.Workers = append(r.Workers, &w)
		}
		dir := filepath.Join(home, "orch", r.ID)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "run.json"), encode(b, r), 0o600); err != nil {
			b.Fatal(err)
		}
	}
}

type readFigure struct {
	name     string
	v, floor float64
}

// readTimes times what reads a finished run from disk with the after's
// st, at the fewest runs (the floor) and the most: st orch show RUN of
// the oldest run, st worker read of its first worker by pane id, and st
// worker list --all (medians of 5); and the same with the before's st at
// the most, which has every run in memory.
func readTimes(b *testing.B, r *rig, bin, few, many, before, beforeMany string) []readFigure {
	b.Helper()
	times := func(home string, args ...string) float64 {
		return timesOf(b, r, bin, home, args...)
	}
	n := counts[len(counts)-1]
	var out []readFigure
	for _, c := range []struct {
		name string
		args []string
	}{
		{"history_show_oldest", []string{"orch", "show", "run-h00000"}},
		{"history_read_oldest_worker", []string{"worker", "read", "%100001"}},
		{"history_list_all", []string{"worker", "list", "--all", "--json"}},
	} {
		out = append(out, readFigure{fmt.Sprintf("%s_after_n%d", c.name, n), times(many, c.args...), times(few, c.args...)},
			readFigure{fmt.Sprintf("%s_before_n%d", c.name, n), timesOf(b, r, before, beforeMany, c.args...), 0})
	}
	return out
}

// timesOf is the median time of st ARGS with bin's daemon of home, over
// 5 runs after one that warms the daemon up.
func timesOf(b *testing.B, r *rig, bin, home string, args ...string) float64 {
	b.Helper()
	r.must(bin, home, "", "up")
	defer r.down(bin, home)
	var ds []float64
	for i := 0; i < 6; i++ {
		t0 := time.Now()
		r.must(bin, home, r.pane, args...)
		if i > 0 {
			ds = append(ds, benchfig.Ms(time.Since(t0)))
		}
	}
	return benchfig.Median(ds)
}
