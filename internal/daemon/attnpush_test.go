package daemon

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/attention"
)

type sentPush struct{ title, body, ids, actions, prompt string }

// pusherFor is a pusher whose posts are kept, with a clock of the test's
// and pane %9 in front of a person.
func pusherFor(t *testing.T, toml string) (*attnPusher, *attention.Book, func() []sentPush, *time.Time) {
	t.Helper()
	c, _, err := loadConfigText(t, toml)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	book := attention.New(filepath.Join(t.TempDir(), "attention.json"), func() time.Time { return now }, t.Logf)
	var mu sync.Mutex
	var sent []sentPush
	p := &attnPusher{target: "http://127.0.0.1:1/push", rules: c.Attention, book: book, ready: make(chan struct{}), now: func() time.Time { return now }, log: testWriter{t},
		front: func(context.Context) (map[string]bool, error) { return map[string]bool{"%9": true}, nil },
		post: func(_ context.Context, title, body string, hdr map[string]string) error {
			mu.Lock()
			defer mu.Unlock()
			sent = append(sent, sentPush{title, body, hdr["X-St-Attention"], hdr["Actions"], hdr["X-St-Prompt"]})
			return nil
		}}
	close(p.ready)
	t.Cleanup(p.stop)
	return p, book, func() []sentPush { mu.Lock(); defer mu.Unlock(); return append([]sentPush(nil), sent...) }, &now
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

func open(b *attention.Book, pane string, kind api.AttentionKind, text string) api.Attention {
	a, _ := b.Open(attention.PaneKey(pane, attention.Prompt), api.Attention{Kind: kind, Pane: pane, Name: "w" + pane[1:], Agent: "claude", Text: text, Command: text})
	return a
}

// One push per item, with the agent's name and what it asks; none for a
// pane in front of a person; none for a kind left out of [attention] push;
// none for a gate (its own push carries it); none twice.
func TestAttentionPushRules(t *testing.T) {
	p, b, sent, _ := pusherFor(t, "push_url = \"http://127.0.0.1:1/push\"\n[attention]\npush = [\"permission\", \"failed\"]\n")
	ctx := context.Background()
	a := open(b, "%3", api.AttnPermission, "make deploy")
	p.item(ctx, a)
	got := sent()
	if len(got) != 1 || got[0].title != "st: w3 needs you (permission)" || !strings.HasPrefix(got[0].body, "run make deploy?") || got[0].ids != a.ID {
		t.Fatalf("pushes %+v", got)
	}
	if cur, _ := b.Get(a.ID); cur.Pushed == nil {
		t.Fatal("the push was not recorded on the item")
	}
	cur, _ := b.Get(a.ID)
	p.item(ctx, cur) // (as after a restart: it carries its mark)
	p.item(ctx, open(b, "%9", api.AttnPermission, "in front"))
	p.item(ctx, open(b, "%4", api.AttnNoReport, "not a kind that pushes"))
	g, _ := b.Open(attention.GateKey("gate-1"), api.Attention{Kind: api.AttnGate, Pane: "%5", Text: "Ship?"})
	p.item(ctx, g)
	if got := sent(); len(got) != 1 {
		t.Fatalf("pushes %+v, want the first alone", got)
	}
}

// Past summary pushes in the window, the rest wait for its end and go as
// one summary of those still open.
func TestAttentionPushSummary(t *testing.T) {
	p, b, sent, _ := pusherFor(t, "push_url = \"http://127.0.0.1:1/push\"\n[attention]\nsummary = 2\nsummary_window = \"50ms\"\n")
	ctx := context.Background()
	p.now = time.Now // the summary's timer runs on the real clock
	var items []api.Attention
	for i := range 5 {
		items = append(items, open(b, "%"+string(rune('1'+i)), api.AttnPermission, "cmd"+string(rune('a'+i))))
	}
	for _, a := range items {
		p.item(ctx, a)
	}
	b.CloseKey(attention.PaneKey("%5", attention.Prompt), "agent") // moved on before the summary
	deadline := time.Now().Add(10 * time.Second)
	for len(sent()) < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	got := sent()
	if len(got) != 3 {
		t.Fatalf("pushes %+v, want 2 and a summary", got)
	}
	s := got[2]
	if s.title != "st: 2 agents need you" || !strings.Contains(s.body, "- w3: permission: run cmdc?") || !strings.Contains(s.body, "- w4: permission: run cmdd?") || strings.Contains(s.body, "cmde") {
		t.Fatalf("summary %+v", s)
	}
	for _, a := range items[:4] {
		if cur, _ := b.Get(a.ID); cur.Pushed == nil {
			t.Errorf("%s not marked pushed", a.ID)
		}
	}
}

func TestAttentionConfigRefusesUnknownKinds(t *testing.T) {
	_, _, err := loadConfigText(t, "[attention]\npush = [\"permision\"]\n")
	if err == nil || !strings.Contains(err.Error(), `[attention] push names "permision", which is no kind of attention item`) {
		t.Fatalf("err = %v", err)
	}
	c, _, err := loadConfigText(t, "")
	if err != nil || *c.Attention.Summary != defaultSummary || !*c.Attention.QuietFront || c.Attention.SummaryWindow.Duration != defaultSummaryWindow {
		t.Fatalf("defaults %+v %v", c.Attention, err)
	}
}

// An item of a prompt st can answer is one push, by the same quiet rules,
// with the prompt's answer links: Allow once and Deny. None for its pane
// in front of a person, none when its kind does not push; without
// push_answer_url it says why it has no buttons.
func TestAttentionPushCarriesPromptLinks(t *testing.T) {
	links := func(id string) ([]string, error) {
		return []string{"http, Allow once, https://st.example/push/prompt/a-" + id + ", method=POST, clear=true",
			"http, Deny, https://st.example/push/prompt/d-" + id + ", method=POST, clear=true"}, nil
	}
	p, b, sent, _ := pusherFor(t, "push_url = \"http://127.0.0.1:1/push\"\n")
	p.links = links
	ctx := context.Background()
	a := open(b, "%3", api.AttnPermission, "make deploy")
	a.Prompt = "prompt-1"
	p.item(ctx, a)
	front := open(b, "%9", api.AttnPermission, "in front")
	front.Prompt = "prompt-2"
	p.item(ctx, front)
	got := sent()
	if len(got) != 1 || got[0].ids != a.ID || got[0].prompt != "prompt-1" || got[0].title != "st: w3 needs you (permission)" ||
		got[0].actions != "http, Allow once, https://st.example/push/prompt/a-prompt-1, method=POST, clear=true; http, Deny, https://st.example/push/prompt/d-prompt-1, method=POST, clear=true" {
		t.Fatalf("pushes %+v, want %s alone with its links", got, a.ID)
	}

	p, b, sent, _ = pusherFor(t, "push_url = \"http://127.0.0.1:1/push\"\n[attention]\npush = [\"failed\"]\n")
	p.links = links
	a = open(b, "%3", api.AttnPermission, "make deploy")
	a.Prompt = "prompt-1"
	p.item(ctx, a)
	if got := sent(); len(got) != 0 {
		t.Fatalf("pushes %+v of a kind that does not push", got)
	}

	p, b, sent, _ = pusherFor(t, "push_url = \"http://127.0.0.1:1/push\"\n")
	p.links = func(string) ([]string, error) { return nil, nil } // push_answer_url unset
	a = open(b, "%3", api.AttnPermission, "make deploy")
	a.Prompt = "prompt-1"
	p.item(ctx, a)
	if got := sent(); len(got) != 1 || got[0].actions != "" || !strings.Contains(got[0].body, "No answer buttons here: push_answer_url") {
		t.Fatalf("pushes %+v, want one saying why it has no buttons", got)
	}
}

// A prompt st can answer is never folded into a summary: its push is how
// a person answers it from the phone (CI: the authz matrix's prompt, the
// many items before it past the summary's count, had no push to answer).
func TestAttentionPromptPushedPastTheSummary(t *testing.T) {
	p, b, sent, _ := pusherFor(t, "push_url = \"http://127.0.0.1:1/push\"\n[attention]\nsummary = 1\nsummary_window = \"1h\"\n")
	p.links = func(id string) ([]string, error) {
		return []string{"http, Allow once, https://st.example/push/prompt/a-" + id + ", method=POST, clear=true"}, nil
	}
	ctx := context.Background()
	p.item(ctx, open(b, "%1", api.AttnNoReport, "idle"))
	held := open(b, "%2", api.AttnNoReport, "idle too")
	p.item(ctx, held)
	a := open(b, "%3", api.AttnPermission, "make deploy")
	a.Prompt = "prompt-1"
	p.item(ctx, a)
	got := sent()
	if len(got) != 2 || got[1].prompt != "prompt-1" || !strings.Contains(got[1].actions, "Allow once") {
		t.Fatalf("pushes %+v: want the first item's, then the prompt's with its link (the second item held for the summary)", got)
	}
	if cur, _ := b.Get(held.ID); cur.Pushed != nil {
		t.Fatalf("the item past the count was pushed on its own")
	}
}
