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
	var vals string
	var longVals []string
	full, exact, icase, regex := false, false, false, true
	switch tool {
	case "pkill", "pgrep":
		vals = "dFgGOPqrstuU"
		longVals = []string{"delimiter", "pidfile", "pgroup", "group", "older", "parent", "queue", "runstates",
			"session", "terminal", "euid", "uid", "ns", "nslist", "signal", "env", "cgroup"}
	case "killall":
		vals = "osuynZ"
		longVals = []string{"older-than", "signal", "user", "younger-than", "ns", "context"}
		regex = false
	default: // skill
		regex = false
	}
	selector := ""
	var pats []shell.Arg
	for i := 0; i < len(args); i++ {
		a := args[i]
		s, ok := a.Known()
		if !ok || tool == "skill" {
			if tool == "skill" && ok && strings.HasPrefix(s, "-") {
				if isSignal(s[1:]) || s == "-l" || s == "-L" {
					if s == "-l" || s == "-L" {
						return ""
					}
					continue
				}
				switch s {
				case "-u", "-t", "-p", "-c":
					if s != "-c" {
						selector = s
					}
					continue
				}
			}
			pats = append(pats, a)
			continue
		}
		if s == "--" {
			pats = append(pats, args[i+1:]...)
			break
		}
		if strings.HasPrefix(s, "--") {
			n, _, hasVal := strings.Cut(s[2:], "=")
			switch n {
			case "full":
				full = true
			case "exact":
				exact = true
			case "ignore-case":
				icase = true
			case "regexp":
				regex = true
			case "list", "version", "help":
				if tool == "killall" {
					return ""
				}
			case "euid", "uid", "user", "group", "parent", "pgroup", "session", "terminal", "ns", "nslist", "cgroup":
				selector = "--" + n
			}
			if !hasVal && slices.Contains(longVals, n) {
				i++
			}
			continue
		}
		if len(s) > 1 && s[0] == '-' {
			if tool != "pgrep" && isSignal(s[1:]) {
				continue
			}
			for j := 1; j < len(s); j++ {
				f := s[j]
				if strings.IndexByte(vals, f) >= 0 {
					if strings.IndexByte("uUGPgst", f) >= 0 && !(f == 's' && tool == "killall") {
						selector = "-" + string(f)
					}
					if j+1 == len(s) {
						i++
					}
					break
				}
				switch {
				case f == 'f' && tool != "killall":
					full = true
				case f == 'x' && tool != "killall", f == 'e' && tool == "killall":
					exact = true
				case f == 'i' && tool != "killall", f == 'I' && tool == "killall":
					icase = true
				case f == 'r' && tool == "killall":
					regex = true
				case (f == 'l' || f == 'V') && tool == "killall":
					return ""
				}
			}
			continue
		}
		pats = append(pats, a)
	}
	if len(pats) == 0 {
		if selector != "" {
			return fmt.Sprintf("with no pattern, %s picks every process it names, the tmux server among them", selector)
		}
		return ""
	}
	for _, p := range pats {
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
		if regex {
			cmdline := ""
			if full {
				cmdline = serverArgs()
			}
			if m := regexMatch(s, full, exact, icase, cmdline); m != "" {
				return fmt.Sprintf("the pattern %s also matches %s; match whole names with -x, or kill by pid", quote(s), m)
			}
		}
	}
	return ""
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
