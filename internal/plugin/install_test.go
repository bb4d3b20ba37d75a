//go:build realclients

package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sophonz/st/internal/testutil/realagent"
)

// realConfig is a Config with a private HOME, ST_HOME and CODEX_HOME and
// the pinned real claude; nothing of the tester's own home is read.
// Gemini CLI and opencode have run in it (~/.gemini and
// ~/.config/opencode are there), so every agent's part is installed.
func realConfig(t *testing.T) Config {
	t.Helper()
	claude, _ := realagent.Binaries(t)
	c := testConfig(t)
	for _, d := range []string{filepath.Join(c.Home, ".gemini"), filepath.Join(c.Home, ".config", "opencode")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	c.ClaudeBin, c.ClaudeMissing = claude, ""
	c.Env = claudeEnv(c.Home)
	return c
}

func claudeEnv(home string) []string {
	return []string{"HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}
}

// runClaude runs the real claude with c's environment.
func runClaude(t *testing.T, c Config, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), claudeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.ClaudeBin, args...)
	cmd.Env, cmd.Dir = c.Env, c.Home
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func listedEntry(t *testing.T, c Config) *listEntry {
	t.Helper()
	out, err := runClaude(t, c, "plugin", "list", "--json")
	if err != nil {
		t.Fatalf("claude plugin list: %v\n%s", err, out)
	}
	var entries []listEntry
	if err := json.Unmarshal([]byte(jsonPart(out)), &entries); err != nil {
		t.Fatalf("claude plugin list --json: %v\n%s", err, out)
	}
	for i := range entries {
		if entries[i].ID == PluginID {
			return &entries[i]
		}
	}
	return nil
}

// The real claude accepts the plugin and the marketplace as rendered.
func TestClaudeValidates(t *testing.T) {
	t.Parallel()
	c := realConfig(t)
	c.STBin = testST
	if _, _, err := writeFiles(mustRender(t, c)); err != nil {
		t.Fatal(err)
	}
	out, err := runClaude(t, c, "plugin", "validate", c.PluginDir())
	if err != nil || !strings.Contains(out, "Validation passed") {
		t.Fatalf("claude plugin validate %s: %v\n%s", c.PluginDir(), err, out)
	}
	for _, want := range []string{"skills: sophonz:worker", "commands: sophonz:orchestrate"} {
		if !strings.Contains(out, want) {
			t.Errorf("claude plugin validate does not list %q:\n%s", want, out)
		}
	}
	if out, err := runClaude(t, c, "plugin", "validate", c.ClaudeDir()); err != nil || !strings.Contains(out, "Validation passed") {
		t.Fatalf("claude plugin validate %s (the marketplace): %v\n%s", c.ClaudeDir(), err, out)
	}
}

func mustRender(t *testing.T, c Config) []File {
	t.Helper()
	files, err := Render(c)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// Install, install again, move st, status, uninstall: with the real claude.
func TestInstallStatusUninstallRealClaude(t *testing.T) {
	t.Parallel()
	c := realConfig(t)
	ctx := t.Context()

	s, err := GetStatus(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range s.Agents {
		if a.State != StateNotInstalled || a.Current {
			t.Errorf("before install, %s: %+v", a.Agent, a)
		}
	}
	if r := s.Agents[0].Registered; r == nil || *r {
		t.Errorf("before install, claude registration = %v, want false", r)
	}

	rep, err := Install(ctx, c)
	if err != nil {
		t.Fatalf("install: %v", err)
	}
	for _, a := range rep.Agents {
		if a.Outcome != Installed || a.Error != "" {
			t.Errorf("first install, %s: %+v", a.Agent, a)
		}
	}
	if !rep.Agents[0].Registered {
		t.Errorf("first install did not register the plugin: %+v", rep.Agents[0])
	}
	e := listedEntry(t, c)
	if e == nil || !e.Enabled || !samePath(e.ReadFromFolder, c.PluginDir()) {
		t.Fatalf("claude plugin list after install: %+v, want %s enabled, read from %s", e, PluginID, c.PluginDir())
	}
	assertCurrent(t, c)

	// Again: nothing changes, nothing fails, and it says so.
	rep, err = Install(ctx, c)
	if err != nil {
		t.Fatalf("second install: %v", err)
	}
	for _, a := range rep.Agents {
		if a.Outcome != Unchanged || len(a.Changed) != 0 {
			t.Errorf("second install, %s: %+v", a.Agent, a)
		}
	}
	if !rep.Agents[0].Registered || !strings.Contains(strings.Join(rep.Agents[0].Notes, " "), "already registered") {
		t.Errorf("second install, claude: %+v", rep.Agents[0])
	}

	// Another st (moved, upgraded): the files are stale for it, and an
	// install brings them and Claude's record up to it.
	moved := c
	moved.STBin, moved.Version = "/usr/bin/st", "0.3.2"
	s, _ = GetStatus(ctx, moved)
	for _, a := range s.Agents {
		if a.State != StateStale || a.Current || a.WrittenBy != "st 0.3.1 at /usr/local/bin/st" {
			t.Errorf("status for another st, %s: %+v", a.Agent, a)
		}
	}
	// A file an older st wrote and this one does not is pruned.
	old := filepath.Join(c.PluginDir(), "commands", "old.md")
	os.WriteFile(old, []byte("---\ndescription: old\n---\nold\n"), 0o644)
	rep, err = Install(ctx, moved)
	if err != nil {
		t.Fatalf("install for another st: %v", err)
	}
	for _, a := range rep.Agents {
		if a.Outcome != Updated {
			t.Errorf("install for another st, %s: %+v", a.Agent, a)
		}
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("%s left over after install (%v)", old, err)
	}
	if e := listedEntry(t, c); e == nil || e.Version != "0.3.2" {
		t.Errorf("Claude's record after the update: %+v, want version 0.3.2", e)
	}
	if b, _ := os.ReadFile(filepath.Join(moved.PluginDir(), "commands", "orchestrate.md")); !bytes.Contains(b, []byte("/usr/bin/st worker start")) || bytes.Contains(b, []byte("/usr/local/bin/st")) {
		t.Errorf("the command still names the old st:\n%s", b)
	}
	assertCurrent(t, moved)

	// Uninstall: no files, nothing in claude plugin list; twice is fine.
	rep, err = Uninstall(ctx, moved)
	if err != nil {
		t.Fatalf("uninstall: %v", err)
	}
	for _, a := range rep.Agents {
		if a.Outcome != Removed {
			t.Errorf("uninstall, %s: %+v", a.Agent, a)
		}
	}
	assertNoFiles(t, moved)
	if _, err := os.Stat(filepath.Join(moved.STHome, "plugins")); !os.IsNotExist(err) {
		t.Errorf("$ST_HOME/plugins left behind (%v)", err)
	}
	if e := listedEntry(t, c); e != nil {
		t.Errorf("claude plugin list still has %+v", e)
	}
	if out, _ := runClaude(t, c, "plugin", "list"); strings.Contains(out, PluginName) {
		t.Errorf("claude plugin list still names %s:\n%s", PluginName, out)
	}
	if out, _ := runClaude(t, c, "plugin", "marketplace", "list"); strings.Contains(out, MarketplaceName) {
		t.Errorf("claude plugin marketplace list still names %s:\n%s", MarketplaceName, out)
	}
	rep, err = Uninstall(ctx, moved)
	if err != nil {
		t.Fatalf("second uninstall: %v", err)
	}
	for _, a := range rep.Agents {
		if a.Outcome != Absent {
			t.Errorf("second uninstall, %s: %+v", a.Agent, a)
		}
	}
	s, _ = GetStatus(ctx, moved)
	for _, a := range s.Agents {
		if a.State != StateNotInstalled {
			t.Errorf("after uninstall, %s: %+v", a.Agent, a)
		}
	}
}

func assertCurrent(t *testing.T, c Config) {
	t.Helper()
	s, err := GetStatus(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range s.Agents {
		if a.State != StateCurrent || !a.Current {
			t.Errorf("status, %s: %+v", a.Agent, a)
		}
	}
	if r := s.Agents[0].Registered; r == nil || !*r {
		t.Errorf("status: claude registration = %v, want true", r)
	}
}

// A plugin that Claude lists but that is disabled is not current, and an
// install enables it again (claude's install does, or st after it).
func TestInstallEnablesDisabledPlugin(t *testing.T) {
	t.Parallel()
	c := realConfig(t)
	if _, err := Install(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	if out, err := runClaude(t, c, "plugin", "disable", PluginID); err != nil {
		t.Fatalf("claude plugin disable: %v\n%s", err, out)
	}
	s, _ := GetStatus(t.Context(), c)
	if a := s.Agents[0]; a.State != StateNotRegistered || a.Current || !strings.Contains(a.Note, "disabled") {
		t.Errorf("status of a disabled plugin: %+v", a)
	}
	if _, err := Install(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	assertCurrent(t, c)
}
