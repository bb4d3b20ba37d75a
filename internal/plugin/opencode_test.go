package plugin

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// opencode's two commands: front matter with a description alone, then
// the text the model gets, naming st by its path; the orchestrate command
// takes the person's job once through $ARGUMENTS, its text is Claude's
// command's, and it says how to wait within opencode's bash tool's 2
// minutes; the worker command is Claude's worker skill.
func TestRenderOpencodeCommands(t *testing.T) {
	for _, bin := range []string{testST, `/opt/odd " \ 'path/st`} {
		c := testConfig(t)
		c.STBin = bin
		files := render(t, c)
		q := shellQuote(bin)
		parse := func(name string) (string, string) {
			t.Helper()
			fm, body, err := parseFrontmatter(files[filepath.Join(c.OpencodeCommandsDir(), name)])
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if len(fm) != 1 || fm["description"] == "" {
				t.Errorf("%s: front matter %q, want a description alone", name, fm)
			}
			if !strings.Contains(body, q+" worker done --summary") {
				t.Errorf("%s: the text does not name st as %s", name, q)
			}
			if !stampRE().MatchString(body) {
				t.Errorf("%s: no stamp of st's", name)
			}
			// opencode runs !`...` through the shell when the command is
			// typed, and puts $1, $2... for the words typed after it.
			for _, bad := range []string{"!`", "$1", "$2"} {
				if strings.Contains(body, bad) {
					t.Errorf("%s: the text holds %s, which opencode would expand", name, bad)
				}
			}
			return fm["description"], body
		}
		_, orch := parse("sophonz-orchestrate.md")
		_, work := parse("sophonz-worker.md")
		if strings.Count(orch, "$ARGUMENTS") != 1 || !strings.Contains(orch, "The person asked you to coordinate this job: $ARGUMENTS\n") {
			t.Errorf("the orchestrate command does not take the job once through $ARGUMENTS:\n%s", orch)
		}
		if strings.Contains(work, "$ARGUMENTS") {
			t.Errorf("the worker command takes $ARGUMENTS")
		}
		claude := files[filepath.Join(c.PluginDir(), "commands", "orchestrate.md")]
		core := func(s string) string {
			s = s[strings.Index(s, "You are the coordinator."):]
			return s[:strings.Index(s, "When it comes back early")]
		}
		if core(orch) != core(claude) {
			t.Errorf("the opencode orchestrate text differs from Claude's command:\n%s\n---\n%s", core(orch), core(claude))
		}
		if !strings.Contains(orch, "2 minutes") || !strings.Contains(orch, q+" worker wait --timeout 100s") {
			t.Errorf("the opencode orchestrate text does not say how to wait within its bash tool's 2 minutes")
		}
		_, claudeWorker, _ := parseFrontmatter(files[filepath.Join(c.PluginDir(), "skills", "worker", "SKILL.md")])
		if work != claudeWorker {
			t.Errorf("the opencode worker text is not Claude's worker skill:\n%s", work)
		}
	}
}

// By default the commands go in only where opencode has run: a HOME
// without its config folder gets none, and status says it is left out
// (nothing to fix) until opencode has made it.
func TestInstallNoOpencodeFolder(t *testing.T) {
	c := testConfig(t)
	rep, _ := Install(t.Context(), c)
	for _, a := range rep.Agents {
		if a.Agent == Opencode {
			t.Errorf("install without opencode's folder worked on opencode: %+v", a)
		}
	}
	if _, err := os.Stat(filepath.Join(c.Home, ".config")); !os.IsNotExist(err) {
		t.Errorf("~/.config was made (%v)", err)
	}
	s, _ := GetStatus(t.Context(), c)
	if o := s.Agents[3]; o.Agent != Opencode || !o.Skipped || o.State != StateNotInstalled || !strings.Contains(o.Note, "has not run here") {
		t.Errorf("status without opencode's folder = %+v", o)
	}
	os.MkdirAll(filepath.Join(c.Home, ".config", "opencode"), 0o700)
	if s, _ := GetStatus(t.Context(), c); s.Agents[3].Skipped {
		t.Errorf("status with opencode's folder = %+v", s.Agents[3])
	}
}

// Install, again (nothing changes), status, uninstall: st's two command
// files come and go; the user's opencode.json, a command of their own
// beside st's and st's plugin file's folder stay byte for byte, and the
// command folder goes only when st's files were all it held.
func TestInstallOpencodeRoundTrip(t *testing.T) {
	c := testConfig(t)
	c.OpencodeDir = filepath.Join(c.Home, "xdg", "opencode") // XDG_CONFIG_HOME's
	c.Agents = []string{Opencode}
	mine := filepath.Join(c.OpencodeCommandsDir(), "review.md")
	cfg := filepath.Join(c.OpencodeDir, "opencode.json")
	user := map[string][]byte{
		mine: []byte("---\ndescription: mine\n---\nReview $ARGUMENTS\n"),
		cfg:  []byte(`{"model": "anthropic/claude-fake"}` + "\n"),
	}
	for p, b := range user {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := Install(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	o := rep.Agents[0]
	if o.Agent != Opencode || o.Outcome != Installed || len(o.Changed) != 2 || strings.Join(o.Provides, " ") != "/sophonz-orchestrate /sophonz-worker" {
		t.Fatalf("install = %+v", o)
	}
	for p, want := range render(t, c) {
		if strings.HasPrefix(p, c.OpencodeCommandsDir()) {
			if got, err := os.ReadFile(p); err != nil || string(got) != want {
				t.Errorf("%s not written as rendered (%v)", p, err)
			}
		}
	}
	if rep, _ := Install(t.Context(), c); rep.Agents[0].Outcome != Unchanged {
		t.Errorf("second install = %+v", rep.Agents[0])
	}
	if s, _ := GetStatus(t.Context(), c); !s.Agents[3].Current || len(s.Agents[3].Files) != 2 || s.Agents[3].Dir != c.OpencodeCommandsDir() {
		t.Errorf("status = %+v (the user's own command is not st's)", s.Agents[3])
	}
	moved := c
	moved.STBin = "/opt/st"
	Install(t.Context(), moved)
	if s, _ := GetStatus(t.Context(), c); s.Agents[3].State != StateStale || !strings.Contains(s.Agents[3].WrittenBy, "/opt/st") {
		t.Errorf("status after another st installed = %+v", s.Agents[3])
	}

	rep, err = Uninstall(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	if o := rep.Agents[3]; o.Agent != Opencode || o.Outcome != Removed || len(o.Changed) != 2 {
		t.Errorf("uninstall = %+v", o)
	}
	for _, p := range c.opencodeCommands() {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", p, err)
		}
	}
	for p, b := range user {
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, b) {
			t.Errorf("the user's %s changed: %v %q", p, err, got)
		}
	}
}

// With nothing of the user's beside them, uninstall leaves no empty
// command folder of st's, and opencode's folder stays; a file of st's
// name that st did not write stays, with a note.
func TestUninstallOpencodeFolders(t *testing.T) {
	c := testConfig(t)
	c.Agents = []string{Opencode}
	cfg := filepath.Join(c.opencodeDir(), "opencode.json")
	os.MkdirAll(filepath.Dir(cfg), 0o700)
	os.WriteFile(cfg, []byte("{}\n"), 0o600)
	if _, err := Install(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	if _, err := Uninstall(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.OpencodeCommandsDir()); !os.IsNotExist(err) {
		t.Errorf("opencode's command folder is left behind (%v)", err)
	}
	if _, err := os.Stat(cfg); err != nil {
		t.Errorf("opencode.json: %v", err)
	}
	// A file of st's name that st did not write stays, with a note.
	foreign := c.opencodeCommands()[0]
	os.MkdirAll(filepath.Dir(foreign), 0o755)
	os.WriteFile(foreign, []byte("mine\n"), 0o644)
	rep, _ := Uninstall(t.Context(), c)
	if b, _ := os.ReadFile(foreign); string(b) != "mine\n" {
		t.Errorf("a command st did not write was changed: %q", b)
	}
	if o := rep.Agents[3]; o.Outcome != Absent || len(o.Notes) != 1 || !strings.Contains(o.Notes[0], "not written by st") {
		t.Errorf("uninstall over a foreign command = %+v", o)
	}
}
