package orch

import (
	"context"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/tmux"
)

// open is the open items, the newest first.
func (h *harness) openItems() []api.Attention {
	h.t.Helper()
	l, err := h.m.Attention(context.Background(), api.AttentionRequest{})
	if err != nil {
		h.t.Fatal(err)
	}
	return l.Items
}

// A worker's permission prompt opens an item with what a person needs;
// Claude's Notification about the same prompt adds nothing; the agent's
// next hook of its own closes it.
func TestAttentionPermissionOpensAndCloses(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	var pushed []api.Attention
	h.m.cfg.OnAttention = func(a api.Attention) { pushed = append(pushed, a) }
	h.hook("PreToolUse", "tool_name", "Bash", "tool_input", map[string]any{"command": "rm -rf build"})
	if got := h.openItems(); len(got) != 0 {
		t.Fatalf("items before any prompt: %+v", got)
	}
	h.hook("PermissionRequest", "tool_name", "Bash", "tool_input", map[string]any{"command": "rm -rf build"})
	got := h.openItems()
	if len(got) != 1 {
		t.Fatalf("open items = %+v, want the permission", got)
	}
	a := got[0]
	if a.Kind != api.AttnPermission || a.Pane != workerID || a.Name != "w1" || a.Agent != "sim" || a.Run != testRun ||
		a.Command != "rm -rf build" || a.Tool != "Bash" || a.Opened.IsZero() {
		t.Fatalf("item = %+v", a)
	}
	if h.worker().State != api.Waiting {
		t.Fatalf("worker is %s, want waiting", h.worker().State)
	}
	h.hook("Notification", "notification_type", "permission_prompt", "message", "Claude needs your permission")
	if got := h.openItems(); len(got) != 1 || got[0].ID != a.ID {
		t.Fatalf("after the Notification: %+v, want %s alone", got, a.ID)
	}
	h.hook("PostToolUse", "tool_name", "Bash", "tool_input", map[string]any{"command": "rm -rf build"})
	if got := h.openItems(); len(got) != 0 {
		t.Fatalf("open after the agent moved on: %+v", got)
	}
	c, _ := h.m.AttentionItem(a.ID)
	if c.ClosedBy != "agent" || c.Closed == nil {
		t.Fatalf("closed item = %+v", c)
	}
	h.m.Close() // (the push runs in the background: let it end)
	if len(pushed) != 1 || pushed[0].ID != a.ID {
		t.Fatalf("OnAttention got %+v, want one call for %s", pushed, a.ID)
	}
}

// Any agent pane with st's hooks counts, not only workers: the
// coordinator asking a question (AskUserQuestion) opens one too.
func TestAttentionQuestionOfACoordinator(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	if err := h.hookFrom(coord, "PermissionRequest", "tool_name", "AskUserQuestion", "tool_input", map[string]any{
		"questions": []any{map[string]any{"question": "Which DB?", "options": []any{map[string]any{"label": "Postgres"}, map[string]any{"label": "SQLite"}}}}}); err != nil {
		t.Fatal(err)
	}
	got := h.openItems()
	if len(got) != 1 || got[0].Kind != api.AttnQuestion || got[0].Text != "Which DB?" || len(got[0].Options) != 2 || got[0].Pane != coord || got[0].Run != testRun {
		t.Fatalf("items = %+v", got)
	}
	if err := h.hookFrom(coord, "UserPromptSubmit", "prompt", "go on"); err != nil {
		t.Fatal(err)
	}
	if got := h.openItems(); len(got) != 0 {
		t.Fatalf("open after its next turn: %+v", got)
	}
}

// A turn that ends without a report opens "no report"; one that ends in
// an error opens "failed" (one item, not both); new work closes it.
func TestAttentionTurnEnds(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	h.hook("Stop", "last_assistant_message", "I could not find the file.", "background_tasks", []any{})
	got := h.openItems()
	if len(got) != 1 || got[0].Kind != api.AttnNoReport || got[0].Text != "I could not find the file." || got[0].Name != "w1" {
		t.Fatalf("after a turn without a report: %+v", got)
	}
	h.hook("UserPromptSubmit", "prompt", "try again")
	if got := h.openItems(); len(got) != 0 {
		t.Fatalf("open after new work: %+v", got)
	}
	h.hook("StopFailure", "error", "server_error", "last_assistant_message", "API Error: 500")
	got = h.openItems()
	if len(got) != 1 || got[0].Kind != api.AttnFailed || got[0].Text != "API Error: 500" {
		t.Fatalf("after a failed turn: %+v", got)
	}
	all, _ := h.m.Attention(context.Background(), api.AttentionRequest{All: true})
	if len(all.Items) != 2 {
		t.Fatalf("a failed turn made %d items in all, want 2 (the earlier no-report, the failure)", len(all.Items))
	}
}

// A gate is an item until it is answered; a report closes "no report"
// and, the run's last worker done, opens "run finished".
func TestAttentionGateAndRunDone(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	ctx := context.Background()
	g := h.ask(workerID, 0)
	got := h.openItems()
	if len(got) != 1 || got[0].Kind != api.AttnGate || got[0].Gate != g.ID || got[0].Text != "Ship it?" || got[0].Name != "w1" {
		t.Fatalf("items with a gate open: %+v", got)
	}
	if _, err := h.m.AnswerGate(ctx, api.GateRequest{ID: g.ID, Option: "yes"}); err != nil {
		t.Fatal(err)
	}
	if got := h.openItems(); len(got) != 0 {
		t.Fatalf("open after the answer: %+v", got)
	}
	if _, err := h.m.Done(ctx, api.DoneRequest{Pane: workerID, Summary: "did it"}); err != nil {
		t.Fatal(err)
	}
	h.hook("Stop", "last_assistant_message", "done", "background_tasks", []any{})
	got = h.openItems()
	if len(got) != 1 || got[0].Kind != api.AttnRunDone || got[0].Run != testRun || got[0].Pane != coord || got[0].Text != "test the state machine" {
		t.Fatalf("after the last worker's report: %+v", got)
	}
	if _, err := h.m.DismissAttention(ctx, api.AttentionRequest{ID: got[0].ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.m.DismissAttention(ctx, api.AttentionRequest{ID: got[0].ID}); err == nil {
		t.Fatal("an item was dismissed twice")
	}
	if h.m.AttentionCount() != 0 {
		t.Fatal("open after a dismissal")
	}
}

// Open items outlive a restart of st; a wait returns once a new one opens.
func TestAttentionKeptAcrossRestartAndWait(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	ctx := context.Background()
	h.hook("PermissionRequest", "tool_name", "Bash", "tool_input", map[string]any{"command": "make deploy"})
	first := h.openItems()[0]
	h.m.Close()
	m2, err := NewManager(ctx, Config{Home: h.home, STBin: "/bin/st", Tmux: tmux.NewWithRunner("/tmp/fake.sock", h.tm)})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	l, _ := m2.Attention(ctx, api.AttentionRequest{})
	if len(l.Items) != 1 || l.Items[0].ID != first.ID || l.Items[0].Command != "make deploy" || m2.AttentionCount() != 1 {
		t.Fatalf("after a restart of st: %+v", l)
	}
	// Nothing newer than the first: the wait runs out.
	w, err := m2.WaitAttention(ctx, api.AttentionRequest{After: first.ID, Timeout: 20 * time.Millisecond})
	if err != nil || len(w.Items) != 0 {
		t.Fatalf("wait with nothing new: %+v %v", w, err)
	}
	done := make(chan *api.AttentionList, 1)
	go func() {
		w, _ := m2.WaitAttention(ctx, api.AttentionRequest{After: first.ID, Timeout: time.Minute})
		done <- w
	}()
	if _, err := m2.Hook(ctx, api.HookRequest{Agent: "sim", Event: "PermissionRequest", Pane: coord,
		Payload: payload("PermissionRequest", "tool_name", "AskUser", "tool_input", map[string]any{"question": "Ready?"})}); err != nil {
		t.Fatal(err)
	}
	w = <-done
	if len(w.Items) != 1 || w.Items[0].Text != "Ready?" || w.Open != 2 {
		t.Fatalf("wait answered %+v", w)
	}
}

// A worker that comes back idle after a restore of tmux ended no turn:
// no "no report" for it.
func TestAttentionNotForAWorkerBackFromARestore(t *testing.T) {
	h := newHarness(t, api.Starting, nil)
	h.m.agentBack(workerID, "")
	if h.worker().State != api.Idle {
		t.Fatalf("worker is %s, want idle", h.worker().State)
	}
	if got := h.openItems(); len(got) != 0 {
		t.Fatalf("items after a restore: %+v", got)
	}
}

func TestAttentionOpenPrompt(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	if _, ok := h.m.OpenPrompt(workerID); ok {
		t.Fatal("a prompt before any was asked")
	}
	h.hook("PermissionRequest", "tool_name", "Bash", "tool_input", map[string]any{"command": "ls"})
	a, ok := h.m.OpenPrompt(workerID)
	if !ok || a.Command != "ls" {
		t.Fatalf("OpenPrompt = %+v %v", a, ok)
	}
	if c, err := h.m.CloseAttention(a.ID, "answered"); err != nil || c.ClosedBy != "answered" {
		t.Fatalf("close: %+v %v", c, err)
	}
	if _, ok := h.m.OpenPrompt(workerID); ok {
		t.Fatal("the answered prompt is still open")
	}
}
