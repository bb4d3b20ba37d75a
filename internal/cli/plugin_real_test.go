//go:build realclients

package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sophonz/st/internal/plugin"
	"github.com/sophonz/st/internal/testutil/realagent"
)

// TestPluginCommands: st plugin install, status and uninstall with the
// real claude registering the plugin.

func TestPluginCommands(t *testing.T) {
	t.Parallel()
	claude, _ := realagent.Binaries(t)
	vars := pluginVars(t)
	vars["ST_CLAUDE_BIN"] = claude
	expect := func(args []string, wantCode int, wants ...string) string {
		t.Helper()
		code, out, errs := runST(t, vars, args...)
		if code != wantCode {
			t.Fatalf("st %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, wantCode, out, errs)
		}
		for _, w := range wants {
			if !strings.Contains(out, w) {
				t.Errorf("st %s: no %q in:\n%s", strings.Join(args, " "), w, out)
			}
		}
		return out
	}

	expect([]string{"plugin", "status"}, 0, "claude    not installed", "codex     not installed", "Try: st plugin install")
	expect([]string{"plugin", "install"}, 0,
		"claude: wrote the plugin sophonz@sophonz-local in "+filepath.Join(vars["ST_HOME"], "plugins", "claude"),
		"claude: registered with Claude Code; new sessions get /sophonz:orchestrate and /sophonz:worker",
		"codex: wrote the skills sophonz-orchestrate and sophonz-worker in "+filepath.Join(vars["HOME"], ".codex", "skills"))
	expect([]string{"plugin", "install"}, 0, "already matched this st", "already registered")
	out := expect([]string{"plugin", "status", "--json"}, 0)
	var s plugin.Status
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	// Gemini CLI and opencode have not run in this HOME: their commands
	// are left out, and that is nothing to fix.
	if len(s.Agents) != 4 || !s.Agents[2].Skipped || s.Agents[2].State != plugin.StateNotInstalled || !s.Agents[3].Skipped || s.Agents[3].State != plugin.StateNotInstalled || !s.Agents[0].Current || !s.Agents[1].Current || s.Agents[0].Registered == nil || !*s.Agents[0].Registered {
		t.Errorf("status after install: %s", out)
	}
	if out := expect([]string{"plugin", "status"}, 0, "claude    current", "codex     current"); strings.Contains(out, "Try:") {
		t.Errorf("status of a current install suggests something:\n%s", out)
	}
	expect([]string{"plugin", "uninstall"}, 0, "claude: removed the plugin sophonz@sophonz-local", "codex: removed the skills")
	expect([]string{"plugin", "uninstall"}, 0, "claude: nothing to remove", "codex: nothing to remove")
	expect([]string{"plugin", "status"}, 0, "claude    not installed", "codex     not installed")
}
