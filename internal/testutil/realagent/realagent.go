// Package realagent prepares the real Claude Code, Codex, Gemini CLI and opencode programs for
// tests: it finds the pinned binaries under tests/realclients and writes
// an isolated HOME whose config skips every first-run dialog and points
// the client at a fake model server on 127.0.0.1, so nothing reaches the
// network and the tester's own config is never read or changed.
//
// The config written here is the minimum measured to reach the input box
// with no person present (see shared/reference/real-agents.md): Claude
// exits offline without hasCompletedOnboarding, stops at a trust screen
// without the project entry; Codex shows a sign-in screen without a
// provider of its own, and swallows a fast Enter without
// disable_paste_burst.
package realagent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ClaudeHome writes dir/.claude.json for a fresh Claude Code user who has
// finished onboarding and trusts the trusted directories, and returns the
// environment to launch claude with (to be added to a clean environment).
// baseURL is the fake server's root, e.g. "http://127.0.0.1:PORT".
func ClaudeHome(t testing.TB, dir, baseURL string, trusted ...string) []string {
	t.Helper()
	dir = mustAbs(t, dir)
	projects := map[string]any{}
	for _, p := range trustPaths(t, trusted) {
		projects[p] = map[string]any{"hasTrustDialogAccepted": true}
	}
	cfg := map[string]any{
		// Without it Claude runs a connectivity check to api.anthropic.com
		// and exits 1 offline; no environment variable avoids that.
		"hasCompletedOnboarding": true,
		"projects":               projects,
		// Otherwise 2.1.332 may offer to make auto mode the default, a
		// dialog that blocks the box.
		"hasSeenAutoDefaultNudge": true,
		// The idle Notification fires after 3 s instead of 60 s, so tests
		// that wait for it stay short.
		"messageIdleNotifThresholdMs": 3000,
	}
	writeFile(t, filepath.Join(dir, ".claude.json"), mustJSON(t, cfg))
	// Claude keeps its tools' output under $CLAUDE_CODE_TMPDIR/claude-UID
	// and its sockets in $TMPDIR/cc-socks, /tmp by default: in the test's
	// own folder, they go with it.
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	return []string{
		"HOME=" + dir,
		"TMPDIR=" + tmp,
		"CLAUDE_CODE_TMPDIR=" + tmp,
		"ANTHROPIC_BASE_URL=" + strings.TrimSuffix(baseURL, "/"),
		// A bearer token, unlike ANTHROPIC_API_KEY, never shows the
		// "use this API key?" dialog.
		"ANTHROPIC_AUTH_TOKEN=dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
	}
}

// CodexDir is the CODEX_HOME that CodexHome uses for a given HOME: where a
// test puts hooks.json, and where Codex writes its sessions.
func CodexDir(home string) string { return filepath.Join(home, ".codex") }

// CodexHome writes CodexDir(dir)/config.toml, with a model provider "fake"
// at baseURL (the fake server's root; "/v1" is added, as Codex POSTs to
// <base_url>/responses) and the trusted directories, and returns the
// environment to launch codex with.
func CodexHome(t testing.TB, dir, baseURL string, trusted ...string) []string {
	t.Helper()
	dir = mustAbs(t, dir)
	base := strings.TrimSuffix(baseURL, "/")
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	var b strings.Builder
	b.WriteString(`model = "gpt-fake"
model_provider = "fake"
check_for_update_on_startup = false
# Otherwise an Enter typed right after the text is taken as part of a paste
# and does not submit.
disable_paste_burst = true

# At a usage limit Codex may offer a cheaper model in a modal, which a
# typed line would answer (reference §13): st seeds this as a person would.
[notice]
hide_rate_limit_model_nudge = true

# A provider with no env_key needs no login, so no sign-in screen.
[model_providers.fake]
name = "fake"
base_url = ` + tomlString(base) + `
wire_api = "responses"
`)
	for _, p := range trustPaths(t, trusted) {
		fmt.Fprintf(&b, "\n[projects.%s]\ntrust_level = \"trusted\"\n", tomlString(p))
	}
	codexHome := CodexDir(dir)
	writeFile(t, filepath.Join(codexHome, "config.toml"), []byte(b.String()))
	return []string{"HOME=" + dir, "CODEX_HOME=" + codexHome}
}

// GeminiDir is Gemini CLI's folder for a given HOME: its settings.json
// (where st's hooks go) and trustedFolders.json.
func GeminiDir(home string) string { return filepath.Join(home, ".gemini") }

// GeminiHome writes GeminiDir(dir)/settings.json for a Gemini CLI user
// signed in with an API key, its updates and usage statistics off, and
// trustedFolders.json with the trusted directories (whether it asks
// before a command is its approval mode: ST_GEMINI_PERMISSION_MODE); it returns the environment to launch gemini with, pointed
// at the fake server (shared/reference/real-agents.md §11).
func GeminiHome(t testing.TB, dir, baseURL string, trusted ...string) []string {
	t.Helper()
	dir = mustAbs(t, dir)
	settings := map[string]any{
		// Without an auth type Gemini shows its sign-in dialog.
		"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"privacy":  map[string]any{"usageStatisticsEnabled": false},
		"general":  map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
	}
	writeFile(t, filepath.Join(GeminiDir(dir), "settings.json"), mustJSON(t, settings))
	folders := map[string]string{}
	for _, p := range trustPaths(t, trusted) {
		folders[p] = "TRUST_FOLDER"
	}
	writeFile(t, filepath.Join(GeminiDir(dir), "trustedFolders.json"), mustJSON(t, folders))
	return []string{
		"HOME=" + dir,
		"GOOGLE_GEMINI_BASE_URL=" + strings.TrimSuffix(baseURL, "/"),
		"GEMINI_API_KEY=dummy",
	}
}

// Gemini returns the pinned gemini installed under tests/realclients, or
// the program ST_REAL_GEMINI_BIN names, failing the test when it is
// missing (as Binaries does).
func Gemini(t testing.TB) string {
	t.Helper()
	p := filepath.Join(ModuleRoot(t), "tests", "realclients", "node_modules", ".bin", "gemini")
	if e := os.Getenv("ST_REAL_GEMINI_BIN"); e != "" {
		p = e
	}
	if !filepath.IsAbs(p) {
		t.Fatalf("real client %q: give an absolute path", p)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("real client missing: %v; run scripts/test, which installs them (npm install in tests/realclients)", err)
	}
	return p
}

// Binaries returns the pinned claude and codex installed under
// tests/realclients, or the programs that ST_REAL_CLAUDE_BIN and
// ST_REAL_CODEX_BIN name: the compatibility tier (scripts/compat) runs the
// same tests against other versions that way. It fails the test rather
// than skipping it: a real client test that silently does not run proves
// nothing.
func Binaries(t testing.TB) (claude, codex string) {
	t.Helper()
	bin := filepath.Join(ModuleRoot(t), "tests", "realclients", "node_modules", ".bin")
	claude = filepath.Join(bin, "claude")
	codex = filepath.Join(bin, "codex")
	if p := os.Getenv("ST_REAL_CLAUDE_BIN"); p != "" {
		claude = p
	}
	if p := os.Getenv("ST_REAL_CODEX_BIN"); p != "" {
		codex = p
	}
	for _, p := range []string{claude, codex} {
		if !filepath.IsAbs(p) {
			t.Fatalf("real client %q: give an absolute path", p)
		}
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("real client missing: %v; run scripts/test, which installs them (npm install in tests/realclients)", err)
		}
	}
	return claude, codex
}

// ModuleRoot is the directory holding the module's go.mod, found from the
// working directory (a package directory under go test).
func ModuleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("realagent: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("realagent: no go.mod above the working directory")
		}
		dir = parent
	}
}

// trustPaths gives each directory both as written and with symlinks
// resolved, since the clients key trust by the path they see as cwd.
func trustPaths(t testing.TB, dirs []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range dirs {
		d = mustAbs(t, d)
		for _, p := range []string{d, resolve(d)} {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

func resolve(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

func mustAbs(t testing.TB, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatalf("realagent: %v", err)
	}
	return a
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatalf("realagent: %v", err)
	}
	return append(b, '\n')
}

// tomlString quotes s as a TOML basic string, whose escapes are a subset
// of JSON's that covers everything json.Marshal emits.
func tomlString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatalf("realagent: %v", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatalf("realagent: %v", err)
	}
}

// MergeClaudeSettings sets top-level keys of dir/.claude/settings.json,
// made if missing, keeping the rest; an "env" map is merged into the
// file's own. Tests use it to turn on what a person would in that file,
// such as agent teams:
//
//	{"env": {"CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS": "1"}, "teammateMode": "tmux"}
func MergeClaudeSettings(t testing.TB, dir string, keys map[string]any) {
	t.Helper()
	path := filepath.Join(mustAbs(t, dir), ".claude", "settings.json")
	s := map[string]any{}
	if data, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(data, &s); err != nil {
			t.Fatalf("realagent: %s: %v", path, err)
		}
	} else if !os.IsNotExist(err) {
		t.Fatalf("realagent: %v", err)
	}
	for k, v := range keys {
		if add, ok := v.(map[string]any); ok && k == "env" {
			env, _ := s["env"].(map[string]any)
			if env == nil {
				env = map[string]any{}
			}
			for ek, ev := range add {
				env[ek] = ev
			}
			v = env
		}
		s[k] = v
	}
	writeFile(t, path, mustJSON(t, s))
}

// AgentTeams is the settings that turn on Claude's agent teams, with
// teammates in tmux panes of their own (mode "tmux") or in the lead's
// process ("in-process"), for MergeClaudeSettings.
func AgentTeams(mode string) map[string]any {
	return map[string]any{"env": map[string]any{"CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS": "1"}, "teammateMode": mode}
}

// OpencodeDir is opencode's config folder for a given HOME (XDG_CONFIG_HOME
// unset): its opencode.json, and plugin/ where st's plugin goes.
func OpencodeDir(home string) string { return filepath.Join(home, ".config", "opencode") }

// OpencodeHome writes OpencodeDir(dir)/opencode.json for an opencode user
// whose model is the fake server's, on its Anthropic endpoint, with a
// model entry of its own (so no models list is fetched), updates and
// sharing off; it returns the environment to launch opencode with
// (shared/reference/real-agents.md §12). Its shell tool runs unasked, as
// opencode's default has it; OPENCODE_PERMISSION='{"bash":"ask"}' makes
// it ask. The file carries the "$schema" opencode adds at its first
// start, so opencode leaves it as it is.
func OpencodeHome(t testing.TB, dir, baseURL string) []string {
	t.Helper()
	dir = mustAbs(t, dir)
	cfg := map[string]any{
		"$schema":     "https://opencode.ai/config.json",
		"model":       "anthropic/claude-fake",
		"small_model": "anthropic/claude-fake",
		"autoupdate":  false,
		"share":       "disabled",
		// A worker in a worktree of its own reads its task file in the
		// repository's checkout, outside its project: opencode asks
		// first (measured in TestMixedTeam), as a person who lets st's
		// workers run would not have it do.
		"permission": map[string]any{"external_directory": "allow"},
		"provider": map[string]any{"anthropic": map[string]any{
			"options": map[string]any{"baseURL": strings.TrimSuffix(baseURL, "/") + "/v1", "apiKey": "dummy"},
			"models": map[string]any{"claude-fake": map[string]any{
				"name": "Claude Fake", "limit": map[string]any{"context": 200000, "output": 8192}, "tool_call": true,
			}},
		}},
	}
	writeFile(t, filepath.Join(OpencodeDir(dir), "opencode.json"), mustJSON(t, cfg))
	return []string{"HOME=" + dir, "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1"}
}

// Opencode returns the pinned opencode installed under tests/realclients,
// or the program ST_REAL_OPENCODE_BIN names, failing the test when it is
// missing (as Binaries does).
func Opencode(t testing.TB) string {
	t.Helper()
	p := filepath.Join(ModuleRoot(t), "tests", "realclients", "node_modules", ".bin", "opencode")
	if e := os.Getenv("ST_REAL_OPENCODE_BIN"); e != "" {
		p = e
	}
	if !filepath.IsAbs(p) {
		t.Fatalf("real client %q: give an absolute path", p)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("real client missing: %v; run scripts/test, which installs them (npm install in tests/realclients)", err)
	}
	return p
}
