//go:build realclients

package plugin

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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
		// It names the file under an alias of the skills folder ("r0/").
		if !strings.Contains(text, "/"+name+"/SKILL.md)") {
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
	// tmux -S does not make the socket's folder.
	if err := os.MkdirAll(filepath.Dir(tm.Socket), 0o700); err != nil {
		t.Fatal(err)
	}
	args := []string{"-f", "/dev/null", "new-session", "-d", "-s", "menu", "-x", "200", "-y", "50", "-c", work,
		"env", "-i", "TERM=xterm-256color", "LANG=C.UTF-8"}
	args = append(args, c.Env...)
	args = append(args, c.ClaudeBin, "--permission-mode", "default")
	if _, err := tm.Run(args...); err != nil {
		t.Fatal(err)
	}
	out, err := tm.Run("display-message", "-p", "-t", "menu", "#{pane_pid}")
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("pane pid %q: %v", out, err)
	}
	// Claude writes into its HOME until it exits: let it end before the
	// temporary folders go. Escape closes the menu; Ctrl-C clears the box,
	// and twice more quits; killing the window is the fallback.
	t.Cleanup(func() {
		tm.Run("send-keys", "-t", "menu", "Escape")
		for i := 0; i < 5 && !exited(pid, 700*time.Millisecond); i++ {
			tm.Run("send-keys", "-t", "menu", "C-c")
		}
		if !exited(pid, time.Second) {
			t.Logf("claude did not quit on Ctrl-C; killing its window")
			tm.Run("kill-window", "-t", "menu")
			if !exited(pid, 10*time.Second) {
				t.Errorf("claude (pid %d) did not exit", pid)
			}
		}
	})
	screen := func() string {
		out, err := tm.Run("capture-pane", "-p", "-t", "menu")
		if err != nil {
			return "capture-pane: " + err.Error()
		}
		return strings.ReplaceAll(out, "\u00a0", " ")
	}
	// The input box, empty and ready (its footer back to the shortcuts hint).
	testutil.WaitFor(t, 90*time.Second, func() (bool, string) {
		s := screen()
		text, ok := boxText(s)
		return ok && text == "" && strings.Contains(s, "for shortcuts"), "no empty input box:\n" + s
	})
	// Type /sophonz once. Keys typed while Claude is still starting may be
	// dropped, or drawn late: type again only after the box stayed empty
	// for a while, and start over (Ctrl-U) if the box holds anything else.
	// Both of the plugin's commands are in the menu.
	var sent time.Time
	testutil.WaitFor(t, 60*time.Second, func() (bool, string) {
		s := screen()
		if strings.Contains(s, "/sophonz:orchestrate") && strings.Contains(s, "/sophonz:worker") {
			return true, ""
		}
		text, ok := boxText(s)
		switch {
		case ok && text == "" && time.Since(sent) > 5*time.Second:
			tm.Run("send-keys", "-t", "menu", "-l", "/sophonz")
			sent = time.Now()
		case ok && text != "" && text != "/sophonz":
			tm.Run("send-keys", "-t", "menu", "C-u")
			sent = time.Time{}
		}
		return false, "the menu does not list both /sophonz:orchestrate and /sophonz:worker:\n" + s
	})
}

// exited waits until the process pid is gone.
func exited(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if syscall.Kill(pid, 0) != nil {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// boxText is the text in Claude's input box: the line that starts with ❯
// right under a rule (no-break spaces already made spaces).
func boxText(screen string) (string, bool) {
	lines := strings.Split(screen, "\n")
	for i := 1; i < len(lines); i++ {
		if after, ok := strings.CutPrefix(lines[i], "❯"); ok && strings.HasPrefix(lines[i-1], "─") {
			return strings.TrimSpace(after), true
		}
	}
	return "", false
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
