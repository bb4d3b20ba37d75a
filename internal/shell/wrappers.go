package shell

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// This file is the one table of programs that run other programs: sudo,
// env, nohup, setsid, timeout, xargs, busybox, fakeroot, time, find
// -exec, the shells and their -c, ssh, git's command options... Both the
// guard and the ownership scopes read commands through it.

// wrapped is what a runner runs.
type wrapped struct {
	argv    []Arg     // the command it runs; nil for none
	more    [][]Arg   // further commands (find's -exec)
	texts   []runText // shell text it runs
	set     map[string]Arg
	unset   []string
	clear   bool // env -i
	reset   bool // sudo: the environment may be reset
	dir     *Arg // the folder it runs in
	other   bool // may run as another user
	current bool // runs in this shell (exec, command, builtin)
	noFuncs bool // functions are not looked up (command, builtin)
	stdin   *Arg // what the command reads
}

// runText is shell text a runner runs.
type runText struct {
	text   Arg
	file   *Arg  // a file of shell text instead (sh script.sh)
	args   []Arg // $0, $1, ... of the new shell
	remote bool  // ssh: a shell elsewhere, with an environment of its own
}

// wrapCall is what a runner sees.
type wrapCall struct {
	r    *reader
	name string
	args []Arg
	st   *state
	c    *ctx
	env  *envView
}

type runner func(w *wrapCall) wrapped

var runners map[string]runner

func init() {
	runners = map[string]runner{
		"sudo": runSudo, "doas": runDoas, "su": runSu, "runuser": runSu,
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
		"time":    plain("fo", []string{"format", "output"}),
		"command": spec{noRun: []string{"-v", "-V"}, current: true, noFuncs: true}.run,
		"builtin": spec{current: true, noFuncs: true}.run,
		"exec":    spec{short: "a", current: true}.run,
		"busybox": runBusybox, "toybox": runBusybox,
		"xargs": runXargs, "find": runFind, "watch": runWatch, "flock": runFlock,
		"unshare": runUnshare, "nsenter": runNsenter, "chroot": runChroot,
		"setpriv": spec{long: []string{"reuid", "regid", "groups", "inh-caps", "ambient-caps", "bounding-set", "securebits",
			"pdeathsig", "selinux-label", "apparmor-profile", "landlock-access", "landlock-rule", "ptracer"},
			noRun: []string{"-d", "--dump", "-h", "--help"}, other: true}.run,
		"prlimit":          plain("po", []string{"pid", "output"}),
		"numactl":          plain("CNmip", []string{"physcpubind", "cpunodebind", "membind", "interleave", "preferred"}),
		"systemd-run":      runSystemdRun,
		"firejail":         plain("", nil),
		"sg":               runSg,
		"dbus-run-session": plain("", []string{"config-file", "dbus-daemon"}),
		"xvfb-run":         plain("nsfep", []string{"server-num", "server-args", "auth-file", "error-file", "xauth-protocol"}),
		"catchsegv":        plain("", nil),
		"rlwrap":           plain("bcfHlOpPqsStw", nil),
		"strace":           plain("abeEIOoPpsSuX", []string{"output", "expr", "signal", "trace", "attach", "user", "env", "string-limit"}),
		"ltrace":           plain("aAeEFlnopsuwxXD", []string{"output", "library"}),
		"valgrind":         plain("", nil),
		"gdb":              runGdb,
		"ssh":              runSsh,
		"script":           runScript,
		"parallel":         runParallel,
		"git":              runGit,
		"pkexec":           spec{long: []string{"user"}, other: true}.run,
		"capsh":            runCapsh,
		"ip":               runIP,
		"cgexec":           plain("g", nil),
		"systemd-inhibit":  plain("", []string{"what", "who", "why", "mode"}),
		"dbus-launch":      plain("", nil),
		"hyperfine":        runHyperfine,
		"entr":             runEntr,
		"watchexec":        runWatchexec,
		"fd":               runFd, "fdfind": runFd,
		"screen": runScreen,
		"dtach":  runDtach,
		"at":     runAt, "batch": runAt,
		"crontab": runCrontab,
		"npx":     runNpx,
		"make":    runMake, "gmake": runMake,
	}
	for _, s := range Shells {
		runners[s] = runShell
	}
}

// Shells are the shells st reads -c text and scripts of.
var Shells = []string{"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "rbash", "ksh93", "oksh", "loksh", "pdksh", "hush", "fish"}

// textBuiltins are the builtins that run shell text.
var textBuiltins = []string{"eval", "source", ".", "trap", "alias"}

// IsRunner reports whether a program runs another command given in its
// arguments or shell text (the table above): a program st reads through.
func IsRunner(name string) bool {
	_, ok := runners[name]
	return ok || slices.Contains(textBuiltins, name)
}

// Runners lists the programs of the table and the builtins that run text.
func Runners() []string {
	out := append([]string(nil), textBuiltins...)
	for k := range runners {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// getopt reads options in the usual way: short lists the letters that
// take a value, long the long options that do. It stops at the first
// operand, at "--", or at a hole (which may be an option or the command;
// the rest is returned from it, and the caller takes it for the command,
// which st then cannot know). on sees each option and its value.
func getopt(args []Arg, short string, long []string, on func(opt string, val Arg)) []Arg {
	for i := 0; i < len(args); i++ {
		s, ok := args[i].Text()
		if !ok {
			return args[i:]
		}
		if s == "--" {
			return args[i+1:]
		}
		if len(s) < 2 || s[0] != '-' {
			return args[i:]
		}
		if strings.HasPrefix(s, "--") {
			name, val, has := strings.Cut(s[2:], "=")
			v := Lit(val)
			if !has && slices.Contains(long, name) && i+1 < len(args) {
				i++
				v = args[i]
			}
			if on != nil {
				on("--"+name, v)
			}
			continue
		}
		for j := 1; j < len(s); j++ {
			if strings.IndexByte(short, s[j]) >= 0 {
				v := Lit(s[j+1:])
				if j+1 == len(s) && i+1 < len(args) {
					i++
					v = args[i]
				}
				if on != nil {
					on("-"+s[j:j+1], v)
				}
				break
			}
			if on != nil {
				on("-"+s[j:j+1], Arg{})
			}
		}
	}
	return nil
}

// spec is a runner that takes options, then skip operands (timeout's
// duration, taskset's mask), then the command.
type spec struct {
	short   string   // the short options that take a value
	long    []string // the long options that take a value
	skip    int
	noRun   []string // options with which it runs no command (-p PID, -v)
	current bool     // runs the command in this shell (command, builtin, exec)
	noFuncs bool     // looks up no shell function (command, builtin)
	other   bool     // may run it as another user
}

func (sp spec) run(w *wrapCall) wrapped {
	noRun := false
	rest := getopt(w.args, sp.short, sp.long, func(o string, v Arg) {
		if slices.Contains(sp.noRun, o) {
			noRun = true
		}
	})
	if noRun {
		return wrapped{}
	}
	for i := 0; i < sp.skip; i++ {
		if len(rest) == 0 {
			return wrapped{}
		}
		if !rest[0].IsKnown() && rest[0].Split {
			break // it may be more words, or none
		}
		rest = rest[1:]
	}
	return wrapped{argv: rest, current: sp.current, noFuncs: sp.noFuncs, other: sp.other}
}

// plain is a runner with options, then the command.
func plain(short string, long []string) runner { return spec{short: short, long: long}.run }

// assignments takes NAME=VALUE operands (env, sudo).
func assignments(rest []Arg, set map[string]Arg) []Arg {
	for len(rest) > 0 {
		a := rest[0]
		if len(a.pieces) == 0 || a.pieces[0].hole != nil {
			break
		}
		name, _, ok := strings.Cut(a.pieces[0].lit, "=")
		if !ok || !isName(name) {
			break
		}
		v, _ := a.CutPrefix(name + "=")
		set[name] = v
		rest = rest[1:]
	}
	return rest
}

func runSudo(w *wrapCall) wrapped {
	out := wrapped{other: true, reset: true, set: map[string]Arg{}}
	shell, noRun := false, false
	rest := getopt(w.args, "aCcDgpRrTtUu", []string{"user", "group", "prompt", "close-from", "chdir", "role", "type",
		"command-timeout", "other-user", "chroot", "host", "login-class", "auth-type"}, func(o string, v Arg) {
		switch o {
		case "-E", "--preserve-env":
			out.reset = false
		case "-D", "--chdir":
			d := JoinDir(w.dirArg(), v)
			out.dir = &d
		case "-s", "--shell", "-i", "--login":
			shell = true
		case "-e", "--edit", "-l", "--list", "-v", "--validate", "-V", "--version", "-K", "--remove-timestamp", "-h", "--help":
			noRun = true
		}
		if strings.HasPrefix(o, "--preserve-env") {
			out.reset = false
		}
	})
	if noRun {
		return wrapped{}
	}
	rest = assignments(rest, out.set)
	if len(rest) == 0 && !shell {
		return wrapped{}
	}
	return defaultShell(w, out, rest)
}

func runDoas(w *wrapCall) wrapped {
	out := wrapped{other: true, reset: true}
	shell, noRun := false, false
	rest := getopt(w.args, "aCu", nil, func(o string, v Arg) {
		switch o {
		case "-s":
			shell = true
		case "-L", "-C":
			noRun = true
		}
	})
	if noRun || len(rest) == 0 && !shell {
		return wrapped{}
	}
	return defaultShell(w, out, rest)
}

// runSu: su and runuser. -c gives text for the user's shell; runuser -u
// USER CMD runs a command; else the shell reads standard input.
func runSu(w *wrapCall) wrapped {
	out := wrapped{other: true}
	var text *Arg
	user := false
	args := w.args
	for i := 0; i < len(args); i++ {
		s, ok := args[i].Text()
		if !ok {
			out.argv = args[i:]
			return out
		}
		switch {
		case s == "-c" || s == "--command" || s == "--session-command":
			if i+1 < len(args) {
				t := args[i+1]
				text = &t
				i++
			}
		case strings.HasPrefix(s, "--command=") || strings.HasPrefix(s, "--session-command="):
			_, v, _ := strings.Cut(s, "=")
			t := Lit(v)
			text = &t
		case s == "-" || s == "-l" || s == "--login":
			out.clear = true
		case s == "-u" || s == "--user" || s == "-s" || s == "--shell" || s == "-g" || s == "--group" || s == "-G" || s == "--supp-group" || s == "-w" || s == "--whitelist-environment":
			if s == "-u" || s == "--user" {
				user = true
			}
			i++
		case s == "--" && user && w.name == "runuser":
			out.argv = args[i+1:]
			return out
		case !strings.HasPrefix(s, "-") && user && w.name == "runuser":
			out.argv = args[i:]
			return out
		}
	}
	if text != nil {
		out.texts = []runText{{text: *text}}
		return out
	}
	out.texts = []runText{{text: w.c.stdin}}
	return out
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

func (w *wrapCall) dirArg() Arg { return w.r.decode(w.st.dir) }

func runBusybox(w *wrapCall) wrapped {
	if len(w.args) == 0 || w.args[0].HasPrefix("-") {
		return wrapped{}
	}
	return wrapped{argv: w.args}
}

// runXargs: the command (echo by default) with arguments read from
// standard input: known when the input is, else a hole whose From are
// the commands that print it.
func runXargs(w *wrapCall) wrapped {
	var replace *string
	nul, delim := false, ""
	rest := getopt(w.args, "adEILnPsi", []string{"arg-file", "delimiter", "eof", "replace", "max-lines", "max-args",
		"max-procs", "max-chars", "process-slot-var"}, func(o string, v Arg) {
		s, _ := v.Text()
		switch o {
		case "-I", "--replace":
			replace = &s
		case "-i":
			r := "{}"
			if s != "" {
				r = s
			}
			replace = &r
		case "-0", "--null":
			nul = true
		case "-d", "--delimiter":
			delim = s
		case "-a", "--arg-file":
			// Arguments from a file st does not read.
			w.c = w.c.withStdin(HoleArg(&Hole{Kind: FromOutput, Src: "<" + v.String()}))
		}
	})
	if len(rest) == 0 {
		rest = []Arg{Lit("echo")}
	}
	var items []Arg
	if text, ok := w.c.stdin.Known(); ok {
		var parts []string
		switch {
		case nul:
			parts = strings.Split(text, "\x00")
		case delim != "":
			parts = strings.Split(text, delim[:1])
		case replace != nil:
			parts = strings.Split(text, "\n")
		default:
			parts = xargsSplit(text)
		}
		for _, p := range parts {
			if replace != nil {
				p = strings.TrimLeft(p, " \t")
			}
			if p != "" {
				items = append(items, Lit(p))
			}
		}
	} else {
		h := &Hole{Kind: FromOutput, Src: "(xargs input)", From: holesFrom(w.c.stdin)}
		a := HoleArg(h)
		a.Split = replace == nil
		items = []Arg{a}
	}
	if replace == nil {
		return wrapped{argv: append(append([]Arg(nil), rest...), items...)}
	}
	out := wrapped{}
	if len(items) > maxLoopItems {
		items = []Arg{HoleArg(&Hole{Kind: FromOutput, Src: "(xargs input)", From: holesFrom(w.c.stdin)})}
	}
	for i, it := range items {
		var argv []Arg
		for _, a := range rest {
			argv = append(argv, replaceIn(a, *replace, it))
		}
		if i == 0 {
			out.argv = argv
		} else {
			out.more = append(out.more, argv)
		}
	}
	return out
}

// xargsSplit splits xargs input as xargs does by default: blanks, with
// quotes and backslashes.
func xargsSplit(s string) []string {
	var out []string
	var b strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				b.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
			in = true
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				out = append(out, b.String())
				b.Reset()
				in = false
			}
		default:
			b.WriteByte(c)
			in = true
		}
	}
	if in {
		out = append(out, b.String())
	}
	return out
}

// replaceIn puts it where a holds rep.
func replaceIn(a Arg, rep string, it Arg) Arg {
	if rep == "" {
		return a
	}
	var parts []Arg
	changed := false
	for _, p := range a.pieces {
		if p.hole != nil {
			parts = append(parts, HoleArg(p.hole))
			continue
		}
		segs := strings.Split(p.lit, rep)
		for i, s := range segs {
			if i > 0 {
				parts = append(parts, it)
				changed = true
			}
			parts = append(parts, Lit(s))
		}
	}
	if !changed {
		return a
	}
	out := Concat(parts...)
	out.Split, out.Glob = a.Split, a.Glob
	return out
}

// runFind: the commands of -exec, -execdir, -ok and -okdir, with {} a
// path found under the folders searched.
func runFind(w *wrapCall) wrapped {
	args := w.args
	i := 0
	// Options before the paths.
	for i < len(args) {
		s, ok := args[i].Text()
		if !ok || !(s == "-H" || s == "-L" || s == "-P" || strings.HasPrefix(s, "-O") || s == "-D") {
			break
		}
		if s == "-D" {
			i++
		}
		i++
	}
	var roots []Arg
	for i < len(args) {
		s, ok := args[i].Text()
		if ok && (strings.HasPrefix(s, "-") || s == "(" || s == "!") {
			break
		}
		roots = append(roots, args[i])
		i++
	}
	if len(roots) == 0 {
		roots = []Arg{Lit(".")}
	}
	found := &Hole{Kind: FromFound, Src: "{}", Under: roots}
	out := wrapped{}
	for ; i < len(args); i++ {
		s, _ := args[i].Text()
		switch s {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) {
				t, _ := args[j].Text()
				if t == ";" || (t == "+" && j > i+1) {
					break
				}
				j++
			}
			var argv []Arg
			for _, a := range args[i+1 : min(j, len(args))] {
				argv = append(argv, replaceIn(a, "{}", HoleArg(found)))
			}
			if len(argv) > 0 {
				out.more = append(out.more, argv)
			}
			i = j
		}
	}
	return out
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

func runSg(w *wrapCall) wrapped {
	args := w.args
	if len(args) > 0 && args[0].String() == "-" {
		args = args[1:]
	}
	if len(args) < 2 {
		return wrapped{}
	}
	args = args[1:]
	if s, _ := args[0].Text(); s == "-c" {
		args = args[1:]
	}
	return wrapped{texts: []runText{{text: Join(args, " ")}}, other: true}
}

// runGdb: gdb --args PROG ARGS runs PROG; -ex 'shell CMD' runs shell text.
func runGdb(w *wrapCall) wrapped {
	out := wrapped{}
	args := w.args
	for i := 0; i < len(args); i++ {
		s, ok := args[i].Text()
		if !ok {
			continue
		}
		switch {
		case s == "--args" || s == "-args":
			out.argv = args[i+1:]
			return out
		case s == "-ex" || s == "--ex" || s == "-eval-command" || s == "--eval-command" || s == "-iex" || s == "--init-eval-command":
			if i+1 < len(args) {
				i++
				if t, ok := gdbShell(args[i]); ok {
					out.texts = append(out.texts, runText{text: t})
				}
			}
		case strings.HasPrefix(s, "--eval-command=") || strings.HasPrefix(s, "-eval-command="):
			_, v, _ := strings.Cut(s, "=")
			if t, ok := gdbShell(Lit(v)); ok {
				out.texts = append(out.texts, runText{text: t})
			}
		}
	}
	return out
}

func gdbShell(a Arg) (Arg, bool) {
	for _, p := range []string{"shell ", "!", "pipe "} {
		if t, ok := a.CutPrefix(p); ok {
			return t, true
		}
	}
	if !a.IsKnown() {
		return a, true
	}
	return Arg{}, false
}

// runSsh: the remote command is shell text run by the other side's shell
// (which may be this machine's), without this shell's variables.
func runSsh(w *wrapCall) wrapped {
	noCmd, noStdin := false, false
	rest := getopt(w.args, "BbcDEeFIiJLlmOopQRSWw", nil, func(o string, v Arg) {
		switch o {
		case "-N", "-O", "-V", "-G", "-Q":
			noCmd = true
		case "-n", "-f":
			noStdin = true
		}
	})
	if noCmd || len(rest) == 0 {
		return wrapped{}
	}
	if !rest[0].IsKnown() && rest[0].Split {
		return wrapped{texts: []runText{{text: Join(rest, " "), remote: true}}, other: true}
	}
	cmd := rest[1:]
	if len(cmd) == 0 {
		if noStdin {
			return wrapped{}
		}
		return wrapped{texts: []runText{{text: w.c.stdin, remote: true}}, other: true}
	}
	return wrapped{texts: []runText{{text: Join(cmd, " "), remote: true}}, other: true}
}

func runScript(w *wrapCall) wrapped {
	var text *Arg
	getopt(w.args, "cEoTBIOm", []string{"command", "echo", "output-limit", "log-timing", "log-io", "log-in", "log-out", "logging-format"}, func(o string, v Arg) {
		if o == "-c" || o == "--command" {
			t := v
			text = &t
		}
	})
	if text != nil {
		return wrapped{texts: []runText{{text: *text}}}
	}
	return wrapped{texts: []runText{{text: w.c.stdin}}}
}

// runParallel: GNU parallel runs its command as shell text for each
// argument; with {} or no ::: st cannot tell the text.
func runParallel(w *wrapCall) wrapped {
	args := w.args
	i := 0
	withVal := []string{"-j", "--jobs", "-S", "--sshlogin", "--colsep", "-N", "-n", "-L", "-P", "--max-procs", "-a", "--arg-file", "-d", "--delimiter", "-E", "-I", "--results", "--joblog", "--tmpdir", "--workdir", "--timeout", "--delay", "--halt"}
	for i < len(args) {
		s, ok := args[i].Text()
		if !ok || !strings.HasPrefix(s, "-") {
			break
		}
		if slices.Contains(withVal, s) {
			i++
		}
		i++
	}
	var cmdWords, items []Arg
	sep := false
	for ; i < len(args); i++ {
		s, _ := args[i].Text()
		if s == ":::" || s == "::::" || s == ":::+" || s == "::::+" {
			sep = true
			continue
		}
		if sep {
			items = append(items, args[i])
		} else {
			cmdWords = append(cmdWords, args[i])
		}
	}
	text := Join(cmdWords, " ")
	if t, ok := text.Text(); !ok || !sep || strings.Contains(t, "{") || len(cmdWords) == 0 {
		return wrapped{texts: []runText{{text: HoleArg(&Hole{Kind: FromPattern, Src: "parallel " + Join(args, " ").String()})}}}
	}
	var texts []runText
	for _, it := range items {
		texts = append(texts, runText{text: Concat(text, Lit(" "), quoteArg(it))})
		if len(texts) > maxLoopItems {
			break
		}
	}
	return wrapped{texts: texts}
}

func quoteArg(a Arg) Arg {
	if s, ok := a.Text(); ok {
		return Lit("'" + strings.ReplaceAll(s, "'", `'\''`) + "'")
	}
	return a
}

// runShell: sh -c TEXT [NAME ARGS...], sh FILE [ARGS...], and a shell
// reading its program from standard input.
func runShell(w *wrapCall) wrapped {
	args := w.args
	cFlag, sFlag := false, false
	var rc *Arg
	i := 0
	for i < len(args) {
		s, ok := args[i].Text()
		if !ok {
			if args[i].NotOption() {
				break // a path: the script
			}
			return wrapped{texts: []runText{{text: Join(args[i:], " ")}}}
		}
		if s == "--" || s == "-" {
			i++
			break
		}
		if len(s) < 2 || (s[0] != '-' && s[0] != '+') {
			break
		}
		i++
		if strings.HasPrefix(s, "--") {
			switch s {
			case "--rcfile", "--init-file":
				if i < len(args) {
					a := args[i]
					rc = &a
					i++
				}
			case "--command":
				cFlag = true
			}
			continue
		}
		for j := 1; j < len(s); j++ {
			switch s[j] {
			case 'c':
				cFlag = true
			case 's':
				sFlag = true
			case 'o', 'O':
				i++
			}
		}
	}
	rest := args[min(i, len(args)):]
	out := wrapped{}
	if rc != nil {
		out.texts = append(out.texts, runText{file: rc})
	}
	switch {
	case cFlag:
		if len(rest) > 0 {
			out.texts = append(out.texts, runText{text: rest[0], args: rest[1:]})
		}
	case len(rest) > 0 && !sFlag:
		f := rest[0]
		out.texts = append(out.texts, runText{file: &f, args: rest})
	default:
		out.texts = append(out.texts, runText{text: w.c.stdin, args: rest})
	}
	return out
}

// runGit: git's options and subcommands that run shell text: -c with a
// command-valued key, config of such a key, rebase --exec, bisect run,
// submodule foreach, filter-branch's filters, difftool --extcmd.
func runGit(w *wrapCall) wrapped {
	out := wrapped{}
	args := w.args
	i := 0
	for i < len(args) {
		s, ok := args[i].Text()
		if !ok {
			return out
		}
		if !strings.HasPrefix(s, "-") {
			break
		}
		switch s {
		case "-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env":
			i++
		case "-c":
			if i+1 < len(args) {
				i++
				out.texts = append(out.texts, gitConfigText(args[i])...)
			}
		}
		i++
	}
	if i >= len(args) {
		return out
	}
	sub, _ := args[i].Text()
	rest := args[i+1:]
	switch sub {
	case "config":
		var kv []Arg
		for _, a := range rest {
			if s, ok := a.Text(); ok && strings.HasPrefix(s, "-") {
				continue
			}
			kv = append(kv, a)
		}
		if len(kv) >= 2 {
			out.texts = append(out.texts, gitConfigText(Concat(kv[0], Lit("="), kv[1]))...)
		}
	case "rebase":
		for j := 0; j < len(rest); j++ {
			s, _ := rest[j].Text()
			switch {
			case (s == "-x" || s == "--exec") && j+1 < len(rest):
				out.texts = append(out.texts, runText{text: rest[j+1]})
				j++
			case strings.HasPrefix(s, "--exec="):
				out.texts = append(out.texts, runText{text: Lit(s[len("--exec="):])})
			}
		}
	case "bisect":
		if len(rest) > 1 {
			if s, _ := rest[0].Text(); s == "run" {
				out.argv = rest[1:]
			}
		}
	case "submodule":
		for j := 0; j < len(rest); j++ {
			if s, _ := rest[j].Text(); s == "foreach" {
				tail := getopt(rest[j+1:], "", nil, nil)
				if len(tail) > 0 {
					out.texts = append(out.texts, runText{text: Join(tail, " ")})
				}
				break
			}
		}
	case "filter-branch":
		for j := 0; j+1 < len(rest); j++ {
			if s, _ := rest[j].Text(); strings.HasSuffix(s, "-filter") {
				out.texts = append(out.texts, runText{text: rest[j+1]})
				j++
			}
		}
	case "difftool", "mergetool":
		for j := 0; j+1 < len(rest); j++ {
			if s, _ := rest[j].Text(); s == "-x" || s == "--extcmd" {
				out.texts = append(out.texts, runText{text: rest[j+1]})
				j++
			}
		}
	}
	return out
}

// gitConfigText is the shell text a git configuration key=value runs.
func gitConfigText(kv Arg) []runText {
	if len(kv.pieces) == 0 || kv.pieces[0].hole != nil {
		// A key st cannot read: it may be any command-valued key.
		return []runText{{text: kv}}
	}
	key, _, ok := strings.Cut(kv.pieces[0].lit, "=")
	if !ok {
		return nil
	}
	val, _ := kv.CutPrefix(key + "=")
	key = strings.ToLower(key)
	bang := func() []runText {
		if t, ok := val.CutPrefix("!"); ok {
			return []runText{{text: t}}
		}
		if !val.IsKnown() {
			return []runText{{text: val}}
		}
		return nil
	}
	switch {
	case strings.HasPrefix(key, "alias."), key == "credential.helper", strings.HasPrefix(key, "credential.") && strings.HasSuffix(key, ".helper"):
		return bang()
	case slices.Contains([]string{"core.pager", "core.editor", "core.sshcommand", "core.askpass", "core.fsmonitor",
		"core.gitproxy", "sequence.editor", "diff.external", "gpg.program", "interactive.difffilter",
		"uploadpack.packobjectshook", "web.browser", "core.hookspath"}, key),
		strings.HasPrefix(key, "pager."),
		strings.HasSuffix(key, ".cmd"), strings.HasSuffix(key, ".command"), strings.HasSuffix(key, ".textconv"),
		strings.HasSuffix(key, ".driver"), strings.HasSuffix(key, ".clean"), strings.HasSuffix(key, ".smudge"),
		strings.HasSuffix(key, ".process"), strings.HasSuffix(key, ".program"):
		return []runText{{text: val}}
	}
	return nil
}

// runWrapped runs a program of the runners table: it is recorded, then
// what it runs is read.
func (r *reader) runWrapped(run runner, args []Arg, env *envView, redirs []Redir, st *state, c *ctx, f callInfo) *state {
	name := path.Base(args[0].String())
	cmd := r.record(args, env, redirs, st, c, f.src)
	w := &wrapCall{r: r, name: name, args: args[1:], st: st, c: c, env: env}
	out := run(w)
	c = w.c
	if r.err != nil {
		return st
	}
	inner := env.with()
	if out.clear {
		inner.clear = true
		inner.over = map[string]variable{}
	}
	if out.reset {
		inner.reset = true
	}
	for k, v := range out.set {
		inner.over[k] = variable{set: Yes, exported: Yes, val: r.encode(v), assigned: true}
	}
	for _, k := range out.unset {
		inner.over[k] = variable{set: No, exported: No, assigned: true}
	}
	cc := c.with(name)
	cc.wrappers = append(append([]string(nil), c.wrappers...), name)
	cc.other = c.other || out.other
	if out.stdin != nil {
		cc.stdin = *out.stdin
	}
	ist := st
	if out.dir != nil {
		ist = st.clone()
		ist.dir = r.encode(*out.dir)
		ist.shared = true
	}
	if len(out.texts) == 0 && out.argv == nil && len(out.more) == 0 {
		r.programOutput(cmd, c)
	} else {
		r.output(c, "", false)
	}
	for _, t := range out.texts {
		if r.err != nil {
			return st
		}
		var sh *state
		if t.remote {
			sh = r.initial()
			sh.clobbered = true
			sh.vars["TMUX"] = variable{set: No, exported: No, assigned: true}
			sh.dir = r.sent(&Hole{Kind: FromVar, Var: "PWD", Src: "(remote folder)"})
		} else {
			sh = ist.child(inner)
		}
		if len(t.args) > 0 {
			sh.posKnown = true
			for _, a := range t.args[1:] {
				if a.Split {
					sh.posKnown = false
				}
				sh.pos = append(sh.pos, r.encode(a))
			}
		}
		tc := cc.withStdin(Lit(""))
		if t.file != nil {
			r.sourceFile(*t.file, sh, tc.withStdin(c.stdin))
			continue
		}
		r.text(t.text, sh, tc)
	}
	f2 := callInfo{src: f.src, noFuncs: out.noFuncs}
	for _, argv := range out.more {
		if len(argv) > 0 {
			r.command(argv, inner, nil, ist, cc, f2)
		}
	}
	if len(out.argv) > 0 {
		ost := r.command(out.argv, inner, nil, ist, cc, f2)
		if out.current {
			return ost
		}
	}
	return st
}

// runCapsh: capsh's options, then after -- the arguments of bash.
func runCapsh(w *wrapCall) wrapped {
	for i, a := range w.args {
		if s, _ := a.Text(); s == "--" {
			sub := *w
			sub.args = w.args[i+1:]
			out := runShell(&sub)
			out.other = true
			return out
		}
	}
	return wrapped{}
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

// runHyperfine: each command is shell text, and so are --prepare,
// --cleanup and --setup.
func runHyperfine(w *wrapCall) wrapped {
	var texts []runText
	rest := w.args
	for i := 0; i < len(rest); i++ {
		s, ok := rest[i].Text()
		switch {
		case ok && (s == "-p" || s == "--prepare" || s == "-c" || s == "--cleanup" || s == "-s" || s == "--setup" || s == "--conclude"):
			if i+1 < len(rest) {
				texts = append(texts, runText{text: rest[i+1]})
				i++
			}
		case ok && strings.HasPrefix(s, "-"):
			if !strings.Contains(s, "=") && slices.Contains([]string{"-w", "--warmup", "-m", "--min-runs", "-M", "--max-runs",
				"-r", "--runs", "-S", "--shell", "--style", "-n", "--command-name", "-L", "--parameter-list", "-P",
				"--parameter-scan", "-D", "--parameter-step-size", "-u", "--time-unit", "--export-asciidoc",
				"--export-csv", "--export-json", "--export-markdown", "--export-orgmode", "--output", "--input", "--sort", "-i"}, s) {
				i++
				if s == "-P" || s == "--parameter-scan" || s == "-L" || s == "--parameter-list" {
					i++
				}
			}
		default:
			texts = append(texts, runText{text: rest[i]})
		}
	}
	return wrapped{texts: texts}
}

func runEntr(w *wrapCall) wrapped {
	shell := false
	rest := getopt(w.args, "", nil, func(o string, v Arg) {
		if o == "-s" {
			shell = true
		}
	})
	if shell && len(rest) > 0 {
		return wrapped{texts: []runText{{text: rest[0]}}}
	}
	return wrapped{argv: rest}
}

// runWatchexec: the command after -- (or its operands) is shell text.
func runWatchexec(w *wrapCall) wrapped {
	for i, a := range w.args {
		if s, _ := a.Text(); s == "--" {
			return wrapped{texts: []runText{{text: Join(w.args[i+1:], " ")}}}
		}
	}
	rest := getopt(w.args, "ewidfpsWn", []string{"exts", "watch", "ignore", "debounce", "filter", "shell", "signal",
		"stop-signal", "stop-timeout", "delay-run", "project-origin", "workdir", "env", "on-busy-update", "emit-events-to",
		"filter-file", "ignore-file", "fs-events", "poll", "color", "print-events", "log-file", "wrap-process"}, nil)
	if len(rest) == 0 {
		return wrapped{}
	}
	return wrapped{texts: []runText{{text: Join(rest, " ")}}}
}

// runFd: fd -x/-X runs a command for the files found.
func runFd(w *wrapCall) wrapped {
	var roots []Arg
	out := wrapped{}
	for i := 0; i < len(w.args); i++ {
		s, _ := w.args[i].Text()
		if s == "-x" || s == "--exec" || s == "-X" || s == "--exec-batch" {
			j := i + 1
			for j < len(w.args) && w.args[j].String() != ";" {
				j++
			}
			found := &Hole{Kind: FromFound, Src: "{}", Under: append(roots, Lit("."))}
			var argv []Arg
			for _, a := range w.args[i+1 : j] {
				for _, ph := range []string{"{//}", "{/.}", "{/}", "{.}", "{}"} {
					a = replaceIn(a, ph, HoleArg(found))
				}
				argv = append(argv, a)
			}
			if len(argv) > 0 {
				out.more = append(out.more, argv)
			}
			i = j
			continue
		}
		if !strings.HasPrefix(s, "-") && i > 0 {
			roots = append(roots, w.args[i])
		}
	}
	return out
}

// runScreen: screen -dm CMD runs a command; -X stuff TEXT types text
// into a window, where a shell may run it.
func runScreen(w *wrapCall) wrapped {
	args := w.args
	for i := 0; i < len(args); i++ {
		s, ok := args[i].Text()
		if !ok {
			return wrapped{argv: args[i:]}
		}
		switch {
		case s == "-X":
			if i+2 < len(args) && args[i+1].String() == "stuff" {
				return wrapped{texts: []runText{{text: args[i+2]}}}
			}
			return wrapped{}
		case s == "-S" || s == "-c" || s == "-e" || s == "-h" || s == "-p" || s == "-s" || s == "-T" || s == "-t" || s == "-Logfile":
			i++
		case strings.HasPrefix(s, "-"):
		default:
			return wrapped{argv: args[i:]}
		}
	}
	return wrapped{}
}

func runDtach(w *wrapCall) wrapped {
	if len(w.args) < 2 {
		return wrapped{}
	}
	rest := getopt(w.args[2:], "erz", nil, nil)
	return wrapped{argv: rest}
}

// runAt: at and batch run their standard input (or -f FILE) later.
func runAt(w *wrapCall) wrapped {
	var file *Arg
	getopt(w.args, "fqtM", nil, func(o string, v Arg) {
		if o == "-f" {
			f := v
			file = &f
		}
	})
	if file != nil {
		return wrapped{texts: []runText{{file: file}}}
	}
	return wrapped{texts: []runText{{text: w.c.stdin}}}
}

// runCrontab: a crontab's lines are commands run later.
func runCrontab(w *wrapCall) wrapped {
	rest := getopt(w.args, "u", nil, nil)
	text := w.c.stdin
	if len(rest) > 0 {
		if s, _ := rest[0].Text(); s != "-" {
			return wrapped{texts: []runText{{file: &rest[0]}}}
		}
	}
	t, ok := text.Text()
	if !ok {
		return wrapped{texts: []runText{{text: text}}}
	}
	var out []runText
	for _, line := range strings.Split(t, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) > 0 && strings.Contains(f[0], "=") && !strings.ContainsAny(f[0], "*/") {
			continue // a variable
		}
		skip := 5
		if strings.HasPrefix(line, "@") {
			skip = 1
		}
		for i := 0; i < skip && line != ""; i++ {
			line = strings.TrimLeft(line, " \t")
			if j := strings.IndexAny(line, " \t"); j >= 0 {
				line = line[j:]
			} else {
				line = ""
			}
		}
		out = append(out, runText{text: Lit(strings.TrimSpace(line))})
	}
	return wrapped{texts: out}
}

// runNpx: npx -c TEXT runs shell text.
func runNpx(w *wrapCall) wrapped {
	out := wrapped{}
	getopt(w.args, "cp", []string{"call", "package"}, func(o string, v Arg) {
		if o == "-c" || o == "--call" {
			out.texts = append(out.texts, runText{text: v})
		}
	})
	return out
}

// runMake: a makefile st can read (from a process substitution or
// standard input): its recipe lines are shell text.
func runMake(w *wrapCall) wrapped {
	out := wrapped{}
	getopt(w.args, "fCIjlowW", []string{"file", "makefile", "directory", "include-dir", "jobs", "load-average",
		"old-file", "assume-old", "what-if", "new-file", "assume-new", "eval"}, func(o string, v Arg) {
		var text Arg
		switch o {
		case "-f", "--file", "--makefile":
			if s, _ := v.Text(); stdinPaths[s] || s == "-" {
				text = w.c.stdin
			} else if hs := v.Holes(); len(hs) == 1 && hs[0].Kind == FromProc {
				if hs[0].Out == nil {
					text = v
				} else {
					text = *hs[0].Out
				}
			} else {
				return
			}
		case "--eval":
			text = v
		default:
			return
		}
		t, ok := text.Text()
		if !ok {
			out.texts = append(out.texts, runText{text: text})
			return
		}
		for _, line := range strings.Split(t, "\n") {
			if r, ok := strings.CutPrefix(line, "\t"); ok {
				r = strings.TrimLeft(r, "@-+")
				out.texts = append(out.texts, runText{text: Lit(r)})
			}
		}
	})
	return out
}
