package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sophonz/st/internal/testutil/realagent"
)

// geminiUserFiles are a Gemini CLI user's own files: its settings, a
// command of its own and one in the folder st writes its commands to.
var geminiUserFiles = map[string]string{
	".gemini/settings.json":           "{\n  \"ui\": {\"theme\": \"GitHub\"},\n  \"hooks\": {\"AfterAgent\": [{\"matcher\": \"*\", \"hooks\": [{\"type\": \"command\", \"command\": \"echo done\"}]}]}\n}\n",
	".gemini/commands/review.toml":    "description = \"my review\"\nprompt = \"\"\"Review {{args}}\"\"\"\n",
	".gemini/commands/sophonz/x.toml": "prompt = \"mine, in st's folder\"\n",
}

// TestSetupUndoRealGemini: st setup on a machine with only the real
// Gemini CLI on PATH puts in its hooks and its commands, says to type
// /sophonz:orchestrate in gemini, changes nothing when run again, leaves
// st doctor clean, and st setup --undo leaves every file of the user's as
// it was, byte for byte, the user's own commands in st's folder too.
func TestSetupUndoRealGemini(t *testing.T) {
	t.Parallel()
	run, home, _ := realAgentsHome(t, realagent.Gemini(t))
	for rel, text := range geminiUserFiles {
		p := filepath.Join(home, rel)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	before := hashTree(t, home)
	cmds := filepath.Join(home, ".gemini", "commands", "sophonz")

	out := run(0, "setup")
	for _, want := range []string{
		// ok, or a note when gemini --version takes over 10 s (it takes 8 s
		// at a load of 13 on 2 cores).
		"  agent gemini: gemini ", "ok    agent claude: claude is not on PATH: skipped",
		"ok    hooks gemini: ", "ok    commands gemini: the commands /sophonz:orchestrate, /sophonz:worker in " + cmds + ": current for this st",
		"Next: in a tmux session, start Gemini CLI", "  tmux new -s work\n  gemini\n  /sophonz:orchestrate ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("st setup does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "FAIL") {
		t.Errorf("st setup failed a step:\n%s", out)
	}
	for _, f := range []string{"orchestrate.toml", "worker.toml"} {
		if _, err := os.Stat(filepath.Join(cmds, f)); err != nil {
			t.Errorf("st setup wrote no %s: %v", f, err)
		}
	}
	set := hashTree(t, home)
	if out = run(0, "setup"); strings.Contains(out, "FAIL") {
		t.Errorf("the second st setup failed a step:\n%s", out)
	}
	if changes, _ := treeChanges(set, hashTree(t, home)); len(changes) > 0 {
		t.Errorf("the second st setup changed files:\n%s", strings.Join(changes, "\n"))
	}
	// (Not "no Try: line": gemini --version, which doctor runs, may take
	// over its 10 s on a loaded machine, and doctor then notes it.)
	if out = run(0, "doctor"); strings.Contains(out, "FAIL") || !strings.Contains(out, "ok    commands gemini: ") {
		t.Errorf("st doctor after setup:\n%s", out)
	}

	out = run(0, "setup", "--undo")
	if !strings.Contains(out, "ok    plugin gemini: removed the commands /sophonz:orchestrate and /sophonz:worker from "+cmds) {
		t.Errorf("st setup --undo does not say it removed the commands:\n%s", out)
	}
	changes, state := treeChanges(before, hashTree(t, home))
	if len(changes) > 0 {
		t.Errorf("st setup --undo left these files other than they were:\n%s", strings.Join(changes, "\n"))
	}
	t.Logf("the agents' own state setup and undo changed: %v", state)
}
