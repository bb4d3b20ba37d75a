package attention

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { c.t = c.t.Add(time.Second); return c.t }

func newBook(t *testing.T) (*Book, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "attention.json")
	c := &clock{t: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)}
	return New(path, c.now, t.Logf), path
}

func TestOpenCloseAndReload(t *testing.T) {
	b, path := newBook(t)
	a, isNew := b.Open(PaneKey("%3", Prompt), api.Attention{Kind: api.AttnPermission, Pane: "%3", Agent: "claude", Text: "Bash: rm -rf build", Command: "rm -rf build"})
	if !isNew || a.ID != "att-1" || !a.Open() {
		t.Fatalf("opened %+v new=%v", a, isNew)
	}
	// Claude's Notification permission_prompt about the same dialog opens nothing new.
	if again, isNew := b.Open(PaneKey("%3", Prompt), api.Attention{Kind: api.AttnPermission, Pane: "%3", Text: "Bash: rm -rf build"}); isNew || again.ID != a.ID {
		t.Fatalf("the same prompt again: %+v new=%v", again, isNew)
	}
	b.Open(GateKey("gate-x"), api.Attention{Kind: api.AttnGate, Pane: "%4", Text: "Ship it?", Options: []string{"yes", "no"}, Gate: "gate-x"})
	l := b.List(false)
	if l.Open != 2 || len(l.Items) != 2 || l.Items[0].Kind != api.AttnGate {
		t.Fatalf("list (newest first) = %+v", l)
	}

	// Another st reads the same file: the items outlive a restart.
	b2 := New(path, time.Now, t.Logf)
	b2.Load()
	if got := b2.List(false); got.Open != 2 || got.Items[1].Command != "rm -rf build" {
		t.Fatalf("after reload: %+v", got)
	}
	if next, _ := b2.Open(RunKey("r1"), api.Attention{Kind: api.AttnRunDone, Text: "run r1 finished"}); next.ID != "att-3" {
		t.Fatalf("ids go on after a reload: %s", next.ID)
	}

	// The agent moves on: its prompt closes, the gate stays.
	if !b2.ClosePane("%3", "agent", api.AttnPermission, api.AttnQuestion) {
		t.Fatal("ClosePane closed nothing")
	}
	if b2.ClosePane("%3", "agent", api.AttnPermission) {
		t.Fatal("a closed item closed twice")
	}
	if got := b2.OpenCount(); got != 2 {
		t.Fatalf("open = %d, want 2 (gate, run)", got)
	}
	if _, err := b2.Close("att-1", "dismissed"); err == nil {
		t.Fatal("a closed item was dismissed")
	}
	if c, err := b2.Close("att-2", "answered"); err != nil || c.ClosedBy != "answered" {
		t.Fatalf("close gate item: %+v %v", c, err)
	}
	all := b2.List(true)
	if len(all.Items) != 3 || all.Open != 1 || all.Items[2].ClosedBy != "agent" {
		t.Fatalf("all = %+v", all)
	}
}

func TestSupersedeAndWake(t *testing.T) {
	b, _ := newBook(t)
	ch := b.Changed()
	first, _ := b.Open(PaneKey("%1", Prompt), api.Attention{Kind: api.AttnPermission, Pane: "%1", Text: "Bash: a"})
	select {
	case <-ch:
	default:
		t.Fatal("an item opened and no waiter woke")
	}
	second, isNew := b.Open(PaneKey("%1", Prompt), api.Attention{Kind: api.AttnQuestion, Pane: "%1", Text: "Which one?"})
	if !isNew {
		t.Fatal("another question of the pane was not new")
	}
	got, _ := b.Get(first.ID)
	if got.Open() || got.ClosedBy != "superseded" {
		t.Fatalf("the first prompt: %+v", got)
	}
	if after := b.OpenedAfter(first.ID); len(after) != 1 || after[0].ID != second.ID {
		t.Fatalf("opened after %s: %+v", first.ID, after)
	}
	if after := b.OpenedAfter(second.ID); len(after) != 0 {
		t.Fatalf("opened after the newest: %+v", after)
	}
}

func TestPushedOnceAcrossReload(t *testing.T) {
	b, path := newBook(t)
	a, _ := b.Open(PaneKey("%1", Turn), api.Attention{Kind: api.AttnNoReport, Pane: "%1", Text: "turn ended"})
	b.MarkPushed(a.ID)
	b2 := New(path, time.Now, t.Logf)
	b2.Load()
	if got, _ := b2.Get(a.ID); got.Pushed == nil {
		t.Fatal("the push mark was lost across a restart: the item would be pushed twice")
	}
}

func TestLoadRefusesWhatStNeverWrote(t *testing.T) {
	path := filepath.Join(t.TempDir(), "attention.json")
	os.WriteFile(path, []byte(`[{"id":"att-1","seq":1,"kind":"permission","text":"ok","key":"k","opened":"2026-12-07T12:00:00Z"},
{"id":"<script>","seq":2,"kind":"permission","text":"bad id","key":"k2","opened":"2026-12-07T12:00:00Z"},
{"id":"att-3","seq":3,"kind":"rm -rf","text":"bad kind","key":"k3","opened":"2026-12-07T12:00:00Z"}]`), 0o600)
	b := New(path, time.Now, t.Logf)
	b.Load()
	if l := b.List(true); len(l.Items) != 1 || l.Items[0].Text != "ok" {
		t.Fatalf("loaded %+v", l)
	}
	os.WriteFile(path, []byte("{not json"), 0o600)
	b = New(path, time.Now, t.Logf)
	b.Load()
	if b.OpenCount() != 0 {
		t.Fatal("a broken file gave items")
	}
}

func TestRetireFollowsPanes(t *testing.T) {
	b, _ := newBook(t)
	b.Open(PaneKey("%1", Prompt), api.Attention{Kind: api.AttnPermission, Pane: "%1", Text: "x"})
	b.Open(PaneKey("%2", Prompt), api.Attention{Kind: api.AttnPermission, Pane: "%2", Text: "y"})
	b.Retire(func(p string) (string, bool) { return map[string]string{"%1": "%9"}[p], p == "%1" })
	if b.IsOpen(PaneKey("%2", Prompt)) {
		t.Fatal("the item of a pane that did not come back is still open")
	}
	if !b.ClosePane("%9", "agent") {
		t.Fatal("the item did not follow its pane to %9")
	}
	if _, isNew := b.Open(PaneKey("%9", Prompt), api.Attention{Kind: api.AttnPermission, Pane: "%9", Text: "x"}); !isNew {
		t.Fatal("a new prompt after the closed one was not new")
	}
}

func TestStatusSegment(t *testing.T) {
	const mine = "#[fg=green] %H:%M"
	with := WithSegment(mine)
	if !HasSegment(with) || !strings.HasSuffix(with, mine) || WithSegment(with) != with {
		t.Fatalf("with = %q", with)
	}
	if got := WithoutSegment(with + " more"); got != mine+" more" {
		t.Fatalf("without = %q", got)
	}
}

// TestMirror: another machine's items under a prefix open once each,
// with that machine's age (not one ahead of this clock); one a person
// here dismissed stays closed while that machine still sends it; one it
// no longer sends closes as closed there; items under other prefixes
// are not touched.
func TestMirror(t *testing.T) {
	b, path := newBook(t)
	local, _ := b.Open(PaneKey("%3", Prompt), api.Attention{Kind: api.AttnPermission, Pane: "%3", Text: "here"})
	other, _ := b.Open("remote:gamma/%1:att-1", api.Attention{Kind: api.AttnQuestion, Pane: "gamma/%1", Machine: "gamma", Text: "gamma's"})
	old := time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC)
	future := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	keep := map[string]api.Attention{
		"remote:beta/%4:att-7": {Kind: api.AttnPermission, Pane: "beta/%4", Machine: "beta", Text: "rm x", Opened: old},
		"remote:beta/%4:att-8": {Kind: api.AttnNoReport, Pane: "beta/%4", Machine: "beta", Text: "done?", Opened: future},
	}
	opened, closed := b.Mirror("remote:beta/", keep)
	if len(opened) != 2 || len(closed) != 0 {
		t.Fatalf("first mirror: opened %+v closed %+v", opened, closed)
	}
	if !opened[0].Opened.Equal(old) || opened[0].Text != "rm x" || opened[1].Opened.After(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("ages: %v %v (want beta's, and not one ahead of this clock)", opened[0].Opened, opened[1].Opened)
	}
	if opened, closed := b.Mirror("remote:beta/", keep); len(opened)+len(closed) != 0 {
		t.Fatalf("sent again: opened %+v closed %+v", opened, closed)
	}
	if _, err := b.Close(opened[0].ID, "dismissed"); err != nil {
		t.Fatal(err)
	}
	if opened, _ := b.Mirror("remote:beta/", keep); len(opened) != 0 {
		t.Fatalf("a dismissed item came back: %+v", opened)
	}
	delete(keep, "remote:beta/%4:att-8")
	if _, closed := b.Mirror("remote:beta/", keep); len(closed) != 1 || closed[0].Text != "done?" {
		t.Fatalf("not sent any more: closed %+v", closed)
	}
	if it, _ := b.Get(opened[1].ID); it.ClosedBy != "closed there" {
		t.Errorf("closed by %q", it.ClosedBy)
	}
	for _, a := range []api.Attention{local, other} {
		if it, _ := b.Get(a.ID); !it.Open() {
			t.Errorf("%s (%s) was closed by beta's mirror", a.ID, a.Text)
		}
	}
	// Kept across a restart, as every item.
	b2 := New(path, time.Now, t.Logf)
	b2.Load()
	if n := b2.OpenCount(); n != 2 {
		t.Errorf("after a reload: %d open, want 2 (this machine's, gamma's)", n)
	}
	if b.CloseUnder("remote:gamma/%1:", "gone"); b.IsOpen("remote:gamma/%1:att-1") {
		t.Error("CloseUnder left gamma's item open")
	}
}
