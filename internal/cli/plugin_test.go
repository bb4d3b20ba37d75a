package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sophonz/st/internal/controlplane"
	"github.com/sophonz/st/internal/plugin"
)

// runST runs st's command line with only the given environment.
func runST(t *testing.T, vars map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return vars[k] }}
	if len(args) > 0 && args[0] == "control-plane" {
		// st runs st-control-plane for these, which is this (no meter).
		env.ControlPlane = controlplane.Service{}
	}
	code = Main(args, env)
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

// With no claude to be found, install writes every file, says on a line
// of its own that Claude Code is not on PATH and what to do, and exits 0:
// it did all it can without claude, and the Codex skills are in place.
func TestPluginInstallWithoutClaude(t *testing.T) {
	t.Parallel()
	vars := pluginVars(t)
	vars["PATH"] = "/nonexistent"
	vars["CODEX_HOME"] = filepath.Join(vars["HOME"], "cx")
	// stdout and stderr in one buffer, as a terminal shows them.
	var both bytes.Buffer
	code := Main([]string{"plugin", "install"}, Env{Stdin: strings.NewReader(""), Stdout: &both, Stderr: &both, Getenv: func(k string) string { return vars[k] }})
	out := both.String()
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s", code, out)
	}
	claudeDir := filepath.Join(vars["ST_HOME"], "plugins", "claude")
	want := []string{
		"claude: wrote the plugin sophonz@sophonz-local in " + claudeDir,
		"codex: wrote the skills sophonz-orchestrate and sophonz-worker in " + filepath.Join(vars["CODEX_HOME"], "skills"),
		"codex: new sessions get the skills $sophonz-orchestrate and $sophonz-worker",
		"codex: the rule in " + filepath.Join(vars["CODEX_HOME"], "rules", "sophonz.rules") + " lets st's commands, run escalated, leave the sandbox without asking",
		"st: note: Claude Code is not on PATH (and ST_CLAUDE_BIN is not set): the plugin's files are written in " + claudeDir + ", but Claude Code does not know the plugin yet",
		"Try: install Claude Code (npm install -g @anthropic-ai/claude-code), or set ST_CLAUDE_BIN=/path/to/claude, then st plugin install again",
	}
	if got := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); !slices.Equal(got, want) {
		t.Errorf("output, line by line:\n%s\nwant:\n%s", out, strings.Join(want, "\n"))
	}
	for _, f := range []string{filepath.Join(vars["CODEX_HOME"], "skills", plugin.CodexWorker, "SKILL.md"), filepath.Join(claudeDir, ".claude-plugin", "marketplace.json")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("not written: %v", err)
		}
	}

	code, out, errs := runST(t, vars, "plugin", "install", "--json")
	var rep plugin.Report
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || rep.Agents[0].Error == "" || rep.Agents[1].Outcome != plugin.Unchanged {
		t.Errorf("install --json without claude: exit %d, %v:\n%s", code, err, out)
	}
	if !strings.HasPrefix(errs, "st: note: Claude Code is not on PATH") {
		t.Errorf("install --json without claude: stderr %q", errs)
	}
}

// A ST_CLAUDE_BIN that does not run is a mistake to fix: install fails.
func TestPluginInstallBadClaudeBin(t *testing.T) {
	t.Parallel()
	vars := pluginVars(t)
	vars["ST_CLAUDE_BIN"] = filepath.Join(vars["HOME"], "no-claude")
	code, out, errs := runST(t, vars, "plugin", "install")
	if code != 1 || !strings.Contains(errs, "st: ST_CLAUDE_BIN="+vars["ST_CLAUDE_BIN"]+" is not a program st can run") ||
		!strings.Contains(errs, "\nTry: install Claude Code") || strings.Contains(errs, "note:") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}
