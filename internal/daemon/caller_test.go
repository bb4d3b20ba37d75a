package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeProc writes a /proc of a few processes: pid -> (ppid, tty, argv, env).
type fakeProcess struct {
	ppid, tty int
	argv, env []string
}

func fakeProcFS(t *testing.T, ps map[int]fakeProcess) procFS {
	root := t.TempDir()
	for pid, p := range ps {
		dir := filepath.Join(root, fmt.Sprint(pid))
		os.MkdirAll(dir, 0o700)
		comm := filepath.Base(p.argv[0])
		// pid (comm) state ppid pgrp session tty_nr ...; a comm with ") " in it
		// must not shift the fields.
		stat := fmt.Sprintf("%d (%s) S %d %d %d %d -1 4194560 0 0", pid, comm+") x", p.ppid, pid, pid, p.tty)
		os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o600)
		os.WriteFile(filepath.Join(dir, "cmdline"), []byte(strings.Join(p.argv, "\x00")+"\x00"), 0o600)
		os.WriteFile(filepath.Join(dir, "environ"), []byte(strings.Join(p.env, "\x00")+"\x00"), 0o600)
	}
	return procFS{root: root}
}

// TestCallerCheck (issue 12, item 9): who is a person. The tmux server
// (50) runs a person's shell in pane A (tty 1) and an agent in pane B
// (tty 2, pane pid 60); a third pane C (tty 3) has a shell that once ran
// an agent.
func TestCallerCheck(t *testing.T) {
	base := map[int]fakeProcess{
		1:   {argv: []string{"/sbin/init"}},
		50:  {ppid: 1, argv: []string{"tmux", "-S", "/tmp/s"}},
		40:  {ppid: 50, tty: 1, argv: []string{"-bash"}},                                          // pane A
		60:  {ppid: 50, tty: 2, argv: []string{"bash"}},                                           // pane B
		61:  {ppid: 60, tty: 2, argv: []string{"/home/u/.local/bin/claude", "--permission-mode"}}, // its agent
		62:  {ppid: 61, tty: 2, argv: []string{"/bin/bash", "-c", "st gate answer g yes"}},
		70:  {ppid: 50, tty: 3, argv: []string{"sh"}}, // pane C
		80:  {ppid: 50, tty: 4, argv: []string{"node", "/usr/lib/node_modules/@openai/codex/bin/codex.js"}},
		81:  {ppid: 80, tty: 4, argv: []string{"/x/codex", "--no-daemon"}},
		90:  {ppid: 50, tty: 5, argv: []string{"/usr/bin/st", "agent", "sim"}},
		100: {ppid: 40, tty: 1, argv: []string{"st", "gate", "answer"}},                       // a person in A
		101: {ppid: 62, tty: 2, argv: []string{"st", "gate", "answer"}},                       // claude's Bash tool
		102: {ppid: 1, tty: 2, argv: []string{"st", "gate", "answer"}},                        // setsid'd from B, kept its tty
		103: {ppid: 1, tty: 0, argv: []string{"st", "gate", "answer"}},                        // setsid -f, no tty
		104: {ppid: 70, tty: 3, argv: []string{"st", "gate", "answer"}, env: []string{"A=1"}}, // a person in C
		105: {ppid: 70, tty: 3, argv: []string{"st", "gate", "answer"}, env: []string{"CLAUDECODE=1"}},
		106: {ppid: 81, tty: 4, argv: []string{"st", "gate", "answer"}},
		107: {ppid: 90, tty: 5, argv: []string{"st", "gate", "answer"}},
		108: {ppid: 70, tty: 3, argv: []string{"st", "gate", "answer"}, env: []string{"CODEX_MANAGED_BY_NPM=1"}},
		109: {ppid: 1, tty: 0, argv: []string{"st", "gate", "answer"}, env: []string{"HOME=/root"}},
	}
	p := fakeProcFS(t, base)
	for _, c := range []struct {
		name         string
		pid, panePID int
		want         string // "" for a person
	}{
		{"a person at a shell in a tmux pane", 100, 40, ""},
		{"a person in a pane that ran an agent once", 104, 70, ""},
		{"a person naming no pane", 100, 0, ""},
		{"Claude's Bash tool", 101, 60, "it was run by an agent (claude, pid 61)"},
		{"Claude's Bash tool with TMUX_PANE unset", 101, 0, "it was run by an agent (claude, pid 61)"},
		{"detached but on the agent's terminal", 102, 0, "it runs on the terminal of an agent's pane (claude, pid 61)"},
		{"detached, no terminal, naming the agent's pane", 103, 60, "it names the pane of an agent"},
		{"detached, no terminal, naming nothing", 109, 0, "a detached process"},
		{"an agent's environment", 105, 70, "CLAUDECODE"},
		{"Codex's environment", 108, 70, "CODEX_MANAGED_BY_NPM"},
		{"Codex's tool command", 106, 0, "it was run by an agent (codex, pid 81)"},
		{"the sim's command", 107, 0, "it was run by an agent (sim, pid 90)"},
		{"a person's shell naming the agent's pane", 100, 60, "it names the pane of an agent"},
		{"no pid", 0, 0, "could not tell"},
		{"a pid that is gone", 999, 0, "could not read"},
	} {
		got := callerCheck(p, c.pid, c.panePID, nil)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	// A program the user configured as the agent (ST_CLAUDE_BIN).
	p2 := fakeProcFS(t, map[int]fakeProcess{
		1:  {argv: []string{"/sbin/init"}},
		10: {ppid: 1, tty: 7, argv: []string{"/opt/my-claude-wrapper"}},
		11: {ppid: 10, tty: 7, argv: []string{"st", "gate", "answer"}},
	})
	if got := callerCheck(p2, 11, 0, map[string]string{"claude": "/opt/my-claude-wrapper"}); !strings.Contains(got, "claude, pid 10") {
		t.Errorf("a configured agent program: %q", got)
	}
}

// TestReadCaller (issue 23): who asked, for internal/authz. The agent
// among a caller's parents, and whether it is a Codex in a sandbox (any
// Codex not started without one: st cannot see a config.toml's choice, so
// it fails closed), and the parents a pane is found among.
func TestReadCaller(t *testing.T) {
	p := fakeProcFS(t, map[int]fakeProcess{
		1:  {argv: []string{"/sbin/init"}},
		50: {ppid: 1, argv: []string{"tmux"}},
		// A Codex in its default sandbox, its launcher and binary.
		60: {ppid: 50, tty: 2, argv: []string{"node", "/x/node_modules/.bin/codex", "--no-daemon", "-s", "workspace-write", "-a", "on-request"}},
		61: {ppid: 60, tty: 2, argv: []string{"/x/vendor/bin/codex", "--no-daemon", "-s", "workspace-write", "-a", "on-request"}},
		62: {ppid: 61, tty: 2, argv: []string{"/usr/bin/st", "worker", "send", "w1", "x"},
			env: []string{"CODEX_THREAD_ID=01a2", "CODEX_TOOL_CALL_ID=call_1", "CODEX_SANDBOX_NETWORK_DISABLED=1"}},
		// A Codex with no sandbox, through its background server.
		70: {ppid: 50, tty: 3, argv: []string{"/x/codex", "--dangerously-bypass-approvals-and-sandbox"}},
		74: {ppid: 70, tty: 3, argv: []string{"/h/.codex/packages/app-server-daemon/releases/0.171.0/bin/codex", "app-server"}},
		71: {ppid: 74, tty: 3, argv: []string{"st", "worker", "send"}, env: []string{"CODEX_THREAD_ID=01a2"}},
		// A sandboxed one, through its background server.
		75: {ppid: 61, tty: 2, argv: []string{"/h/.codex/packages/app-server-daemon/releases/0.171.0/bin/codex", "app-server"}},
		76: {ppid: 75, tty: 2, argv: []string{"st", "worker", "send"}, env: []string{"CODEX_THREAD_ID=01a2"}},
		72: {ppid: 50, tty: 4, argv: []string{"/x/codex", "-c", `sandbox_mode="danger-full-access"`}},
		73: {ppid: 72, tty: 4, argv: []string{"st", "status"}},
		// A Codex command that left its parents, and Claude's.
		80: {ppid: 1, argv: []string{"st", "worker", "send"}, env: []string{"CODEX_TOOL_CALL_ID=call_2"}},
		90: {ppid: 50, tty: 5, argv: []string{"claude"}},
		91: {ppid: 90, tty: 5, argv: []string{"bash", "-c", "st worker send w1 x"}},
		92: {ppid: 91, tty: 5, argv: []string{"st", "worker", "send", "w1", "x"}, env: []string{"CLAUDECODE=1"}},
		// A person at a shell.
		40: {ppid: 50, tty: 1, argv: []string{"-bash"}},
		41: {ppid: 40, tty: 1, argv: []string{"st", "worker", "send"}},
	})
	for _, c := range []struct {
		name      string
		pid       int
		agent     string
		sandboxed bool
		chain     []int
	}{
		{"a sandboxed Codex's escalated command", 62, "codex", true, []int{62, 61, 60, 50}},
		{"a Codex with no sandbox, through its server", 71, "codex", false, []int{71, 74, 70, 50}},
		{"a sandboxed Codex, through its server", 76, "codex", true, []int{76, 75, 61, 60, 50}},
		{"a Codex with danger-full-access", 73, "codex", false, []int{73, 72, 50}},
		{"a Codex command that left its parents", 80, "", true, []int{80}},
		{"Claude's Bash tool", 92, "claude", false, []int{92, 91, 90, 50}},
		{"a person", 41, "", false, []int{41, 40, 50}},
	} {
		got := readCaller(p, c.pid, nil)
		if got.agent != c.agent || got.sandboxed != c.sandboxed || fmt.Sprint(got.chain) != fmt.Sprint(c.chain) {
			t.Errorf("%s: %+v, want agent %q sandboxed %v chain %v", c.name, got, c.agent, c.sandboxed, c.chain)
		}
	}
	if got := readCaller(p, 0, nil); got.err == "" {
		t.Error("no pid: no error")
	}
	if got := readCaller(p, 999, nil); got.err == "" {
		t.Error("a gone pid: no error")
	}
}

// readProc reads a /proc file whole however long (a command line of
// many arguments is longer than its first buffer), stops a one-line file
// at its newline, and says which file it could not open.
func TestReadProcWhole(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("an-argument\x00", 2000) // 24,000 bytes
	os.WriteFile(filepath.Join(dir, "cmdline"), []byte(long), 0o600)
	got, err := readProc(filepath.Join(dir, "cmdline"), nil, false)
	if err != nil || string(got) != long {
		t.Fatalf("readProc of a %d-byte file: %d bytes, %v", len(long), len(got), err)
	}
	var buf [16]byte
	os.WriteFile(filepath.Join(dir, "stat"), []byte("7 (sh) S 1 7 7 0\n"), 0o600)
	if got, err := readProc(filepath.Join(dir, "stat"), buf[:0], true); err != nil || string(got) != "7 (sh) S 1 7 7 0\n" {
		t.Fatalf("readProc of a line: %q, %v", got, err)
	}
	_, err = readProc(filepath.Join(dir, "nosuch"), nil, false)
	if !os.IsNotExist(err) || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("readProc of a missing file: %v", err)
	}
	// The real /proc: this process's own stat names it, and its command
	// line is what os.Args says.
	me, err := realProc.info(os.Getpid())
	if err != nil || me.ppid != os.Getppid() || strings.Join(me.argv, " ") != strings.Join(os.Args, " ") {
		t.Errorf("info of this process: %+v, %v (ppid %d, args %q)", me, err, os.Getppid(), os.Args)
	}
}
