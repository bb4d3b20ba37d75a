package plugin

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// geminiCommand is a Gemini CLI custom command file, as Gemini reads it
// (description and prompt; no other key).
type geminiCommand struct {
	Description string `toml:"description"`
	Prompt      string `toml:"prompt"`
}

// parseGemini decodes a command file strictly: a key Gemini does not know
// fails, as does TOML it could not read.
func parseGemini(t *testing.T, text string) geminiCommand {
	t.Helper()
	var cmd geminiCommand
	d := toml.NewDecoder(strings.NewReader(text))
	d.DisallowUnknownFields()
	if err := d.Decode(&cmd); err != nil {
		t.Fatalf("not a Gemini command file: %v\n%s", err, text)
	}
	return cmd
}

// Gemini's two commands: TOML that decodes to a description of at most
// 100 characters (Gemini cuts the rest) and a prompt that is the same text
// the Claude command and the Codex skills carry, naming st by its path,
// whatever characters that path holds.
func TestRenderGeminiCommands(t *testing.T) {
	for _, bin := range []string{testST, `/opt/odd """ \ 'path/st`} {
		c := testConfig(t)
		c.STBin = bin
		files := render(t, c)
		q := shellQuote(bin)
		orch := parseGemini(t, files[filepath.Join(c.GeminiCommandsDir(), "orchestrate.toml")])
		work := parseGemini(t, files[filepath.Join(c.GeminiCommandsDir(), "worker.toml")])
		claude := files[filepath.Join(c.PluginDir(), "commands", "orchestrate.md")]
		for name, cmd := range map[string]geminiCommand{"orchestrate": orch, "worker": work} {
			if n := len(cmd.Description); n == 0 || n > 100 {
				t.Errorf("%s: description of %d characters: %q", name, n, cmd.Description)
			}
			if !strings.Contains(cmd.Prompt, q+" worker done --summary") {
				t.Errorf("%s: the prompt does not name st as %s", name, q)
			}
			// Gemini runs !{...} through the shell and reads @{...} as a
			// file when the command is typed.
			if strings.Contains(cmd.Prompt, "!{") || strings.Contains(cmd.Prompt, "@{") {
				t.Errorf("%s: the prompt holds !{ or @{, which Gemini would run or read", name)
			}
		}
		if strings.Count(orch.Prompt, "{{args}}") != 1 || !strings.Contains(orch.Prompt, "The person asked you to coordinate this job: {{args}}\n") {
			t.Errorf("the orchestrate command does not take the job once through {{args}}:\n%s", orch.Prompt)
		}
		if strings.Contains(work.Prompt, "{{args}}") {
			t.Errorf("the worker command takes {{args}}: %s", work.Prompt)
		}
		// The same text as Claude's command, from "You are the coordinator"
		// to its rules, but for the lines about each agent's own tool.
		core := func(s string) string {
			s = s[strings.Index(s, "You are the coordinator."):]
			s = s[:strings.Index(s, "When it comes back early")]
			return s
		}
		if core(orch.Prompt) != core(claude) {
			t.Errorf("the Gemini orchestrate prompt differs from Claude's command:\n%s\n---\n%s", core(orch.Prompt), core(claude))
		}
		if !strings.Contains(orch.Prompt, "5 minutes") || !strings.Contains(orch.Prompt, q+" worker wait --timeout 4m") {
			t.Errorf("the Gemini orchestrate prompt does not say how to wait within its shell tool's 5 minutes")
		}
		claudeWorker := files[filepath.Join(c.PluginDir(), "skills", "worker", "SKILL.md")]
		if _, body, _ := parseFrontmatter(claudeWorker); !strings.HasPrefix(body, work.Prompt) {
			t.Errorf("the Gemini worker prompt is not Claude's worker skill:\n%s", work.Prompt)
		}
		for _, p := range []string{"orchestrate.toml", "worker.toml"} {
			first, _, _ := strings.Cut(files[filepath.Join(c.GeminiCommandsDir(), p)], "\n")
			if !stampRE().MatchString(first) || !strings.HasPrefix(first, "# ") {
				t.Errorf("%s: its first line is not st's stamp as a TOML comment: %s", p, first)
			}
		}
	}
}

// A path with a line break would end the stamp's comment line in the
// rules and TOML files: st refuses to write it.
func TestRenderRefusesControlCharacter(t *testing.T) {
	c := testConfig(t)
	c.STBin = "/opt/st\nprompt = 'x'/st"
	if _, err := Render(c); err == nil || !strings.Contains(err.Error(), "move st to a plain path") {
		t.Errorf("Render of a path with a line break: %v", err)
	}
}

// By default the commands go in only where Gemini CLI has run: a HOME
// without ~/.gemini gets no folder of Gemini's.
func TestInstallNoGeminiFolder(t *testing.T) {
	c := testConfig(t)
	c.Agents = nil
	rep, _ := Install(t.Context(), c)
	for _, a := range rep.Agents {
		if a.Agent == Gemini {
			t.Errorf("install without ~/.gemini worked on gemini: %+v", a)
		}
	}
	if _, err := os.Stat(filepath.Join(c.Home, ".gemini")); !os.IsNotExist(err) {
		t.Errorf("~/.gemini was made (%v)", err)
	}
	// Status says it is left out, which is nothing to fix; once Gemini
	// has run, its missing commands are.
	if s, _ := GetStatus(t.Context(), c); !s.Agents[2].Skipped || s.Agents[2].State != StateNotInstalled || !strings.Contains(s.Agents[2].Note, "has not run here") {
		t.Errorf("status without ~/.gemini = %+v", s.Agents[2])
	}
	os.MkdirAll(filepath.Join(c.Home, ".gemini"), 0o700)
	if s, _ := GetStatus(t.Context(), c); s.Agents[2].Skipped {
		t.Errorf("status with ~/.gemini = %+v", s.Agents[2])
	}
}

// Install, again (nothing changes), status, uninstall: st's two command
// files come and go; the user's own commands, one in st's own folder and
// one beside it, stay byte for byte, and so does their folder.
func TestInstallGeminiRoundTrip(t *testing.T) {
	c := testConfig(t)
	c.Agents = []string{Gemini}
	mine := filepath.Join(c.GeminiCommandsDir(), "mine.toml")
	beside := filepath.Join(filepath.Dir(c.GeminiCommandsDir()), "review.toml")
	userCmd := []byte("# my own\ndescription = \"mine\"\nprompt = \"\"\"Review {{args}}\"\"\"\n")
	for _, p := range []string{mine, beside} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, userCmd, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := Install(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	g := rep.Agents[0]
	if g.Agent != Gemini || g.Outcome != Installed || len(g.Changed) != 2 || strings.Join(g.Provides, " ") != "/sophonz:orchestrate /sophonz:worker" {
		t.Fatalf("install = %+v", g)
	}
	for p, want := range render(t, c) {
		if strings.HasPrefix(p, c.GeminiCommandsDir()) {
			if got, err := os.ReadFile(p); err != nil || string(got) != want {
				t.Errorf("%s not written as rendered (%v)", p, err)
			}
		}
	}
	if rep, _ := Install(t.Context(), c); rep.Agents[0].Outcome != Unchanged || len(rep.Agents[0].Changed) != 0 {
		t.Errorf("second install = %+v", rep.Agents[0])
	}
	s, err := GetStatus(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	gs := s.Agents[2]
	if gs.Agent != Gemini || !gs.Current || len(gs.Files) != 2 || gs.Dir != c.GeminiCommandsDir() {
		t.Errorf("status = %+v (the user's own command is not st's)", gs)
	}
	// Another st's commands are stale, and say who wrote them.
	moved := c
	moved.STBin = "/opt/st"
	Install(t.Context(), moved)
	if s, _ := GetStatus(t.Context(), c); s.Agents[2].State != StateStale || !strings.Contains(s.Agents[2].WrittenBy, "/opt/st") {
		t.Errorf("status after another st installed = %+v", s.Agents[2])
	}

	rep, err = Uninstall(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	if g := rep.Agents[2]; g.Agent != Gemini || g.Outcome != Removed || len(g.Changed) != 2 {
		t.Errorf("uninstall = %+v", g)
	}
	for _, p := range c.geminiCommands() {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", p, err)
		}
	}
	for _, p := range []string{mine, beside} {
		if b, err := os.ReadFile(p); err != nil || !bytes.Equal(b, userCmd) {
			t.Errorf("the user's %s changed: %v %q", p, err, b)
		}
	}
	if s, _ := GetStatus(t.Context(), c); s.Agents[2].State != StateNotInstalled {
		t.Errorf("status after uninstall = %+v", s.Agents[2])
	}
}

// With nothing of the user's beside them, uninstall leaves no empty
// folder of st's in ~/.gemini, which stays; a file of st's name that st
// did not write stays, with a note.
func TestUninstallGeminiFolders(t *testing.T) {
	c := testConfig(t)
	c.Agents = []string{Gemini}
	settings := filepath.Join(c.Home, ".gemini", "settings.json")
	os.MkdirAll(filepath.Dir(settings), 0o700)
	os.WriteFile(settings, []byte("{}\n"), 0o600)
	if _, err := Install(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	if _, err := Uninstall(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(c.Home, ".gemini", "commands")); !os.IsNotExist(err) {
		t.Errorf("~/.gemini/commands is left behind (%v)", err)
	}
	if _, err := os.Stat(settings); err != nil {
		t.Errorf("~/.gemini/settings.json: %v", err)
	}

	foreign := filepath.Join(c.GeminiCommandsDir(), "orchestrate.toml")
	os.MkdirAll(filepath.Dir(foreign), 0o755)
	os.WriteFile(foreign, []byte("prompt = \"mine\"\n"), 0o644)
	rep, _ := Uninstall(t.Context(), c)
	if b, _ := os.ReadFile(foreign); string(b) != "prompt = \"mine\"\n" {
		t.Errorf("a command st did not write was changed: %q", b)
	}
	if g := rep.Agents[2]; g.Outcome != Absent || len(g.Notes) != 1 || !strings.Contains(g.Notes[0], "not written by st") {
		t.Errorf("uninstall over a foreign command = %+v", g)
	}
}
