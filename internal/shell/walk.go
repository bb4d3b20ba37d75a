package shell

import (
	"bytes"
	"path"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// reader follows one command line: the text, the holes met, the commands
// found, and the work left.
type reader struct {
	src       string // the command line
	cur       string // the text being walked (nested texts have their own)
	env       Env
	holes     []*Hole
	holeIndex map[*Hole]int
	varHoles  map[string]*Hole
	cmds      []*Cmd
	work      int
	err       error
	called    map[*funcDef]bool
	defined   []*funcDef
	acc       *outAcc // where the output of commands goes, when st follows it
	// files are the files the text writes, by absolute path: what they
	// hold when st can tell (echo ... > f), for a later bash f or ./f.
	files map[string]fileFact
	// runners are the tables of the programs that run others
	// (runnerFamilies; runners.go says why a field).
	runners []map[string]runner
	// builtins are the builtins st follows (builtins.go says why a field).
	builtins map[string]builtin
}

type fileFact struct {
	content Arg
	known   bool
}

func newReader(src string, env Env) *reader {
	return &reader{
		src: src, cur: src, env: env, runners: runnerFamilies, builtins: builtins,
		holeIndex: map[*Hole]int{},
		varHoles:  map[string]*Hole{},
		called:    map[*funcDef]bool{},
		files:     map[string]fileFact{},
		// Work: bytes expanded and nodes visited. Four times the text, and
		// a floor that every ordinary command stays far below.
		work: 1<<20 + 4*len(src),
	}
}

// ctx is where a statement runs.
type ctx struct {
	via      []string
	wrappers []string
	depth    int    // nested texts
	calls    int    // function calls
	stdin    Arg    // what it reads
	other    bool   // may run as another user
	cond     bool   // may or may not run (a branch, a loop, after && or ||)
	file     string // the file on disk the text comes from, if any
	unroll   int    // how many times loops around this point run it, as st walks them
}

func (c *ctx) with(via string) *ctx {
	n := *c
	n.via = append(append([]string(nil), c.via...), via)
	return &n
}

func (c *ctx) maybe() *ctx {
	if c.cond {
		return c
	}
	n := *c
	n.cond = true
	return &n
}

func (c *ctx) withStdin(a Arg) *ctx {
	n := *c
	n.stdin = a
	return &n
}

// outAcc gathers the output of a substitution or a pipe's stage, while
// st can tell it.
type outAcc struct {
	b     strings.Builder
	known bool
}

func (r *reader) output(c *ctx, s string, known bool) {
	if r.acc == nil || !r.acc.known {
		return
	}
	if !known || (c.cond && s != "") {
		r.acc.known = false
		return
	}
	r.acc.b.WriteString(s)
}

func (r *reader) walkFile(f *syntax.File, st *state, c *ctx) *state {
	st = r.stmts(f.Stmts, st, c)
	// Functions defined but never called may still run (trap, a name st
	// could not read): read each once, with unknown arguments.
	for i := 0; i < len(r.defined) && r.err == nil; i++ {
		fd := r.defined[i]
		if r.called[fd] {
			continue
		}
		r.called[fd] = true
		fs := st.clone()
		fs.posKnown, fs.pos = false, nil
		cur := r.cur
		r.cur = fd.src
		r.stmt(fd.body, fs, c.with("function "+fd.name).maybe())
		r.cur = cur
	}
	return st
}

func (r *reader) stmts(list []*syntax.Stmt, st *state, c *ctx) *state {
	for _, s := range list {
		if r.err != nil {
			return st
		}
		st = r.stmt(s, st, c)
	}
	return st
}

func (r *reader) stmt(s *syntax.Stmt, st *state, c *ctx) *state {
	if !r.charge(64) {
		return st
	}
	if s.Background || s.Coprocess || s.Disown {
		// A job of its own: what it changes stays there.
		r.stmtIn(s, st.clone(), c)
		return st
	}
	return r.stmtIn(s, st, c)
}

func (r *reader) stmtIn(s *syntax.Stmt, st *state, c *ctx) *state {
	if ce, ok := s.Cmd.(*syntax.CallExpr); ok {
		// bash expands a simple command's words before its redirections.
		return r.call(ce, st, c, s)
	}
	redirs, stdin, hasStdin, outGone, outFile := r.redirs(s.Redirs, st, c)
	cc := c
	if hasStdin {
		cc = c.withStdin(stdin)
	}
	if outGone {
		// Its output goes to a file: none of it reaches a pipe.
		defer r.capture(outFile)()
	}
	if s.Cmd == nil {
		if len(redirs) > 0 {
			r.record(nil, nil, redirs, st, cc, r.srcOf(s))
		}
		if hasStdin {
			// $(<file) prints the file.
			r.output(cc, "", false)
		}
		return st
	}
	if len(redirs) > 0 {
		// The redirections of a compound command: recorded for what
		// they write.
		r.record(nil, nil, redirs, st, cc, r.srcOf(s))
	}
	return r.compound(s.Cmd, st, cc)
}

// redirs expands redirections: their words, here-documents, and what
// becomes the standard input.
func (r *reader) redirs(list []*syntax.Redirect, st *state, c *ctx) (out []Redir, stdin Arg, hasStdin, outGone bool, outFile string) {
	for _, rd := range list {
		fd := ""
		if rd.N != nil {
			fd = rd.N.Value
		}
		red := Redir{Op: rd.Op.String(), Fd: fd}
		in := fd == "" || fd == "0"
		outFd := fd == "" || fd == "1"
		switch rd.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			red.Target = r.literal(rd.Word, st, c)
			var body Arg
			if rd.Hdoc != nil {
				if quotedDelim(rd.Word) {
					body = Lit(wordLits(rd.Hdoc))
				} else {
					body = r.document(rd.Hdoc, st, c)
				}
			}
			red.Body = &body
			if in {
				stdin, hasStdin = body, true
			}
		case syntax.WordHdoc:
			body := Concat(r.literal(rd.Word, st, c), Lit("\n"))
			red.Body = &body
			if in {
				stdin, hasStdin = body, true
			}
		default:
			red.Target = r.literal(rd.Word, st, c)
			switch rd.Op {
			case syntax.RdrIn, syntax.RdrInOut, syntax.DplIn:
				if in {
					stdin, hasStdin = HoleArg(&Hole{Kind: FromOutput, Src: "<" + red.Target.String()}), true
				}
			case syntax.RdrAll, syntax.AppAll, syntax.RdrAllClob, syntax.AppAllClob:
				outGone = true
				outFile = r.absPath(red.Target, st)
			case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.DplOut:
				if outFd {
					outGone = true
					outFile = ""
					if rd.Op != syntax.DplOut {
						outFile = r.absPath(red.Target, st)
						if rd.Op == syntax.AppOut || rd.Op == syntax.AppClob {
							outFile = ">>" + outFile
						}
					}
				}
			}
		}
		out = append(out, red)
	}
	return out, stdin, hasStdin, outGone, outFile
}

// absPath is a known path made absolute from the shell's folder, or "".
func (r *reader) absPath(p Arg, st *state) string {
	t, ok := p.Known()
	if !ok || t == "" {
		return ""
	}
	if strings.HasPrefix(t, "/") {
		return path.Clean(t)
	}
	d, ok := r.decode(st.dir).Text()
	if !ok || !strings.HasPrefix(d, "/") {
		return ""
	}
	return path.Join(d, t)
}

// capture starts following what a command prints into a file; done
// keeps it (known or not) as the file's content.
func (r *reader) capture(outFile string) (done func()) {
	saved := r.acc
	if outFile == "" {
		r.acc = nil
		return func() { r.acc = saved }
	}
	acc := &outAcc{known: true}
	r.acc = acc
	return func() {
		r.acc = saved
		file, appendTo := strings.CutPrefix(outFile, ">>")
		f := fileFact{known: acc.known, content: Lit(acc.b.String())}
		if appendTo {
			// What the file held before is known only if the text wrote it.
			old, ok := r.files[file]
			f.known = f.known && ok && old.known
			f.content = Concat(old.content, f.content)
		}
		r.files[file] = f
	}
}

func quotedDelim(w *syntax.Word) bool {
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if strings.Contains(p.Value, "\\") {
				return true
			}
		default:
			return true
		}
	}
	return false
}

func wordLits(w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			b.WriteString(l.Value)
		}
	}
	return b.String()
}

func (r *reader) compound(cmd syntax.Command, st *state, c *ctx) *state {
	switch cmd := cmd.(type) {
	case *syntax.Block:
		return r.stmts(cmd.Stmts, st, c)
	case *syntax.Subshell:
		r.stmts(cmd.Stmts, st.clone(), c)
		return st
	case *syntax.BinaryCmd:
		switch cmd.Op {
		case syntax.AndStmt, syntax.OrStmt:
			a := r.stmt(cmd.X, st, c)
			a.shared = true
			b := r.stmt(cmd.Y, a, c.maybe())
			return r.merge(a, b)
		default:
			r.pipeline(cmd, st, c)
			return st
		}
	case *syntax.IfClause:
		return r.ifClause(cmd, st, c)
	case *syntax.WhileClause:
		return r.whileClause(cmd, st, c)
	case *syntax.ForClause:
		return r.forClause(cmd, st, c)
	case *syntax.CaseClause:
		return r.caseClause(cmd, st, c)
	case *syntax.FuncDecl:
		return r.funcDecl(cmd, st)
	case *syntax.ArithmCmd:
		x := &expander{r: r, st: st, c: c, p: &prepared{}}
		x.arith(cmd.X)
		return r.lose(st, x.setsVars)
	case *syntax.LetClause:
		x := &expander{r: r, st: st, c: c, p: &prepared{}}
		for _, e := range cmd.Exprs {
			x.arith(e)
		}
		return r.lose(st, x.setsVars)
	case *syntax.TestClause:
		r.walkSubsts(cmd.X, st, c)
		r.output(c, "", true)
		return st
	case *syntax.DeclClause:
		return r.decl(cmd, st, c)
	case *syntax.TimeClause:
		if cmd.Stmt == nil {
			return st
		}
		return r.stmt(cmd.Stmt, st, c)
	case *syntax.CoprocClause:
		r.stmt(cmd.Stmt, st.clone(), c)
		return st
	case *syntax.TestDecl:
		return r.stmt(cmd.Body, st, c)
	}
	r.limit("st cannot follow this shell construct (%T)", cmd)
	return st
}

// whileClause walks a loop's condition and body twice (see loop).
func (r *reader) whileClause(wc *syntax.WhileClause, st *state, c *ctx) *state {
	st.shared = true
	cc := c.maybe()
	s1 := r.stmts(wc.Cond, st, cc)
	s1.shared = true
	b1 := r.stmts(wc.Do, s1, cc)
	m := r.merge(st, b1)
	m.shared = true
	s2 := r.stmts(wc.Cond, m, cc)
	s2.shared = true
	r.stmts(wc.Do, s2, cc)
	return r.merge(s1, s2)
}

// caseClause walks every branch: any may run.
func (r *reader) caseClause(cc *syntax.CaseClause, st *state, c *ctx) *state {
	r.literal(cc.Word, st, c)
	st.shared = true
	out := st
	for _, it := range cc.Items {
		for _, p := range it.Patterns {
			r.walkSubsts(p, st, c)
		}
		b := r.stmts(it.Stmts, st, c.maybe())
		out = r.merge(out, b)
		out.shared = true
	}
	return out
}

// funcDecl defines a function; its body is read where it is called (or,
// never called, at the end: it may run from a trap).
func (r *reader) funcDecl(fd *syntax.FuncDecl, st *state) *state {
	st = st.own()
	if st.funcs == nil {
		st.funcs = map[string][]*funcDef{}
	}
	name := ""
	if fd.Name != nil {
		name = fd.Name.Value
	}
	def := &funcDef{name: name, body: fd.Body, src: r.cur}
	st.funcs[def.name] = []*funcDef{def}
	r.defined = append(r.defined, def)
	return st
}

func (r *reader) lose(st *state, names []string) *state {
	if len(names) == 0 {
		return st
	}
	st = st.own()
	for _, n := range names {
		st.lost(r, n, nil)
	}
	return st
}

func (r *reader) ifClause(ic *syntax.IfClause, st *state, c *ctx) *state {
	if !ic.ThenPos.IsValid() {
		// else
		return r.stmts(ic.Then, st, c)
	}
	cond := r.stmts(ic.Cond, st, c.maybe())
	cond.shared = true
	then := r.stmts(ic.Then, cond, c.maybe())
	var els *state = cond
	if ic.Else != nil {
		els = r.ifClause(ic.Else, cond, c.maybe())
	}
	return r.merge(then, els)
}

func (r *reader) forClause(fc *syntax.ForClause, st *state, c *ctx) *state {
	cc := c.maybe()
	switch loop := fc.Loop.(type) {
	case *syntax.WordIter:
		var items []Arg
		known := true
		if loop.InPos.IsValid() || len(loop.Items) > 0 {
			items = r.fields(loop.Items, st, c)
		} else if st.posKnown {
			for _, p := range st.pos {
				items = append(items, r.decode(p))
			}
		} else {
			known = false
		}
		for _, it := range items {
			if !it.IsKnown() || it.Split {
				known = false
			}
		}
		name := loop.Name.Value
		st.shared = true
		if known && max(c.unroll, 1)*len(items) <= maxLoopItems {
			// Each item in turn (loops inside loops share the bound).
			cc := c.maybe()
			n := *cc
			n.unroll = max(c.unroll, 1) * len(items)
			cc = &n
			out := st
			cur := st
			for _, it := range items {
				cur = cur.own()
				cur.assign(r, name, r.encode(it))
				cur = r.stmts(fc.Do, cur, cc)
				cur.shared = true
				out = r.merge(out, cur)
				out.shared = true
			}
			return out
		}
		var from []*Cmd
		for _, it := range items {
			for _, h := range it.Holes() {
				from = append(from, h.From...)
			}
		}
		s1 := st.own()
		s1.lost(r, name, from)
		return r.loop(fc.Do, s1, cc)
	case *syntax.CStyleLoop:
		x := &expander{r: r, st: st, c: c, p: &prepared{}}
		x.arith(loop.Init)
		x.arith(loop.Cond)
		x.arith(loop.Post)
		return r.loop(fc.Do, r.lose(st, x.setsVars), cc)
	}
	return st
}

// loop walks a loop's body twice: once from the state before it, once
// from what either may hold, so that what an iteration sets is uncertain
// in the next.
func (r *reader) loop(body []*syntax.Stmt, st *state, c *ctx) *state {
	st.shared = true
	b1 := r.stmts(body, st, c)
	m := r.merge(st, b1)
	m.shared = true
	b2 := r.stmts(body, m, c)
	return r.merge(m, b2)
}

// pipeline reads the stages of a pipe, each in a subshell, each reading
// what the one before prints.
func (r *reader) pipeline(b *syntax.BinaryCmd, st *state, c *ctx) {
	var stages []*syntax.Stmt
	var flatten func(s *syntax.Stmt)
	flatten = func(s *syntax.Stmt) {
		if bc, ok := s.Cmd.(*syntax.BinaryCmd); ok && (bc.Op == syntax.Pipe || bc.Op == syntax.PipeAll) && len(s.Redirs) == 0 && !s.Negated {
			flatten(bc.X)
			flatten(bc.Y)
			return
		}
		stages = append(stages, s)
	}
	flatten(b.X)
	flatten(b.Y)
	in := c.stdin
	saved := r.acc
	for i, s := range stages {
		last := i == len(stages)-1
		acc := &outAcc{known: true}
		if last {
			r.acc = saved
		} else {
			r.acc = acc
		}
		start := len(r.cmds)
		r.stmt(s, st.clone(), c.withStdin(in))
		if !last {
			if acc.known {
				in = Lit(acc.b.String())
			} else {
				// What a stage prints may come from what it reads.
				from := append(r.cmds[start:len(r.cmds):len(r.cmds)], holesFrom(in)...)
				in = HoleArg(&Hole{Kind: FromOutput, Src: "| " + r.srcOf(s), From: from})
			}
		}
	}
	r.acc = saved
}

// cmdSubst reads $(...): its commands run in a subshell; the hole is
// their output.
func (r *reader) cmdSubst(cs *syntax.CmdSubst, st *state, c *ctx) *Hole {
	start := len(r.cmds)
	saved := r.acc
	acc := &outAcc{known: true}
	r.acc = acc
	r.stmts(cs.Stmts, st.clone(), c.with("$(...)"))
	r.acc = saved
	h := &Hole{Kind: FromOutput, Src: r.srcOf(cs), From: r.cmds[start:len(r.cmds):len(r.cmds)]}
	if acc.known {
		out := Lit(strings.TrimRight(acc.b.String(), "\n"))
		h.Out = &out
	}
	return h
}

// procSubst reads <(...) and >(...): a /dev/fd path; reading <(...)
// gives the output of its commands.
func (r *reader) procSubst(ps *syntax.ProcSubst, st *state, c *ctx) *Hole {
	start := len(r.cmds)
	saved := r.acc
	acc := &outAcc{known: ps.Op == syntax.CmdIn}
	r.acc = acc
	cc := c.with(ps.Op.String() + "...)")
	if ps.Op != syntax.CmdIn {
		cc = cc.withStdin(HoleArg(&Hole{Kind: FromOutput, Src: "the writer of " + r.srcOf(ps)}))
	}
	r.stmts(ps.Stmts, st.clone(), cc)
	r.acc = saved
	h := &Hole{Kind: FromProc, Src: r.srcOf(ps), From: r.cmds[start:len(r.cmds):len(r.cmds)]}
	if acc.known && ps.Op == syntax.CmdIn {
		out := Lit(acc.b.String())
		h.Out = &out
	}
	return h
}

// promptText reads a value used with ${x@P}: its substitutions run.
func (r *reader) promptText(val Arg, st *state, c *ctx) {
	text, ok := val.Text()
	if !ok {
		r.unknownText(val, st, c.with("${x@P}"), "")
		return
	}
	w, err := syntax.NewParser().Document(strings.NewReader(text))
	if err != nil {
		r.unknownText(val, st, c.with("${x@P}"), "")
		return
	}
	cur := r.cur
	r.cur = text
	r.walkSubsts(w, st, c.with("${x@P}"))
	r.cur = cur
}

// call reads a simple command: assignments, words, and what it runs.
func (r *reader) call(ce *syntax.CallExpr, st *state, c *ctx, s *syntax.Stmt) *state {
	src := r.srcOf(s)
	// The redirections come after the words (below); with no words, now.
	withRedirs := func(c *ctx) ([]Redir, *ctx, func()) {
		redirs, stdin, hasStdin, outGone, outFile := r.redirs(s.Redirs, st, c)
		if hasStdin {
			c = c.withStdin(stdin)
		}
		done := func() {}
		if outGone {
			done = r.capture(outFile)
		}
		return redirs, c, done
	}
	if len(ce.Args) == 0 {
		redirs, c, done := withRedirs(c)
		defer done()
		st = st.own()
		for _, as := range ce.Assigns {
			st = r.assign(as, st, st, c, false)
		}
		if len(redirs) > 0 {
			r.record(nil, nil, redirs, st, c, src)
		}
		r.output(c, "", true)
		return st
	}
	// Prefix assignments are expanded first, in the shell's state, and
	// go to the command's environment.
	tmp := st.clone()
	for _, as := range ce.Assigns {
		tmp = r.assign(as, tmp, st, c, true)
	}
	args := r.fields(ce.Args, st, c)
	if r.err != nil {
		return st
	}
	redirs, c, done := withRedirs(c)
	defer done()
	if len(args) == 0 {
		// The words expanded to nothing: the assignments stay.
		if len(redirs) > 0 {
			r.record(nil, nil, redirs, st, c, src)
		}
		return tmp
	}
	env := r.view(st).with()
	for _, as := range ce.Assigns {
		if as.Name != nil {
			v := tmp.get(r, as.Name.Value)
			v.exported = Yes
			env.over[as.Name.Value] = v
		}
	}
	f := callInfo{src: src, ce: ce}
	if len(ce.Args[0].Parts) == 1 {
		if l, ok := ce.Args[0].Parts[0].(*syntax.Lit); ok && !strings.ContainsAny(l.Value, "\\") {
			f.aliasable = true
		}
	}
	return r.command(args, env, redirs, st, c, f)
}

type callInfo struct {
	src       string
	ce        *syntax.CallExpr
	aliasable bool
	noFuncs   bool
}

// assign applies one assignment to st (or, with prefix, to the
// command's own copy), expanding in from.
func (r *reader) assign(as *syntax.Assign, st, from *state, c *ctx, _ bool) *state {
	if as.Name == nil {
		return st
	}
	st = st.own()
	name := as.Name.Value
	switch {
	case as.Array != nil:
		var elems []string
		known := true
		for _, e := range as.Array.Elems {
			if e.Index != nil {
				known = false
			}
			if e.Value != nil {
				for _, a := range r.fields([]*syntax.Word{e.Value}, from, c) {
					elems = append(elems, r.encode(a))
					if a.Split {
						known = false
					}
				}
			}
		}
		if !known || as.Append {
			st.lost(r, name, nil)
			break
		}
		old := st.get(r, name)
		st.setVar(r, name, variable{set: Yes, exported: old.exported, isList: true, list: elems, assigned: true})
	case as.Index != nil:
		x := &expander{r: r, st: from, c: c, p: &prepared{}}
		x.arith(as.Index)
		if as.Value != nil {
			r.literal(as.Value, from, c)
		}
		st.lost(r, name, nil)
	default:
		val := Arg{}
		if as.Value != nil {
			val = r.literal(as.Value, from, c)
		}
		enc := r.encode(val)
		if as.Append {
			old := st.get(r, name)
			if old.set == No {
				old.val = ""
			}
			enc = old.val + enc
		}
		st.assign(r, name, enc)
		r.commandVar(name, r.decode(enc), st, c)
	}
	return st
}

// commandVars hold shell text (or a file of it) that programs run: git
// runs $GIT_EDITOR, bash sources $BASH_ENV. Setting one is read as
// running it.
var commandVars = map[string]bool{
	"EDITOR": true, "VISUAL": true, "PAGER": true, "GIT_PAGER": true, "GIT_EDITOR": true,
	"GIT_SEQUENCE_EDITOR": true, "GIT_SSH_COMMAND": true, "GIT_SSH": true, "GIT_ASKPASS": true,
	"SSH_ASKPASS": true, "SUDO_ASKPASS": true, "MANPAGER": true, "SYSTEMD_PAGER": true,
	"LESSOPEN": true, "LESSCLOSE": true, "BROWSER": true, "PROMPT_COMMAND": true, "FCEDIT": true,
	"GIT_EXTERNAL_DIFF": true, "GIT_PROXY_COMMAND": true, "BASH_ENV": true, "ENV": true,
}

func (r *reader) commandVar(name string, val Arg, st *state, c *ctx) {
	if !commandVars[name] {
		return
	}
	if t, ok := val.Text(); ok && t == "" {
		return
	}
	child := st.child(r.view(st))
	cc := c.with(name + "=").maybe()
	if name == "BASH_ENV" || name == "ENV" {
		r.sourceFile(val, child, cc)
		return
	}
	if t, ok := val.Text(); ok && strings.HasPrefix(t, "|") {
		val = Lit(t[1:]) // LESSOPEN's "|cmd %s"
	}
	r.text(val, child, cc)
}

// record adds a command that may run.
func (r *reader) record(args []Arg, env *envView, redirs []Redir, st *state, c *ctx, src string) *Cmd {
	st.shared = true
	if env == nil {
		env = r.view(st)
	}
	cmd := &Cmd{
		Args: args, Redirs: redirs, Dir: r.decode(st.dir), Stdin: c.stdin,
		Via: c.via, Wrappers: c.wrappers, OtherUser: c.other, Src: src,
		env: env, r: r, st: st,
	}
	cmd.File = c.file
	r.cmds = append(r.cmds, cmd)
	r.charge(128)
	for _, w := range cmd.Writes() {
		if abs := r.absPath(w.Path, st); abs != "" {
			if _, ok := r.files[abs]; !ok || !isRedirect(w.What) {
				r.files[abs] = fileFact{}
			}
		}
	}
	return cmd
}

func isRedirect(what string) bool { return strings.HasSuffix(what, "(redirection)") }

// unknownText records shell text st cannot read that runs here.
func (r *reader) unknownText(text Arg, st *state, c *ctx, src string) *Cmd {
	cmd := r.record(nil, nil, nil, st, c, src)
	t := text
	cmd.Text = &t
	r.output(c, "", false)
	return cmd
}

// text reads shell text that runs in the shell st (a new shell's state,
// or the current one for eval and source), and returns the state after.
func (r *reader) text(text Arg, st *state, c *ctx) *state {
	s, ok := text.Text()
	if !ok {
		r.unknownText(text, st, c, text.String())
		return r.clobber(st)
	}
	if c.depth >= maxDepth {
		r.limit("shell text nests more than %d levels deep (bash -c inside eval inside $(...)...)", maxDepth)
		return st
	}
	f, err := parse(s)
	if err != nil {
		if le, ok := err.(*LimitError); ok {
			r.limit("%s", le.What)
			return st
		}
		r.unknownText(text, st, c, s)
		return r.clobber(st)
	}
	if disagrees(s, f) {
		// bash would read it otherwise than mvdan: its text is as
		// unknown as if it were a variable.
		r.unknownText(text, st, c, s)
		return r.clobber(st)
	}
	cur := r.cur
	r.cur = s
	cc := *c
	cc.depth++
	st = r.stmts(f.Stmts, st, &cc)
	r.cur = cur
	return st
}

// disagrees reports whether bash may read text otherwise than mvdan did:
// a here-document delimiter or a comment where bash's words differ.
func disagrees(src string, f *syntax.File) bool {
	bad := false
	comment := func(cs []syntax.Comment) {
		for _, c := range cs {
			at := int(c.Hash.Offset())
			if at > 0 && strings.IndexByte(" \t\n;&|()", src[at-1]) < 0 {
				bad = true
			}
		}
	}
	comment(f.Last)
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Redirect:
			if n.Hdoc != nil && !heredocAgrees(src, n) {
				bad = true
			}
		case *syntax.Stmt:
			comment(n.Comments)
		}
		return !bad
	})
	return bad
}

// command dispatches a command by its expanded words: an alias, a
// function, a builtin that changes the shell, a program that runs
// another (the runners table), or a plain program.
func (r *reader) command(args []Arg, env *envView, redirs []Redir, st *state, c *ctx, f callInfo) *state {
	if r.err != nil {
		return st
	}
	name, known := args[0].Known()
	if known && f.aliasable && len(st.aliases[name]) > 0 && f.ce != nil {
		return r.alias(name, st, c, f)
	}
	if known && !f.noFuncs && !strings.Contains(name, "/") && len(st.funcs[name]) > 0 {
		return r.callFunc(name, args, env, redirs, st, c, f)
	}
	if known && !strings.Contains(name, "/") {
		if p, ok := st.hashed[name]; ok {
			args = append([]Arg{r.decode(p)}, args[1:]...)
		}
	}
	if !known || args[0].Split {
		r.record(args, env, redirs, st, c, f.src)
		r.output(c, "", false)
		return st
	}
	if b, ok := r.builtins[name]; ok && !strings.Contains(name, "/") {
		cmd := r.record(args, env, redirs, st, c, f.src)
		return b(r, cmd, st, c)
	}
	if file := r.programFile(name, env, st); file != "" {
		if r.runFile(file, args, env, redirs, st, c, f) {
			return st
		}
	}
	if run, ok := lookupRunner(r.runners, path.Base(name)); ok {
		return r.runWrapped(run, args, env, redirs, st, c, f)
	}
	cmd := r.record(args, env, redirs, st, c, f.src)
	r.programOutput(cmd, c)
	return st
}

// programFile is the file a command name runs when st may read it: a
// path, or a name found in a folder of $PATH where the text wrote it.
func (r *reader) programFile(name string, env *envView, st *state) string {
	if strings.Contains(name, "/") {
		return r.absPath(Lit(name), st)
	}
	p, set := env.get("PATH")
	if set == No {
		return ""
	}
	for _, part := range p.Parts() {
		t, ok := part.Text()
		if !ok {
			continue
		}
		for _, dir := range strings.Split(t, ":") {
			full := r.absPath(Lit(path.Join(dir, name)), st)
			if dir == "" {
				full = r.absPath(Lit(name), st)
			}
			if _, ok := r.files[full]; ok && full != "" {
				return full
			}
		}
	}
	return ""
}

// runFile reads a program that is a file the text wrote, or a script on
// disk: its text runs in a new shell. It reports whether it handled the
// command.
func (r *reader) runFile(file string, args []Arg, env *envView, redirs []Redir, st *state, c *ctx, f callInfo) bool {
	fact, made := r.files[file]
	var text Arg
	switch {
	case made && !fact.known:
		cmd := r.record(args, env, redirs, st, c, f.src)
		cmd.Made = true
		r.output(c, "", false)
		return true
	case made:
		text = fact.content
	default:
		data, ok := r.readFile(file)
		if !ok {
			return false
		}
		text = Lit(data)
	}
	if t, ok := text.Text(); ok && strings.HasPrefix(t, "#!") {
		first, _, _ := strings.Cut(t, "\n")
		if !shebangShell(first) {
			if made {
				cmd := r.record(args, env, redirs, st, c, f.src)
				cmd.Made = true
				r.output(c, "", false)
				return true
			}
			return false
		}
	}
	r.record(args, env, redirs, st, c, f.src)
	r.output(c, "", false)
	child := st.child(env)
	child.posKnown = true
	for _, a := range args[1:] {
		if a.Split {
			child.posKnown = false
		}
		child.pos = append(child.pos, r.encode(a))
	}
	cc := c.with(file)
	if !made {
		cc.file = file
	}
	r.text(text, child, cc.withStdin(c.stdin))
	return true
}

// shebangShell reports whether a #! line names a shell st reads.
func shebangShell(line string) bool {
	f := strings.Fields(strings.TrimPrefix(line, "#!"))
	if len(f) == 0 {
		return true
	}
	prog := path.Base(f[0])
	if prog == "env" && len(f) > 1 {
		prog = path.Base(f[len(f)-1])
		for _, x := range f[1:] {
			if !strings.HasPrefix(x, "-") {
				prog = path.Base(x)
				break
			}
		}
	}
	for _, s := range Shells {
		if prog == s {
			return true
		}
	}
	return false
}

// readFile reads a file of shell text from disk when the reader's Env
// allows it: regular, at most 64 KiB.
func (r *reader) readFile(file string) (string, bool) {
	if r.env.ReadFile == nil || strings.HasPrefix(file, "/dev/") || strings.HasPrefix(file, "/proc/") {
		return "", false
	}
	data, ok := r.env.ReadFile(file)
	if !ok || len(data) > 64<<10 || !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return "", false
	}
	s := string(data)
	if hasSentinel(s) {
		return "", false
	}
	f, err := parse(s)
	if err != nil || f == nil {
		return "", false
	}
	return s, true
}

// alias expands an alias as bash would: its text, then the rest of the
// command as written.
func (r *reader) alias(name string, st *state, c *ctx, f callInfo) *state {
	rest := ""
	if len(f.ce.Args) > 1 {
		a := int(f.ce.Args[1].Pos().Offset())
		b := int(f.ce.Args[len(f.ce.Args)-1].End().Offset())
		if a >= 0 && b <= len(r.cur) && a <= b {
			rest = r.cur[a:b]
		}
	}
	var outs []*state
	for _, v := range st.aliases[name] {
		s2 := st.clone()
		// An alias is not expanded again inside its own expansion.
		delete(s2.aliases, name)
		s2 = r.text(Lit(v+" "+rest), s2, c.with("alias "+name))
		s2.aliases = st.aliases
		outs = append(outs, s2)
	}
	out := outs[0]
	for _, o := range outs[1:] {
		out = r.merge(out, o)
	}
	return out
}

func (r *reader) callFunc(name string, args []Arg, env *envView, redirs []Redir, st *state, c *ctx, f callInfo) *state {
	if c.calls >= maxCalls {
		r.limit("functions call each other more than %d deep", maxCalls)
		return st
	}
	cmd := r.record(args, env, redirs, st, c, f.src)
	_ = cmd
	var outs []*state
	for _, fd := range st.funcs[name] {
		r.called[fd] = true
		s2 := st.own()
		if st == s2 {
			s2 = st.clone()
		}
		oldPos, oldKnown := s2.pos, s2.posKnown
		s2.pos, s2.posKnown = nil, true
		for _, a := range args[1:] {
			if a.Split {
				s2.posKnown = false
			}
			s2.pos = append(s2.pos, r.encode(a))
		}
		for k, v := range env.over {
			s2.vars[k] = v
		}
		cc := c.with("function " + name)
		cc.calls++
		cur := r.cur
		r.cur = fd.src
		s2 = r.stmt(fd.body, s2, cc)
		r.cur = cur
		s2 = s2.own()
		s2.pos, s2.posKnown = oldPos, oldKnown
		outs = append(outs, s2)
	}
	out := outs[0]
	for _, o := range outs[1:] {
		out = r.merge(out, o)
	}
	return out
}

// programOutput is what a plain program prints, when st can tell.
func (r *reader) programOutput(cmd *Cmd, c *ctx) {
	switch cmd.Name() {
	case "cat":
		if len(cmd.Args) == 1 || (len(cmd.Args) == 2 && cmd.Args[1].String() == "-") {
			s, ok := cmd.Stdin.Known()
			r.output(c, s, ok)
			return
		}
	case "true", "false", "test", "[", "mkdir", "touch", "rm", "cp", "mv", "ln", "chmod", "sleep":
		r.output(c, "", true)
		return
	}
	r.output(c, "", false)
}
