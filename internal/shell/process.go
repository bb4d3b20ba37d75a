package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Programs that run a command in another process setting: environment,
// priority, scheduling, limits, namespaces, a root, a lock, a session.
var processRunners = map[string]runner{
	"env":    runEnv,
	"nohup":  plain("", nil),
	"setsid": plain("", nil),
	"nice":   plain("n", []string{"adjustment"}),
	"ionice": spec{short: "cnpPu", long: []string{"class", "classdata", "pid", "pgid", "uid"}, noRun: []string{"-p", "-P", "-u", "--pid", "--pgid", "--uid"}}.run,
	"chrt": spec{short: "TPD", long: []string{"sched-runtime", "sched-period", "sched-deadline"}, skip: 1,
		noRun: []string{"-p", "--pid", "-m", "--max", "-h", "--help", "-V", "--version"}}.run,
	"taskset":     spec{skip: 1, noRun: []string{"-p", "--pid"}}.run,
	"timeout":     spec{short: "sk", long: []string{"signal", "kill-after"}, skip: 1}.run,
	"stdbuf":      plain("ioe", []string{"input", "output", "error"}),
	"unbuffer":    plain("", nil),
	"chronic":     plain("", nil),
	"eatmydata":   plain("", nil),
	"fakeroot":    plain("lsib", []string{"lib", "faked", "save-file", "load-file", "fd-base"}),
	"torsocks":    plain("uapPd", []string{"user", "pass", "address", "port"}),
	"proxychains": plain("f", nil), "proxychains4": plain("f", nil),
	"nocache": plain("", nil), "caffeinate": plain("tw", nil),
	"time":             plain("fo", []string{"format", "output"}),
	"watch":            runWatch,
	"flock":            runFlock,
	"unshare":          runUnshare,
	"nsenter":          runNsenter,
	"chroot":           runChroot,
	"prlimit":          plain("po", []string{"pid", "output"}),
	"numactl":          plain("CNmip", []string{"physcpubind", "cpunodebind", "membind", "interleave", "preferred"}),
	"systemd-run":      runSystemdRun,
	"firejail":         plain("", nil),
	"dbus-run-session": plain("", []string{"config-file", "dbus-daemon"}),
	"xvfb-run":         plain("nsfep", []string{"server-num", "server-args", "auth-file", "error-file", "xauth-protocol"}),
	"catchsegv":        plain("", nil),
	"rlwrap":           plain("bcfHlOpPqsStw", nil),
	"ip":               runIP,
	"cgexec":           plain("g", nil),
	"systemd-inhibit":  plain("", []string{"what", "who", "why", "mode"}),
	"dbus-launch":      plain("", nil),
}

func runEnv(w *wrapCall) wrapped {
	out := wrapped{set: map[string]Arg{}}
	args := w.args
	for i := 0; i < len(args); i++ {
		a := args[i]
		s, ok := a.Text()
		if !ok {
			if rest := assignments(args[i:], out.set); len(rest) < len(args[i:]) {
				i = len(args) - len(rest) - 1
				continue
			}
			out.argv = args[i:]
			return out
		}
		value := func(long, short string) (Arg, bool) {
			switch {
			case s == long || s == short:
				if i+1 < len(args) {
					i++
					return args[i], true
				}
				return Arg{}, false
			case strings.HasPrefix(s, long+"="):
				return Lit(s[len(long)+1:]), true
			case strings.HasPrefix(s, short) && len(s) > len(short):
				return Lit(s[len(short):]), true
			}
			return Arg{}, false
		}
		if v, ok := value("--unset", "-u"); ok {
			if n, ok := v.Text(); ok {
				out.unset = append(out.unset, n)
			}
			continue
		}
		if v, ok := value("--chdir", "-C"); ok {
			d := JoinDir(w.dirArg(), v)
			out.dir = &d
			continue
		}
		if v, ok := value("--split-string", "-S"); ok {
			out.argv = append(w.r.splitWords(v, w.st, w.c), args[i+1:]...)
			return out
		}
		switch {
		case s == "-" || s == "-i" || s == "--ignore-environment":
			out.clear = true
		case s == "--":
			out.argv = assignments(args[i+1:], out.set)
			return out
		case strings.HasPrefix(s, "-") && len(s) > 1:
			if strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "--") && strings.Contains(s, "i") {
				out.clear = true
			}
		default:
			if rest := assignments(args[i:], out.set); len(rest) < len(args[i:]) {
				i = len(args) - len(rest) - 1
				continue
			}
			out.argv = args[i:]
			return out
		}
	}
	return out
}

// splitWords splits env -S's string into words, as env does (quotes,
// escapes, ${VAR}).
func (r *reader) splitWords(v Arg, st *state, c *ctx) []Arg {
	s, ok := v.Text()
	if !ok {
		return []Arg{HoleArg(&Hole{Kind: FromPattern, Src: v.String()})}
	}
	var words []*syntax.Word
	for w, err := range syntax.NewParser().WordsSeq(strings.NewReader(s)) {
		if err != nil {
			return []Arg{HoleArg(&Hole{Kind: FromPattern, Src: s})}
		}
		words = append(words, w)
	}
	cur := r.cur
	r.cur = s
	defer func() { r.cur = cur }()
	return r.fields(words, st, c)
}

func runWatch(w *wrapCall) wrapped {
	exec := false
	rest := getopt(w.args, "nq", []string{"interval", "equexit"}, func(o string, v Arg) {
		if o == "-x" || o == "--exec" {
			exec = true
		}
	})
	if exec {
		return wrapped{argv: rest}
	}
	return wrapped{texts: []runText{{text: Join(rest, " ")}}}
}

func runFlock(w *wrapCall) wrapped {
	var text *Arg
	rest := getopt(w.args, "wEc", []string{"timeout", "wait", "conflict-exit-code", "command"}, func(o string, v Arg) {
		if o == "-c" || o == "--command" {
			t := v
			text = &t
		}
	})
	if text != nil {
		return wrapped{texts: []runText{{text: *text}}}
	}
	if len(rest) < 2 {
		return wrapped{}
	}
	rest = rest[1:] // the lock file
	if s, ok := rest[0].Text(); ok && (s == "-c" || s == "--command") {
		if len(rest) > 1 {
			return wrapped{texts: []runText{{text: rest[1]}}}
		}
		return wrapped{}
	}
	return wrapped{argv: rest}
}

// defaultShell is what unshare, nsenter and chroot run without a command:
// a shell reading standard input.
func defaultShell(w *wrapCall, out wrapped, rest []Arg) wrapped {
	if len(rest) == 0 {
		out.texts = []runText{{text: w.c.stdin}}
		return out
	}
	out.argv = rest
	return out
}

func runUnshare(w *wrapCall) wrapped {
	out := wrapped{other: true}
	rest := getopt(w.args, "RwSG", []string{"root", "wd", "setuid", "setgid", "map-user", "map-group", "map-users",
		"map-groups", "propagation", "setgroups"}, func(o string, v Arg) {
		switch o {
		case "-w", "--wd":
			d := JoinDir(w.dirArg(), v)
			out.dir = &d
		case "-R", "--root":
			d := HoleArg(&Hole{Kind: FromVar, Var: "PWD", Src: "unshare --root"})
			out.dir = &d
		}
	})
	return defaultShell(w, out, rest)
}

func runNsenter(w *wrapCall) wrapped {
	out := wrapped{other: true}
	d := HoleArg(&Hole{Kind: FromVar, Var: "PWD", Src: "nsenter"})
	out.dir = &d
	rest := getopt(w.args, "tSG", []string{"target", "setuid", "setgid", "env"}, nil)
	return defaultShell(w, out, rest)
}

func runChroot(w *wrapCall) wrapped {
	out := wrapped{other: true}
	d := HoleArg(&Hole{Kind: FromVar, Var: "PWD", Src: "chroot"})
	out.dir = &d
	rest := getopt(w.args, "", []string{"userspec", "groups"}, nil)
	if len(rest) == 0 {
		return wrapped{}
	}
	return defaultShell(w, out, rest[1:])
}

func runSystemdRun(w *wrapCall) wrapped {
	out := wrapped{other: true, set: map[string]Arg{}}
	rest := getopt(w.args, "pEMHu", []string{"unit", "property", "description", "slice", "uid", "gid", "nice",
		"working-directory", "setenv", "machine", "host", "service-type", "on-active", "on-boot", "on-startup",
		"on-unit-active", "on-unit-inactive", "on-calendar", "on-timezone-change", "on-clock-change",
		"timer-property", "path-property", "socket-property", "send-sighup", "expand-environment"}, func(o string, v Arg) {
		switch o {
		case "-E", "--setenv":
			assignments([]Arg{v}, out.set)
		case "--working-directory":
			d := JoinDir(w.dirArg(), v)
			out.dir = &d
		}
	})
	out.argv = rest
	return out
}

// runIP: ip netns exec NAME COMMAND.
func runIP(w *wrapCall) wrapped {
	for i := 0; i+1 < len(w.args); i++ {
		a, _ := w.args[i].Text()
		b, _ := w.args[i+1].Text()
		if a == "netns" && b == "exec" || a == "vrf" && b == "exec" {
			rest := w.args[i+2:]
			if len(rest) > 0 {
				if s, _ := rest[0].Text(); s == "-all" || s == "-a" {
					rest = rest[1:]
				} else {
					rest = rest[1:] // the name
				}
			}
			return wrapped{argv: rest, other: true}
		}
	}
	return wrapped{}
}
