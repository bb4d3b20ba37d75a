package tokens

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// A Claude response with a text block and a tool_use block is two
// records sharing message.id, each with the whole response's usage: it
// counts once.
const claudeTwoBlocks = `{"type":"user","message":{"role":"user","content":"hi"},"uuid":"u1"}
{"type":"assistant","uuid":"a1","message":{"id":"msg_1","model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"text","text":"I will run it"}],"usage":{"input_tokens":100,"cache_creation_input_tokens":20,"cache_read_input_tokens":300,"output_tokens":40}}}
{"type":"assistant","uuid":"a2","message":{"id":"msg_1","model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":100,"cache_creation_input_tokens":20,"cache_read_input_tokens":300,"output_tokens":40}}}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a b"}]},"uuid":"u2"}
{"type":"assistant","uuid":"a3","message":{"id":"msg_2","model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"text","text":"done"}],"usage":{"input_tokens":7,"cache_creation_input_tokens":0,"cache_read_input_tokens":420,"output_tokens":5}}}
`

func TestClaudeCountsAResponseOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	appendFile(t, path, claudeTwoBlocks)
	f := &File{Path: path, Format: FormatClaude}
	changed, err := f.Read()
	if err != nil || !changed {
		t.Fatalf("Read = %v, %v; want a change", changed, err)
	}
	want := Counts{Input: 107, Output: 45, CacheRead: 720, CacheWrite: 20}
	if got := f.Counts(); got != want {
		t.Fatalf("counts = %+v, want %+v (msg_1 once, msg_2 once)", got, want)
	}
	if got := f.ByModel["claude-sonnet-4-5"]; got != want {
		t.Fatalf("by model = %+v", f.ByModel)
	}
}

// A later record of one response with a larger output count (written
// once the response finished) adds only the difference.
func TestClaudeLaterRecordOfAResponseAddsWhatItHasMore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	appendFile(t, path, `{"type":"assistant","message":{"id":"m","model":"x","usage":{"input_tokens":10,"output_tokens":1}}}
{"type":"assistant","message":{"id":"m","model":"x","usage":{"input_tokens":10,"output_tokens":33}}}
`)
	f := &File{Path: path, Format: FormatClaude}
	if _, err := f.Read(); err != nil {
		t.Fatal(err)
	}
	if got := f.Counts(); got != (Counts{Input: 10, Output: 33}) {
		t.Fatalf("counts = %+v, want input 10 output 33", got)
	}
}

// Reading goes on from the offset: a line still being written is left
// for the next read, and lines read are never counted again.
func TestReadIsIncremental(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	lines := strings.SplitAfter(claudeTwoBlocks, "\n")
	appendFile(t, path, lines[0]+lines[1])
	half := lines[2][:len(lines[2])/2]
	appendFile(t, path, half)
	f := &File{Path: path, Format: FormatClaude}
	if _, err := f.Read(); err != nil {
		t.Fatal(err)
	}
	if got := f.Counts().Total(); got != 460 {
		t.Fatalf("after the first block: total %d, want 460", got)
	}
	at := f.Offset
	if at != int64(len(lines[0])+len(lines[1])) {
		t.Fatalf("offset %d stops inside a line; want %d", at, len(lines[0])+len(lines[1]))
	}
	appendFile(t, path, lines[2][len(half):]+lines[3]+lines[4])
	changed, err := f.Read()
	if err != nil || !changed {
		t.Fatalf("second Read = %v, %v", changed, err)
	}
	if got := f.Counts(); got != (Counts{Input: 107, Output: 45, CacheRead: 720, CacheWrite: 20}) {
		t.Fatalf("counts = %+v", got)
	}
	if changed, _ := f.Read(); changed {
		t.Fatal("a read with nothing new changed the counts")
	}
}

// A file that got shorter was replaced: it is read from its start, and
// its old counts no longer stand.
func TestReplacedFileIsReadAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	appendFile(t, path, claudeTwoBlocks)
	f := &File{Path: path, Format: FormatClaude}
	_, _ = f.Read()
	if err := os.WriteFile(path, []byte(`{"type":"assistant","message":{"id":"z","usage":{"input_tokens":3,"output_tokens":4}}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Read(); err != nil {
		t.Fatal(err)
	}
	if got := f.Counts(); got != (Counts{Input: 3, Output: 4}) {
		t.Fatalf("counts = %+v, want only the new file's", got)
	}
}

// A line longer than the bound is skipped whole, and what follows it
// counts.
func TestLongLineIsSkipped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	long := `{"type":"assistant","message":{"id":"big","usage":{"input_tokens":999,"output_tokens":1}},"pad":"` + strings.Repeat("x", maxLine) + `"}` + "\n"
	appendFile(t, path, long+`{"type":"assistant","message":{"id":"ok","usage":{"input_tokens":1,"output_tokens":2}}}`+"\n")
	f := &File{Path: path, Format: FormatClaude}
	if _, err := f.Read(); err != nil {
		t.Fatal(err)
	}
	if got := f.Counts(); got != (Counts{Input: 1, Output: 2}) {
		t.Fatalf("counts = %+v, want only the short line's", got)
	}
}

// Codex's token_count carries the session's running total: what it grew
// by counts, to the model of the time; cached input and reasoning output
// are taken apart from input and output.
func TestCodexRunningTotal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rollout.jsonl")
	appendFile(t, path, `{"type":"session_meta","payload":{"id":"x"}}
{"type":"turn_context","payload":{"model":"gpt-5-codex"}}
{"type":"event_msg","payload":{"type":"token_count","info":null}}
{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":1000,"cached_input_tokens":200,"output_tokens":50,"reasoning_output_tokens":10,"total_tokens":1050},"last_token_usage":{"input_tokens":1000}}}}
{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":1000,"cached_input_tokens":200,"output_tokens":50,"reasoning_output_tokens":10,"total_tokens":1050}}}}
{"type":"turn_context","payload":{"model":"gpt-5-mini"}}
{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":2500,"cached_input_tokens":1200,"output_tokens":80,"reasoning_output_tokens":10,"total_tokens":2580}}}}
`)
	f := &File{Path: path, Format: FormatCodex}
	if _, err := f.Read(); err != nil {
		t.Fatal(err)
	}
	if got := f.Counts(); got != (Counts{Input: 1300, CacheRead: 1200, Output: 70, Reasoning: 10}) || got.Total() != 2580 {
		t.Fatalf("counts = %+v (total %d), want the last running total 2580 taken apart", got, got.Total())
	}
	if got := f.ByModel["gpt-5-mini"]; got != (Counts{Input: 500, CacheRead: 1000, Output: 30}) {
		t.Fatalf("gpt-5-mini = %+v, want what the total grew by after it came", got)
	}
}

func TestGeminiTokens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "session.jsonl")
	appendFile(t, path, `{"sessionId":"s","projectHash":"p","startTime":"t"}
{"id":"m1","type":"user","content":"hi"}
{"id":"m2","type":"gemini","content":"ok","model":"gemini-2.5-pro","tokens":{"input":120,"output":30,"cached":20,"thoughts":7,"tool":0,"total":157}}
{"$set":{"lastUpdated":"t"}}
{"id":"m2","type":"gemini","content":"ok","model":"gemini-2.5-pro","tokens":{"input":120,"output":30,"cached":20,"thoughts":7,"tool":0,"total":157}}
`)
	f := &File{Path: path, Format: FormatGemini}
	if _, err := f.Read(); err != nil {
		t.Fatal(err)
	}
	if got := f.Counts(); got != (Counts{Input: 100, CacheRead: 20, Output: 30, Reasoning: 7}) || got.Total() != 157 {
		t.Fatalf("counts = %+v, want one reply's, total 157", got)
	}
}

// A worker's subagents' files count to it.
// opencode's tokens, as st's plugin writes them from message.updated: a
// message written again (its numbers changed) adds only what it has more,
// and the same line twice counts once.
func TestOpencodeTokens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ses_0123456789abcdef.jsonl")
	appendFile(t, path, `{"id":"msg_1","model":"claude-fake","provider":"anthropic","tokens":{"total":0,"input":900,"output":40,"reasoning":0,"cache":{"read":300,"write":200}}}
{"id":"msg_1","model":"claude-fake","provider":"anthropic","tokens":{"total":0,"input":900,"output":55,"reasoning":0,"cache":{"read":300,"write":200}}}
{"id":"msg_2","model":"claude-fake","provider":"anthropic","tokens":{"input":1000,"output":20,"reasoning":5,"cache":{"read":500,"write":0}}}
{"id":"msg_2","model":"claude-fake","provider":"anthropic","tokens":{"input":1000,"output":20,"reasoning":5,"cache":{"read":500,"write":0}}}
not json {"tokens"
`)
	f := &File{Path: path, Format: FormatOpencode}
	if _, err := f.Read(); err != nil {
		t.Fatal(err)
	}
	want := Counts{Input: 1900, Output: 75, Reasoning: 5, CacheRead: 800, CacheWrite: 200}
	if got := f.ByModel["claude-fake"]; got != want || f.Counts() != want {
		t.Fatalf("counts = %+v (by model %+v), want %+v", f.Counts(), f.ByModel, want)
	}
}

func TestLedgerCountsSubagents(t *testing.T) {
	dir := t.TempDir()
	main := filepath.Join(dir, "sess.jsonl")
	appendFile(t, main, claudeTwoBlocks)
	var l Ledger
	l.Watch(main, FormatClaude)
	l.Watch(main, FormatClaude) // once
	if _, err := l.Read(); err != nil {
		t.Fatal(err)
	}
	appendFile(t, filepath.Join(dir, "sess", "subagents", "agent-a1.jsonl"),
		`{"type":"assistant","isSidechain":true,"agentId":"a1","message":{"id":"msg_s","model":"claude-haiku-4-5","usage":{"input_tokens":11,"output_tokens":22}}}`+"\n")
	changed, err := l.Read()
	if err != nil || !changed {
		t.Fatalf("Read = %v, %v", changed, err)
	}
	if len(l.Files) != 2 {
		t.Fatalf("files = %d, want the transcript and its subagent's", len(l.Files))
	}
	if got := l.Counts(); got != (Counts{Input: 118, Output: 67, CacheRead: 720, CacheWrite: 20}) {
		t.Fatalf("counts = %+v", got)
	}
	if got := l.ByModel()["claude-haiku-4-5"]; got != (Counts{Input: 11, Output: 22}) {
		t.Fatalf("by model = %+v", l.ByModel())
	}
}

func FuzzFileTake(f *testing.F) {
	for _, s := range strings.Split(claudeTwoBlocks, "\n") {
		f.Add(s)
	}
	f.Add(`{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":-5}}}}`)
	f.Fuzz(func(t *testing.T, line string) {
		for _, format := range []string{FormatClaude, FormatCodex, FormatGemini} {
			fl := &File{Format: format}
			fl.take([]byte(line))
			if c := fl.Counts(); !c.Valid() {
				t.Fatalf("%s: %q gave counts below zero: %+v", format, line, c)
			}
		}
	})
}

// A clone shares nothing with its ledger: the registry's copy stays as
// it was while the live one is read on.
func TestCloneIsDeep(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	appendFile(t, path, claudeTwoBlocks)
	var l Ledger
	l.Watch(path, FormatClaude)
	if _, err := l.Read(); err != nil {
		t.Fatal(err)
	}
	c := l.Clone()
	appendFile(t, path, `{"type":"assistant","message":{"id":"later","model":"claude-sonnet-4-5","usage":{"input_tokens":1000,"output_tokens":1}}}`+"\n")
	if _, err := l.Read(); err != nil {
		t.Fatal(err)
	}
	if c.Counts() == l.Counts() || c.Files[0].Offset == l.Files[0].Offset || len(c.Files[0].Recent) == len(l.Files[0].Recent) {
		t.Fatalf("the clone moved with its ledger: %+v", c.Files[0])
	}
}

// A path a hook named is read only as a regular file of this user: not
// through a symlink (to another user's file, say), not a FIFO that would
// hold the daemon. Without the checks, the symlink's target counted and
// the FIFO's open blocked.
func TestReadRefusesWhatIsNoTranscript(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.jsonl")
	appendFile(t, real, claudeTwoBlocks)
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	f := &File{Path: link, Format: FormatClaude}
	if changed, err := f.Read(); err == nil || changed || f.Counts().Total() != 0 {
		t.Fatalf("a symlink was read: %v %v %+v", changed, err, f.Counts())
	}
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := (&File{Path: fifo, Format: FormatClaude}).Read(); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("a FIFO: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reading a FIFO held the reader")
	}
}

// Codex's token_count says its account's rate limits too (primary,
// secondary): the last said is taken once, even from a token_count that
// counted nothing new.
func TestCodexRateLimits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rollout.jsonl")
	appendFile(t, path, `{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":10,"output_tokens":1}},"rate_limits":{"primary":{"used_percent":50,"window_minutes":300,"resets_at":1800000000}}}}
{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":10,"output_tokens":1}},"rate_limits":{"primary":{"used_percent":91.5,"window_minutes":300,"resets_at":1800000100},"secondary":{"used_percent":40,"window_minutes":10080,"resets_at":1800500000}}}}
`)
	l := &Ledger{}
	l.Watch(path, FormatCodex)
	if _, err := l.Read(); err != nil {
		t.Fatal(err)
	}
	want := RateLimits{Primary: RateWindow{UsedPercent: 91.5, WindowMinutes: 300, ResetsAt: 1800000100},
		Secondary: RateWindow{UsedPercent: 40, WindowMinutes: 10080, ResetsAt: 1800500000}, File: path}
	if got := l.TakeLimits(); got == nil || *got != want {
		t.Fatalf("limits = %+v, want the last said, by the file that said them, %+v", got, want)
	}
	if got := l.TakeLimits(); got != nil {
		t.Fatalf("taken twice: %+v", got)
	}
	appendFile(t, path, `{"type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{"primary":{"used_percent":100,"window_minutes":300}}}}
`)
	if _, err := l.Read(); err != nil {
		t.Fatal(err)
	}
	if got := l.TakeLimits(); got == nil || got.Primary.UsedPercent != 100 {
		t.Fatalf("a token_count with no new tokens: limits %+v, want 100 %%", got)
	}
}
