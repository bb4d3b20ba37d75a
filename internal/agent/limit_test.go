package agent

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestResetsFromText(t *testing.T) {
	utc := time.Date(2026, 12, 7, 2, 10, 0, 0, time.UTC)
	cases := []struct {
		text string
		want string // "" = none
	}{
		{"You've hit your 5-hour limit · resets 3:54am (UTC)", "2026-12-07T03:54:00Z"},
		{"■ You’ve hit your usage limit. Upgrade to Pro, or try again at 3:53 AM.", "2026-12-07T03:53:00Z"},
		{"⚠ 5h limit: only <1% left · resets at 03:53", "2026-12-07T03:53:00Z"},
		{"resets 12:05am", "2026-12-08T00:05:00Z"}, // past today: tomorrow's
		{"resets 1:00pm", "2026-12-07T13:00:00Z"},
		{"You've hit your 5-hour limit · resets 1pm (UTC)", "2026-12-07T13:00:00Z"}, // Claude 2.1.332 on the hour
		{"resets 12 pm", "2026-12-07T12:00:00Z"},
		{"resets 5 minutes later", ""},
		{"Continuing automatically at 2:09am", "2026-12-07T02:09:00Z"}, // a minute back: the screen rounds
		{"API Error: Request rejected (429)", ""},
		{"resets 25:00", ""},
	}
	for _, c := range cases {
		got, ok := ResetsFromText(c.text, utc)
		if c.want == "" {
			if ok {
				t.Errorf("%q: got %v, want none", c.text, got)
			}
			continue
		}
		if !ok || got.Format(time.RFC3339) != c.want {
			t.Errorf("%q: got %v %v, want %s", c.text, got, ok, c.want)
		}
	}
}

func writeLines(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "t.jsonl")
	var b []byte
	for _, l := range lines {
		b = append(b, l+"\n"...)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLimitOfClaude(t *testing.T) {
	now := time.Date(2026, 12, 7, 2, 10, 0, 0, time.UTC)
	text := "You've hit your 5-hour limit · resets 3:54am (UTC)"
	tr := writeLines(t,
		`{"type":"user","message":{"role":"user","content":"go"}}`,
		`{"type":"assistant","isApiErrorMessage":true,"apiErrorParams":{"rate_limit_info":{"resetsAt":1796615647}},"message":{"content":[{"type":"text","text":"`+text+`"}]}}`)
	ev := Event{Kind: EvTurnEnd, Failed: true, FailReason: "rate_limit", LastAnswer: text, Transcript: tr}
	l, ok := Claude.LimitOf(ev, now)
	if !ok || !l.Exact || l.Resets.Unix() != 1796615647 || l.Text != text {
		t.Fatalf("with its record: %+v %v", l, ok)
	}
	// No record (or none readable): the text's minute.
	ev.Transcript = filepath.Join(t.TempDir(), "none.jsonl")
	l, ok = Claude.LimitOf(ev, now)
	if !ok || l.Exact || l.Resets.Format("15:04") != "03:54" {
		t.Fatalf("from its text: %+v %v", l, ok)
	}
	// A plain 429 with an API key names no reset: a failed turn.
	if l, ok := Claude.LimitOf(Event{Kind: EvTurnEnd, Failed: true, FailReason: "rate_limit", LastAnswer: "API Error: Request rejected (429)"}, now); ok {
		t.Fatalf("a 429 with no reset: %+v", l)
	}
	// An older limit, with an answer since: behind the turn.
	older := writeLines(t,
		`{"type":"assistant","isApiErrorMessage":true,"apiErrorParams":{"rate_limit_info":{"resetsAt":1796615647}},"message":{"content":[{"type":"text","text":"x"}]}}`,
		`{"type":"user","message":{"role":"user","content":"continue"}}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":"done"}]}}`)
	if l, ok := claudeLimitRecord(older); ok {
		t.Fatalf("an old limit: %+v", l)
	}
	// A turn that ended well is no limit (Claude's hook says so when it is).
	if l, ok := Claude.LimitOf(Event{Kind: EvTurnEnd, LastAnswer: "fine", Transcript: tr}, now); ok {
		t.Fatalf("Stop: %+v", l)
	}
	// Another error is no limit, whatever the file says.
	ev.FailReason, ev.Transcript = "overloaded", tr
	if l, ok := Claude.LimitOf(ev, now); ok {
		t.Fatalf("overloaded: %+v", l)
	}
}

func TestLimitOfCodex(t *testing.T) {
	now := time.Unix(1796600000, 0)
	hit := writeLines(t,
		`{"type":"event_msg","payload":{"type":"user_message","message":"go"}}`,
		`{"type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{"primary":{"used_percent":100.0,"window_minutes":300,"resets_at":1796615647}}}}`,
		`{"type":"event_msg","payload":{"type":"task_complete","error":{"codex_error_info":"usage_limit_exceeded"}}}`)
	l, ok := Codex.LimitOf(Event{Kind: EvTurnEnd, Transcript: hit}, now)
	if !ok || !l.Exact || l.Resets.Unix() != 1796615647 {
		t.Fatalf("rollout at its limit: %+v %v", l, ok)
	}
	// A turn that completed after the limit: behind it.
	later := writeLines(t,
		`{"type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{"primary":{"used_percent":100.0,"resets_at":1796615647}}}}`,
		`{"type":"event_msg","payload":{"type":"task_complete","error":{"codex_error_info":"usage_limit_exceeded"}}}`,
		`{"type":"event_msg","payload":{"type":"user_message","message":"continue"}}`,
		`{"type":"event_msg","payload":{"type":"task_complete","last_agent_message":"done"}}`)
	if l, ok := Codex.LimitOf(Event{Kind: EvTurnEnd, Transcript: later}, now); ok {
		t.Fatalf("a turn done after the limit: %+v", l)
	}
	// Interrupted (no limit): none.
	esc := writeLines(t, `{"type":"event_msg","payload":{"type":"turn_aborted","reason":"interrupted"}}`)
	if l, ok := Codex.LimitOf(Event{Kind: EvTurnEnd, Transcript: esc}, now); ok {
		t.Fatalf("an interrupted turn: %+v", l)
	}
	// A path that is no regular file is not read.
	if l, ok := Codex.LimitOf(Event{Kind: EvTurnEnd, Transcript: filepath.Dir(hit)}, now); ok {
		t.Fatalf("a folder: %+v", l)
	}
}

// TestClaudeLimitMenu: the menu Claude 2.1.332 put up at its limit with
// autoContinueAtUsageLimit off (captured), and its box, which is not it.
func TestClaudeLimitMenu(t *testing.T) {
	menu := `❯ LIMIT: 40 SAY: done after limit
  ⎿  You've hit your 5-hour limit · resets 1pm (UTC)
▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔
  What do you want to do?
  ❯ 1. Stop and wait for limit to reset
    2. Wait here, then continue automatically at 1pm
    3. Upgrade your plan
  Enter to confirm · Esc to cancel`
	box := `❯ LIMIT: 40 SAY: done after limit
  ⎿  You've hit your 5-hour limit · resets 1pm (UTC)
────────────────────────────────────────────────────────
❯ 
────────────────────────────────────────────────────────
  ⏵⏵ auto mode on (shift+tab to cycle)`
	if !Claude.Limits.Menu(menu) {
		t.Error("the limit menu was not recognized")
	}
	if Claude.Limits.Menu(box) {
		t.Error("the box after the menu was taken for it")
	}
	if v := Claude.Recognize(menu); v.Screen == ScreenReady {
		t.Errorf("the menu was taken for an empty box: %+v", v)
	}
}

// TestClaudeWaiting: Claude 2.1.332 waiting to go on by itself after its
// limit (captured in TestOnLimitMoveToAnotherKind), which st calls off
// when the task moves; the menu of its going on turned off is not it.
func TestClaudeWaiting(t *testing.T) {
	waiting := `❯ LIMIT: 3600 RUN: echo never >> parts.txt SAY: never
  ⎿  You've hit your 5-hour limit · resets 5:13pm (UTC)
● Usage limit reached · set to continue automatically at 5:13pm
────────────────────────────────────────────────────────
❯ 
────────────────────────────────────────────────────────
  ⚠ Usage limit reached · limit resets 5:13pm
    Continuing automatically at 5:13pm · Esc to cancel
  ⏸ manual mode on · ? for shortcuts`
	if !Claude.Limits.Waiting(waiting) {
		t.Error("Claude waiting to go on by itself was not recognized")
	}
	menu := `  What do you want to do?
  ❯ 1. Stop and wait for limit to reset
    2. Wait here, then continue automatically at 1pm
    3. Upgrade your plan
  Enter to confirm · Esc to cancel`
	if Claude.Limits.Waiting(menu) {
		t.Error("the limit menu was taken for Claude waiting to go on")
	}
}
