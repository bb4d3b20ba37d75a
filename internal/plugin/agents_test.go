package plugin

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/testutil/realagent"
)

// The real Codex parses the skills' frontmatter and offers both skills,
// with their descriptions, to its model: `codex debug prompt-input`
// prints what the model would be given, offline.
func TestCodexListsSkills(t *testing.T) {
	t.Parallel()
	_, codex := realagent.Binaries(t)
	c := testConfig(t)
	if _, _, err := writeFiles(byAgent(mustRender(t, c), Codex)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, codex, "debug", "prompt-input", "hello")
	cmd.Env = []string{"HOME=" + c.Home, "CODEX_HOME=" + c.CodexHome, "PATH=/usr/local/bin:/usr/bin:/bin"}
	cmd.Dir = c.Home
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("codex debug prompt-input: %v\n%s", err, out)
	}
	text := string(out)
	for _, name := range []string{CodexOrchestrate, CodexWorker} {
		desc := orchestrateDescription
		if name == CodexWorker {
			desc = workerDescription
		}
		// The JSON escapes nothing in the descriptions' first words.
		want := name + ": " + desc[:40]
		if !strings.Contains(text, want) {
			t.Errorf("codex does not offer the skill %q:\n%.3000s", want, text)
		}
		if !strings.Contains(text, filepath.Join(c.CodexHome, "skills", name, "SKILL.md")) {
			t.Errorf("codex does not name the file of %s", name)
		}
	}
}

// A real Claude Code started with the installed plugin shows
// /sophonz:orchestrate in its slash menu. It runs in a private tmux
// server; no prompt is sent, so the model's address is a closed port.
func TestClaudeMenuShowsCommand(t *testing.T) {
	t.Parallel()
	c := realConfig(t)
	work := t.TempDir()
	env := realagent.ClaudeHome(t, c.Home, "http://"+closedAddr(t), work)
	c.Env = append(env, "PATH=/usr/local/bin:/usr/bin:/bin")
	if _, err := Install(t.Context(), c); err != nil {
		t.Fatalf("install: %v", err)
	}

	tm := testutil.NewTmux(t, testutil.ShortTempDir(t))
	args := []string{"new-session", "-d", "-s", "menu", "-x", "200", "-y", "50", "-c", work,
		"env", "-i", "TERM=xterm-256color", "LANG=C.UTF-8"}
	args = append(args, c.Env...)
	args = append(args, c.ClaudeBin, "--permission-mode", "default")
	if _, err := tm.Run(args...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tm.Run("kill-window", "-t", "menu") })
	screen := func() string {
		out, err := tm.Run("capture-pane", "-p", "-t", "menu")
		if err != nil {
			return "capture-pane: " + err.Error()
		}
		return strings.ReplaceAll(out, "\u00a0", " ")
	}
	// The empty input box: ❯ and a no-break space at column 0.
	testutil.WaitFor(t, 90*time.Second, func() (bool, string) {
		s := screen()
		return emptyBox(s), "no empty input box:\n" + s
	})
	// Type /sophonz; the box may ignore keys for a moment after it
	// appears, so type again while it stays empty.
	var sent time.Time
	testutil.WaitFor(t, 60*time.Second, func() (bool, string) {
		s := screen()
		if strings.Contains(s, "/sophonz:orchestrate") {
			return true, ""
		}
		if emptyBox(s) && time.Since(sent) > 2*time.Second {
			tm.Run("send-keys", "-t", "menu", "-l", "/sophonz")
			sent = time.Now()
		}
		return false, "the menu does not list /sophonz:orchestrate:\n" + s
	})
	s := screen()
	if !strings.Contains(s, "/sophonz:worker") {
		t.Logf("the menu does not show /sophonz:worker as well:\n%s", s)
	}
	// Leave: close the menu, then Ctrl-C twice; the window goes either way.
	tm.Run("send-keys", "-t", "menu", "Escape")
	tm.Run("send-keys", "-t", "menu", "C-c")
	tm.Run("send-keys", "-t", "menu", "C-c")
}

// emptyBox reports Claude's empty input line on a screen (no-break
// spaces already made spaces).
func emptyBox(screen string) bool {
	for _, l := range strings.Split(screen, "\n") {
		if strings.TrimRight(l, " ") == "❯" {
			return true
		}
	}
	return false
}

// closedAddr is a 127.0.0.1 address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestMain(m *testing.M) {
	// Tests must never reach a tmux server they did not start.
	os.Unsetenv("TMUX")
	os.Unsetenv("TMUX_PANE")
	os.Exit(m.Run())
}
