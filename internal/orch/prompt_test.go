package orch

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/testutil"
)

// Permission prompts on the fake tmux server: a Claude worker's
// PermissionRequest hook waits, and a person answers.

// Claude 2.1.332's payloads, as measured (shared/reference §3.6, §13).
const (
	bashAsk  = `{"session_id":"s","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"echo hi > probe.txt","description":"run"}}`
	bashDone = `{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"echo hi > probe.txt","description":"run"},"tool_response":{}}`
	otherRun = `{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":{}}`
	question = `{"session_id":"s","hook_event_name":"PermissionRequest","tool_name":"AskUserQuestion","tool_input":{"questions":[{"question":"Pick one please","header":"Question","options":[{"label":"Yes","description":"Go on."},{"label":"No","description":"Stop here."}],"multiSelect":false}]}}`
	twoQs    = `{"hook_event_name":"PermissionRequest","tool_name":"AskUserQuestion","tool_input":{"questions":[{"question":"A?","options":[{"label":"x"},{"label":"y"}]},{"question":"B?","options":[{"label":"x"},{"label":"y"}]}]}}`
)

// waitPrompt starts a hook's wait for payload from the worker's pane and
// returns the prompt it opened and the channel its decision comes on.
func (h *harness) waitPrompt(ctx context.Context, agentKind, event, payload string, wait time.Duration) (api.Prompt, chan *api.PromptDecision) {
	h.t.Helper()
	got := make(chan *api.PromptDecision, 1)
	before := len(h.m.Prompts())
	go func() {
		d, err := h.m.WaitPrompt(ctx, api.HookRequest{Agent: agentKind, Event: event, Pane: workerID, Payload: []byte(payload)}, wait)
		if err != nil {
			h.t.Error(err)
		}
		got <- d
	}()
	var p api.Prompt
	testutil.WaitFor(h.t, 10*time.Second, func() (bool, string) {
		ps := h.m.Prompts()
		if len(ps) > before {
			p = ps[len(ps)-1]
		}
		return len(ps) > before, "no prompt opened"
	})
	return p, got
}

func decision(t *testing.T, got chan *api.PromptDecision) *api.PromptDecision {
	t.Helper()
	select {
	case d := <-got:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("the hook's wait never ended")
		return nil
	}
}

func TestPromptAllowOnce(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	ctx := context.Background()
	p, got := h.waitPrompt(ctx, "claude", "PermissionRequest", bashAsk, time.Minute)
	if p.Tool != "Bash" || p.Command != "echo hi > probe.txt" || p.Pane != workerID || p.Question != "" {
		t.Errorf("prompt = %+v", p)
	}
	if !p.Deadline.Equal(p.Opened.Add(time.Minute)) {
		t.Errorf("deadline %v, want a minute after %v", p.Deadline, p.Opened)
	}
	_, err := h.m.AnswerPrompt(ctx, api.PromptAnswerRequest{ID: p.ID, Option: "sure"})
	wantKind(t, err, api.KindUsage)
	if err == nil || !strings.Contains(err.Error(), "answer with one of: allow, deny") {
		t.Errorf("refusal %v does not list the answers", err)
	}
	if _, err := h.m.AnswerPrompt(ctx, api.PromptAnswerRequest{ID: p.ID, Option: " Allow", By: "web"}); err != nil {
		t.Fatal(err)
	}
	if d := decision(t, got); d.Behavior != api.PromptAllow || d.By != "web" || d.Option != "" {
		t.Errorf("the hook was told %+v, want allow by web", d)
	}
	// Good once: a second answer finds nothing, and the list is empty.
	_, err = h.m.AnswerPrompt(ctx, api.PromptAnswerRequest{ID: p.ID, Option: "deny"})
	wantKind(t, err, api.KindNotFound)
	if ps := h.m.Prompts(); len(ps) != 0 {
		t.Errorf("prompts after the answer: %+v", ps)
	}
}

func TestPromptQuestionAndDeny(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	ctx := context.Background()
	p, got := h.waitPrompt(ctx, "claude", "PermissionRequest", question, time.Minute)
	if p.Question != "Pick one please" || strings.Join(p.Options, ",") != "Yes,No" {
		t.Errorf("prompt = %+v", p)
	}
	if strings.Join(p.Choices(), ",") != "Yes,No,deny" {
		t.Errorf("choices %v", p.Choices())
	}
	if _, err := h.m.AnswerPrompt(ctx, api.PromptAnswerRequest{ID: p.ID, Option: "no"}); err != nil {
		t.Fatal(err)
	}
	if d := decision(t, got); d.Behavior != api.PromptAllow || d.Option != "No" {
		t.Errorf("the hook was told %+v, want the option No", d)
	}

	p, got = h.waitPrompt(ctx, "claude", "PermissionRequest", bashAsk, time.Minute)
	if _, err := h.m.AnswerPrompt(ctx, api.PromptAnswerRequest{ID: p.ID, Option: "deny"}); err != nil {
		t.Fatal(err)
	}
	if d := decision(t, got); d.Behavior != api.PromptDeny {
		t.Errorf("the hook was told %+v, want deny", d)
	}
}

// TestPromptNoneToAnswer: the hook is told nothing (the agent's own dialog
// decides) for a kind whose hook cannot answer, a question of several
// parts, a deadline passed, a hook gone, and an agent that moved on.
func TestPromptNoneToAnswer(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	ctx := context.Background()
	for _, c := range []struct{ kind, event, payload string }{
		{"gemini", "Notification", bashAsk}, // measured: its hook cannot answer
		{"claude", "Notification", bashAsk},
		{"claude", "PermissionRequest", twoQs},
		{"claude", "PermissionRequest", `not json`},
	} {
		d, err := h.m.WaitPrompt(ctx, api.HookRequest{Agent: c.kind, Event: c.event, Pane: workerID, Payload: []byte(c.payload)}, time.Minute)
		if err != nil || d.Behavior != "" || len(h.m.Prompts()) != 0 {
			t.Errorf("%s %s %.30s: %+v %v, prompts %v: want no prompt and no decision", c.kind, c.event, c.payload, d, err, h.m.Prompts())
		}
	}
	// The deadline.
	_, got := h.waitPrompt(ctx, "claude", "PermissionRequest", bashAsk, 50*time.Millisecond)
	if d := decision(t, got); d.Behavior != "" {
		t.Errorf("past its deadline the hook was told %+v", d)
	}
	// The hook went away (answered in the window, or ended by Claude).
	hctx, cancel := context.WithCancel(ctx)
	_, got = h.waitPrompt(hctx, "claude", "PermissionRequest", bashAsk, time.Minute)
	cancel()
	if d := decision(t, got); d.Behavior != "" {
		t.Errorf("a hook gone was told %+v", d)
	}
	// Another call's end leaves it open; its own call's end closes it.
	p, got := h.waitPrompt(ctx, "claude", "PermissionRequest", bashAsk, time.Minute)
	h.hookEvent(t, "PostToolUse", otherRun)
	if ps := h.m.Prompts(); len(ps) != 1 {
		t.Fatalf("another tool call's end closed the prompt: %v", ps)
	}
	h.hookEvent(t, "PostToolUse", bashDone)
	if d := decision(t, got); d.Behavior != "" {
		t.Errorf("a prompt answered in the window told its hook %+v", d)
	}
	if _, err := h.m.AnswerPrompt(ctx, api.PromptAnswerRequest{ID: p.ID, Option: "allow"}); err == nil {
		t.Error("a prompt its agent moved past took an answer")
	}
	if ps := h.m.Prompts(); len(ps) != 0 {
		t.Errorf("prompts left open: %v", ps)
	}
}

// TestPromptTokens: a push's tokens answer their prompt with their own
// choice, once; a gate's token is no prompt's.
func TestPromptTokens(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	ctx := context.Background()
	p, got := h.waitPrompt(ctx, "claude", "PermissionRequest", bashAsk, time.Minute)
	toks, err := h.m.MintPromptTokens(p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(toks) != 2 || toks["allow"] == "" || toks["deny"] == "" || toks["allow"] == toks["deny"] {
		t.Fatalf("tokens %v", toks)
	}
	if _, err := h.m.AnswerPromptByToken(ctx, strings.Repeat("0", 64)); err != ErrBadAnswerToken {
		t.Errorf("a made-up token: %v", err)
	}
	if _, err := h.m.AnswerGateByToken(ctx, toks["deny"]); err == nil {
		t.Error("a prompt's token answered a gate")
	}
	if _, err := h.m.AnswerPromptByToken(ctx, toks["deny"]); err != nil {
		t.Fatal(err)
	}
	if d := decision(t, got); d.Behavior != api.PromptDeny || d.By != "push" {
		t.Errorf("the hook was told %+v, want deny by push", d)
	}
	for _, tok := range toks {
		if _, err := h.m.AnswerPromptByToken(ctx, tok); err != ErrBadAnswerToken {
			t.Errorf("a token of an answered prompt: %v", err)
		}
	}
}

// hookEvent hands a Claude hook event from the worker's pane.
func (h *harness) hookEvent(t *testing.T, event, payload string) {
	t.Helper()
	if _, err := h.m.Hook(context.Background(), api.HookRequest{Agent: "claude", Event: event, Pane: workerID, Payload: []byte(payload)}); err != nil {
		t.Fatal(err)
	}
}
