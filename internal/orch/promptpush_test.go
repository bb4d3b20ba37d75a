package orch

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/testutil"
)

// pushes records the items handed to OnAttention (the daemon's push).
func (h *harness) pushes() func() []api.Attention {
	var mu sync.Mutex
	var got []api.Attention
	h.m.cfg.OnAttention = func(a api.Attention) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, a)
	}
	return func() []api.Attention {
		mu.Lock()
		defer mu.Unlock()
		return append([]api.Attention(nil), got...)
	}
}

func (h *harness) claudeRaw(event, payload string) {
	h.t.Helper()
	if _, err := h.m.Hook(context.Background(), api.HookRequest{Agent: "claude", Event: event, Pane: workerID, Payload: []byte(payload)}); err != nil {
		h.t.Fatal(err)
	}
}

// A Claude permission prompt st can answer is one item and one push:
// the push waits for the prompt its hook opens next, and carries its id
// (the daemon's push turns it into the answer links); Claude's
// Notification about the same prompt pushes nothing more.
func TestPromptItemPushedOnceWithItsPrompt(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	h.m.prompts.hold = time.Hour // the prompt comes; nothing lets the item go before it
	pushed := h.pushes()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.claudeRaw("PermissionRequest", bashAsk)
	items := h.openItems()
	if len(items) != 1 || items[0].Kind != api.AttnPermission || items[0].Command != "echo hi > probe.txt" {
		t.Fatalf("items = %+v", items)
	}
	if got := pushed(); len(got) != 0 {
		t.Fatalf("pushed before its prompt opened: %+v", got)
	}
	p, got := h.waitPrompt(ctx, "claude", "PermissionRequest", bashAsk, time.Minute)
	testutil.WaitFor(t, 10*time.Second, func() (bool, string) { return len(pushed()) > 0, "the item was never pushed" })
	h.claudeRaw("Notification", `{"hook_event_name":"Notification","notification_type":"permission_prompt","message":"Claude needs your permission to use Bash"}`)
	if _, err := h.m.AnswerPrompt(ctx, api.PromptAnswerRequest{ID: p.ID, Option: "allow", By: "push"}); err != nil {
		t.Fatal(err)
	}
	if d := decision(t, got); d.Behavior != api.PromptAllow {
		t.Fatalf("decision %+v", d)
	}
	h.m.Close()
	if ps := pushed(); len(ps) != 1 || ps[0].ID != items[0].ID || ps[0].Prompt != p.ID || ps[0].Command != "echo hi > probe.txt" {
		t.Fatalf("pushes %+v, want item %s once, with prompt %s", ps, items[0].ID, p.ID)
	}
}

// The two requests of the hook may cross: a prompt open before its item
// goes with it at once.
func TestPromptItemAfterItsPrompt(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	h.m.prompts.hold = time.Hour
	pushed := h.pushes()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, got := h.waitPrompt(ctx, "claude", "PermissionRequest", question, time.Minute)
	h.claudeRaw("PermissionRequest", question)
	testutil.WaitFor(t, 10*time.Second, func() (bool, string) { return len(pushed()) > 0, "the item was never pushed" })
	cancel()
	decision(t, got)
	h.m.Close()
	if ps := pushed(); len(ps) != 1 || ps[0].Kind != api.AttnQuestion || ps[0].Prompt != p.ID || len(ps[0].Options) != 2 {
		t.Fatalf("pushes %+v, want the question once, with prompt %s", ps, p.ID)
	}
}

// A prompt st cannot offer (a question of two parts) lets its item go at
// once, without a prompt; a prompt that never comes lets it go after the
// hold; an item closed while held pushes nothing.
func TestPromptItemWithoutAPrompt(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	h.m.prompts.hold = time.Hour
	pushed := h.pushes()
	ctx := context.Background()
	h.claudeRaw("PermissionRequest", twoQs)
	if d, err := h.m.WaitPrompt(ctx, api.HookRequest{Agent: "claude", Event: "PermissionRequest", Pane: workerID, Payload: []byte(twoQs)}, time.Minute); err != nil || d.Behavior != "" {
		t.Fatalf("WaitPrompt = %+v, %v: want no decision at once", d, err)
	}
	testutil.WaitFor(t, 10*time.Second, func() (bool, string) { return len(pushed()) == 1, "the question was never pushed" })
	if ps := pushed(); ps[0].Kind != api.AttnQuestion || ps[0].Prompt != "" {
		t.Fatalf("push %+v, want the question without a prompt", ps[0])
	}

	// Its agent moves on while the item is held: nothing to push.
	h.claudeRaw("UserPromptSubmit", `{"hook_event_name":"UserPromptSubmit","prompt":"go on"}`)
	h.claudeRaw("PermissionRequest", bashAsk)
	h.claudeRaw("PostToolUse", bashDone)
	h.m.releaseHeld(workerID, "")

	// No prompt comes at all (its hook died): the hold ends.
	h.m.prompts.hold = 10 * time.Millisecond
	h.claudeRaw("PermissionRequest", otherAsk)
	testutil.WaitFor(t, 10*time.Second, func() (bool, string) { return len(pushed()) == 2, "the held item was never pushed" })
	h.m.Close()
	ps := pushed()
	if len(ps) != 2 || ps[1].Command != "ls" || ps[1].Prompt != "" {
		t.Fatalf("pushes %+v, want the question and then ls without a prompt", ps)
	}
}

const otherAsk = `{"session_id":"s","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"ls"}}`

// A prompt whose hook event never reached st opens its own item, pushed
// once with the prompt; the event coming late adds nothing.
func TestPromptWithoutItsEventOpensAnItem(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	pushed := h.pushes()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, got := h.waitPrompt(ctx, "claude", "PermissionRequest", bashAsk, time.Minute)
	testutil.WaitFor(t, 10*time.Second, func() (bool, string) { return len(pushed()) > 0, "the prompt's item was never pushed" })
	items := h.openItems()
	if len(items) != 1 || items[0].Kind != api.AttnPermission || items[0].Command != "echo hi > probe.txt" || items[0].Name != "w1" {
		t.Fatalf("items = %+v", items)
	}
	h.claudeRaw("PermissionRequest", bashAsk)
	cancel()
	decision(t, got)
	h.m.Close()
	if ps := pushed(); len(ps) != 1 || ps[0].ID != items[0].ID || ps[0].Prompt != p.ID {
		t.Fatalf("pushes %+v, want %s once with prompt %s", ps, items[0].ID, p.ID)
	}
}
