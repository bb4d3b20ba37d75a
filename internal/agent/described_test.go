package agent

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDescribeRefusesWithWhatToFix: each mistake in a description is told
// with the table, what is wrong and what to write instead.
func TestDescribeRefusesWithWhatToFix(t *testing.T) {
	whole := func() Description {
		return Description{Program: "/opt/toy/bin/toy", Ready: []string{"toy> "}}
	}
	for _, c := range []struct {
		name string
		kind string
		edit func(*Description)
		want string
	}{
		{"bad name", "Toy Agent", func(*Description) {}, "lower-case letters"},
		{"st's own", "claude", func(*Description) {}, "st knows claude already"},
		{"no program", "toy", func(d *Description) { d.Program = "" }, `program is missing; write program = "my-agent"`},
		{"relative program", "toy", func(d *Description) { d.Program = "bin/toy" }, "is a relative path"},
		{"program read as env's", "toy", func(d *Description) { d.Program = "A=b" }, "no '=' in it"},
		{"option for a program", "toy", func(d *Description) { d.Program = "-i" }, "not a program's name"},
		{"st's own program", "toy", func(d *Description) { d.Program = "/opt/fork/bin/claude" }, "has the name of Claude Code's program"},
		{"no ready", "toy", func(d *Description) { d.Ready = nil }, "ready names no marker"},
		{"empty ready", "toy", func(d *Description) { d.Ready = []string{""} }, "ready names no marker"},
		{"empty busy", "toy", func(d *Description) { d.Busy = []string{"x", ""} }, "every line would match"},
		{"resume without id", "toy", func(d *Description) { d.Resume = []string{"--continue"} }, "resume has no {id}"},
		{"bad session form", "toy", func(d *Description) { d.SessionID = "[a-" }, "not a regular expression"},
		{"bad env name", "toy", func(d *Description) { d.Env = map[string]string{"A B": "1"} }, "not a variable's name"},
		{"bad key", "toy", func(d *Description) { d.Submit = "Enter; kill-server" }, "not a tmux key name"},
		{"bad delay", "toy", func(d *Description) { d.EnterDelay = "a while" }, `enter_delay = "150ms"`},
		{"unknown hooks", "toy", func(d *Description) { d.Hooks = "codex" }, `hooks = "codex" is not a kind of hooks`},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := whole()
			c.edit(&d)
			k, err := Describe(c.kind, d)
			var de *DescriptionError
			if !errors.As(err, &de) {
				t.Fatalf("Describe = %v, %v; want a DescriptionError", k, err)
			}
			if !strings.HasPrefix(err.Error(), "config.toml [agents."+c.kind+"]: ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error = %q, want the table and %q", err, c.want)
			}
		})
	}
}

// TestDescribedCommand: the window's argv is env with the description's
// variables, the program, its arguments, and the resume arguments with the
// id in place of {id}, only for an id of the described form.
func TestDescribedCommand(t *testing.T) {
	k, err := Describe("toy", Description{
		Program: "toy", Args: []string{"--plain"}, Env: map[string]string{"B": "2", "A": "one two"},
		Resume: []string{"--resume={id}"}, SessionID: "[a-z0-9]{6}", Ready: []string{"> "},
		Submit: "C-m", Interrupt: "C-c", EnterDelay: "20ms", Hooks: "claude",
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := k.Command(LaunchOptions{}), []string{"env", "A=one two", "B=2", "toy", "--plain"}; !slices.Equal(got, want) {
		t.Errorf("start = %q, want %q", got, want)
	}
	if got, want := k.Command(LaunchOptions{ResumeSession: "abc123"}), []string{"env", "A=one two", "B=2", "toy", "--plain", "--resume=abc123"}; !slices.Equal(got, want) {
		t.Errorf("resume = %q, want %q", got, want)
	}
	if got := k.Command(LaunchOptions{ResumeSession: "-rf /"}); slices.Contains(got, "--resume=-rf /") {
		t.Errorf("an id of another form went on the command line: %q", got)
	}
	if got := k.Hear.Resumed([]string{"toy", "--plain", "--resume=abc123"}); got != "abc123" {
		t.Errorf("Resumed = %q, want abc123", got)
	}
	if !k.HasHooks() || k.ScreenStates() || k.Hear.BeforeTool != "PreToolUse" || k.Screen.Submit != "C-m" || k.EnterDelay().Milliseconds() != 20 {
		t.Errorf("hooks = claude: %+v", k.Hear)
	}
	if slices.Contains(WithHooks(), k) {
		t.Error("st hooks install would write hooks for an agent the user wires by hand")
	}
}

// TestRecognizeByMarkers: the lowest line holding a marker says the
// screen; what follows the ready marker, wrapped or not, is the box.
func TestRecognizeByMarkers(t *testing.T) {
	rec := recognizeByMarkers([]string{"toy> "}, []string{"working on it"}, []string{"Allow this? [y/n]"})
	for _, c := range []struct {
		name, screen string
		want         View
	}{
		{"starting", "a toy agent\n\n", View{Screen: ScreenUnknown}},
		{"ready", "a toy agent\ntoy> \n\n\n", View{Screen: ScreenReady}},
		{"typed", "toy> count to three\n", View{Screen: ScreenTyped, Box: "count to three"}},
		{"wrapped", "toy> Your task is in the f\nile /tmp/t.md - read it\n", View{Screen: ScreenTyped, Box: "Your task is in the file /tmp/t.md - read it"}},
		{"working", "toy> count\nworking on it\n", View{Screen: ScreenWorking}},
		{"a box between rules", "──────\ntoy> count to\n  three\n──────\n  ? for shortcuts\n", View{Screen: ScreenTyped, Box: "count to  three"}},
		{"an empty box between rules", "──────\ntoy>\n──────\n  ? for shortcuts\n", View{Screen: ScreenReady}},
		{"asking", "toy> ask\nworking on it\nAllow this? [y/n]\n", View{Screen: ScreenPrompt}},
		{"an old question above the box", "Allow this? [y/n] y\nyou said y\ndone: ask\ntoy> \n", View{Screen: ScreenReady}},
		{"a question scrolled away", "Allow this? [y/n]\n" + strings.Repeat("output\n", markerWindow), View{Screen: ScreenUnknown}},
	} {
		if got := rec(c.screen); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// docExample is the config.toml example of docs/agents.md's section on
// an agent st does not know.
func docExample(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "agents.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(data), "## An agent st does not know")
	if !ok {
		t.Fatal("docs/agents.md has no section \"An agent st does not know\"")
	}
	m := regexp.MustCompile("(?s)```toml\n(.*?)```").FindStringSubmatch(sec)
	if m == nil {
		t.Fatal("the section has no ```toml example")
	}
	return []byte(m[1])
}

// TestDocsExampleDescribes: the example in docs/agents.md is a config.toml
// st takes, and it says what the page says it does.
func TestDocsExampleDescribes(t *testing.T) {
	ds, err := ParseDescriptions(docExample(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n, d := range ds {
		k, err := Describe(n, d)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		names = append(names, n+":"+map[bool]string{true: "screen", false: "hooks"}[k.ScreenStates()])
	}
	slices.Sort(names)
	if want := []string{"forked-claude:hooks", "repl-agent:screen"}; !slices.Equal(names, want) {
		t.Errorf("the example's agents = %q, want %q", names, want)
	}
}

// TestParseDescriptionsRefusesUnknownKeys: a misspelt key is a marker st
// would never look for: refused, by name.
func TestParseDescriptionsRefusesUnknownKeys(t *testing.T) {
	_, err := ParseDescriptions([]byte("web_port = 1\n[agents.toy]\nprogram = \"toy\"\nready_marker = [\"> \"]\n"))
	if err == nil || !strings.Contains(err.Error(), "[agents.toy]: st does not know the key ready_marker") {
		t.Errorf("err = %v", err)
	}
}
