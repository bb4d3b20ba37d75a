package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sophonz/st/internal/api"
)

const testST = "/opt/st test/bin/st" // a space, so the texts must quote it

func testConfig(t *testing.T) Config {
	t.Helper()
	home := t.TempDir()
	return Config{
		STBin:           "/usr/local/bin/st",
		Version:         "0.3.1",
		Home:            home,
		STHome:          filepath.Join(home, ".sophonz"),
		CodexHome:       filepath.Join(home, ".codex"),
		ClaudeConfigDir: filepath.Join(home, ".claude"),
		ClaudeMissing:   "claude (Claude Code) is not on PATH and ST_CLAUDE_BIN is not set",
	}
}

func render(t *testing.T, c Config) map[string]string {
	t.Helper()
	files, err := Render(c)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range files {
		out[f.Path] = string(f.Data)
	}
	return out
}

func TestRenderLayout(t *testing.T) {
	c := testConfig(t)
	files := render(t, c)
	want := []string{
		filepath.Join(c.ClaudeDir(), ".claude-plugin", "marketplace.json"),
		filepath.Join(c.PluginDir(), ".claude-plugin", "plugin.json"),
		filepath.Join(c.PluginDir(), "README.md"),
		filepath.Join(c.PluginDir(), "commands", "orchestrate.md"),
		filepath.Join(c.PluginDir(), "skills", "worker", "SKILL.md"),
		filepath.Join(c.CodexHome, "skills", "sophonz-orchestrate", "SKILL.md"),
		filepath.Join(c.CodexHome, "skills", "sophonz-worker", "SKILL.md"),
		filepath.Join(c.CodexHome, "rules", "sophonz.rules"),
		filepath.Join(c.Home, ".gemini", "commands", "sophonz", "orchestrate.toml"),
		filepath.Join(c.Home, ".gemini", "commands", "sophonz", "worker.toml"),
		filepath.Join(c.Home, ".config", "opencode", "command", "sophonz-orchestrate.md"),
		filepath.Join(c.Home, ".config", "opencode", "command", "sophonz-worker.md"),
	}
	if len(files) != len(want) {
		t.Errorf("rendered %d files, want %d: %v", len(files), len(want), keys(files))
	}
	for _, p := range want {
		if _, ok := files[p]; !ok {
			t.Errorf("missing %s; have %v", p, keys(files))
		}
	}

	var mkt struct {
		Name    string
		Plugins []struct{ Name, Source, Version, Description string }
	}
	mustJSON(t, files[want[0]], &mkt)
	var pj struct{ Name, Version, Description string }
	mustJSON(t, files[want[1]], &pj)
	if mkt.Name != MarketplaceName || len(mkt.Plugins) != 1 || mkt.Plugins[0].Name != PluginName || mkt.Plugins[0].Source != "./"+PluginName {
		t.Errorf("marketplace.json = %+v", mkt)
	}
	if pj.Name != PluginName || pj.Version != "0.3.1" || mkt.Plugins[0].Version != pj.Version {
		t.Errorf("plugin.json = %+v, marketplace version %q: want name %s, version 0.3.1 in both", pj, mkt.Plugins[0].Version, PluginName)
	}
}

func TestRenderFrontmatter(t *testing.T) {
	c := testConfig(t)
	files := render(t, c)
	cases := []struct {
		path, name string
		keys       []string
	}{
		{filepath.Join(c.PluginDir(), "commands", "orchestrate.md"), "", []string{"description", "argument-hint"}},
		{filepath.Join(c.PluginDir(), "skills", "worker", "SKILL.md"), "worker", []string{"name", "description"}},
		{filepath.Join(c.CodexHome, "skills", CodexOrchestrate, "SKILL.md"), CodexOrchestrate, []string{"name", "description"}},
		{filepath.Join(c.CodexHome, "skills", CodexWorker, "SKILL.md"), CodexWorker, []string{"name", "description"}},
	}
	for _, tc := range cases {
		fm, body, err := parseFrontmatter(files[tc.path])
		if err != nil {
			t.Errorf("%s: %v", tc.path, err)
			continue
		}
		for _, k := range tc.keys {
			if strings.TrimSpace(fm[k]) == "" {
				t.Errorf("%s: frontmatter has no %s: %v", tc.path, k, fm)
			}
		}
		if len(fm) != len(tc.keys) {
			t.Errorf("%s: frontmatter keys %v, want %v", tc.path, fm, tc.keys)
		}
		if tc.name != "" {
			if fm["name"] != tc.name {
				t.Errorf("%s: name %q, want %q", tc.path, fm["name"], tc.name)
			}
			// Codex and Claude skill names: lower case, digits, hyphens, at most 64.
			if !regexp.MustCompile(`^[a-z0-9-]{1,64}$`).MatchString(fm["name"]) {
				t.Errorf("%s: name %q is not a valid skill name", tc.path, fm["name"])
			}
			if d := filepath.Base(filepath.Dir(tc.path)); d != fm["name"] {
				t.Errorf("%s: folder %s differs from the name %s", tc.path, d, fm["name"])
			}
		}
		if n := len(fm["description"]); n > 1024 {
			t.Errorf("%s: description is %d characters, over 1024", tc.path, n)
		}
		if !strings.Contains(body, "# ") {
			t.Errorf("%s: no heading in the body", tc.path)
		}
	}
}

func TestRenderClaudeCommand(t *testing.T) {
	c := testConfig(t)
	cmd := render(t, c)[filepath.Join(c.PluginDir(), "commands", "orchestrate.md")]
	if strings.Count(cmd, "$ARGUMENTS") != 1 {
		t.Errorf("the command should take the job once through $ARGUMENTS:\n%s", cmd)
	}
	// Claude expands $1.. and runs !`cmd` in a command's body.
	if m := regexp.MustCompile("\\$[0-9]|!`").FindString(cmd); m != "" {
		t.Errorf("the command's body holds %q, which Claude Code would expand", m)
	}
}

// The texts name st by its absolute path in every command, and teach the
// whole workflow.
func TestRenderTexts(t *testing.T) {
	c := testConfig(t)
	c.STBin = testST
	files := render(t, c)
	q := "'" + testST + "'"
	bare := regexp.MustCompile("(^|[^/A-Za-z0-9_.-])st (up|orch|worker|task|gate|hooks|plugin|down|status) ")
	for path, text := range files {
		if !strings.HasSuffix(path, ".md") || strings.HasSuffix(path, "README.md") {
			continue
		}
		_, body, err := parseFrontmatter(text)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for i, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "<!-- Written by st plugin install") {
				continue
			}
			if m := bare.FindString(line); m != "" {
				t.Errorf("%s:%d names st without its path (%q): %s", path, i+1, m, line)
			}
		}
		if !strings.Contains(body, q+" worker done --summary") {
			t.Errorf("%s: no %s worker done --summary", path, q)
		}
		if !stampRE().MatchString(body) {
			t.Errorf("%s: no stamp line", path)
		}
	}

	orchestrate := []string{
		q + " orch start --objective",
		q + " worker start --agent",
		"--task ", "--name ",
		q + " worker wait --timeout 15m",
		q + " worker read ",
		q + " worker send ID \"TEXT\"",
		q + " worker list",
		q + " worker stop ID --yes",
		q + " worker release ID",
		q + " task create NAME --task FILE --agent A --deps X,Y",
		"--worktree",
		q + " gate ask \"",
		"--option",
		"It blocks until the person answers",
		"- 0: every worker is done",
		"- 2: some worker needs attention: waiting, idle, blocked, failed or gone",
		"- 3: the timeout passed first",
		"run it again",
		"st: worker api-tests (%7) is done",
		"check it yourself",
		"Files you may change",
		"How to check it",
		"sim",
		"never\n  starting with `/` or `$`",
		"two levels",
		"tmux kill-server",
		// Workers on other machines (issue 15, item 8), with an example.
		q + " machines",
		q + " worker start --machine ci-mac --agent claude --task /abs/path/tasks/ios-tests.md --name ios-tests",
		q + " worker wait ci-mac/ios-tests",
		q + " worker read ci-mac/ios-tests",
		"accept-remote on",
	}
	worker := []string{
		"Read the whole file",
		"Change only the files the task allows",
		"queued the report",
		q + " gate ask",
		"two\n  levels",
		"tmux kill-server",
		q + " machines",
		q + " worker start --machine ci-mac --agent claude --task /abs/path/ios.md --name ios",
		q + " worker wait ci-mac/ios",
	}
	for _, tc := range []struct {
		path string
		want []string
	}{
		{filepath.Join(c.PluginDir(), "commands", "orchestrate.md"), append(orchestrate, "600000 ms")},
		{filepath.Join(c.CodexHome, "skills", CodexOrchestrate, "SKILL.md"), append(orchestrate, "escalated permissions", "require_escalated", "from the first try", "sophonz.rules", "30 seconds")},
		{filepath.Join(c.PluginDir(), "skills", "worker", "SKILL.md"), worker},
		{filepath.Join(c.CodexHome, "skills", CodexWorker, "SKILL.md"), append(worker, "escalated permissions from\nthe first try")},
	} {
		text := files[tc.path]
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s lacks %q", filepath.Base(filepath.Dir(tc.path))+"/"+filepath.Base(tc.path), w)
			}
		}
	}
}

func TestShellQuoteAndSemver(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/local/bin/st": "/usr/local/bin/st",
		"/opt/my st/st":     "'/opt/my st/st'",
		"/it's/st":          `'/it'\''s/st'`,
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"0.3.1": "0.3.1", "v0.3.88": "0.3.88", "0.1.0-dev": "0.1.0-dev", "1.2.3+abc": "1.2.3+abc",
		"dev": "0.0.0-dev", "": "0.0.0-unknown", "abc123 dirty": "0.0.0-abc123-dirty",
	} {
		if got := semver(in); got != want {
			t.Errorf("semver(%q) = %q, want %q", in, got, want)
		}
	}
	if _, err := Render(Config{STBin: "st"}); err == nil {
		t.Error("Render accepted a relative path of st")
	}
}

func TestConfigFromEnv(t *testing.T) {
	home := t.TempDir()
	bin := t.TempDir()
	fake := filepath.Join(bin, "claude")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

	c, err := ConfigFromEnv(env(map[string]string{"HOME": home, "PATH": "/nonexistent:" + bin}), []string{"HOME=/elsewhere", "KEEP=1", "CODEX_HOME=/x"})
	if err != nil {
		t.Fatal(err)
	}
	if c.STHome != filepath.Join(home, ".sophonz") || c.CodexHome != filepath.Join(home, ".codex") || c.ClaudeConfigDir != filepath.Join(home, ".claude") ||
		c.GeminiCommandsDir() != filepath.Join(home, ".gemini", "commands", "sophonz") {
		t.Errorf("defaults: %+v", c)
	}
	if c.ClaudeBin != fake || c.ClaudeMissing != "" {
		t.Errorf("claude on PATH: bin %q missing %q, want %s", c.ClaudeBin, c.ClaudeMissing, fake)
	}
	if !filepath.IsAbs(c.STBin) {
		t.Errorf("STBin %q is not absolute", c.STBin)
	}
	if got := strings.Join(c.Env, " "); got != "KEEP=1 HOME="+home+" PATH=/nonexistent:"+bin {
		t.Errorf("claude's environment = %s", got)
	}

	c, _ = ConfigFromEnv(env(map[string]string{"HOME": home, "PATH": bin, "ST_CLAUDE_BIN": filepath.Join(bin, "nope"), "CODEX_HOME": "/cx", "ST_HOME": "/sh"}), nil)
	if c.ClaudeBin != "" || !strings.Contains(c.ClaudeMissing, "ST_CLAUDE_BIN="+filepath.Join(bin, "nope")) {
		t.Errorf("a wrong ST_CLAUDE_BIN: bin %q missing %q", c.ClaudeBin, c.ClaudeMissing)
	}
	c2, _ := ConfigFromEnv(env(map[string]string{"HOME": home, "GEMINI_CLI_HOME": "/gh"}), nil)
	if c2.GeminiCommandsDir() != "/gh/.gemini/commands/sophonz" {
		t.Errorf("GEMINI_CLI_HOME not taken: %s", c2.GeminiCommandsDir())
	}
	if c.CodexHome != "/cx" || c.STHome != "/sh" {
		t.Errorf("CODEX_HOME, ST_HOME not taken: %+v", c)
	}
	c, _ = ConfigFromEnv(env(map[string]string{"HOME": home, "PATH": "/nonexistent"}), nil)
	if c.ClaudeBin != "" || !strings.Contains(c.ClaudeMissing, "not on PATH") {
		t.Errorf("no claude: bin %q missing %q", c.ClaudeBin, c.ClaudeMissing)
	}
}

// Without claude the Codex part and the files are still installed, and
// the error says what to do.
func TestInstallWithoutClaude(t *testing.T) {
	c := testConfig(t)
	os.MkdirAll(filepath.Join(c.Home, ".gemini"), 0o700)             // Gemini CLI has run here
	os.MkdirAll(filepath.Join(c.Home, ".config", "opencode"), 0o700) // and opencode
	rep, err := Install(t.Context(), c)
	var oe *api.Error
	if !errors.As(err, &oe) || !strings.Contains(oe.Message, "not on PATH") || !strings.Contains(oe.Hint, "ST_CLAUDE_BIN") || !strings.Contains(oe.Hint, "st plugin install") {
		t.Fatalf("error = %#v, want an *api.Error naming claude and ST_CLAUDE_BIN", err)
	}
	if rep == nil || len(rep.Agents) != 4 {
		t.Fatalf("report = %+v", rep)
	}
	cl, cx, gm, oc := rep.Agents[0], rep.Agents[1], rep.Agents[2], rep.Agents[3]
	if gm.Agent != Gemini || gm.Outcome != Installed || gm.Error != "" || len(gm.Changed) != 2 {
		t.Errorf("gemini part = %+v", gm)
	}
	if oc.Agent != Opencode || oc.Outcome != Installed || oc.Error != "" || len(oc.Changed) != 2 {
		t.Errorf("opencode part = %+v", oc)
	}
	if cl.Outcome != Installed || cl.Registered || cl.Error == "" {
		t.Errorf("claude part = %+v", cl)
	}
	if cx.Outcome != Installed || cx.Error != "" || len(cx.Changed) != 3 {
		t.Errorf("codex part = %+v", cx)
	}
	for p, want := range render(t, c) {
		if got, err := os.ReadFile(p); err != nil || string(got) != want {
			t.Errorf("%s not written as rendered (%v)", p, err)
		}
	}
	s, err := GetStatus(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	if s.Agents[0].State != StateCurrent || s.Agents[0].Registered != nil || !strings.Contains(s.Agents[0].Note, "cannot tell") {
		t.Errorf("claude status without claude = %+v", s.Agents[0])
	}
	if !s.Agents[1].Current {
		t.Errorf("codex status = %+v", s.Agents[1])
	}

	// Uninstall without claude removes the files and says what is left.
	rep, err = Uninstall(t.Context(), c)
	if err == nil || !strings.Contains(err.Error(), "claude plugin uninstall "+PluginID) {
		t.Errorf("uninstall without claude: %v", err)
	}
	if rep.Agents[0].Outcome != Removed || rep.Agents[1].Outcome != Removed || rep.Agents[2].Outcome != Removed {
		t.Errorf("uninstall report = %+v", rep.Agents)
	}
	assertNoFiles(t, c)
}

// Install for Codex alone (st setup on a machine without Claude Code)
// writes the skills and the rule, nothing of Claude's, and no error.
func TestInstallCodexOnly(t *testing.T) {
	c := testConfig(t)
	c.Agents = []string{Codex}
	rep, err := Install(t.Context(), c)
	if err != nil {
		t.Fatalf("install for codex alone: %v", err)
	}
	if len(rep.Agents) != 1 || rep.Agents[0].Agent != Codex || rep.Agents[0].Outcome != Installed {
		t.Fatalf("report = %+v", rep.Agents)
	}
	if _, err := os.Stat(c.ClaudeDir()); !os.IsNotExist(err) {
		t.Errorf("the Claude plugin's folder was made (%v)", err)
	}
	if _, err := os.Stat(c.CodexRule()); err != nil {
		t.Errorf("the Codex rule: %v", err)
	}
}

// With nothing installed and no claude, uninstall has nothing to do.
func TestUninstallNothing(t *testing.T) {
	c := testConfig(t)
	rep, err := Uninstall(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range rep.Agents {
		if a.Outcome != Absent || a.Error != "" {
			t.Errorf("%s: %+v", a.Agent, a)
		}
	}
}

// A skill of the same name that st did not write is not removed.
func TestUninstallKeepsForeignSkill(t *testing.T) {
	c := testConfig(t)
	p := filepath.Join(c.CodexSkillsDir(), CodexWorker, "SKILL.md")
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte("---\nname: sophonz-worker\ndescription: mine\n---\nmine\n"), 0o644)
	rep, _ := Uninstall(t.Context(), c)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("a skill st did not write was removed: %v", err)
	}
	if cx := rep.Agents[1]; cx.Outcome != Absent || len(cx.Notes) != 1 || !strings.Contains(cx.Notes[0], "not written by st") {
		t.Errorf("codex part = %+v", cx)
	}
}

func assertNoFiles(t *testing.T, c Config) {
	t.Helper()
	for _, d := range []string{c.ClaudeDir(), filepath.Join(c.CodexSkillsDir(), CodexOrchestrate), filepath.Join(c.CodexSkillsDir(), CodexWorker), c.CodexRulesDir(),
		filepath.Join(c.ClaudeConfigDir, "plugins", "cache", MarketplaceName), filepath.Join(c.Home, ".gemini", "commands")} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there (%v)", d, err)
		}
	}
}

// parseFrontmatter reads the YAML frontmatter the templates write: one
// "key: value" a line, the value a plain scalar with no ": " or " #", or a
// double-quoted string (which, as written, is also a JSON string).
func parseFrontmatter(text string) (map[string]string, string, error) {
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		return nil, "", errors.New("no frontmatter: the file does not start with ---")
	}
	head, body, ok := strings.Cut(rest, "\n---\n")
	if !ok {
		return nil, "", errors.New("the frontmatter does not end with ---")
	}
	fm := map[string]string{}
	for _, line := range strings.Split(head, "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok || !regexp.MustCompile(`^[a-z][a-z-]*$`).MatchString(k) {
			return nil, "", fmt.Errorf("frontmatter line %q is not key: value", line)
		}
		if _, dup := fm[k]; dup {
			return nil, "", fmt.Errorf("frontmatter key %s twice", k)
		}
		if strings.HasPrefix(v, `"`) {
			if err := json.Unmarshal([]byte(v), &v); err != nil {
				return nil, "", fmt.Errorf("frontmatter %s: %v", k, err)
			}
		} else if v == "" || strings.Contains(v, ": ") || strings.Contains(v, " #") || strings.ContainsAny(v[:1], "[]{}&*!|>'%@`#,?:-<") {
			return nil, "", fmt.Errorf("frontmatter %s: %q is not a plain YAML scalar", k, v)
		}
		fm[k] = v
	}
	return fm, body, nil
}

func mustJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("%v:\n%s", err, s)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
