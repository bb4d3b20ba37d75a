package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sophonz/st/bench/benchfig"
	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/orch"
	"github.com/sophonz/st/internal/tokens"
)

// BenchmarkTokens gives the token ledger's two figures (issue 35):
//
//   - tokens_read_core_pct_n100: what reading tokens costs the daemon at
//     100 workers that each take a turn every second, as % of one core.
//     Each simulated second, each of 100 Claude-form transcripts grows by
//     one turn as Claude writes it (the prompt, a response of a text and
//     a tool call under one message.id, a tool result of 4 KiB, the
//     answer: about 7 KiB), and st reads it as it does at each of the
//     turn's four hooks (UserPromptSubmit, PreToolUse, PostToolUse, Stop):
//     the ledger's read from its offset, the copy for the registry and the
//     cost's estimate. Only the reads are timed (the writes are the
//     agent's), in CPU time of the reading thread (getrusage
//     RUSAGE_THREAD), since a loaded machine stretches wall time. The floor is the decoding of those same four hooks'
//     payloads, which st does for every hook anyway.
//   - worker_list_tokens_n100: `st worker list --all` with 100 workers
//     whose records carry tokens (and their ledgers), against the same
//     list without tokens (the floor), each a real daemon of its own;
//     40 of each, interleaved (each first in turn), medians.
func BenchmarkTokens(b *testing.B) {
	b.Run("read", benchTokenReads)
	b.Run("list", benchListWithTokens)
}

// turnLines is one turn of a Claude transcript, as Claude writes it.
func turnLines(i int) string {
	id := fmt.Sprintf("msg_%06d", i)
	usage := `"usage":{"input_tokens":1200,"cache_creation_input_tokens":300,"cache_read_input_tokens":18000,"output_tokens":240,"service_tier":"standard"}`
	asst := func(uuid, content string) string {
		return `{"parentUuid":"p","isSidechain":false,"userType":"external","cwd":"/home/u/work/project","sessionId":"0702c391-a443-4834-b5f7-d2e1fad9f3cd","version":"2.1.332","gitBranch":"main","type":"assistant","uuid":"` + uuid +
			`","timestamp":"2026-12-07T12:00:00.000Z","message":{"id":"` + id + `","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[` + content + `],"stop_reason":null,"stop_sequence":null,` + usage + `}}` + "\n"
	}
	user := func(uuid, content string) string {
		return `{"parentUuid":"p","isSidechain":false,"userType":"external","cwd":"/home/u/work/project","sessionId":"0702c391-a443-4834-b5f7-d2e1fad9f3cd","version":"2.1.332","type":"user","uuid":"` + uuid +
			`","timestamp":"2026-12-07T12:00:00.000Z","message":{"role":"user","content":` + content + `}}` + "\n"
	}
	out := strings.Repeat("a line of the command's output\\n", 140) // about 4 KiB
	return user(id+"u1", `"Your task is in the file /home/u/work/task.md - do it, then run st worker done."`) +
		asst(id+"a1", `{"type":"text","text":"I will look at the files first."}`) +
		asst(id+"a2", `{"type":"tool_use","id":"toolu_`+id+`","name":"Bash","input":{"command":"ls -la","description":"List files"}}`) +
		user(id+"u2", `[{"tool_use_id":"toolu_`+id+`","type":"tool_result","content":"`+out+`","is_error":false}]`) +
		strings.Replace(asst(id+"a3", `{"type":"text","text":"Done: the files are listed."}`), `"id":"`+id+`"`, `"id":"`+id+`b"`, 1)
}

func benchTokenReads(b *testing.B) {
	const workers, seconds = 100, 20
	dir := b.TempDir()
	ledgers := make([]*tokens.Ledger, workers)
	files := make([]*os.File, workers)
	for w := range workers {
		p := filepath.Join(dir, fmt.Sprintf("s%03d.jsonl", w))
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		files[w] = f
		ledgers[w] = &tokens.Ledger{}
		ledgers[w].Watch(p, tokens.FormatClaude)
	}
	prices := tokens.Prices{Date: "2026-12-01", Models: map[string]tokens.Price{"claude-sonnet-4": {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}}}
	claude, _ := agent.Lookup("claude")
	payloads := []struct{ event, body string }{
		{"UserPromptSubmit", `{"session_id":"0702c391-a443-4834-b5f7-d2e1fad9f3cd","transcript_path":"/home/u/.claude/projects/-w/0702c391.jsonl","cwd":"/w","hook_event_name":"UserPromptSubmit","prompt":"Your task is in the file /w/task.md - do it."}`},
		{"PreToolUse", `{"session_id":"0702c391-a443-4834-b5f7-d2e1fad9f3cd","transcript_path":"/home/u/.claude/projects/-w/0702c391.jsonl","cwd":"/w","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls -la","description":"List files"},"tool_use_id":"toolu_1"}`},
		{"PostToolUse", `{"session_id":"0702c391-a443-4834-b5f7-d2e1fad9f3cd","transcript_path":"/home/u/.claude/projects/-w/0702c391.jsonl","cwd":"/w","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls -la"},"tool_response":{"stdout":"a b c","stderr":"","interrupted":false},"tool_use_id":"toolu_1"}`},
		{"Stop", `{"session_id":"0702c391-a443-4834-b5f7-d2e1fad9f3cd","transcript_path":"/home/u/.claude/projects/-w/0702c391.jsonl","cwd":"/w","hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"Done: the files are listed."}`},
	}
	var read, decode time.Duration
	turns := 0
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for range b.N {
		for s := range seconds {
			for w := range workers {
				if _, err := files[w].WriteString(turnLines(s)); err != nil {
					b.Fatal(err)
				}
				turns++
				// st's read at each of the turn's four hooks; the agent
				// wrote the whole turn before its Stop, and by each hook
				// what came before it: reading it all at the first hook
				// and finding nothing new at the next three is what a
				// turn faster than its hooks costs, and no less.
				start := threadCPU()
				for range payloads {
					l := ledgers[w]
					if changed, err := l.Read(); err != nil {
						b.Fatal(err)
					} else if changed {
						l.ByModel()
						prices.Estimate(l.ByModel())
						_ = l.Clone()
					}
				}
				read += threadCPU() - start
				start = threadCPU()
				for _, p := range payloads {
					if _, err := claude.MapEvent(p.event, []byte(p.body)); err != nil {
						b.Fatal(err)
					}
				}
				decode += threadCPU() - start
			}
		}
	}
	want := int64(1200+240+18000+300) * int64(seconds) * int64(b.N) // msg a1/a2 once, a3 once: two responses a turn
	if got := ledgers[0].Counts().Total(); got != 2*want {
		b.Fatalf("worker 0 counted %d tokens, want %d", got, 2*want)
	}
	// Per simulated second, 100 turns: the share of one core.
	perSecond := func(d time.Duration) float64 { return 100 * d.Seconds() / float64(seconds*b.N) }
	benchfig.Ratio(b, "tokens_read_core_pct_n100", perSecond(read), perSecond(decode), "%")
	benchfig.Figure(b, "tokens_read_per_turn_us", float64(read.Microseconds())/float64(turns), "us")
}

// threadCPU is the CPU time of the calling OS thread (the benchmark locks
// its goroutine to it): what the reads cost, not the wall time a loaded
// machine stretches them to.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchListWithTokens(b *testing.B) {
	const n = 100
	with, without := newRig(b), newRig(b)
	seedWorkers(b, with, n, true)
	seedWorkers(b, without, n, false)
	with.up()
	without.up()
	list := func(r *rig) time.Duration {
		start := time.Now()
		out := r.mustRun(r.st(r.coord, "worker", "list", "--all"))
		d := time.Since(start)
		if got := strings.Count(out, "\n"); got != n+1 {
			b.Fatalf("st worker list printed %d lines, want %d:\n%s", got, n+1, out)
		}
		return d
	}
	if out := with.mustRun(with.st(with.coord, "worker", "list", "--all")); !strings.Contains(out, "12.3k ~$0.04") {
		b.Fatalf("the list with tokens shows none:\n%s", out)
	}
	var ws, wos []time.Duration
	for i := range 40 * b.N {
		// Each first in turn, so that neither gains from the other's
		// warm caches.
		if i%2 == 0 {
			ws = append(ws, list(with))
			wos = append(wos, list(without))
		} else {
			wos = append(wos, list(without))
			ws = append(ws, list(with))
		}
	}
	benchfig.RatioMs(b, "worker_list_tokens_n100", benchfig.NewStats(ws).Median(), benchfig.NewStats(wos).Median())
}

// seedWorkers writes a run of r's coordinator with n workers whose panes
// are gone (st lists them with st worker list --all), with tokens and
// their ledgers or without, before the daemon starts.
func seedWorkers(b *testing.B, r *rig, n int, withTokens bool) {
	sess, err := r.tmux("display-message", "-p", "-t", r.coord, "#{session_id}")
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now().UTC()
	run := &orch.Run{Format: api.RunFormat, ID: "run-bench1", Objective: "tokens", Coordinator: r.coord, Session: strings.TrimSpace(sess), Created: now}
	cost := 0.04
	for i := range n {
		w := &orch.Worker{ID: fmt.Sprintf("%%%d", 900+i), Name: fmt.Sprintf("w%03d", i), Agent: "claude", Parent: r.coord, Level: 1,
			State: api.Idle, Since: now, StartedAt: now, Summary: "wrote the tests", LastAnswer: "All 12 tests pass."}
		if withTokens {
			w.Tokens = &api.Tokens{Input: 1200, Output: 340, CacheRead: 10500, CacheWrite: 300, Total: 12340, CostUSD: &cost, CostEstimated: true, PriceDate: "2026-12-01"}
			l := &tokens.Ledger{}
			l.Watch(fmt.Sprintf("/home/u/.claude/projects/-w/%08d-a443-4834-b5f7-d2e1fad9f3cd.jsonl", i), tokens.FormatClaude)
			f := l.Files[0]
			f.Offset, f.Size = 123456, 123456
			f.ByModel = map[string]tokens.Counts{"claude-sonnet-4-5-20250929": {Input: 1200, Output: 340, CacheRead: 10500, CacheWrite: 300}}
			for k := range 8 {
				f.Recent = append(f.Recent, tokens.Seen{ID: fmt.Sprintf("msg_01ABCDEFGHIJKLMNOP%04d", k), Counts: tokens.Counts{Input: 150, Output: 42}})
			}
			w.Ledger = l
		}
		run.Workers = append(run.Workers, w)
	}
	data, err := json.Marshal(run)
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(r.home, "orch", run.ID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "run.json"), data, 0o600); err != nil {
		b.Fatal(err)
	}
}
