package shell

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// builtin applies what a shell builtin changes in the shell. The command
// is recorded already.
type builtin func(r *reader, cmd *Cmd, st *state, c *ctx) *state

// builtins are the builtins whose changes st follows. The reader looks
// them up through its own field (reader.builtins), set from this table:
// they read text with the reader (eval, source), so a lookup of this
// variable from the reader's walk would make its initialisation a cycle
// (the init() of before).
var builtins = map[string]builtin{
	"cd": bCd, "pushd": bCd, "popd": bPopd,
	"set": bSet, "shift": bShift,
	"read": bRead, "mapfile": bMapfile, "readarray": bMapfile,
	"printf": bPrintf, "echo": bEcho,
	"export": bDeclare, "declare": bDeclare, "typeset": bDeclare, "local": bDeclare, "readonly": bDeclare,
	"unset": bUnset,
	"eval":  bEval, "source": bSource, ".": bSource,
	"trap": bTrap, "alias": bAlias, "unalias": bUnalias, "hash": bHash, "enable": bEnable,
	"let": bLet, "getopts": bGetopts,
	":": bSilent, "true": bSilent, "false": bSilent, "test": bSilent, "[": bSilent, "shopt": bSilent,
	"umask": bSilent, "ulimit": bSilent, "wait": bSilent, "exit": bSilent, "return": bSilent,
	"break": bSilent, "continue": bSilent, "disown": bSilent,
}

// bSilent is a builtin that changes nothing st follows and prints nothing.
func bSilent(r *reader, cmd *Cmd, st *state, c *ctx) *state {
	r.output(c, "", true)
	return st
}

func bCd(r *reader, cmd *Cmd, st *state, c *ctx) *state {
	args := cmd.Args[1:]
	for len(args) > 0 {
		s, ok := args[0].Text()
		if !ok || s == "--" || !strings.HasPrefix(s, "-") || s == "-" {
			if ok && s == "--" {
				args = args[1:]
			}
			break
		}
		args = args[1:]
	}
	st = st.own()
	r.output(c, "", true)
	if len(args) == 0 {
		home, _ := cmd.Getenv("HOME")
		st.dir = r.encode(home)
		return st
	}
	if s, ok := args[0].Text(); ok && s == "-" {
		st.dir = r.sent(&Hole{Kind: FromVar, Var: "OLDPWD", Src: "$OLDPWD"})
		return st
	}
	st.dir = r.encode(JoinDir(r.decode(st.dir), args[0]))
	return st
}

// JoinDir is the folder p names from dir.
func JoinDir(dir, p Arg) Arg {
	if s, ok := p.Text(); ok {
		if strings.HasPrefix(s, "/") {
			return Lit(path.Clean(s))
		}
		if d, ok := dir.Text(); ok {
			if d == "" {
				return Lit(path.Clean(s))
			}
			return Lit(path.Join(d, s))
		}
		return Concat(dir, Lit("/"+s))
	}
	if p.HasPrefix("/") {
		return p
	}
	if len(p.pieces) > 0 && p.pieces[0].hole != nil {
		// It may be absolute: where it leads is unknown.
		return HoleArg(&Hole{Kind: FromVar, Var: "PWD", Src: p.String()})
	}
	return Concat(dir, Lit("/"), p)
}

func bPopd(r *reader, cmd *Cmd, st *state, c *ctx) *state {
	st = st.own()
	st.dir = r.sent(&Hole{Kind: FromVar, Var: "PWD", Src: "popd"})
	r.output(c, "", false)
	return st
}

func bSet(r *reader, cmd *Cmd, st *state, c *ctx) *state {
	st = st.own()
	args := cmd.Args[1:]
	for i := 0; i < len(args); i++ {
		s, ok := args[i].Text()
		if !ok {
			st.posKnown, st.pos = false, nil
			return st
		}
		switch {
		case s == "--" || s == "-":
			return setPos(r, st, args[i+1:])
		case s == "-o" || s == "+o":
			if i+1 < len(args) {
				if v, _ := args[i+1].Text(); v == "allexport" {
					st.allexport = s == "-o"
				}
				i++
			}
		case strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+"):
			if strings.Contains(s, "a") {
				st.allexport = s[0] == '-'
			}
		default:
			return setPos(r, st, args[i:])
		}
	}
	if len(args) == 0 {
		r.output(c, "", false)
	}
	return st
}

func setPos(r *reader, st *state, args []Arg) *state {
	st.pos, st.posKnown = nil, true
	for _, a := range args {
		if a.Split {
			st.posKnown = false
		}
		st.pos = append(st.pos, r.encode(a))
	}
	return st
}

func bShift(r *reader, cmd *Cmd, st *state, c *ctx) *state {
	st = st.own()
	n := 1
	if len(cmd.Args) > 1 {
		s, ok := cmd.Args[1].Known()
		if !ok || !isDigits(s) {
			st.posKnown, st.pos = false, nil
			return st
		}
		n = atoi(s)
	}
	if st.posKnown {
		st.pos = st.pos[min(n, len(st.pos)):]
	}
	return st
}

// readOpts parses a builtin's options: vals are the letters that take a
// value. It returns the options seen (letter to value) and the operands;
// ok is false when an option position holds a hole.
func readOpts(args []Arg, vals string) (map[byte]Arg, []Arg, bool) {
	opts := map[byte]Arg{}
	for i := 0; i < len(args); i++ {
		s, ok := args[i].Text()
		if !ok {
			return opts, args[i:], false
		}
		if s == "--" {
			return opts, args[i+1:], true
		}
		if len(s) < 2 || s[0] != '-' {
			return opts, args[i:], true
		}
		for j := 1; j < len(s); j++ {
			if strings.IndexByte(vals, s[j]) >= 0 {
				if j+1 < len(s) {
					opts[s[j]] = Lit(s[j+1:])
				} else if i+1 < len(args) {
					i++
					opts[s[j]] = args[i]
				}
				break
			}
			opts[s[j]] = Arg{}
		}
	}
	return opts, nil, true
}

func holesFrom(args ...Arg) []*Cmd {
	var from []*Cmd
	for _, a := range args {
		for _, h := range a.Holes() {
			from = append(from, h.From...)
		}
	}
	return from
}

func bRead(r *reader, cmd *Cmd, st *state, c *ctx) *state {
	st = st.own()
	opts, names, ok := readOpts(cmd.Args[1:], "adinNptu")
	if !ok {
		return r.clobber(st)
	}
	if _, ok := opts['a']; ok {
		if n, ok := opts['a'].Text(); ok && isName(n) {
			names = append(names, Lit(n))
		}
	}
	if len(names) == 0 {
		names = []Arg{Lit("REPLY")}
	}
	var vals []string
	known := false
	_, hasU := opts['u']
	_, hasN := opts['n']
	_, hasBigN := opts['N']
	if text, ok := cmd.Stdin.Known(); ok && !hasU && !hasN && !hasBigN {
		delim := "\n"
		if d, ok := opts['d']; ok {
			delim, _ = d.Text()
			if delim == "" {
				delim = "\x00"
			}
			delim = delim[:1]
		}
		line, rest, _ := strings.Cut(text, delim)
		// More lines: a loop of reads takes each in turn, which st does
		// not follow.
		if strings.TrimLeft(rest, " \t\n") == "" {
			_, raw := opts['r']
			// IFS=, read a b: the read splits by the command's IFS.
			ifs := st
			if v, ok := cmd.env.over["IFS"]; ok {
				ifs = st.clone()
				ifs.vars["IFS"] = v
			}
			cfg := &expand.Config{Env: environ{r: r, st: ifs}}
			vals = expand.ReadFields(cfg, line, len(names), raw)
			known = true
		}
	}
	from := holesFrom(cmd.Stdin)
	for i, n := range names {
		name, ok := n.Text()
		if !ok {
			return r.clobber(st)
		}
		if !isName(name) {
			continue
		}
		if !known || hasSentinel(strings.Join(vals, "")) {
			st.lost(r, name, from)
			continue
		}
		v := ""
		if i < len(vals) {
			v = vals[i]
		}
		if _, isArr := opts['a']; isArr {
			st.setVar(r, name, variable{set: Yes, exported: st.get(r, name).exported, isList: true, list: vals, assigned: true})
			continue
		}
		st.assign(r, name, v)
	}
	r.output(c, "", true)
	return st
}

func bMapfile(r *reader, cmd *Cmd, st *state, c *ctx) *state {
	opts, names, ok := readOpts(cmd.Args[1:], "dnOsuCc")
	if !ok {
		return r.clobber(st)
	}
	if cb, ok := opts['C']; ok {
		st = r.text(cb, st, c.with("mapfile -C").maybe())
	}
	st = st.own()
	name := "MAPFILE"
	if len(names) > 0 {
		n, ok := names[0].Text()
		if !ok {
			return r.clobber(st)
		}
		name = n
	}
	if !isName(name) {
		return st
	}
	text, known := cmd.Stdin.Known()
	if !known || len(opts) > 1 || (len(opts) == 1 && opts['t'].String() != "") {
		if _, t := opts['t']; !(known && len(opts) == 1 && t) {
			st.lost(r, name, holesFrom(cmd.Stdin))
			return st
		}
	}
	_, trim := opts['t']
	var list []string
	for _, l := range strings.SplitAfter(text, "\n") {
		if l == "" {
			continue
		}
		if trim {
			l = strings.TrimSuffix(l, "\n")
		}
		list = append(list, l)
	}
	st.setVar(r, name, variable{set: Yes, exported: st.get(r, name).exported, isList: true, list: list, assigned: true})
	return st
}

func bPrintf(r *reader, cmd *Cmd, st *state, c *ctx) *state {
	args := cmd.Args[1:]
	varName := ""
	if len(args) > 0 {
		if s, ok := args[0].Text(); ok && strings.HasPrefix(s, "-v") {
			if s == "-v" && len(args) > 1 {
				varName, _ = args[1].Text()
				args = args[2:]
			} else {
				varName = s[2:]
				args = args[1:]
			}
			if varName == "" {
				return r.clobber(st)
			}
		}
	}
	if len(args) > 0 {
		if s, ok := args[0].Text(); ok && s == "--" {
			args = args[1:]
		}
	}
	out, ok := "", false
	if strs, known := knownAll(args); known && len(strs) > 0 {
		out, ok = format(strs[0], strs[1:])
	}
	if varName == "" {
		r.output(c, out, ok)
		return st
	}
	st = st.own()
	if !isName(varName) {
		return r.clobber(st)
	}
	if !ok {
		st.lost(r, varName, holesFrom(args...))
		return st
	}
	st.assign(r, varName, out)
	r.output(c, "", true)
	return st
}

func knownAll(args []Arg) ([]string, bool) {
	out := make([]string, len(args))
	for i, a := range args {
		s, ok := a.Known()
		if !ok || a.Split {
			return nil, false
		}
		out[i] = s
	}
	return out, true
}

func bEcho(r *reader, cmd *Cmd, st *state, c *ctx) *state {
	args := cmd.Args[1:]
	newline, escapes := true, false
	for len(args) > 0 {
		s, ok := args[0].Text()
		if !ok || len(s) < 2 || s[0] != '-' || strings.Trim(s[1:], "neE") != "" {
			break
		}
		for _, f := range s[1:] {
			switch f {
			case 'n':
				newline = false
			case 'e':
				escapes = true
			case 'E':
				escapes = false
			}
		}
		args = args[1:]
	}
	strs, ok := knownAll(args)
	if !ok {
		r.output(c, "", false)
		return st
	}
	out := strings.Join(strs, " ")
	if strings.Contains(out, "\\") {
		if !escapes {
			// sh's echo reads escapes, bash's does not.
			r.output(c, "", false)
			return st
		}
		out, ok = format("%b", []string{out})
		if !ok {
			r.output(c, "", false)
			return st
		}
	}
	if newline {
		out += "\n"
	}
	r.output(c, out, true)
	return st
}

// decl handles declare, local, export, readonly and typeset as mvdan
// parses them.
func (r *reader) decl(d *syntax.DeclClause, st *state, c *ctx) *state {
	var flags []string
	var assigns []*syntax.Assign
	for _, as := range d.Args {
		if as.Name == nil && as.Naked && as.Value != nil {
			v := r.literal(as.Value, st, c)
			s, ok := v.Text()
			if !ok {
				r.record([]Arg{Lit(d.Variant.Value), v}, nil, nil, st, c, r.srcOf(d))
				return r.clobber(st)
			}
			// A flag, or a name made by expansion (declare "$x=1").
			flags, assigns = declWord(s, flags, assigns)
			continue
		}
		assigns = append(assigns, as)
	}
	args := []Arg{Lit(d.Variant.Value)}
	for _, f := range flags {
		args = append(args, Lit(f))
	}
	r.record(args, nil, nil, st, c, r.srcOf(d))
	return r.declare(d.Variant.Value, flags, assigns, st, c)
}

func (r *reader) declare(variant string, flags []string, assigns []*syntax.Assign, st *state, c *ctx) *state {
	export, unexport, lower, upper, lose, funcs := variant == "export", false, false, false, false, false
	for _, f := range flags {
		on := f[0] == '-'
		for _, ch := range f[1:] {
			switch ch {
			case 'x':
				export, unexport = on, !on
			case 'n':
				if variant == "export" {
					unexport = true
					export = false
				} else if on {
					lose = true
				}
			case 'i':
				lose = lose || on
			case 'l':
				lower = on
			case 'u':
				upper = on
			case 'f', 'F', 'p':
				funcs = true
			}
		}
	}
	r.output(c, "", !funcs && len(assigns) > 0)
	if funcs {
		return st
	}
	st = st.own()
	for _, as := range assigns {
		if as.Name == nil {
			continue
		}
		name := as.Name.Value
		if !as.Naked || as.Array != nil {
			st = r.assign(as, st, st, c, false)
		}
		v := st.get(r, name)
		if as.Naked && as.Array == nil && v.set == No {
			// declare x: declared, not set.
		}
		if lose {
			st.lost(r, name, nil)
			v = st.get(r, name)
		}
		if lower || upper {
			v.lower, v.upper = lower, upper
			if v.set != No && !v.isList {
				if lower {
					v.val = strings.ToLower(v.val)
				} else {
					v.val = strings.ToUpper(v.val)
				}
			}
		}
		switch {
		case export:
			v.exported = Yes
		case unexport:
			v.exported = No
		}
		v.assigned = true
		st.vars[name] = v
	}
	return st
}

// bDeclare is declare and friends reached as plain commands (builtin
// export, command declare), with expanded words.
func bDeclare(r *reader, cmd *Cmd, st *state, c *ctx) *state {
	var flags []string
	var assigns []*syntax.Assign
	for _, a := range cmd.Args[1:] {
		s, ok := a.Text()
		if !ok {
			return r.clobber(st)
		}
		flags, assigns = declWord(s, flags, assigns)
	}
	return r.declare(cmd.Name(), flags, assigns, st, c)
}

// declWord reads an expanded word of declare and friends: a flag (-x,
// +x), or NAME[=VALUE].
func declWord(s string, flags []string, assigns []*syntax.Assign) ([]string, []*syntax.Assign) {
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		return append(flags, s), assigns
	}
	name, val, hasVal := strings.Cut(s, "=")
	if !isName(name) {
		return flags, assigns
	}
	as := &syntax.Assign{Name: &syntax.Lit{Value: name}, Naked: !hasVal}
	if hasVal {
		as.Value = &syntax.Word{Parts: []syntax.WordPart{&syntax.SglQuoted{Value: val}}}
	}
	return flags, append(assigns, as)
}

func bUnset(r *reader, cmd *Cmd, st *state, c *ctx) *state {
	st = st.own()
	funcs := false
	for _, a := range cmd.Args[1:] {
		s, ok := a.Text()
		if !ok {
			return r.clobber(st)
		}
		switch s {
		case "-f":
			funcs = true
			continue
		case "-v", "-n":
			continue
		}
		if funcs {
			if st.funcs != nil {
				delete(st.funcs, s)
			}
			continue
		}
		if isName(s) {
			st.setVar(r, s, variable{set: No, exported: No, assigned: true})
		}
	}
	r.output(c, "", true)
	return st
}

func bEval(r *reader, cmd *Cmd, st *state, c *ctx) *state {
	args := cmd.Args[1:]
	if len(args) > 0 {
		if s, ok := args[0].Text(); ok && s == "--" {
			args = args[1:]
		}
	}
	return r.text(Join(args, " "), st, c.with("eval"))
}

func bSource(r *reader, cmd *Cmd, st *state, c *ctx) *state {
	if len(cmd.Args) < 2 {
		return st
	}
	file := cmd.Args[1]
	if s, ok := file.Text(); ok && s == "--" && len(cmd.Args) > 2 {
		file = cmd.Args[2]
	}
	return r.sourceFile(file, st, c.withStdin(cmd.Stdin).with(cmd.Name()))
}

// stdinPaths are the file names of standard input.
var stdinPaths = map[string]bool{"/dev/stdin": true, "/dev/fd/0": true, "/proc/self/fd/0": true}

// sourceFile reads a file run as shell text in the shell st: standard
// input, a process substitution, or a file st cannot read.
func (r *reader) sourceFile(file Arg, st *state, c *ctx) *state {
	if s, ok := file.Text(); ok {
		if stdinPaths[s] {
			return r.text(c.stdin, st, c)
		}
		if strings.HasPrefix(s, "/dev/") || strings.HasPrefix(s, "/proc/") {
			// Another file descriptor (bash 3<<<'...' /dev/fd/3), a
			// device: text st does not follow.
			r.unknownText(file, st, c, s)
			return r.clobber(st)
		}
		abs := r.absPath(Lit(s), st)
		if fact, ok := r.files[abs]; ok && abs != "" {
			// A file the text wrote.
			if !fact.known {
				r.unknownText(Lit("(the file "+s+" this command wrote)"), st, c, s)
				return r.clobber(st)
			}
			return r.text(fact.content, st, c)
		}
		if data, ok := r.readFile(abs); ok && abs != "" {
			cc := *c
			cc.file = abs
			return r.text(Lit(data), st, &cc)
		}
		// A file on disk st does not read: what it sets is unknown.
		r.output(c, "", false)
		return r.clobber(st)
	}
	if hs := file.Holes(); len(hs) == 1 && len(file.pieces) == 1 && hs[0].Kind == FromProc {
		if hs[0].Out != nil {
			return r.text(*hs[0].Out, st, c)
		}
		r.unknownText(file, st, c, file.String())
		return r.clobber(st)
	}
	for _, h := range file.Holes() {
		if h.Kind == FromProc {
			r.unknownText(file, st, c, file.String())
			return r.clobber(st)
		}
	}
	r.output(c, "", false)
	return r.clobber(st)
}

func bTrap(r *reader, cmd *Cmd, st *state, c *ctx) *state {
	args := cmd.Args[1:]
	if len(args) > 0 {
		if s, ok := args[0].Text(); ok {
			switch s {
			case "-l", "-p", "-P":
				return st
			case "--":
				args = args[1:]
			}
		}
	}
	if len(args) < 2 {
		return st
	}
	if s, ok := args[0].Text(); ok && (s == "-" || s == "") {
		return st
	}
	// It runs later, in this shell: read it now.
	r.text(args[0], st.clone(), c.with("trap").maybe())
	r.output(c, "", true)
	return st
}

func bAlias(r *reader, cmd *Cmd, st *state, c *ctx) *state {
	st = st.own()
	for _, a := range cmd.Args[1:] {
		s, ok := a.Text()
		if !ok {
			return r.clobber(st)
		}
		name, _, has := strings.Cut(s, "=")
		if !has {
			continue
		}
		// The value may hold holes: keep it encoded.
		enc := r.encode(a)
		_, val, _ := strings.Cut(enc, "=")
		if st.aliases == nil {
			st.aliases = map[string][]string{}
		}
		st.aliases[name] = []string{val}
	}
	r.output(c, "", false)
	return st
}

func bUnalias(r *reader, cmd *Cmd, st *state, c *ctx) *state {
	st = st.own()
	for _, a := range cmd.Args[1:] {
		s, _ := a.Text()
		if s == "-a" {
			st.aliases = nil
			continue
		}
		delete(st.aliases, s)
	}
	return st
}

func bHash(r *reader, cmd *Cmd, st *state, c *ctx) *state {
	opts, names, ok := readOpts(cmd.Args[1:], "pdt")
	if !ok {
		return r.clobber(st)
	}
	st = st.own()
	if p, ok := opts['p']; ok {
		if st.hashed == nil {
			st.hashed = map[string]string{}
		}
		for _, n := range names {
			if s, ok := n.Text(); ok {
				st.hashed[s] = r.encode(p)
			}
		}
	}
	if _, ok := opts['r']; ok {
		st.hashed = nil
	}
	r.output(c, "", false)
	return st
}

func bEnable(r *reader, cmd *Cmd, st *state, c *ctx) *state {
	for _, a := range cmd.Args[1:] {
		if s, ok := a.Text(); ok && strings.HasPrefix(s, "-") && strings.Contains(s, "f") {
			// A builtin loaded from a shared object: code st cannot read.
			r.unknownText(Join(cmd.Args, " "), st, c.with("enable -f"), cmd.Src)
			return st
		}
	}
	return st
}

func bLet(r *reader, cmd *Cmd, st *state, c *ctx) *state {
	x := &expander{r: r, st: st, c: c, p: &prepared{}}
	for _, a := range cmd.Args[1:] {
		s, ok := a.Text()
		if !ok {
			return r.clobber(st)
		}
		e, err := syntax.NewParser().Arithmetic(strings.NewReader(s))
		if err != nil {
			continue
		}
		x.arith(e)
	}
	r.output(c, "", true)
	return r.lose(st, x.setsVars)
}

func bGetopts(r *reader, cmd *Cmd, st *state, c *ctx) *state {
	names := []string{"OPTARG", "OPTIND"}
	if len(cmd.Args) > 2 {
		if s, ok := cmd.Args[2].Text(); ok && isName(s) {
			names = append(names, s)
		} else {
			return r.clobber(st)
		}
	}
	return r.lose(st, names)
}
