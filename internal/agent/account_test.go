package agent

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Claude's account: the config folder is where its transcript is, and
// its name is .claude.json's oauthAccount, in that folder (a
// CLAUDE_CONFIG_DIR) or beside it in $HOME (the default ~/.claude).
func TestClaudeAccount(t *testing.T) {
	root := t.TempDir()
	// A second login, CLAUDE_CONFIG_DIR=root/work.
	work := filepath.Join(root, "work")
	writeFile(t, filepath.Join(work, ".claude.json"), `{"hasCompletedOnboarding":true,"oauthAccount":{"accountUuid":"0b6f-1","emailAddress":"ann@example.com","organizationUuid":"o-1"}}`)
	// The default: $HOME/.claude with $HOME/.claude.json.
	home := filepath.Join(root, "home")
	writeFile(t, filepath.Join(home, ".claude.json"), `{"oauthAccount":{"accountUuid":"acc-2"}}`)
	// A folder whose .claude.json names no login (an API key).
	key := filepath.Join(root, "key")
	writeFile(t, filepath.Join(key, ".claude.json"), `{"hasCompletedOnboarding":true}`)
	session := "0d1f0a8e-5f0e-4c56-9d6c-2f2f4ad7e1b1.jsonl"
	for _, c := range []struct{ name, path, label, dir string }{
		{"a config dir of its own", filepath.Join(work, "projects", "-w-repo", session), "ann@example.com", work},
		{"a subagent's file", filepath.Join(work, "projects", "-w-repo", "0d1f", "subagents", "agent-a1.jsonl"), "ann@example.com", work},
		{"the default folder, named by $HOME/.claude.json", filepath.Join(home, ".claude", "projects", "-w", session), "acc-2", filepath.Join(home, ".claude")},
		{"no login named: its folder", filepath.Join(key, "projects", "-w", session), key, key},
		{"no .claude.json at all", filepath.Join(root, "bare", "projects", "-w", session), filepath.Join(root, "bare"), filepath.Join(root, "bare")},
		{"not a Claude transcript", filepath.Join(root, "st-sim", session), "", ""},
	} {
		a := claudeAccount(c.path)
		if a.Label() != c.label || a.Dir != c.dir {
			t.Errorf("%s: %+v (label %q), want label %q, folder %q", c.name, a, a.Label(), c.label, c.dir)
		}
	}
}

// idToken is an unsigned JWT with claims, as Codex's auth.json holds one
// (st never checks its signature).
func idToken(t *testing.T, claims map[string]any) string {
	b, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." + enc(b) + ".c2ln"
}

// Codex's account: CODEX_HOME is where its rollout is, its name the
// email in auth.json's id_token (the form Codex 0.171.0 takes as a
// ChatGPT login: `codex login status` says "Logged in using ChatGPT"),
// else the account id; an API key names none.
func TestCodexAccount(t *testing.T) {
	root := t.TempDir()
	rollout := func(home string) string {
		return filepath.Join(home, "sessions", "2026", "12", "07", "rollout-2026-12-07T19-00-00-0199.jsonl")
	}
	auth := func(home string, v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(home, "auth.json"), string(b))
		return home
	}
	email := auth(filepath.Join(root, "a"), map[string]any{"auth_mode": "chatgpt", "OPENAI_API_KEY": nil, "tokens": map[string]any{
		"id_token":     idToken(t, map[string]any{"email": "bo@example.com", "https://api.openai.com/auth": map[string]any{"chatgpt_account_id": "acct-1"}}),
		"access_token": "x", "refresh_token": "y", "account_id": "acct-1"}})
	profile := auth(filepath.Join(root, "b"), map[string]any{"tokens": map[string]any{
		"id_token": idToken(t, map[string]any{"https://api.openai.com/profile": map[string]any{"email": "cy@example.com"}})}})
	acct := auth(filepath.Join(root, "c"), map[string]any{"tokens": map[string]any{"id_token": "not.a.jwt!", "account_id": "acct-3"}})
	apiKey := auth(filepath.Join(root, "d"), map[string]any{"OPENAI_API_KEY": "sk-secret"})
	for _, c := range []struct{ name, path, label string }{
		{"the id_token's email", rollout(email), "bo@example.com"},
		{"OpenAI's profile claim", rollout(profile), "cy@example.com"},
		{"a broken id_token: the account id", rollout(acct), "acct-3"},
		{"an API key: its folder", rollout(apiKey), apiKey},
		{"not a rollout", filepath.Join(root, "x", "rollout.jsonl"), ""},
	} {
		if got := codexAccount(c.path).Label(); got != c.label {
			t.Errorf("%s: %q, want %q", c.name, got, c.label)
		}
	}
}

// The account files are untrusted input: a name with a terminal's escapes
// is cleaned, a file too large, not JSON, not an object, or a symlink
// names nothing (the folder stands for the account), and a file that
// changed is read again.
func TestAccountFilesUntrusted(t *testing.T) {
	root := t.TempDir()
	tr := func(dir string) string { return filepath.Join(dir, "projects", "-w", "s.jsonl") }
	name := func(dir, text string) string {
		writeFile(t, filepath.Join(dir, ".claude.json"), text)
		return claudeAccount(tr(dir)).Label()
	}
	d := filepath.Join(root, "esc")
	if got := name(d, `{"oauthAccount":{"emailAddress":"\u001b[31mann@example.com\u202e\u0007"}}`); got != "[31mann@example.com" {
		t.Errorf("escapes: %q, want ESC, BEL and the override taken out (what is left prints as text)", got)
	}
	if got := name(d, `{"oauthAccount":{"emailAddress":"`+strings.Repeat("a", 300)+`"}}`); got != d {
		t.Errorf("a name past 254 characters: %q, want the folder", got)
	}
	if got := name(d, `{"oauthAccount":{"emailAddress":"\u001b\u0007"}}`); got != d {
		t.Errorf("a name of control characters only: %q, want the folder", got)
	}
	for _, text := range []string{`{"oauthAccount":`, `[{"oauthAccount":{"emailAddress":"a@b"}}]`, `{"oauthAccount":{"emailAddress":7}}`, `{"oauthAccount":"a@b"}`} {
		if got := name(d, text); got != d {
			t.Errorf("%s: %q, want the folder", text, got)
		}
	}
	if got := name(d, `{"oauthAccount":{"emailAddress":"dee@example.com"}}`); got != "dee@example.com" {
		t.Errorf("a file written again: %q, want its new name", got)
	}
	big := filepath.Join(root, "big")
	if got := name(big, `{"pad":"`+strings.Repeat("a", maxAccountFile)+`","oauthAccount":{"emailAddress":"a@b"}}`); got != big {
		t.Errorf("a file past the cap: %q, want the folder", got)
	}
	link := filepath.Join(root, "link")
	writeFile(t, filepath.Join(root, "elsewhere.json"), `{"oauthAccount":{"emailAddress":"a@b"}}`)
	if err := os.MkdirAll(link, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "elsewhere.json"), filepath.Join(link, ".claude.json")); err != nil {
		t.Fatal(err)
	}
	if got := claudeAccount(tr(link)).Label(); got != link {
		t.Errorf("a symlink: %q, want the folder", got)
	}
}

// The kinds whose limits st reads name their accounts; the rest do not.
func TestKindsNameAccounts(t *testing.T) {
	for _, k := range []string{"claude", "codex"} {
		if ad, err := Lookup(k); err != nil || ad.Records.Account == nil {
			t.Errorf("%s names no account (%v)", k, err)
		}
	}
}

// FuzzAccountNames: whatever an account file holds, the name st takes of
// it is short and has no control or format character in it.
func FuzzAccountNames(f *testing.F) {
	f.Add([]byte(`{"oauthAccount":{"emailAddress":"ann@example.com","accountUuid":"u"}}`))
	f.Add([]byte(`{"tokens":{"id_token":"eyJhbGciOiJub25lIn0.eyJlbWFpbCI6ImFAYi5jIn0.x","account_id":"acct"}}`))
	f.Add([]byte(`{"oauthAccount":{"emailAddress":"\u001b]0;x\u0007a@b\u202e"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, parse := range []func([]byte) string{claudeAccountName, codexAccountName} {
			name := parse(data)
			if utf8.RuneCountInString(name) > maxAccountName {
				t.Fatalf("a name of %d characters", utf8.RuneCountInString(name))
			}
			for _, r := range name {
				if unicode.IsControl(r) || unicode.In(r, unicode.Cf) {
					t.Fatalf("a control or format character %U in %q", r, name)
				}
			}
		}
	})
}
