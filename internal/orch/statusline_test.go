package orch

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/tokens"
)

// statusLine sends a status-line payload (Claude's shape) from pane.
func (h *harness) statusLine(pane string, p map[string]any) error {
	b, err := json.Marshal(p)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.m.StatusLine(api.HookRequest{Agent: "claude", Event: "StatusLine", Pane: pane, Payload: b})
}

// The cost Claude's status line gives is the worker's, as the agent's own
// figure: not marked an estimate, kept in run.json, and not replaced by
// the counts read at the hooks that follow. A status line of another
// conversation in its pane, or from another pane, is not its cost.
func TestStatusLineCostIsTheAgents(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	tr := newTranscript(t)
	tr.say(100, 20)
	h.hook("PreToolUse", "transcript_path", tr.path, "tool_name", "Bash", "tool_input", map[string]any{"command": "ls"})
	if got := h.worker().Tokens; got == nil || got.CostUSD != nil {
		t.Fatalf("before the status line: %+v, want tokens and no cost (no price table)", got)
	}
	if err := h.statusLine(shell, map[string]any{"cost": map[string]any{"total_cost_usd": 9.0}}); err != nil {
		t.Fatal(err)
	}
	if err := h.statusLine(workerID, map[string]any{"session_id": "0b1c0a52-7d1e-4c55-9a0e-5b2d6f0e8a11", "cost": map[string]any{"total_cost_usd": 8.0}}); err != nil {
		t.Fatal(err)
	}
	if got := h.worker().Tokens; got.CostUSD != nil {
		t.Fatalf("another pane's or conversation's status line gave the worker a cost: %+v", got)
	}
	if err := h.statusLine(workerID, map[string]any{"session_id": agentSes, "cost": map[string]any{"total_cost_usd": 0.4217}}); err != nil {
		t.Fatal(err)
	}
	got := h.worker().Tokens
	if got == nil || got.CostUSD == nil || *got.CostUSD != 0.4217 || got.CostEstimated || got.CostBy != api.CostByAgent || got.Total != 120 {
		t.Fatalf("after the status line: %+v, want 120 tokens and the agent's $0.4217", got)
	}
	tr.say(1000, 5)
	h.hook("Stop", "transcript_path", tr.path, "last_assistant_message", "done")
	got = h.worker().Tokens
	if got.Total != 1125 || got.CostUSD == nil || *got.CostUSD != 0.4217 || got.CostEstimated {
		t.Fatalf("after Stop: %+v, want 1125 tokens, still the agent's cost", got)
	}
	h.m.Sync()
	if d := h.onDisk(); d.AgentCost == nil || *d.AgentCost != 0.4217 || d.Tokens.CostBy != api.CostByAgent {
		t.Fatalf("run.json keeps %v / %+v", d.AgentCost, d.Tokens)
	}
}

// A status line's JSON is untrusted: what is not an object is refused
// whole; a cost or a limit out of its range is left out, never guessed.
func TestStatusLineChecksItsInput(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	soon := now.Add(time.Hour).Unix()
	for _, c := range []struct {
		name, payload string
		ok            bool
		cost          string // "" for none
		limits        string
	}{
		{"not JSON", `{"cost":`, false, "", ""},
		{"an array", `[1,2]`, false, "", ""},
		{"too big", `{"x":"` + strings.Repeat("a", api.MaxStatusLineBytes) + `"}`, false, "", ""},
		{"empty object", `{}`, true, "", ""},
		{"a cost", `{"cost":{"total_cost_usd":1.25}}`, true, "1.25", ""},
		{"a negative cost", `{"cost":{"total_cost_usd":-1}}`, true, "", ""},
		{"a cost as a string", `{"cost":{"total_cost_usd":"1.25"}}`, true, "", ""},
		{"a huge cost", `{"cost":{"total_cost_usd":1e300}}`, true, "", ""},
		{"limits", `{"rate_limits":{"five_hour":{"used_percentage":92,"resets_at":` + itoa(soon) + `},"seven_day":{"used_percentage":40.5}}}`, true, "",
			"claude 5-hour 92 " + itoa(soon) + "; claude 7-day 40.5 0"},
		{"a percentage past 100", `{"rate_limits":{"five_hour":{"used_percentage":150}}}`, true, "", ""},
		{"a percentage as a string", `{"rate_limits":{"five_hour":{"used_percentage":"92"}}}`, true, "", ""},
		{"a reset in milliseconds", `{"rate_limits":{"five_hour":{"used_percentage":1,"resets_at":` + itoa(soon*1000) + `}}}`, true, "", "claude 5-hour 1 " + itoa(soon)},
		{"a reset in RFC 3339", `{"rate_limits":{"five_hour":{"used_percentage":1,"resets_at":"` + time.Unix(soon, 0).UTC().Format(time.RFC3339) + `"}}}`, true, "", "claude 5-hour 1 " + itoa(soon)},
		{"a reset centuries away", `{"rate_limits":{"five_hour":{"used_percentage":1,"resets_at":99999999999}}}`, true, "", "claude 5-hour 1 0"},
	} {
		in, ok := parseStatusLine([]byte(c.payload), now)
		if ok != c.ok {
			t.Errorf("%s: ok %v, want %v", c.name, ok, c.ok)
			continue
		}
		cost := ""
		if in.cost != nil {
			cost = strings.TrimRight(strings.TrimRight(jsonNum(*in.cost), "0"), ".")
		}
		var ls []string
		for _, l := range in.limits {
			at := int64(0)
			if !l.Resets.IsZero() {
				at = l.Resets.Unix()
			}
			ls = append(ls, l.Agent+" "+l.Window+" "+jsonNum(l.UsedPercent)+" "+itoa(at))
		}
		if cost != c.cost || strings.Join(ls, "; ") != c.limits {
			t.Errorf("%s: cost %q limits %q, want %q %q", c.name, cost, strings.Join(ls, "; "), c.cost, c.limits)
		}
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func jsonNum(f float64) string { b, _ := json.Marshal(f); return string(b) }

// Near a limit: the agents' own percentages, by account and window, in
// st status's summary; near from the configured share (80 % unless set);
// a window whose reset passed is dropped; Codex's come from its rollout.
func TestNearLimits(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	now := time.Now()
	if err := h.statusLine(shell, map[string]any{"rate_limits": map[string]any{
		"five_hour": map[string]any{"used_percentage": 92, "resets_at": now.Add(time.Hour).Unix()},
		"seven_day": map[string]any{"used_percentage": 40, "resets_at": now.Add(48 * time.Hour).Unix()},
	}}); err != nil {
		t.Fatal(err)
	}
	h.m.noteRolloutLimits(workerID, mustKind(t, "codex"), &tokens.RateLimits{
		Primary:   tokens.RateWindow{UsedPercent: 85, WindowMinutes: 300, ResetsAt: now.Add(2 * time.Hour).Unix()},
		Secondary: tokens.RateWindow{UsedPercent: 10, WindowMinutes: 10080, ResetsAt: now.Add(-time.Minute).Unix()},
	})
	s := h.m.Status()
	var got []string
	for _, l := range s.Limits {
		got = append(got, l.Agent+" "+l.Window+" "+jsonNum(l.UsedPercent)+" near="+map[bool]string{true: "yes", false: "no"}[l.Near])
	}
	want := "claude 5-hour 92 near=yes; claude 7-day 40 near=no; codex 5-hour 85 near=yes"
	if strings.Join(got, "; ") != want || s.NearLimit != DefaultNearLimit {
		t.Fatalf("limits %q (near from %v), want %q (from %d); the codex 7-day window had reset", strings.Join(got, "; "), s.NearLimit, want, DefaultNearLimit)
	}
	h.m.cfg.NearLimit = 30
	for _, l := range h.m.Limits() {
		if !l.Near {
			t.Fatalf("near_limit = 30: %+v is not near", l)
		}
	}
}

func mustKind(t *testing.T, name string) *agent.Kind {
	t.Helper()
	ad, err := agent.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return ad
}

// Two Claude logins on one machine (two CLAUDE_CONFIG_DIRs) are two
// accounts, each with its limits, named by its .claude.json (else its
// folder); a third folder of the first login is that account again (its
// later word wins); a Codex rollout's limits are its CODEX_HOME's login's.
func TestNearLimitsByAccount(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	root := t.TempDir()
	login := func(dir, claudeJSON string) string {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if claudeJSON != "" {
			if err := os.WriteFile(filepath.Join(dir, ".claude.json"), []byte(claudeJSON), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return filepath.Join(dir, "projects", "-w-repo", "0d1f0a8e-5f0e-4c56-9d6c-2f2f4ad7e1b1.jsonl")
	}
	ann := login(filepath.Join(root, "ann"), `{"oauthAccount":{"accountUuid":"u-1","emailAddress":"ann@example.com"}}`)
	plain := filepath.Join(root, "plain")
	other := login(plain, "")
	annAgain := login(filepath.Join(root, "ann2"), `{"oauthAccount":{"accountUuid":"u-1","emailAddress":"ann@example.com"}}`)
	now := time.Now()
	say := func(pane, transcript string, pct float64) {
		t.Helper()
		if err := h.statusLine(pane, map[string]any{"transcript_path": transcript, "rate_limits": map[string]any{
			"five_hour": map[string]any{"used_percentage": pct, "resets_at": now.Add(time.Hour).Unix()}}}); err != nil {
			t.Fatal(err)
		}
	}
	say(shell, ann, 85)
	say(workerID, other, 95)
	say(workerID, annAgain, 90)
	codexHome := filepath.Join(root, "codex")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(codexHome, "auth.json"), []byte(`{"tokens":{"account_id":"acct-7"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	h.m.noteRolloutLimits(workerID, mustKind(t, "codex"), &tokens.RateLimits{
		Primary: tokens.RateWindow{UsedPercent: 81, WindowMinutes: 300, ResetsAt: now.Add(time.Hour).Unix()},
		File:    filepath.Join(codexHome, "sessions", "2026", "12", "07", "rollout-x.jsonl"),
	})
	var got []string
	for _, l := range h.m.Status().Limits {
		got = append(got, l.Agent+" ["+l.Account+"] "+l.Window+" "+jsonNum(l.UsedPercent)+" "+l.Pane)
	}
	want := []string{
		"claude [" + plain + "] 5-hour 95 " + workerID,
		"claude [ann@example.com] 5-hour 90 " + workerID,
		"codex [acct-7] 5-hour 81 " + workerID,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("limits:\n%s\nwant one line per account:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
