package guard

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/sophonz/st/internal/shell"
)

// The guard lets a signal through only to a pid it knows is not the
// agent's tmux server (nor the process of the server's last pane): a pid
// written plainly and checked, a job of the shell, the shell itself, or
// a pid printed by a program that picks processes by something the
// server does not have (a name, a port). A pid read from $TMUX (its
// second field is the server's pid), from a variable of the environment,
// from a file st cannot read, or from a program st cannot follow may be
// the server's: refused.

const advicePid = "st lets a signal through to a pid it can check: written plainly (kill 12345), a job (kill %1), " +
	"$! or $$, pids from pgrep, pidof, lsof -i or fuser PORT/tcp, or a pid file st can read (kill $(cat server.pid)) " +
	"written in an earlier command. Write the pid so, or stop the process by its name (pkill -f 'node server.js')."

// pids judges each pid a kill signals.
func (ch *checker) pids(c *shell.Cmd, d string, args []shell.Arg) string {
	for _, a := range args {
		if r := ch.pid(c, d, a); r != "" {
			return r
		}
	}
	return ""
}

// pid judges one pid (or job, or -process group) a kill signals.
func (ch *checker) pid(c *shell.Cmd, d string, a shell.Arg) string {
	if s, ok := a.Known(); ok {
		return ch.pidText(d, s)
	}
	if ch.tainted(a) {
		return refuse(d + ": its pids come from a command that finds the tmux server")
	}
	for _, h := range a.Holes() {
		if r := ch.pidHole(c, d, h); r != "" {
			return r
		}
	}
	return ""
}

// pidText judges a pid written plainly.
func (ch *checker) pidText(d, s string) string {
	s = strings.TrimSpace(s)
	switch {
	case s == "-1":
		return refuse(d + ": pid -1 signals every process this user may signal, the tmux server too")
	case strings.HasPrefix(s, "%"), s == "0", s == "":
		return "" // a job of this shell, its own process group, nothing
	}
	n, err := strconv.Atoi(strings.TrimPrefix(s, "-"))
	if err != nil || n <= 0 {
		return "" // kill refuses it
	}
	if n == ch.serverPid() {
		return refuse(fmt.Sprintf("%s: %d is the tmux server's pid (the second field of $TMUX)", d, n))
	}
	srv, err := ch.facts()
	if err != nil {
		return unknown(fmt.Sprintf("%s: st could not ask the tmux server whether %d is its pid or its last pane's (%v)", quote(d), n, err),
			"Try again; tmux must answer `tmux list-panes -a` for st to let a kill through.")
	}
	for _, p := range srv.Panes {
		if p.Pid == n {
			return ch.ends(d, fmt.Sprintf("%d is the process of pane %s, which may be the server's last", n, p.ID), [][]string{{p.ID}})
		}
	}
	return ""
}

// pidHole judges a part of a pid st cannot read.
func (ch *checker) pidHole(c *shell.Cmd, d string, h *shell.Hole) string {
	if fromTMUX(h) {
		return refuse(fmt.Sprintf("%s: its pid %s is read from $TMUX, whose second field is the tmux server's pid", d, show(h.Src)))
	}
	switch {
	case h.Kind == shell.FromSpecial && (h.Var == "!" || h.Var == "$" || h.Var == "BASHPID"):
		return "" // a job this shell started, or the shell itself
	case (h.Kind == shell.FromOutput || h.Kind == shell.FromProc || h.Kind == shell.FromPattern) && len(h.From) > 0:
		if r, known := ch.pidSources(c, d, h.From); known {
			return r
		}
	}
	return unknown(fmt.Sprintf("%s: st cannot tell whose pid %s is, and a pid st cannot check may be the tmux server's", quote(d), show(h.Src)), advicePid)
}

// pidSources judges the commands whose output a pid is. known is false
// when st cannot tell what they print: no command of them picks pids st
// can judge, or a filter (grep) does not leave the server out.
func (ch *checker) pidSources(c *shell.Cmd, d string, from []*shell.Cmd) (string, bool) {
	sources := 0
	for _, s := range from {
		if len(s.Args) == 0 && len(s.Redirs) == 0 {
			continue
		}
		if ch.excludes(s) {
			return "", true // a filter that leaves the server's line out
		}
		r, kind := ch.pidSource(d, s)
		switch kind {
		case pidsUnknown:
			return "", false
		case pidsJudged:
			if r != "" {
				return r, true
			}
			sources++
		}
	}
	return "", sources > 0
}

const (
	pidsPass    = iota // it passes pids through (head, awk, xargs): it picks none
	pidsJudged         // it picks pids st judged (r says the verdict)
	pidsUnknown        // it prints pids st cannot judge
)

// pidSource judges one command a pid comes from.
func (ch *checker) pidSource(d string, s *shell.Cmd) (string, int) {
	if len(s.Args) == 0 {
		// $(<file)
		for _, rd := range s.Redirs {
			if rd.Op == "<" {
				return ch.pidFile(s, d, rd.Target)
			}
		}
		return "", pidsUnknown
	}
	switch s.Name() {
	case "pgrep":
		if procMatch("pgrep", s.Args[1:], ch.serverArgs) != "" {
			return refuse(d + ": its pids come from a command that finds the tmux server"), pidsJudged
		}
		return "", pidsJudged
	case "pidof":
		for _, a := range s.Args[1:] {
			if n, ok := a.Known(); !ok || n == "tmux" || strings.HasSuffix(n, "/tmux") {
				return "", pidsUnknown
			}
		}
		return "", pidsJudged
	case "lsof":
		return "", ch.lsofNetwork(s.Args[1:])
	case "fuser":
		return "", fuserPorts(s.Args[1:])
	case "jobs":
		return "", pidsJudged
	case "tmux":
		return ch.tmuxPids(d, s)
	case "cat", "head", "tail":
		if files := operands(s.Args[1:]); len(files) > 0 {
			for _, f := range files {
				if r, kind := ch.pidFile(s, d, f); kind != pidsJudged || r != "" {
					return r, kind
				}
			}
			return "", pidsJudged
		}
		return "", pidsPass
	case "awk", "gawk", "mawk", "cut", "tr", "sed", "sort", "uniq", "xargs", "grep", "egrep", "rg", "tee", "paste", "echo", "printf":
		return "", pidsPass
	}
	return "", pidsUnknown
}

// operands are the words that do not start with '-'.
func operands(args []shell.Arg) []shell.Arg {
	var out []shell.Arg
	for _, a := range args {
		if s, ok := a.Text(); ok && strings.HasPrefix(s, "-") {
			continue
		}
		out = append(out, a)
	}
	return out
}

// pidFile reads a file of pids on disk (server.pid), written before this
// command: its pids are judged as if written plainly.
func (ch *checker) pidFile(s *shell.Cmd, d string, f shell.Arg) (string, int) {
	p, ok := f.Known()
	if !ok {
		return "", pidsUnknown
	}
	full := ch.abs(s, p)
	if full == "" {
		return "", pidsUnknown
	}
	for _, w := range shell.Writes(ch.script.Cmds) {
		wp, ok := w.Path.Text()
		if !ok || ch.abs(w.Cmd, wp) == full || ch.abs(w.Cmd, wp) == "" {
			return "", pidsUnknown // this command may write it before it is read
		}
	}
	fi, err := os.Stat(full)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 4096 {
		return "", pidsUnknown
	}
	data, err := os.ReadFile(full)
	if err != nil {
		return "", pidsUnknown
	}
	for _, w := range strings.Fields(string(data)) {
		if _, err := strconv.Atoi(w); err != nil {
			return "", pidsUnknown
		}
		if r := ch.pidText(d, w); r != "" {
			return r, pidsJudged
		}
	}
	return "", pidsJudged
}

// lsofNetwork: lsof -t -i picks processes by their network sockets,
// which the tmux server has none of; any file operand may be its socket.
func (ch *checker) lsofNetwork(args []shell.Arg) int {
	inet := false
	for i := 0; i < len(args); i++ {
		s, ok := args[i].Known()
		switch {
		case !ok:
			return pidsUnknown
		case strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "--"):
			if k := strings.IndexByte(s, 'i'); k > 0 {
				inet = true
				if k == len(s)-1 && i+1 < len(args) && !args[i+1].HasPrefix("-") {
					i++ // the address
				}
				continue
			}
			if strings.HasPrefix(s, "-s") && strings.Contains(s, ":") {
				continue // -sTCP:LISTEN narrows -i
			}
			if strings.ContainsAny(s, "pcugdDs+") {
				return pidsUnknown // other selectors: a pid, a command, a user, a folder...
			}
		default:
			return pidsUnknown // a file: the socket may be one
		}
	}
	if inet {
		return pidsJudged
	}
	return pidsUnknown
}

// fuserPorts: fuser PORT/tcp (or -n tcp PORT) picks processes by a port.
func fuserPorts(args []shell.Arg) int {
	ns := ""
	names := 0
	for i := 0; i < len(args); i++ {
		s, ok := args[i].Known()
		switch {
		case !ok:
			return pidsUnknown
		case s == "-n" || s == "--namespace":
			if i+1 < len(args) {
				ns, _ = args[i+1].Known()
				i++
			}
		case strings.HasPrefix(s, "-"):
		default:
			names++
			if _, proto, ok := strings.Cut(s, "/"); !(ok && (proto == "tcp" || proto == "udp")) && ns != "tcp" && ns != "udp" {
				return pidsUnknown
			}
		}
	}
	if names == 0 {
		return pidsUnknown
	}
	return pidsJudged
}

// tmuxPids: pids tmux prints. #{pane_pid} of a target is that pane's
// process (ending it may end the server's last pane); #{pid} of the
// agent's server is the server's. Another server's pids pass.
func (ch *checker) tmuxPids(d string, s *shell.Cmd) (string, int) {
	g := tmuxGlobals(s.Args[1:])
	if g.quits || g.hole != nil {
		return "", pidsUnknown
	}
	if !ch.server(s, g.label, g.sock).ours {
		return "", pidsJudged
	}
	cmds := splitCommands(g.rest)
	if len(cmds) != 1 || len(cmds[0]) == 0 {
		return "", pidsUnknown
	}
	name := ""
	if w, ok := cmds[0][0].Known(); ok {
		name = tmuxCommand(w)
	}
	spec := map[string]string{"display-message": "ac:d:F:INpt:v", "list-panes": "asF:f:t:"}[name]
	f, pos, ok := tmuxOpts(cmds[0][1:], spec)
	if spec == "" || !ok {
		return "", pidsUnknown
	}
	format := shell.Join(pos, " ")
	if f.has('F') {
		format = f.val('F')
	}
	text, known := format.Known()
	if !known || strings.Contains(text, "#{pid}") || strings.Contains(text, "#(") {
		return "", pidsUnknown
	}
	if !strings.Contains(text, "pane_pid") {
		return "", pidsJudged // no pid of ours in it
	}
	t, known := f.val('t').Known()
	if name != "display-message" || !f.has('t') || !known || t == "" {
		return "", pidsUnknown
	}
	srv, err := ch.facts()
	if err != nil {
		return "", pidsUnknown
	}
	panes := srv.paneTarget(t)
	return ch.ends(d, fmt.Sprintf("it signals the process of pane %s, which may be the server's last", quote(t)), srv.units(panes)), pidsJudged
}

// excludes reports whether a filter of the pids' source (grep) leaves
// the tmux server's line out: grep -v of a pattern the line matches, or
// grep of one it does not.
func (ch *checker) excludes(s *shell.Cmd) bool {
	switch s.Name() {
	case "grep", "egrep", "fgrep", "rg":
	default:
		return false
	}
	invert, pattern := false, ""
	for _, a := range s.Args[1:] {
		t, ok := a.Known()
		if !ok {
			return false
		}
		switch {
		case t == "--invert-match" || strings.HasPrefix(t, "-") && !strings.HasPrefix(t, "--") && strings.Contains(t, "v"):
			invert = true
		case strings.HasPrefix(t, "-"):
		case pattern == "":
			pattern = t
		default:
			return false // a file: not a filter of the pids' source
		}
	}
	if pattern == "" {
		return false
	}
	matches := false
	for _, line := range ch.serverLines() {
		m, ok := regexMatchAny(pattern, line)
		if !ok {
			return false
		}
		matches = matches || m
	}
	if invert {
		// The line holds "tmux" (its command) only when st knows it does.
		return matches && ch.serverArgs() != ""
	}
	return !matches
}

// serverLines are what ps and pgrep show of the server: its process name,
// its command line (when tmux answered), and its pid.
func (ch *checker) serverLines() []string {
	lines := []string{"tmux: server", "tmux", "/usr/bin/tmux"}
	if a := ch.serverArgs(); a != "" {
		lines = append(lines, a)
	}
	if p := ch.serverPid(); p > 0 {
		lines = append(lines, strconv.Itoa(p))
	}
	return lines
}

// serverArgs is the server's command line, when tmux was asked.
func (ch *checker) serverArgs() string {
	s, _ := ch.facts()
	return s.Args
}
