package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/sophonz/st/internal/store"
)

// TrustWorktree marks a worktree that st made trusted in the agent's own
// file, when the repository it comes from is trusted there: a worktree is
// a new folder to the agent, which would otherwise stop at its trust
// screen. It returns a note for the person ("" when nothing was done).
func TrustWorktree(kind, repoRoot, dir string) string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	switch kind {
	case "claude":
		path := filepath.Join(home, ".claude.json")
		if d := os.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
			path = filepath.Join(d, ".claude.json")
		}
		data, err := os.ReadFile(path)
		if err != nil || !gjson.ValidBytes(data) {
			return ""
		}
		key := func(p string) string {
			return "projects." + strings.NewReplacer(".", `\.`, "*", `\*`, "?", `\?`).Replace(p)
		}
		if !gjson.GetBytes(data, key(repoRoot)+".hasTrustDialogAccepted").Bool() {
			return ""
		}
		out, err := sjson.SetBytes(data, key(dir)+".hasTrustDialogAccepted", true)
		if err != nil || store.WriteFile(path, out, 0o600) != nil {
			return ""
		}
		return fmt.Sprintf("marked the worktree %s trusted in %s, as its repository is", dir, path)
	case "codex":
		ch := os.Getenv("CODEX_HOME")
		if ch == "" {
			ch = filepath.Join(home, ".codex")
		}
		path := filepath.Join(ch, "config.toml")
		data, err := os.ReadFile(path)
		if err != nil {
			return ""
		}
		table := func(p string) string { return fmt.Sprintf("[projects.%q]", p) }
		text := string(data)
		if !strings.Contains(text, table(repoRoot)) || strings.Contains(text, table(dir)) {
			return ""
		}
		// Appended, so every comment and table of the user's stays as it was.
		text = strings.TrimRight(text, "\n") + "\n\n" + table(dir) + "\ntrust_level = \"trusted\"\n"
		if store.WriteFile(path, []byte(text), 0o600) != nil {
			return ""
		}
		return fmt.Sprintf("marked the worktree %s trusted in %s, as its repository is", dir, path)
	}
	return ""
}
