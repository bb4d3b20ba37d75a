package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A user's status line is drawn under Claude's box, over its mode line, as
// many lines as the command prints, each two columns in (Claude Code
// 2.1.332, captured by tests/real TestRealTallStatusLine into
// testdata/statusline). The box must still be found under it, and the
// screens that replace the box must not be taken for it.

// TestTallStatusLineFixtures reads the screens of the real Claude with a
// tall status line: claude-VERSION-STATE-LINES.txt.
func TestTallStatusLineFixtures(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "statusline", "claude-*.txt"))
	if len(files) == 0 {
		t.Fatal("no captured screens under testdata/statusline")
	}
	want := map[string]Screen{"typed": ScreenTyped, "ready": ScreenReady, "working": ScreenWorking}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			parts := strings.Split(strings.TrimSuffix(filepath.Base(f), ".txt"), "-")
			if len(parts) != 4 {
				t.Fatalf("name %s: want claude-VERSION-STATE-LINES.txt", f)
			}
			w, ok := want[parts[2]]
			if !ok {
				t.Fatalf("state %q of %s: want one of typed, ready, working", parts[2], f)
			}
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(raw), fmt.Sprintf("  status %s of %s\n", parts[3], parts[3])) {
				t.Fatalf("%s does not show a status line of %s lines", f, parts[3])
			}
			v := recognizeClaudeLike(string(raw))
			if v.Screen != w {
				t.Errorf("read as %v, want %v:\n%s", v.Screen, w, plainScreen(string(raw)))
			}
			if w == ScreenTyped && !strings.HasPrefix(v.Box, "Your task is in the file") {
				t.Errorf("box %q, want the task line", v.Box)
			}
		})
	}
}

// statusLines is a user's status line of n lines as Claude draws it.
func statusLines(n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, fmt.Sprintf("  status %d of %d", i, n))
	}
	return out
}

func TestRecognizeTallStatusLine(t *testing.T) {
	join := func(parts ...[]string) string {
		var all []string
		for _, p := range parts {
			all = append(all, p...)
		}
		return screen(all...)
	}
	box := []string{rule, "❯\u00a0", rule}
	cases := []struct {
		name    string
		capture string
		want    Screen
	}{
		{"ready, 1 line", join([]string{"● Hi."}, box, statusLines(1), []string{"  ⏸ manual mode on · ? for shortcuts"}), ScreenReady},
		{"ready, 6 lines", join([]string{"● Hi."}, box, statusLines(6), []string{"  ⏸ manual mode on · ? for shortcuts"}), ScreenReady},
		{"ready, 40 lines", join(box, statusLines(40), []string{"  ⏸ manual mode on"}), ScreenReady},
		{"typed, 6 lines", join([]string{rule, "❯\u00a0do it"}, []string{rule}, statusLines(6), []string{"  ⏸ manual mode on"}), ScreenTyped},
		{"working, 6 lines", join([]string{"✽ Whirlpooling…"}, box, statusLines(6), []string{"  esc to interrupt"}), ScreenWorking},
		// Past any screen's height: old text.
		{"status line of 100 lines", join(box, statusLines(100)), ScreenUnknown},
		// The transcript under an old box-like drawing is not indented
		// as a footer is.
		{"transcript under a box", join(box, []string{"● Hello.", "", "✻ Brewed for 1s"}, statusLines(6)), ScreenUnknown},
		// Dialogs that replace the box, under a box-like drawing of the
		// transcript, with the status line still drawn under them.
		{"permission under a box", join(box, []string{rule, " Bash command", "", "   echo hi > perm.txt", "", " Do you want to proceed?",
			" ❯ 1. Yes", "   2. No", "", " Esc to cancel · Tab to amend"}, statusLines(6)), ScreenPrompt},
		{"question under a box", join(box, []string{rule, " ☐ Question", "Which colour?", "❯ 1. Yes", "  2. No", rule,
			"Enter to select · ↑/↓ to navigate · Esc to cancel"}, statusLines(6)), ScreenPrompt},
		{"trust under a box", join(box, []string{"Accessing workspace:", "", " Quick safety check: Is this a project you created or one you trust?",
			" ❯ No, exit", "   Yes, I trust this folder", "", " Enter to confirm · Esc to cancel"}), ScreenTrust},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := recognizeClaudeLike(c.capture); got.Screen != c.want {
				t.Errorf("read as %v, want %v:\n%s", got.Screen, c.want, c.capture)
			}
		})
	}
}
