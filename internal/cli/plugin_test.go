package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sophonz/st/internal/plugin"
	"github.com/sophonz/st/internal/testutil/realagent"
)

// runST runs st's command line with only the given environment.
func runST(t *testing.T, vars map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(args, Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return vars[k] }})
	return code, out.String(), errb.String()
}

func pluginVars(t *testing.T) map[string]string {
	home := t.TempDir()
	return map[string]string{
		"HOME":    home,
		"ST_HOME": filepath.Join(home, "st"),
		"PATH":    "/usr/local/bin:/usr/bin:/bin",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"DISABLE_AUTOUPDATER":                      "1",
	}
}

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

	expect([]string{"plugin", "status"}, 0, "claude  not installed", "codex   not installed", "Try: st plugin install")
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
	if len(s.Agents) != 2 || !s.Agents[0].Current || !s.Agents[1].Current || s.Agents[0].Registered == nil || !*s.Agents[0].Registered {
		t.Errorf("status after install: %s", out)
	}
	if out := expect([]string{"plugin", "status"}, 0, "claude  current", "codex   current"); strings.Contains(out, "Try:") {
		t.Errorf("status of a current install suggests something:\n%s", out)
	}
	expect([]string{"plugin", "uninstall"}, 0, "claude: removed the plugin sophonz@sophonz-local", "codex: removed the skills")
	expect([]string{"plugin", "uninstall"}, 0, "claude: nothing to remove", "codex: nothing to remove")
	expect([]string{"plugin", "status"}, 0, "claude  not installed", "codex   not installed")
}

// With no claude to be found, install says so and how to fix it, exits
// 1, and still installs the Codex skills.
func TestPluginInstallWithoutClaude(t *testing.T) {
	t.Parallel()
	vars := pluginVars(t)
	vars["PATH"] = "/nonexistent"
	vars["CODEX_HOME"] = filepath.Join(vars["HOME"], "cx")
	code, out, errs := runST(t, vars, "plugin", "install")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errs)
	}
	for _, w := range []string{"claude (Claude Code) is not on PATH and ST_CLAUDE_BIN is not set", "Try: install Claude Code", "ST_CLAUDE_BIN=/path/to/claude"} {
		if !strings.Contains(errs, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errs)
		}
	}
	if !strings.Contains(out, "codex: wrote the skills") || strings.Contains(out, "registered with Claude Code") {
		t.Errorf("stdout:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(vars["CODEX_HOME"], "skills", plugin.CodexWorker, "SKILL.md")); err != nil {
		t.Errorf("the Codex skill was not written: %v", err)
	}

	code, out, _ = runST(t, vars, "plugin", "install", "--json")
	var rep plugin.Report
	if err := json.Unmarshal([]byte(out), &rep); code != 1 || err != nil || rep.Agents[0].Error == "" || rep.Agents[1].Outcome != plugin.Unchanged {
		t.Errorf("install --json without claude: exit %d, %v:\n%s", code, err, out)
	}
}
