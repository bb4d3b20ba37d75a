package bench

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
	"github.com/sophonz/st/internal/orch"
)

// BenchmarkRestore measures, with 20 sim workers, how long st takes after
// its tmux server is killed: from noticing it gone to the sessions being
// back, and from the sessions being back to every relation restored
// (st's own figures, from st status), median over 10 restarts.
func BenchmarkRestore(b *testing.B) {
	const workers, restarts = 20, 10
	r := newRig(b)
	r.up()
	task := r.writeFile("task.md", "sleep: 600s\n", 0o644)
	for i := 0; i < workers; i++ {
		r.mustRun(r.st(r.coord, "worker", "start", "--agent", "sim", "--task", task, "--name", fmt.Sprintf("w%d", i)))
	}
	layout := filepath.Join(r.home, "tmux-layout.json")
	waitFor(b, 30*time.Second, "every worker in st's picture of the server", func() bool {
		data, _ := os.ReadFile(layout)
		return strings.Count(string(data), `"@st_agent_session"`) >= workers
	})
	var sessions, relations, total []time.Duration
	var last time.Time
	b.ResetTimer()
	for i := 0; i < restarts; i++ {
		t0 := time.Now()
		r.tmux("kill-server")
		var st struct {
			LastRestore api.RestoreStats `json:"last_restore"`
		}
		waitFor(b, 60*time.Second, "st to bring the server back", func() bool {
			out, err := r.st(r.coord, "status", "--json").Output()
			if err != nil || json.Unmarshal(out, &st) != nil {
				return false
			}
			return st.LastRestore.At.After(last)
		})
		last = st.LastRestore.At
		total = append(total, time.Since(t0))
		sessions = append(sessions, st.LastRestore.Sessions)
		relations = append(relations, st.LastRestore.Relations)
		if st.LastRestore.Panes < workers+1 {
			b.Fatalf("restore %d moved %d panes, want %d\n%s", i, st.LastRestore.Panes, workers+1, r.explain(r.coord))
		}
		// Every worker is alive again in its new pane before the next kill.
		waitFor(b, 30*time.Second, "every worker listed alive", func() bool {
			out, _ := r.st("", "worker", "list", "--all").Output()
			return strings.Count(string(out), " idle ")+strings.Count(string(out), " working ") >= workers
		})
		waitFor(b, 30*time.Second, "the agents' conversation ids back in the picture", func() bool {
			data, _ := os.ReadFile(layout)
			return strings.Count(string(data), `"@st_agent_session"`) >= workers
		})
	}
	b.StopTimer()
	benchfig.Figure(b, "restore-sessions-back-median", benchfig.Ms(benchfig.NewStats(sessions).Median()), "ms")
	benchfig.Figure(b, "restore-relations-after-sessions-median", benchfig.Ms(benchfig.NewStats(relations).Median()), "ms")
	benchfig.Figure(b, "restore-relations-after-sessions-max", benchfig.Ms(benchfig.NewStats(relations).Pct(100)), "ms")
	benchfig.Figure(b, "restore-kill-to-status-median", benchfig.Ms(benchfig.NewStats(total).Median()), "ms")
}

// BenchmarkTaskChain measures, over a chain of 20 tasks on sim workers,
// the time from a task's report to its dependent's worker being started
// (its window opened), median and p99, from the run's record. The floor
// is one `tmux new-window` process that opens a window running the sim
// (median of 20, on a server st does not follow). The sim's start is in
// neither: st records a worker started when its window is open, before
// its agent draws anything.
func BenchmarkTaskChain(b *testing.B) {
	const n = 20
	r := newRig(b)
	r.up()
	task := r.writeFile("task.md", "summary: link done\n", 0o644)
	for i := 0; i < n; i++ {
		args := []string{"task", "create", fmt.Sprintf("t%02d", i), "--task", task, "--agent", "sim"}
		if i > 0 {
			args = append(args, "--deps", fmt.Sprintf("t%02d", i-1))
		}
		r.mustRun(r.st(r.coord, args...))
	}
	var run orch.Run
	waitFor(b, 5*time.Minute, "the last task done", func() bool {
		matches, _ := filepath.Glob(filepath.Join(r.home, "orch", "*", "run.json"))
		for _, m := range matches {
			data, _ := os.ReadFile(m)
			if json.Unmarshal(data, &run) == nil && len(run.Tasks) == n && run.Tasks[n-1].State == api.TaskDone {
				return true
			}
		}
		return false
	})
	byName := map[string]*orch.Worker{}
	for _, w := range run.Workers {
		byName[w.Name] = w
	}
	var gaps []time.Duration
	for i := 1; i < n; i++ {
		prev, next := byName[run.Tasks[i-1].Name], byName[run.Tasks[i].Name]
		if prev == nil || next == nil || prev.ReportedAt == nil {
			b.Fatalf("task %d: missing worker records", i)
		}
		gaps = append(gaps, next.StartedAt.Sub(*prev.ReportedAt))
	}
	benchfig.RatioMs(b, "task_report_to_dependent_window_median", benchfig.NewStats(gaps).Median(), newWindowFloor(b, r, 20))
	benchfig.Figure(b, "task_report_to_dependent_window_p99", benchfig.Ms(benchfig.NewStats(gaps).Pct(99)), "ms")
}

func waitFor(b *testing.B, d time.Duration, what string, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
