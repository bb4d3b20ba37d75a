package realagent_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sophonz/st/internal/testutil/realagent"
)

func TestMergeClaudeSettings(t *testing.T) {
	dir := t.TempDir()
	realagent.MergeClaudeSettings(t, dir, map[string]any{"permissions": map[string]any{"allow": []string{"Bash"}}, "env": map[string]any{"USER_KEY": "kept"}})
	realagent.MergeClaudeSettings(t, dir, realagent.AgentTeams("tmux"))
	data, err := os.ReadFile(filepath.Join(dir, ".claude", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Permissions  struct{ Allow []string }
		Env          map[string]string
		TeammateMode string
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Permissions.Allow) != 1 || s.Env["USER_KEY"] != "kept" || s.Env["CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS"] != "1" || s.TeammateMode != "tmux" {
		t.Errorf("settings.json:\n%s", data)
	}
}
