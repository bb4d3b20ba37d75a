package cli

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

// BenchmarkHandOver is what looking for a queued report adds to a hook
// (handOver, with nothing to hand over, so no daemon is asked): a
// PostToolUse whose call printed 64 KiB (every tool call's hook reads its
// output for a digest), and one of st worker done that names a digest
// (its command is then read as shell), against a floor measured in the
// same run: decoding the same payload once, as any hook that reads it
// does.
func BenchmarkHandOver(b *testing.B) {
	home := b.TempDir()
	b.Setenv("TMPDIR", b.TempDir())
	env := &Env{Stderr: io.Discard, Getenv: func(k string) string {
		return map[string]string{"ST_HOME": home, "TMUX": tmuxVar, "TMUX_PANE": "%3"}[k]
	}}
	c := env.RunningClient()
	big, _ := json.Marshal(map[string]any{"hook_event_name": "PostToolUse", "tool_input": map[string]any{"command": "go test ./..."},
		"tool_response": strings.Repeat("ok  \tgithub.com/x/y\t0.012s\n", 64<<10/26)})
	done, _ := json.Marshal(map[string]any{"hook_event_name": "PostToolUse", "tool_input": map[string]any{"command": doneCmd},
		"tool_response": "queued: a sandbox keeps this command from reaching st, so the report waits in /tmp/st-0/reports/x.json (" +
			digestMark + strings.Repeat("ab", 32) + "); your agent's hook hands it to st as this command ends, finding it by this line. Nothing more to do.\n"})
	for _, p := range []struct {
		name    string
		payload []byte
	}{{"output64KiB", big}, {"workerDone", done}} {
		b.Run(p.name, func(b *testing.B) {
			floor := measure(b.N, func() {
				var m map[string]any
				json.Unmarshal(p.payload, &m)
			})
			t0 := time.Now()
			for i := 0; i < b.N; i++ {
				handOver(context.Background(), env, c, "PostToolUse", "%3", p.payload)
			}
			per := time.Since(t0) / time.Duration(b.N)
			b.ReportMetric(float64(per.Nanoseconds())/1e3, "µs/hook")
			b.ReportMetric(float64(floor.Nanoseconds())/1e3, "µs/floor")
			b.ReportMetric(float64(per)/float64(floor), "ratio")
		})
	}
}

func measure(n int, fn func()) time.Duration {
	t0 := time.Now()
	for i := 0; i < n; i++ {
		fn()
	}
	return time.Since(t0) / time.Duration(n)
}
