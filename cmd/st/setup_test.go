package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/testutil/realagent"
)

// agentState are the files the agents themselves keep in HOME and change
// whenever they run at all (st runs `claude plugin ...` and
// `codex app-server` during setup): Codex's databases and logs, its
// system skills and temporary folder; Claude's ~/.claude.json, its
// backups of it, and its plugin records (which claude's own plugin
// commands keep, and leave empty once st's plugin is out); Gemini CLI's
// record of the folders it ran in (gemini --version writes it, through
// temporary files that a run ended early leaves), its ids and temporary
// folder. Every other file under HOME must come back byte for byte.
func agentState(rel string) bool {
	for _, p := range []string{".claude.json", ".claude/backups/", ".claude/plugins/", ".codex/.tmp/", ".codex/skills/.system/", ".codex/installation_id",
		".gemini/projects.json", ".gemini/tmp/", ".gemini/installation_id", ".gemini/user_id"} {
		if rel == p || strings.HasPrefix(rel, p) {
			return true
		}
	}
	return strings.HasPrefix(rel, ".codex/") && strings.Contains(rel, ".sqlite")
}

// hashTree is the SHA-256 of every file under dir, by its path in dir.
func hashTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.Type()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			out[rel] = "link:" + target
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// treeChanges lists what differs between two hashTrees, apart from the
// agents' own state (which it returns apart, to log).
func treeChanges(before, after map[string]string) (changes, state []string) {
	seen := map[string]bool{}
	for p, h := range before {
		seen[p] = true
		var what string
		switch a, ok := after[p]; {
		case !ok:
			what = "gone: " + p
		case a != h:
			what = "changed: " + p
		default:
			continue
		}
		if agentState(p) {
			state = append(state, what)
		} else {
			changes = append(changes, what)
		}
	}
	for p := range after {
		if !seen[p] {
			if agentState(p) {
				state = append(state, "new: "+p)
			} else {
				changes = append(changes, "new: "+p)
			}
		}
	}
	sort.Strings(changes)
	sort.Strings(state)
	return changes, state
}

// realAgentsHome is the world of TestSetupUndoRealAgents: a HOME with
// the real claude and codex on PATH (or the programs given, by name), a
// private ST_HOME and tmux server, and run, which runs st there and fails
// the test on another exit code.
func realAgentsHome(t *testing.T, programs ...string) (run func(wantCode int, args ...string) string, home, sthome string) {
	t.Helper()
	st := testutil.BuildST(t)
	if len(programs) == 0 {
		claude, codex := realagent.Binaries(t)
		programs = []string{claude, codex}
	}
	dir := testutil.ShortTempDir(t)
	home, sthome = filepath.Join(dir, "home"), filepath.Join(dir, "st")
	tdir, bin := filepath.Join(dir, "t"), filepath.Join(dir, "bin")
	for _, d := range []string{home, tdir, bin, filepath.Join(dir, "tmp")} {
		os.MkdirAll(d, 0o700)
	}
	for _, p := range programs {
		os.Symlink(p, filepath.Join(bin, filepath.Base(p)))
	}
	sock := filepath.Join(tdir, fmt.Sprintf("tmux-%d", os.Getuid()), "default")
	t.Cleanup(func() {
		testutil.StopDaemon(sthome)
		exec.Command("tmux", "-S", sock, "kill-server").Run()
		if left := testutil.EndLeftovers(dir, 5*time.Second); len(left) > 0 {
			t.Errorf("left running (ended now): %s", strings.Join(left, "; "))
		}
	})
	env := testutil.Env(os.Environ(), "HOME="+home, "ST_HOME="+sthome, "TMUX_TMPDIR="+tdir, "TMUX=", "TMUX_PANE=",
		"PATH="+bin+":/usr/local/bin:/usr/bin:/bin", "ST_WEB_PORT=auto", "ST_CLAUDE_BIN=", "ST_CODEX_BIN=", "ST_GEMINI_BIN=", "ST_OPENCODE_BIN=", "CODEX_HOME=", "CLAUDE_CONFIG_DIR=", "GEMINI_CLI_HOME=", "XDG_CONFIG_HOME=",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
		// Claude's temporary files in the test's folder (realagent.ClaudeHome says which).
		"TMPDIR="+filepath.Join(dir, "tmp"), "CLAUDE_CODE_TMPDIR="+filepath.Join(dir, "tmp"))
	run = func(wantCode int, args ...string) string {
		t.Helper()
		cmd := exec.Command(st, args...)
		cmd.Env, cmd.Dir = env, home
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("st %s: %v", strings.Join(args, " "), err)
		}
		if code != wantCode {
			t.Fatalf("st %s: exit %d, want %d:\n%s", strings.Join(args, " "), code, wantCode, out)
		}
		return string(out)
	}
	return run, home, sthome
}

// userFiles are the user's own files, in their own layout, that st setup
// finds in HOME and its undo must leave as they were.
var userFiles = map[string]string{
	".claude/settings.json":       "{\n    \"model\": \"opus\",\n    \"statusLine\": {\"type\": \"command\", \"command\": \"echo \\\"$(pwd)\\\" 'mine'\"},\n    \"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"notify-send done\"}]}]}\n}\n",
	".codex/config.toml":          "# mine\nmodel = \"gpt-5\"\n\n[projects.\"/src\"]\ntrust_level = \"trusted\"\n",
	".codex/hooks.json":           "{\"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"echo bye\"}]}]}}\n",
	".codex/rules/mine.rules":     "prefix_rule(pattern = [\"git\", \"status\"], decision = \"allow\")\n",
	".codex/skills/mine/SKILL.md": "---\nname: mine\ndescription: my own skill\n---\nDo it my way.\n",
	"notes.txt":                   "not st's\n",
}

// TestSetupUndoRealAgents: st setup, again, st doctor and st setup
// --undo with the real Claude Code and Codex, in a HOME that holds the
// user's own settings, hooks and rules: the second setup changes
// nothing, doctor is clean, and the undo leaves every file of the user's
// as it was, byte for byte.
func TestSetupUndoRealAgents(t *testing.T) {
	t.Parallel()
	run, home, sthome := realAgentsHome(t)
	user := userFiles
	for rel, text := range user {
		p := filepath.Join(home, rel)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	before := hashTree(t, home)

	out := run(0, "setup")
	for _, want := range []string{
		"ok    daemon: running", "ok    agent claude: claude ", "ok    agent codex: codex ",
		"ok    hooks claude: ", "ok    hooks codex: ", "trusted in " + filepath.Join(home, ".codex", "config.toml"),
		"ok    status line claude: st statusline is Claude's status line in " + filepath.Join(home, ".claude", "settings.json") + ` (it prints your own: echo "$(pwd)" 'mine')`,
		"ok    plugin claude: the plugin sophonz@sophonz-local", "ok    skills codex: ", "ok    rule codex: " + filepath.Join(home, ".codex", "rules", "sophonz.rules"),
		"ok    web: serving at http://127.0.0.1:",
		"Next: in a tmux session, start Claude Code", "  tmux new -s work\n  claude\n  /sophonz:orchestrate ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("st setup does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "FAIL") {
		t.Errorf("st setup failed a step:\n%s", out)
	}
	set := hashTree(t, home)
	plugins := hashTree(t, filepath.Join(sthome, "plugins"))

	// Again: every step ok, and not a byte of it changes.
	out = run(0, "setup")
	if strings.Contains(out, "FAIL") {
		t.Errorf("the second st setup failed a step:\n%s", out)
	}
	changes, state := treeChanges(set, hashTree(t, home))
	c2, _ := treeChanges(plugins, hashTree(t, filepath.Join(sthome, "plugins")))
	if changes = append(changes, c2...); len(changes) > 0 {
		t.Errorf("the second st setup changed files:\n%s", strings.Join(changes, "\n"))
	}
	t.Logf("the agents' own state the second setup changed: %v", state)

	out = run(0, "doctor")
	if strings.Contains(out, "FAIL") || strings.Contains(out, "Try:") {
		t.Errorf("st doctor after setup:\n%s", out)
	}

	out = run(0, "setup", "--undo")
	for _, want := range []string{"ok    status line claude: put your own status line back in", "ok    hooks claude: removed st's hooks from", "ok    hooks codex: removed st's hooks from",
		"ok    plugin claude: removed the plugin", "ok    plugin codex: removed the skills", "st's rule " + filepath.Join(home, ".codex", "rules", "sophonz.rules"),
		"ok    daemon: st stopped"} {
		if !strings.Contains(out, want) {
			t.Errorf("st setup --undo does not say %q:\n%s", want, out)
		}
	}
	changes, state = treeChanges(before, hashTree(t, home))
	if len(changes) > 0 {
		t.Errorf("st setup --undo left these files other than they were:\n%s", strings.Join(changes, "\n"))
	}
	t.Logf("%d files of the agents' own state differ after setup and undo (claude and codex ran here for the first time), e.g. %v",
		len(state), state[:min(len(state), 4)])
	for rel, text := range user {
		if b, _ := os.ReadFile(filepath.Join(home, rel)); string(b) != text {
			t.Errorf("%s after undo:\n%s\nwant:\n%s", rel, b, text)
		}
	}
	if _, err := os.Stat(filepath.Join(sthome, "plugins")); !os.IsNotExist(err) {
		t.Errorf("$ST_HOME/plugins is still there (%v)", err)
	}
	run(1, "status")
	// Undo again: nothing left to take out, and it says so.
	if out = run(0, "setup", "--undo"); !strings.Contains(out, "no st hooks in") || !strings.Contains(out, "st is not running") {
		t.Errorf("a second undo:\n%s", out)
	}
}
