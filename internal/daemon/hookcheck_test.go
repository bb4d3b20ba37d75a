package daemon

import "testing"

// TestReadHookSender (issue 31, item 1): a hook event about a pane is
// taken only from a process whose parents include that pane's first
// process; the conversation its agent resumed is read from the agent's
// own command line, between the hook and the pane, never from outside.
func TestReadHookSender(t *testing.T) {
	const ses = "0702c391-a443-4834-b5f7-d2e1fad9f3cd"
	p := fakeProcFS(t, map[int]fakeProcess{
		1:  {argv: []string{"/sbin/init"}},
		50: {ppid: 1, argv: []string{"tmux"}},
		// Pane A (first process 60): a Claude started to resume ses, and
		// the hook it runs.
		60: {ppid: 50, argv: []string{"bash"}},
		61: {ppid: 60, argv: []string{"claude", "--permission-mode", "default", "--resume=" + ses}},
		62: {ppid: 61, argv: []string{"/bin/sh", "-c", "st hook claude SessionStart"}},
		63: {ppid: 62, argv: []string{"st", "hook", "claude", "SessionStart"}},
		// Pane B (first process 70): a Codex started fresh, with no
		// daemon (its hooks are its children), and a sim as the pane's
		// first process.
		70: {ppid: 50, argv: []string{"/x/codex", "--no-daemon"}},
		71: {ppid: 70, argv: []string{"st", "hook", "codex", "SessionStart"}},
		80: {ppid: 50, argv: []string{"/usr/bin/st", "agent", "sim", "--resume", "sim-1"}},
		81: {ppid: 80, argv: []string{"st", "hook", "sim", "SessionStart"}},
		// A Codex background server that outlived its TUI: no pane.
		90: {ppid: 1, argv: []string{"/h/.codex/bin/codex", "app-server"}},
		91: {ppid: 90, argv: []string{"st", "hook", "codex", "Stop"}},
		// A process that calls itself a resuming Claude, outside any pane,
		// whose child claims pane A.
		95: {ppid: 1, argv: []string{"claude", "--resume", ses}},
		96: {ppid: 95, argv: []string{"st", "hook", "claude", "SessionStart"}},
	})
	for _, c := range []struct {
		name         string
		pid, panePID int
		kind         string
		inPane       bool
		resumed      string
	}{
		{"Claude's hook, in its pane", 63, 60, "claude", true, ses},
		{"Claude's hook, about another pane", 63, 70, "claude", false, ""},
		{"Codex's hook (no --no-daemon's resume)", 71, 70, "codex", true, ""},
		{"the sim's hook, the sim the pane's first process", 81, 80, "sim", true, "sim-1"},
		{"a hook of another kind than its agent", 81, 80, "claude", true, ""},
		{"a Codex server that outlived its pane", 91, 70, "codex", false, ""},
		{"a resuming agent outside the pane", 96, 60, "claude", false, ""},
		{"a pane st cannot find", 63, 0, "claude", false, ""},
		{"a process st cannot read", 4242, 60, "claude", false, ""},
		{"no process", 0, 60, "claude", false, ""},
	} {
		hs, _ := readHookSender(p, c.pid, c.panePID, c.kind, nil)
		if hs.inPane != c.inPane || hs.resumed != c.resumed {
			t.Errorf("%s: in its pane %v, resumed %q; want %v, %q", c.name, hs.inPane, hs.resumed, c.inPane, c.resumed)
		}
	}
}
