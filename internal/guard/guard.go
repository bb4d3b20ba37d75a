// Package guard decides whether a Bash command an agent is about to run
// may stop the tmux server the agent runs in. st's PreToolUse hook asks it
// for Claude Code and Codex alike (both block the call when the hook
// answers "deny"), so that no worker and no coordinator takes every other
// agent down with one `tmux kill-server` or `pkill tmux`.
//
// The guard is a set of rules over the facts internal/shell reads from the
// command (the programs that may run, their arguments, where each word
// comes from). It judges what a command may do, not what it most likely
// does: a word in a program's place, or in tmux's command's place, that
// st cannot know is refused with a reason that says how to write it
// plainly; so is text st cannot read that a shell runs, and a command past
// the reader's bounds or one it cannot parse. It refuses only what may
// reach the agent's own server (or every process): a command that names a
// different server passes.
//
// Where a verdict depends on the server itself (is this session its last?
// is this pid its own or its last pane's?), the guard asks it, read-only,
// through Context.Ask (the hook asks st's daemon, which drives that server),
// and refuses when it cannot.
// It also refuses st run where st's person check cannot see the agent:
// in what the tmux server, at, cron, ssh or systemd run for it.
//
// The guard is a rail against accidents, not a boundary: an agent running
// as the same user can go around it with a program of its own.
package guard

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/sophonz/st/internal/shell"
	"github.com/sophonz/st/internal/tmuxenv"
)

// Context is what the hook knows about where the agent runs.
type Context struct {
	TmuxSocket string // $TMUX of the agent: socket,pid,index ("" when not in tmux)
	TmuxTmpdir string // $TMUX_TMPDIR ("" = /tmp)
	Pane       string // $TMUX_PANE: the agent's own pane (%3), which it may not type into; "" when unknown
	UID        int
	Cwd        string // the agent's folder ("" when unknown)
	// Ask reads the agent's own server (its socket's path), read-only,
	// when a verdict depends on it: the hook asks st's daemon. nil: the guard
	// cannot ask, and refuses what only the answer could let through.
	Ask func(socket string) (Server, error)
}

// stopWords are what the crude check looks for in text the parse did not
// account for.
var stopWords = []string{"tmux", "kill", "fuser"}

// Check returns a non-empty reason when command may stop the agent's tmux
// server.
func Check(command string, g Context) string {
	if len(command) > shell.MaxText {
		return cannotCheck(fmt.Sprintf("it is %d bytes; st checks commands of at most %d", len(command), shell.MaxText))
	}
	ch := newChecker(g)
	s := shell.Read(command, ch.env())
	ch.script = s
	if r := ch.cmds(s.Cmds); r != "" {
		return r
	}
	if s.Err != nil {
		if pe, ok := s.Err.(*shell.ParseError); ok {
			return "st guard: st cannot read this command as bash would (" + pe.Error() +
				"), and a command it cannot read could stop the tmux server this agent runs in. Fix its syntax, or write it more plainly."
		}
		return cannotCheck(s.Err.Error())
	}
	if w, ok := s.Unexplained(stopWords...); ok {
		return fmt.Sprintf("st guard: this command holds %q where bash may read it otherwise than st does "+
			"(a here-document delimiter or a comment bash reads differently), so it could stop the tmux server this agent runs in. "+
			"Write here-documents plainly: <<'EOF' followed by a newline.", w)
	}
	return ""
}

func cannotCheck(what string) string {
	return "st guard: st cannot check this command (" + what + "), and a command it cannot check could stop the tmux server " +
		"this agent runs in. Split it into smaller commands, or write long text to a file with your edit tool first."
}

// refuse is the reason for a command that stops the server.
func refuse(detail string) string {
	return "st guard: this command would stop the tmux server this agent runs in (" + detail +
		"); other agents and their work live there. Stop only what you started, by its pid or pane."
}

const unknownPrefix = "st guard: st cannot tell what this command runs ("

// unknown is the reason for a command that may: st cannot tell.
func unknown(detail, advice string) string {
	return unknownPrefix + detail + "), and it could stop the tmux server " +
		"this agent runs in. " + advice
}

const adviceName = "Write the program's name and tmux's command plainly in the command, not through a variable, a substitution or a pattern."
const adviceText = "Write the commands plainly; pass values to sh -c as arguments (sh -c 'cmd \"$1\"' sh \"$X\") rather than inside its text."

// checker holds what one check knows.
type checker struct {
	g      Context
	uid    string
	ours   string // cleaned socket path of the agent's server
	real   string // the same with symbolic links resolved, when it exists
	script *shell.Script
	links  []shell.Write // links made so far by the command

	asked  bool // the server was asked (facts)
	srv    Server
	srvErr error
	kills  [][][]string // what the command's kills may end: per kill, its candidates' panes
}

func newChecker(g Context) *checker {
	ch := &checker{g: g, uid: strconv.Itoa(g.UID)}
	sock := tmuxenv.Socket(g.TmuxSocket)
	tmpdir := g.TmuxTmpdir
	if tmpdir == "" {
		tmpdir = "/tmp"
	}
	if sock != "" {
		ch.ours = path.Clean(sock)
	} else {
		ch.ours = path.Join(tmpdir, "tmux-"+ch.uid, "default")
	}
	if r, err := realPath(ch.ours); err == nil {
		ch.real = r
	}
	return ch
}

func (ch *checker) env() shell.Env {
	e := shell.Env{Cwd: ch.g.Cwd, Vars: map[string]string{"UID": ch.uid, "EUID": ch.uid}, ReadFile: readScript}
	if ch.g.TmuxSocket != "" {
		e.Vars["TMUX"] = ch.g.TmuxSocket
		if ch.g.Pane != "" {
			e.Vars["TMUX_PANE"] = ch.g.Pane
		}
	} else {
		e.Unset = append(e.Unset, "TMUX")
	}
	if ch.g.TmuxTmpdir != "" {
		e.Vars["TMUX_TMPDIR"] = ch.g.TmuxTmpdir
	} else {
		e.Unset = append(e.Unset, "TMUX_TMPDIR")
	}
	return e
}

func (ch *checker) cmds(cmds []*shell.Cmd) string {
	for _, c := range cmds {
		r := ch.cmd(c)
		if r != "" && c.File != "" && strings.HasPrefix(r, unknownPrefix) {
			// A script on disk: st refuses what it surely does, not what
			// it may (an rc file may well hold an eval st cannot read).
			continue
		}
		if r != "" {
			return r
		}
	}
	return ""
}

// readScript reads a script on disk that a command runs: a regular file
// of at most 64 KiB.
func readScript(p string) ([]byte, bool) {
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 64<<10 {
		return nil, false
	}
	data, err := os.ReadFile(p)
	return data, err == nil
}

// cmd judges one command.
func (ch *checker) cmd(c *shell.Cmd) string {
	if c.Text != nil {
		advice := adviceText
		if detachedVia(c) != "" {
			advice += " What " + via(c) + " runs runs outside this agent's processes, where " + whose
		}
		return unknown(fmt.Sprintf("%s runs shell text st cannot read: %s", via(c), show(c.Text.String())), advice)
	}
	if r := ch.writes(c); r != "" {
		return r
	}
	if len(c.Args) == 0 {
		return ""
	}
	if c.Made {
		return unknown(fmt.Sprintf("%s runs %s, a file this command itself writes", quote(showCmd(c)), show(c.Args[0].String())),
			"Write the file in one command and run it in the next.")
	}
	name := c.Name()
	if name == "" {
		// $HOME/bin/tmux: the folder is not known, the program is.
		if base, ok := c.Args[0].Base().Known(); ok && (base == "tmux" || killers[base] != nil || shell.Interpreter(base) != "") {
			name = base
		}
	}
	if real := ch.programOnDisk(c); real != "" && real != name {
		// A link to tmux (or a copy of it) under another name.
		c = renamed(c, real)
		name = real
	}
	if via := detachedVia(c); via != "" {
		if r := stOutside(c, name, via); r != "" {
			return r
		}
	}
	if name == "" {
		if ch.riskyProgram(c.Args[0]) {
			return unknown(fmt.Sprintf("%s names its program as %s", quote(showCmd(c)), show(c.Args[0].String())), adviceName)
		}
		return ""
	}
	switch {
	case name == "tmux":
		return ch.tmux(c)
	case killers[name] != nil:
		return killers[name](ch, c)
	case shell.Interpreter(name) != "":
		return ch.interp(c, name)
	}
	return ch.socketArgs(c, name)
}

// detachedVia names how a command comes to run outside the agent's
// processes and terminal ("" when it does not): the tmux server runs it
// (run-shell, if-shell, a new pane, keys typed into one, hooks, #(...)),
// or at, cron, systemd, ssh, screen.
func detachedVia(c *shell.Cmd) string {
	for _, v := range c.Via {
		switch {
		case strings.HasPrefix(v, "tmux ") && v != "tmux -c" && v != "tmux command":
			return v
		case v == "at", v == "batch", v == "crontab", v == "systemd-run", v == "ssh", v == "screen", v == "dtach":
			return v
		}
	}
	return ""
}

// whose says why st may not run outside the agent's processes.
const whose = "st cannot tell st run there from a person's; some st commands are a person's alone (answering a gate, " +
	"offering an agent, accept-remote on, the web UI's address), and st tells a person from an agent by the caller's processes. " +
	"Run st commands in your own shell."

// stOutside refuses st run outside the agent's processes. st tells a
// person from an agent by the caller's processes (internal/daemon's
// caller check): what tmux runs has none of the agent's, so a gate's
// answer, an offer or accept-remote would pass as a person's. A rail: a
// script st cannot read, started the same way, is not seen.
func stOutside(c *shell.Cmd, name, via string) string {
	if name == "st" {
		return fmt.Sprintf("st guard: %s would run st (%s) outside this agent's processes, where %s", via, showCmd(c), whose)
	}
	if base := c.Args[0].Base(); name == "" && (base.Could("st") || c.Args[0].Could("st")) {
		return unknown(fmt.Sprintf("%s runs %s outside this agent's processes, and it may be st", via, show(c.Args[0].String())),
			adviceName+" "+whose)
	}
	return ""
}

// via says how a command came to run, for reasons.
func via(c *shell.Cmd) string {
	if len(c.Via) == 0 {
		return "the command"
	}
	return c.Via[len(c.Via)-1]
}

// risky are the programs a word in a program's place must not be able to
// be: those the guard has rules for, and those that run other programs.
func (ch *checker) riskyProgram(a shell.Arg) bool {
	base := a.Base()
	if s, ok := base.Known(); ok {
		return isRiskyName(s)
	}
	for _, n := range riskyNames() {
		if base.Could(n) || a.Could(n) {
			return true
		}
	}
	return false
}

func isRiskyName(s string) bool {
	return s == "tmux" || killers[s] != nil || shell.Interpreter(s) != "" || shell.IsRunner(s)
}

var (
	riskyOnce sync.Once
	riskyList []string
)

// riskyNames: tmux, the killers, the interpreters, and every program of
// internal/shell's table of runners.
func riskyNames() []string {
	riskyOnce.Do(func() {
		riskyList = append(riskyList, "tmux")
		for k := range killers {
			riskyList = append(riskyList, k)
		}
		riskyList = append(riskyList, shell.InterpreterNames...)
		riskyList = append(riskyList, shell.Runners()...)
	})
	return riskyList
}

// socketArgs refuses a program other than tmux that names the agent's
// socket (socat to it, a link to it): only tmux should talk to it.
func (ch *checker) socketArgs(c *shell.Cmd, name string) string {
	switch name {
	case "ls", "stat", "file", "test", "[", "echo", "printf", "realpath", "readlink", "dirname", "basename", "du", "id", "true", ":":
		return ""
	}
	for _, a := range c.Args[1:] {
		if ch.namesSocket(c, a) {
			return refuse(fmt.Sprintf("%s: %s names this agent's tmux socket", quote(showCmd(c)), show(a.String())))
		}
	}
	return ""
}

// namesSocket reports whether an argument holds the socket's path, or a
// value taken from $TMUX.
func (ch *checker) namesSocket(c *shell.Cmd, a shell.Arg) bool {
	if s, ok := a.Text(); ok {
		if strings.Contains(s, ch.ours) || (ch.real != "" && strings.Contains(s, ch.real)) {
			return !strings.Contains(s, ch.ours+",") // $TMUX itself (socket,pid,index) is not the path
		}
		return false
	}
	for _, h := range a.Holes() {
		if fromTMUX(h) {
			return true
		}
	}
	return false
}

// tmuxVar finds $TMUX (not $TMUX_TMPDIR) or tmux's socket_path format.
var tmuxVar = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{?[#!]?TMUX([^A-Za-z0-9_]|$)|socket_path`) })

// fromTMUX: a hole whose value is made from $TMUX (or tmux's own report
// of its socket).
func fromTMUX(h *shell.Hole) bool {
	if h.Var == "TMUX" || tmuxVar().MatchString(h.Src) {
		return true
	}
	for _, c := range h.From {
		for _, a := range c.Args {
			if tmuxVar().MatchString(a.String()) {
				return true
			}
			for _, hh := range a.Holes() {
				if hh.Var == "TMUX" {
					return true
				}
			}
		}
	}
	return false
}

// writes refuses removing, moving or replacing the socket or a folder
// holding it, and links to it.
func (ch *checker) writes(c *shell.Cmd) string {
	for _, w := range c.Writes() {
		if w.Link != nil {
			ch.links = append(ch.links, w)
			if ch.couldBeSocket(c, *w.Link) || ch.namesSocket(c, *w.Link) {
				return refuse(fmt.Sprintf("%s: it makes %s a link to this agent's tmux socket", quote(showCmd(c)), show(w.Path.String())))
			}
			continue
		}
		p, ok := w.Path.Text()
		if !ok {
			continue
		}
		full := ch.abs(c, p)
		if full == "" {
			continue
		}
		for _, sock := range []string{ch.ours, ch.real} {
			if sock == "" {
				continue
			}
			if (w.Path.Glob && globCould(full, sock)) || full == sock || strings.HasPrefix(sock, strings.TrimSuffix(full, "/")+"/") {
				return refuse(fmt.Sprintf("%s: %s %s, which holds this agent's tmux socket", quote(showCmd(c)), w.What, show(p)))
			}
		}
	}
	return ""
}

// abs is a path as an absolute path, or "" when the folder is unknown.
func (ch *checker) abs(c *shell.Cmd, p string) string {
	if strings.HasPrefix(p, "/") {
		return path.Clean(p)
	}
	d, ok := c.Dir.Text()
	if !ok || !strings.HasPrefix(d, "/") {
		return ""
	}
	return path.Join(d, p)
}

// globCould: a glob path could name the socket or a folder above it.
func globCould(glob, sock string) bool {
	a := shell.Lit(glob)
	a.Glob = true
	for p := sock; p != "/" && p != "."; p = path.Dir(p) {
		if a.Could(p) {
			return true
		}
	}
	return false
}

func realPath(p string) (string, error) {
	dir, err := filepath.EvalSymlinks(path.Dir(p))
	if err != nil {
		return "", err
	}
	return path.Join(dir, path.Base(p)), nil
}

// show quotes part of a command for a reason, shortened.
func show(s string) string {
	const max = 120
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "") + "…"
	}
	return quote(s)
}

func quote(s string) string {
	if len(s) > 160 {
		s = strings.ToValidUTF8(s[:160], "") + "…"
	}
	if s != "" && !strings.ContainsAny(s, " \t\n;&|'\"$`\\<>(){}*?[]#~") {
		return s
	}
	if !strings.ContainsAny(s, "'\n") {
		return "'" + s + "'"
	}
	return strconv.Quote(s)
}
