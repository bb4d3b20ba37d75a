package daemon

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/sophonz/st/internal/agent"
)

// Who asked, on the socket. The agents run shell commands as the same
// user, so the socket's owner check does not tell a person from an agent;
// the caller's processes do. The daemon knows the caller's pid from the
// socket (SO_PEERCRED) and reads /proc (readCaller):
//
//   - an agent among the caller's parents (claude, codex, st's simulated
//     agent) makes it that agent's command; the pane among its parents
//     (a pane's first process) is the pane it acts as, whatever
//     $TMUX_PANE it claims;
//   - a Codex among its parents that runs in a sandbox (no Codex among
//     them started with --dangerously-bypass-approvals-and-sandbox or
//     danger-full-access: st cannot see the sandbox a config.toml picks,
//     so it fails closed) makes it a sandboxed Codex's command: the only
//     ones of those that reach the socket are the ones that left the
//     sandbox (escalated, or let out by st's rule). Measured with Codex
//     0.171.0: an escalated command and one the rule lets out run outside
//     the sandbox (no seccomp, no namespace) as children of the codex
//     binary, with CODEX_THREAD_ID and CODEX_TOOL_CALL_ID set (and
//     CODEX_SANDBOX_NETWORK_DISABLED=1 in a sandboxed session); its hooks
//     run there too, without the first two. Started with no --no-daemon,
//     Codex runs them from its background server (codex app-server), a
//     child of the TUI, in the pane. A background server that outlived
//     its TUI has no pane among its parents: st refuses what it would do
//     to panes, and codex --no-daemon (as st starts Codex workers) keeps
//     it from happening.
//
// Some requests are a person's to make (internal/authz PersonOnly): the
// answer to a decision gate, an offer of an agent to another machine,
// turning accept-remote on, seeing the web UI's token. For those the
// caller must also pass callerCheck:
//
//   - a caller that descends from an agent process (claude, codex, st's
//     simulated agent) is an agent's command;
//   - a caller whose controlling terminal is the terminal of a pane where
//     an agent runs now (the agent's own pane) is the agent's;
//   - the pane named by the request ($TMUX_PANE) runs an agent;
//   - the caller's environment carries an agent's marks (CLAUDECODE=1,
//     which Claude Code and st's simulated agent set for their tools'
//     commands; Codex's CODEX_MANAGED_BY_NPM or CODEX_SANDBOX*);
//   - a caller that left its parents and its terminal (a setsid'd,
//     orphaned process) cannot be told apart, so it is refused too.
//
// An agent that drives tmux itself (a new window, keys typed into a
// person's shell) is not caught here; the guard (st's PreToolUse hook)
// is a rail against it, and a sandbox the boundary.

// procInfo is what /proc tells of one process.
type procInfo struct {
	pid, ppid int
	tty       int // tty_nr: 0 for none
	argv      []string
	// start is when it started, in clock ticks since the machine's boot
	// (0: not told).
	start uint64
}

// procFS reads processes from a /proc folder (a fake one in tests).
type procFS struct{ root string }

var realProc = procFS{root: "/proc"}

func (p procFS) info(pid int) (procInfo, error) {
	dir := p.root + "/" + strconv.Itoa(pid) + "/"
	var buf [4096]byte
	stat, err := readProc(dir+"stat", buf[:0], true)
	if err != nil {
		return procInfo{}, err
	}
	// pid (comm) state ppid pgrp session tty_nr ...; comm may hold ')' and spaces.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return procInfo{}, fmt.Errorf("/proc/%d/stat: no command", pid)
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 5 {
		return procInfo{}, fmt.Errorf("/proc/%d/stat: too short", pid)
	}
	ppid, _ := strconv.Atoi(string(f[1]))
	tty, _ := strconv.Atoi(string(f[4]))
	var start uint64
	if len(f) > 19 {
		start, _ = strconv.ParseUint(string(f[19]), 10, 64)
	}
	cmd, _ := readProc(dir+"cmdline", buf[:0], false)
	argv := strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
	return procInfo{pid: pid, ppid: ppid, tty: tty, argv: argv, start: start}, nil
}

func (p procFS) environ(pid int) []string {
	b, err := readProc(p.root+"/"+strconv.Itoa(pid)+"/environ", nil, false)
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// readProc reads a file of /proc whole into buf (grown as needed), with
// the fewest system calls: open, read until the end, close. (os.ReadFile
// also asks the file's size twice, which /proc does not know: a third
// more calls, on every request that tells who asked.) line stops at the
// first read that ends in a newline: a one-line file such as stat, which
// the kernel hands over whole.
func readProc(path string, buf []byte, line bool) ([]byte, error) {
	fd, err := openProc(path)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	if cap(buf) == 0 {
		buf = make([]byte, 0, 4096)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n <= 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
		if line && buf[len(buf)-1] == '\n' {
			return buf, nil
		}
	}
}

// openProc opens a file of /proc to read.
func openProc(path string) (int, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// all lists every process that can be read.
func (p procFS) all() []procInfo {
	ents, err := os.ReadDir(p.root)
	if err != nil {
		return nil
	}
	var out []procInfo
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pi, err := p.info(pid); err == nil {
			out = append(out, pi)
		}
	}
	return out
}

// agentProgram names the agent that process runs ("" for none), as the
// kinds' descriptions tell their processes (agent.ByProcess). extra are
// program paths the user configured (ST_CLAUDE_BIN...).
func agentProgram(argv []string, extra map[string]string) string {
	return agent.ByProcess(argv, extra)
}

// agentMark is the first environment variable that only an agent's own
// commands carry (each kind's Launch.Marks), or "".
func agentMark(env []string) string { return agent.MarkIn(env) }

// callerCheck decides whether the process pid (the socket's peer) acts
// for an agent. panePID is the pid tmux started in the pane the request
// names (0 for none). It returns why, or "" for a person.
func callerCheck(p procFS, pid, panePID int, extra map[string]string) string {
	if pid <= 0 {
		return "st could not tell which process asked"
	}
	me, err := p.info(pid)
	if err != nil {
		return "st could not read the asking process"
	}
	// Its parents, up to the first process of all.
	cur := me
	for i := 0; i < 64 && cur.pid > 1; i++ {
		if kind := agentProgram(cur.argv, extra); kind != "" && cur.pid != pid {
			return fmt.Sprintf("it was run by an agent (%s, pid %d)", kind, cur.pid)
		}
		next, err := p.info(cur.ppid)
		if err != nil {
			break
		}
		cur = next
	}
	if mark := agentMark(p.environ(pid)); mark != "" {
		return fmt.Sprintf("it carries an agent's environment (%s)", strings.SplitN(mark, "=", 2)[0])
	}
	// Terminals where an agent runs now: its pane.
	ttys := map[int]string{}
	var paneTTY int
	if panePID > 0 {
		if pp, err := p.info(panePID); err == nil {
			paneTTY = pp.tty
		}
	}
	if me.tty != 0 || paneTTY != 0 {
		for _, o := range p.all() {
			if o.tty == 0 || (o.tty != me.tty && o.tty != paneTTY) {
				continue
			}
			if kind := agentProgram(o.argv, extra); kind != "" {
				ttys[o.tty] = fmt.Sprintf("%s, pid %d", kind, o.pid)
			}
		}
	}
	if a := ttys[me.tty]; me.tty != 0 && a != "" {
		return fmt.Sprintf("it runs on the terminal of an agent's pane (%s)", a)
	}
	if a := ttys[paneTTY]; paneTTY != 0 && a != "" {
		return fmt.Sprintf("it names the pane of an agent ($TMUX_PANE; %s)", a)
	}
	if me.tty == 0 && me.ppid == 1 {
		return "it left its parents and its terminal (a detached process)"
	}
	return ""
}

// caller is what /proc tells of the process that asked.
type caller struct {
	chain    []int    // its pid, then its parents' up to the first process
	starts   []uint64 // when each of chain started (procInfo.start)
	agent    string   // the agent among its parents: claude, codex, sim ("" for none)
	agentPID int
	// sandboxed: the agent is a Codex that runs in a sandbox (see above).
	sandboxed bool
	mark      string // an agent's environment variable it carries
	err       string // /proc could not be read
}

// why says how st told that the caller is an agent's.
func (c caller) why() string {
	switch {
	case c.err != "":
		return c.err
	case c.agent != "":
		return fmt.Sprintf("it was run by an agent (%s, pid %d)", c.agent, c.agentPID)
	case c.mark != "":
		return fmt.Sprintf("it carries an agent's environment (%s)", strings.SplitN(c.mark, "=", 2)[0])
	}
	return ""
}

// readCaller reads the caller pid's parents and environment.
func readCaller(p procFS, pid int, extra map[string]string) caller {
	if pid <= 0 {
		return caller{err: "st could not tell which process asked"}
	}
	me, err := p.info(pid)
	if err != nil {
		return caller{err: "st could not read the asking process"}
	}
	c := caller{}
	cur := me
	codex, free := false, false
	for i := 0; i < 64 && cur.pid > 1; i++ {
		c.chain, c.starts = append(c.chain, cur.pid), append(c.starts, cur.start)
		if kind := agentProgram(cur.argv, extra); kind != "" && cur.pid != pid {
			if c.agent == "" {
				c.agent, c.agentPID = kind, cur.pid
			}
			// Codex's background server (codex app-server, a child of the
			// TUI that started it) takes its sandbox from the TUI's flags.
			codex = codex || kind == "codex"
			free = free || (kind == "codex" && codexUnsandboxed(cur.argv))
		}
		next, err := p.info(cur.ppid)
		if err != nil {
			break
		}
		cur = next
	}
	c.sandboxed = codex && !free
	env := p.environ(pid)
	c.mark = agentMark(env)
	if c.agent == "" && codexEnv(env) {
		c.sandboxed = true // Codex's command, but its Codex is not among its parents: fail closed
	}
	return c
}

// codexEnv reports whether env carries what Codex sets for its commands.
func codexEnv(env []string) bool {
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if k == "CODEX_MANAGED_BY_NPM" || k == "CODEX_THREAD_ID" || k == "CODEX_TOOL_CALL_ID" || strings.HasPrefix(k, "CODEX_SANDBOX") {
			return true
		}
	}
	return false
}

// codexUnsandboxed reports whether a Codex process was started with no
// sandbox: --dangerously-bypass-approvals-and-sandbox (--yolo), or the
// danger-full-access sandbox by -s, --sandbox or -c sandbox_mode.
func codexUnsandboxed(argv []string) bool {
	for i, a := range argv {
		next := ""
		if i+1 < len(argv) {
			next = argv[i+1]
		}
		switch {
		case a == "--dangerously-bypass-approvals-and-sandbox", a == "--yolo":
			return true
		case (a == "-s" || a == "--sandbox") && next == "danger-full-access",
			a == "--sandbox=danger-full-access", a == "-sdanger-full-access":
			return true
		case (a == "-c" || a == "--config") && strings.HasPrefix(strings.TrimSpace(next), "sandbox_mode") &&
			strings.Contains(next, "danger-full-access"):
			return true
		}
	}
	return false
}
