package shell

import (
	"path"
	"slices"
	"strings"
)

// The engine of the programs that run other programs: what a runner
// sees (wrapCall) and gives back (wrapped), option reading (getopt, spec,
// plain), and runWrapped, which records a runner's command and reads what
// it runs. What each program runs is in the files of its family, each
// with its table: users.go (sudo, su...), process.go (env, nohup,
// timeout, unshare...), shells.go (sh -c, exec, busybox, screen...),
// filetools.go (find -exec, xargs, parallel...), debuggers.go (gdb,
// strace), vcs.go (git), buildtools.go (make, npx, hyperfine), later.go
// (ssh, at, crontab). Both the guard and the ownership scopes read
// commands through them.

// runnerFamilies are the families' tables. The reader looks a program up
// through its own field (reader.runners), set from this list: the tables'
// runners read text with the reader, so a lookup of this variable from the
// reader's walk would make their initialisation a cycle (the init() of
// before).
var runnerFamilies = []map[string]runner{userRunners, processRunners, shellRunners, fileRunners,
	debugRunners, vcsRunners, buildRunners, laterRunners}

// lookupRunner is the runner of the program name, from families.
func lookupRunner(families []map[string]runner, name string) (runner, bool) {
	for _, t := range families {
		if run, ok := t[name]; ok {
			return run, true
		}
	}
	return nil, false
}

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

// textBuiltins are the builtins that run shell text.
var textBuiltins = []string{"eval", "source", ".", "trap", "alias"}

// IsRunner reports whether a program runs another command given in its
// arguments or shell text (the families' tables): a program st reads
// through.
func IsRunner(name string) bool {
	_, ok := lookupRunner(runnerFamilies, name)
	return ok || slices.Contains(textBuiltins, name)
}

// Runners lists the programs of the tables and the builtins that run
// text.
func Runners() []string {
	out := append([]string(nil), textBuiltins...)
	for _, t := range runnerFamilies {
		for k := range t {
			out = append(out, k)
		}
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

func (w *wrapCall) dirArg() Arg { return w.r.decode(w.st.dir) }

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
		r.runText(t, ist.child(inner), cc, c.stdin)
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

// runText reads shell text a runner runs in a new shell sh (one of its
// own, elsewhere, for ssh's), with its $0, $1...
func (r *reader) runText(t runText, sh *state, cc *ctx, stdin Arg) {
	if t.remote {
		sh = r.initial()
		sh.clobbered = true
		sh.vars["TMUX"] = variable{set: No, exported: No, assigned: true}
		sh.dir = r.sent(&Hole{Kind: FromVar, Var: "PWD", Src: "(remote folder)"})
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
	if t.file != nil {
		r.sourceFile(*t.file, sh, cc.withStdin(stdin))
		return
	}
	r.text(t.text, sh, cc.withStdin(Lit("")))
}
