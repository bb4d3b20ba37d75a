package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sophonz/st/internal/testutil/realagent"
)

// opencodeUserFiles are an opencode user's own files: its config, and a
// plugin of its own in the folder st's plugin goes to.
var opencodeUserFiles = map[string]string{
	".config/opencode/opencode.json":  "{\n  \"$schema\": \"https://opencode.ai/config.json\",\n  \"theme\": \"tokyonight\"\n}\n",
	".config/opencode/plugin/mine.js": "export const Mine = async () => ({})\n",
}

// TestSetupUndoRealOpencode: st setup on a machine with only the real
// opencode on PATH writes st's plugin into opencode's plugin folder,
// changes nothing when run again, leaves st doctor without a failure
// (a note says its config folder has no node_modules), and st setup
// --undo leaves every file of the user's as it was, byte for byte.
func TestSetupUndoRealOpencode(t *testing.T) {
	t.Parallel()
	run, home, _ := realAgentsHome(t, realagent.Opencode(t))
	for rel, text := range opencodeUserFiles {
		p := filepath.Join(home, rel)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	before := hashTree(t, home)
	plugin := filepath.Join(home, ".config", "opencode", "plugin", "sophonz-st.js")

	out := run(0, "setup")
	for _, want := range []string{"  agent opencode: opencode ", "ok    hooks opencode: 8/8 in " + plugin} {
		if !strings.Contains(out, want) {
			t.Errorf("st setup does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "FAIL") {
		t.Errorf("st setup failed a step:\n%s", out)
	}
	if data, err := os.ReadFile(plugin); err != nil || !strings.Contains(string(data), "st hook") && !strings.Contains(string(data), `"hook", "opencode"`) {
		t.Errorf("st setup wrote no plugin: %v\n%s", err, data)
	}
	set := hashTree(t, home)
	if out = run(0, "setup"); strings.Contains(out, "FAIL") {
		t.Errorf("the second st setup failed a step:\n%s", out)
	}
	if changes, _ := treeChanges(set, hashTree(t, home)); len(changes) > 0 {
		t.Errorf("the second st setup changed files:\n%s", strings.Join(changes, "\n"))
	}
	if out = run(0, "doctor"); strings.Contains(out, "FAIL") || !strings.Contains(out, "note  opencode plugins: ") {
		t.Errorf("st doctor after setup:\n%s", out)
	}

	out = run(0, "setup", "--undo")
	if !strings.Contains(out, "ok    hooks opencode: removed st's hooks from "+plugin) {
		t.Errorf("st setup --undo does not say it removed the plugin:\n%s", out)
	}
	changes, state := treeChanges(before, hashTree(t, home))
	if len(changes) > 0 {
		t.Errorf("st setup --undo left these files other than they were:\n%s", strings.Join(changes, "\n"))
	}
	t.Logf("the agents' own state setup and undo changed: %v", state)
}
