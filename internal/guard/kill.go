package guard

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/sophonz/st/internal/shell"
)

// killers are the programs that stop processes (or the machine), each
// with its rule.
var killers map[string]func(*checker, *shell.Cmd) string

func init() {
	proc := func(ch *checker, c *shell.Cmd) string { return ch.procKill(c) }
	machine := func(ch *checker, c *shell.Cmd) string {
		for _, a := range c.Args[1:] {
			if s, _ := a.Text(); s == "--help" || s == "-c" || s == "-k" || s == "--show" {
				return ""
			}
		}
		return refuse(showCmd(c) + ": it stops every process of the machine, the tmux server too")
	}
	killers = map[string]func(*checker, *shell.Cmd) string{
		"kill":     func(ch *checker, c *shell.Cmd) string { return ch.kill(c) },
		"pkill":    proc,
		"killall":  proc,
		"skill":    proc,
		"killall5": func(ch *checker, c *shell.Cmd) string { return refuse(showCmd(c) + ": killall5 signals every process") },
		"fuser":    func(ch *checker, c *shell.Cmd) string { return ch.fuser(c) },
		"shutdown": machine, "reboot": machine, "halt": machine, "poweroff": machine,
		"systemctl": func(ch *checker, c *shell.Cmd) string {
			for _, a := range c.Args[1:] {
				switch s, _ := a.Text(); s {
				case "reboot", "poweroff", "halt", "kexec", "soft-reboot", "emergency", "rescue", "exit":
					return refuse(showCmd(c) + ": it stops every process of the machine, the tmux server too")
				}
			}
			return ""
		},
		"loginctl": func(ch *checker, c *shell.Cmd) string {
			for _, a := range c.Args[1:] {
				switch s, _ := a.Text(); s {
				case "terminate-user", "kill-user", "terminate-session", "kill-session", "terminate-seat":
					return refuse(showCmd(c) + ": it ends a login's processes, which may hold the tmux server")
				}
			}
			return ""
		},
		"init": func(ch *checker, c *shell.Cmd) string {
			if len(c.Args) > 1 {
				if s, _ := c.Args[1].Text(); s == "0" || s == "6" || s == "1" || s == "s" || s == "S" {
					return refuse(showCmd(c) + ": it stops every process of the machine, the tmux server too")
				}
			}
			return ""
		},
	}
	killers["telinit"] = killers["init"]
}

// showCmd quotes a command for a reason, shortened.
func showCmd(c *shell.Cmd) string {
	var b strings.Builder
	for i, a := range c.Args {
		if b.Len() > 120 {
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		if i == 0 {
			if s, ok := a.Known(); ok && !strings.Contains(s, " ") {
				b.WriteString(s)
				continue
			}
		}
		b.WriteString(quote(a.String()))
	}
	s := b.String()
	if len(s) > 120 {
		s = strings.ToValidUTF8(s[:120], "") + "…"
	}
	return s
}

// kill: signal -1 (every process), or pids that come from a command
// that finds the tmux server.
func (ch *checker) kill(c *shell.Cmd) string {
	args := c.Args[1:]
	sig := ""
	i := 0
flags:
	for i < len(args) {
		s, ok := args[i].Known()
		if !ok || len(s) < 2 || s[0] != '-' {
			break
		}
		switch {
		case s == "--":
			i++
			break flags
		case s == "-l" || s == "-L" || s == "--list" || s == "--table" || strings.HasPrefix(s, "--list="):
			return ""
		case s == "-s" || s == "-n" || s == "--signal":
			if i+1 < len(args) {
				sig = args[i+1].String()
			}
			i += 2
			continue
		case strings.HasPrefix(s, "--signal="):
			sig = s[len("--signal="):]
		case s == "-q" || s == "--queue":
			i += 2
			continue
		case s == "--timeout":
			i += 3
			continue
		case s == "-a" || s == "--all" || s == "-p" || s == "--pid" || s == "--verbose" || s == "-r" || s == "--require-handler":
		case sig == "" && strings.HasPrefix(s, "-s") && isSignal(s[2:]):
			sig = s[2:]
		case sig == "" && isSignal(s[1:]):
			sig = s[1:]
		default:
			break flags // a negative pid: a process group
		}
		i++
	}
	if sig == "0" {
		return "" // signal 0 only checks that the process exists
	}
	return ch.pids(c, showCmd(c), args[min(i, len(args)):])
}

// tainted: an argument made from the output of a command that finds the
// tmux server's pids (pgrep tmux, pidof tmux, ps | grep tmux).
func (ch *checker) tainted(a shell.Arg) bool {
	for _, h := range a.Holes() {
		for _, c := range h.From {
			if ch.selects(c) {
				return true
			}
		}
	}
	return false
}

// selects reports whether a command prints pids of the tmux server.
func (ch *checker) selects(c *shell.Cmd) bool {
	if len(c.Args) == 0 {
		return false
	}
	name := c.Name()
	args := c.Args[1:]
	switch name {
	case "tmux":
		g := tmuxGlobals(args)
		if g.quits || !ch.server(c, g.label, g.sock).ours {
			return false
		}
		for _, a := range args {
			if strings.Contains(a.String(), "#{pid}") {
				return true
			}
		}
		return false
	case "pgrep":
		return procMatch(name, args, ch.serverArgs) != ""
	case "grep", "egrep", "fgrep", "zgrep", "rg", "ag", "ack":
		pattern := true
		for _, a := range args {
			s := a.String()
			if s == "--invert-match" || len(s) > 1 && s[0] == '-' && s[1] != '-' && strings.IndexByte(s, 'v') >= 0 {
				return false
			}
			if pattern && !strings.HasPrefix(s, "-") && a.IsKnown() {
				pattern = false
				if regexMatch(s, false, false, false, "") != "" {
					return true
				}
			}
		}
	}
	for _, a := range args {
		if strings.Contains(strings.ToLower(a.String()), "tmux") {
			return true
		}
	}
	return false
}

var signals = map[string]bool{
	"HUP": true, "INT": true, "QUIT": true, "ILL": true, "TRAP": true, "ABRT": true, "IOT": true, "BUS": true,
	"FPE": true, "KILL": true, "USR1": true, "SEGV": true, "USR2": true, "PIPE": true, "ALRM": true, "TERM": true,
	"STKFLT": true, "CHLD": true, "CLD": true, "CONT": true, "STOP": true, "TSTP": true, "TTIN": true, "TTOU": true,
	"URG": true, "XCPU": true, "XFSZ": true, "VTALRM": true, "PROF": true, "WINCH": true, "IO": true, "POLL": true,
	"PWR": true, "SYS": true, "EMT": true, "INFO": true, "LOST": true,
}

func isSignal(s string) bool {
	if s == "" {
		return false
	}
	if isDigits(s) {
		return true
	}
	u := strings.TrimPrefix(strings.ToUpper(s), "SIG")
	return signals[u] || strings.HasPrefix(u, "RTMIN") || strings.HasPrefix(u, "RTMAX")
}

// isDigits: a pid or a signal's number.
func isDigits(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }

// procKill: pkill, killall and skill refuse a pattern that matches the
// server, or no pattern with a selector that takes every process of a
// user, a parent, a session...
func (ch *checker) procKill(c *shell.Cmd) string {
	name := c.Name()
	why := procMatch(name, c.Args[1:], ch.serverArgs)
	if why == "" {
		return ""
	}
	d := showCmd(c)
	if strings.HasPrefix(why, "?") {
		return unknown(fmt.Sprintf("%s: %s", quote(d), why[1:]), "Write the pattern plainly, or kill by pid.")
	}
	return refuse(d + ": " + why)
}

// procMatch says why pkill, pgrep, killall or skill picks the tmux
// server, or "" when it does not; a reason starting with "?" means it may.
// serverArgs is the server's command line, asked only for -f.
func procMatch(tool string, args []shell.Arg, serverArgs func() string) string {
	sel, quits := procSelect(tool, args)
	if quits {
		return ""
	}
	if len(sel.pats) == 0 {
		if sel.selector != "" {
			return fmt.Sprintf("with no pattern, %s picks every process it names, the tmux server among them", sel.selector)
		}
		return ""
	}
	for _, p := range sel.pats {
		s, ok := p.Known()
		if !ok {
			if strings.Contains(strings.ToLower(p.String()), "tmux") {
				return fmt.Sprintf("%s matches the tmux server", quote(p.String()))
			}
			return fmt.Sprintf("?the pattern %s may match the tmux server", show(p.String()))
		}
		if strings.Contains(strings.ToLower(s), "tmux") {
			return fmt.Sprintf("%s matches the tmux server", quote(s))
		}
		if sel.regex {
			cmdline := ""
			if sel.full {
				cmdline = serverArgs()
			}
			if m := regexMatch(s, sel.full, sel.exact, sel.icase, cmdline); m != "" {
				return fmt.Sprintf("the pattern %s also matches %s; match whole names with -x, or kill by pid", quote(s), m)
			}
		}
	}
	return ""
}

// procSel is how pkill, pgrep, killall or skill picks processes.
type procSel struct {
	full, exact, icase, regex bool
	selector                  string // an option that picks by user, parent, session...
	pats                      []shell.Arg
}

// procSelect reads the options of pkill, pgrep, killall or skill. quits:
// it lists signals or prints its version, and signals nothing.
func procSelect(tool string, args []shell.Arg) (procSel, bool) {
	sel := procSel{regex: tool == "pkill" || tool == "pgrep"}
	selValues := false // skill -u USER...: the words after it are users, terminals or pids
	vals := map[string]string{"pkill": "dFgGOPqrstuU", "pgrep": "dFgGOPqrstuU", "killall": "osuynZ"}[tool]
	longVals := []string{"delimiter", "pidfile", "pgroup", "group", "older", "parent", "queue", "runstates",
		"session", "terminal", "euid", "uid", "ns", "nslist", "signal", "env", "cgroup", "older-than", "user", "younger-than", "context"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		s, ok := a.Known()
		switch {
		case tool == "skill":
			switch {
			case s == "-l" || s == "-L":
				return sel, true
			case ok && strings.HasPrefix(s, "-") && isSignal(s[1:]), s == "-c":
				selValues = false
			case s == "-u" || s == "-t" || s == "-p":
				sel.selector, selValues = s, true
			case !selValues:
				sel.pats = append(sel.pats, a)
			}
		case !ok || len(s) < 2 || s[0] != '-':
			sel.pats = append(sel.pats, a)
		case s == "--":
			sel.pats = append(sel.pats, args[i+1:]...)
			return sel, false
		case strings.HasPrefix(s, "--"):
			n, _, hasVal := strings.Cut(s[2:], "=")
			if sel.long(tool, n) {
				return sel, true
			}
			if !hasVal && slices.Contains(longVals, n) {
				i++
			}
		case tool != "pgrep" && isSignal(s[1:]):
		default:
			skip, quits := sel.short(tool, s, vals)
			if quits {
				return sel, true
			}
			if skip {
				i++
			}
		}
	}
	return sel, false
}

// long reads a long option; it reports whether the tool then quits.
func (sel *procSel) long(tool, n string) bool {
	switch n {
	case "full":
		sel.full = true
	case "exact":
		sel.exact = true
	case "ignore-case":
		sel.icase = true
	case "regexp":
		sel.regex = true
	case "list", "version", "help":
		return tool == "killall"
	case "euid", "uid", "user", "group", "parent", "pgroup", "session", "terminal", "ns", "nslist", "cgroup":
		sel.selector = "--" + n
	}
	return false
}

// short reads a cluster of short options: skip says the next word is its
// last option's value; quits that the tool then quits.
func (sel *procSel) short(tool, s, vals string) (skip, quits bool) {
	for j := 1; j < len(s); j++ {
		f := s[j]
		if strings.IndexByte(vals, f) >= 0 {
			if strings.IndexByte("uUGPgst", f) >= 0 && !(f == 's' && tool == "killall") {
				sel.selector = "-" + string(f)
			}
			return j+1 == len(s), false
		}
		killall := tool == "killall"
		switch {
		case f == 'f' && !killall:
			sel.full = true
		case f == 'x' && !killall, f == 'e' && killall:
			sel.exact = true
		case f == 'i' && !killall, f == 'I' && killall:
			sel.icase = true
		case f == 'r' && killall:
			sel.regex = true
		case (f == 'l' || f == 'V') && killall:
			return false, true
		}
	}
	return false, false
}

// regexMatch tests a pgrep-style pattern against the tmux server's
// process name (without -f) or command line (with -f: its own, cmdline,
// when st knows it).
func regexMatch(p string, full, exact, icase bool, cmdline string) string {
	expr := p
	if exact {
		expr = "^(?:" + p + ")$"
	}
	if icase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return ""
	}
	cands := []string{"tmux: server", "tmux"}
	what := "the tmux server's process name %q"
	if full {
		cands = []string{"tmux", "/usr/bin/tmux"}
		if cmdline != "" {
			cands = append(cands, cmdline)
		}
		what = "the tmux server's command line %q"
	}
	for _, c := range cands {
		if re.MatchString(c) {
			return fmt.Sprintf(what, c)
		}
	}
	return ""
}

// fuser -k kills the processes that use a file: the socket (or a folder
// above it), or with -m every process of the file system.
func (ch *checker) fuser(c *shell.Cmd) string {
	kill, mount := false, false
	var names []shell.Arg
	args := c.Args[1:]
	for i := 0; i < len(args); i++ {
		s, ok := args[i].Known()
		if !ok {
			names = append(names, args[i])
			continue
		}
		switch {
		case s == "-k" || s == "--kill":
			kill = true
		case s == "-m" || s == "--mount" || s == "-M" || s == "--ismountpoint":
			mount = true
		case s == "-n" || s == "--namespace":
			i++
		case strings.HasPrefix(s, "--"):
		case strings.HasPrefix(s, "-") && len(s) > 1:
			if isSignal(s[1:]) {
				continue
			}
			if strings.Contains(s, "k") {
				kill = true
			}
			if strings.Contains(s, "m") || strings.Contains(s, "M") {
				mount = true
			}
		default:
			names = append(names, args[i])
		}
	}
	if !kill {
		return ""
	}
	d := showCmd(c)
	if mount {
		return refuse(d + ": -m kills every process that uses the file system, the tmux server's too")
	}
	for _, n := range names {
		s, ok := n.Known()
		if !ok {
			return unknown(fmt.Sprintf("%s: st cannot tell which file %s is", quote(d), show(n.String())), "Name the file or port plainly.")
		}
		if strings.Contains(strings.ToLower(s), "tmux") || ch.couldBeSocket(c, n) {
			return refuse(d + ": it kills what uses the tmux socket, the server itself")
		}
		if full := ch.abs(c, s); full != "" && (strings.HasPrefix(ch.ours, full+"/") || full == "/") {
			return refuse(d + ": it kills what uses a folder that holds the tmux socket")
		}
	}
	return ""
}

// regexMatchAny reports whether a grep pattern matches line; ok is false
// when st cannot read the pattern as a regular expression.
func regexMatchAny(pattern, line string) (match, ok bool) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return false, false
	}
	return re.MatchString(line), true
}
