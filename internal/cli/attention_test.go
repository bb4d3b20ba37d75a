package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
)

func attentionOptionsCases(t *testing.T) {
	checkParse(t, "attention", newAttentionCmd, []parseCase[attentionOptions]{
		{args: nil},
		{args: []string{"--all", "--json"}, want: attentionOptions{All: true, JSON: true}},
		{args: []string{"--wait", "--timeout", "90s"}, want: attentionOptions{Wait: true, Timeout: 90 * time.Second}},
		{args: []string{"now"}, err: `unknown command "now"`},
	})
	checkParse(t, "attention dismiss", newAttentionDismissCmd, []parseCase[attentionDismissOptions]{
		{args: []string{"att-3"}, want: attentionDismissOptions{ID: "att-3"}},
		{args: nil, err: "Try: st attention dismiss ID"},
	})
}

func TestPrintAttention(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	closed := now.Add(-time.Minute)
	l := &api.AttentionList{Open: 2, Items: []api.Attention{
		{ID: "att-3", Kind: api.AttnPermission, Pane: "%4", Name: "api", Agent: "claude", Text: "rm -rf build", Opened: now.Add(-42 * time.Second)},
		{ID: "att-2", Kind: api.AttnGate, Pane: "%2", Agent: "codex", Text: "Ship it?", Options: []string{"yes", "no"}, Gate: "gate-ab", Opened: now.Add(-3 * time.Hour)},
		{ID: "att-1", Kind: api.AttnNoReport, Pane: "%5", Text: "ok", Opened: now.Add(-72 * time.Hour), Closed: &closed, ClosedBy: "agent"},
	}}
	var b bytes.Buffer
	if err := printAttention(&b, l, now); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"att-3  permission", "api (%4) claude", "42s", "rm -rf build",
		"3h", "Ship it? [yes | no] (st gate answer gate-ab OPTION)",
		"no-report (closed: agent)", "3d",
		"2 open",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("st attention printed\n%s\nwithout %q", out, want)
		}
	}
	b.Reset()
	printAttention(&b, &api.AttentionList{Items: []api.Attention{}}, now)
	if b.String() != "no agent needs you\n" {
		t.Errorf("with none: %q", b.String())
	}
}
