package shell

import (
	"io"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Words are expanded by mvdan's expand package, with every part st
// cannot know replaced first by a sentinel (a hole): unknown variables,
// substitutions, special parameters, and any operation on those. The
// substitutions' commands are read (they run) on the way.

// prepared is a word made ready for expand.
type prepared struct {
	w     *syntax.Word
	unq   bool // an expansion outside double quotes: fields may split
	glob  bool // unquoted glob characters
	subst map[*syntax.CmdSubst]string
	proc  map[*syntax.ProcSubst]string
	est   int // an upper bound of the expanded size
}

type expander struct {
	r        *reader
	st       *state
	c        *ctx
	p        *prepared
	setsVars []string // variables ${x:=...} or $((x=1)) assign
}

// prep copies a word, with parts st cannot know replaced by sentinels.
func (r *reader) prep(w *syntax.Word, st *state, c *ctx) *prepared {
	p := &prepared{subst: map[*syntax.CmdSubst]string{}, proc: map[*syntax.ProcSubst]string{}}
	x := &expander{r: r, st: st, c: c, p: p}
	p.w = &syntax.Word{Parts: x.parts(w.Parts, false)}
	for _, name := range x.setsVars {
		st.lost(r, name, nil)
	}
	return p
}

func (x *expander) hole(h *Hole, quoted bool) syntax.WordPart {
	if !quoted {
		x.p.unq = true
	}
	x.p.est += 16
	return &syntax.Lit{Value: x.r.sent(h)}
}

func (x *expander) parts(ps []syntax.WordPart, quoted bool) []syntax.WordPart {
	out := make([]syntax.WordPart, 0, len(ps))
	for _, p := range ps {
		switch p := p.(type) {
		case *syntax.Lit:
			if !quoted && strings.ContainsAny(p.Value, "*?[") {
				x.p.glob = true
			}
			x.p.est += len(p.Value)
			out = append(out, p)
		case *syntax.SglQuoted:
			x.p.est += len(p.Value)
			out = append(out, p)
		case *syntax.DblQuoted:
			q := *p
			q.Parts = x.parts(p.Parts, true)
			out = append(out, &q)
		case *syntax.ParamExp:
			out = append(out, x.param(p, quoted))
		case *syntax.CmdSubst:
			h := x.r.cmdSubst(p, x.st, x.c)
			if !quoted {
				x.p.unq = true
				if x.ifsUnknown() {
					out = append(out, x.hole(h, quoted))
					continue
				}
			}
			text := x.r.sent(h)
			if h.Out != nil {
				text = x.r.encode(*h.Out)
			}
			x.p.subst[p] = text
			x.p.est += len(text)
			out = append(out, p)
		case *syntax.ArithmExp:
			x.arith(p.X)
			out = append(out, x.hole(&Hole{Kind: FromNumber, Src: x.r.srcOf(p)}, quoted))
		case *syntax.ProcSubst:
			if !quoted {
				x.p.unq = true
			}
			h := x.r.procSubst(p, x.st, x.c)
			x.p.proc[p] = x.r.sent(h)
			x.p.est += 16
			out = append(out, p)
		case *syntax.ExtGlob:
			x.p.glob = true
			out = append(out, x.hole(&Hole{Kind: FromPattern, Src: x.r.srcOf(p)}, quoted))
		default:
			out = append(out, x.hole(&Hole{Kind: FromPattern, Src: x.r.srcOf(p)}, quoted))
		}
	}
	return out
}

// arith reads an arithmetic expression for what runs in it (command
// substitutions) and the variables it assigns.
func (x *expander) arith(e syntax.ArithmExpr) {
	if e == nil {
		return
	}
	syntax.Walk(e, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			x.r.cmdSubst(n, x.st, x.c)
			return false
		case *syntax.ProcSubst:
			x.r.procSubst(n, x.st, x.c)
			return false
		case *syntax.BinaryArithm:
			switch n.Op {
			case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn,
				syntax.RemAssgn, syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn, syntax.ShrAssgn:
				if name := arithName(n.X); name != "" {
					x.setsVars = append(x.setsVars, name)
				}
			}
		case *syntax.UnaryArithm:
			if n.Op == syntax.Inc || n.Op == syntax.Dec {
				if name := arithName(n.X); name != "" {
					x.setsVars = append(x.setsVars, name)
				}
			}
		}
		return true
	})
}

func arithName(e syntax.ArithmExpr) string {
	if w, ok := e.(*syntax.Word); ok {
		if len(w.Parts) == 1 {
			if l, ok := w.Parts[0].(*syntax.Lit); ok && isName(l.Value) {
				return l.Value
			}
			if pe, ok := w.Parts[0].(*syntax.ParamExp); ok && pe.Param != nil {
				return pe.Param.Value
			}
		}
	}
	return ""
}

// dynamic variables: bash gives them values of its own.
var dynamic = map[string]bool{
	"RANDOM": true, "SRANDOM": true, "LINENO": true, "SECONDS": true, "BASHPID": true,
	"EPOCHSECONDS": true, "EPOCHREALTIME": true, "BASH_COMMAND": true, "FUNCNAME": true,
	"PPID": true, "OLDPWD": true, "BASH_SUBSHELL": true, "HISTCMD": true, "REPLY": true,
	"BASH_REMATCH": true, "PIPESTATUS": true, "COLUMNS": true, "LINES": true, "GROUPS": true,
	"BASH_ARGV": true, "BASH_ARGC": true, "BASH_SOURCE": true, "BASH_LINENO": true, "DIRSTACK": true,
}

// param prepares ${...}: kept for expand when st knows enough, else a hole.
func (x *expander) param(pe *syntax.ParamExp, quoted bool) syntax.WordPart {
	r, st := x.r, x.st
	src := r.srcOf(pe)
	unknown := func(kind HoleKind, name string) syntax.WordPart {
		return x.hole(&Hole{Kind: kind, Var: name, Src: src}, quoted)
	}
	// Everything inside runs: defaults, patterns, indexes.
	x.subParts(pe)
	if pe.Param == nil || pe.Flags != nil || pe.Width || pe.IsSet || pe.NestedParam != nil || len(pe.Modifiers) > 0 {
		return unknown(FromPattern, "")
	}
	name := pe.Param.Value
	if pe.Excl {
		// ${!x}, ${!prefix*}, ${!a[@]}: names and indirection.
		return unknown(FromVar, name)
	}
	if !quoted {
		x.p.unq = true
	}
	switch {
	case name == "@" || name == "*" || name == "#" || isDigits(name):
		if !st.posKnown || name == "0" {
			return unknown(FromSpecial, name)
		}
	case name == "?" || name == "$" || name == "!" || name == "-" || name == "_" || dynamic[name]:
		return unknown(FromSpecial, name)
	case !isName(name):
		return unknown(FromPattern, name)
	}
	if x.ifsUnknown() && !quoted {
		// Splitting by an IFS st cannot know: the fields cannot be told.
		return unknown(FromVar, name)
	}
	v := st.get(r, name)
	if isDigits(name) || name == "@" || name == "*" || name == "#" {
		v = variable{set: Yes, val: strings.Join(st.pos, "")}
	}
	val := v.val
	if v.isList {
		val = strings.Join(v.list, " ")
	}
	simple := pe.Exp == nil && pe.Repl == nil && pe.Slice == nil && pe.Index == nil && !pe.Length
	if pe.Index != nil && !plainIndex(pe.Index) {
		return unknown(FromVar, name)
	}
	if pe.Slice != nil && !(plainNumber(pe.Slice.Offset) && plainNumber(pe.Slice.Length)) {
		return unknown(FromVar, name)
	}
	if v.set == Maybe || hasSentinel(val) {
		switch {
		case simple:
		case v.set == Yes && safeOnHoles(pe):
		case pe.Length:
			return unknown(FromNumber, name)
		default:
			return unknown(FromVar, name)
		}
	}
	return x.paramOp(pe, name, val, func() syntax.WordPart { return unknown(FromVar, name) })
}

// paramOp prepares the operation of a ${...} on a value st knows well
// enough: what it assigns or runs is read, its size is counted.
func (x *expander) paramOp(pe *syntax.ParamExp, name, val string, unknown func() syntax.WordPart) syntax.WordPart {
	if pe.Length {
		x.p.est += 20
		return pe
	}
	if pe.Exp != nil {
		switch pe.Exp.Op {
		case syntax.AssignUnset, syntax.AssignUnsetOrNull:
			x.setsVars = append(x.setsVars, name)
			return unknown()
		case syntax.OtherParamOps:
			switch pe.Exp.Word.Lit() {
			case "Q", "U", "L", "u", "a", "E", "K", "k":
			case "P":
				// Prompt expansion runs the substitutions in the value.
				x.r.promptText(x.r.decode(val), x.st, x.c)
				return unknown()
			default:
				return unknown()
			}
		}
	}
	size := len(val)
	if pe.Repl != nil {
		size = len(val) * (2 + wordSize(pe.Repl.With))
	}
	if pe.Exp != nil && pe.Exp.Word != nil {
		size += wordSize(pe.Exp.Word)
	}
	x.p.est += size
	return pe
}

// subParts reads the words inside a ${...} for what runs in them.
func (x *expander) subParts(pe *syntax.ParamExp) {
	words := []*syntax.Word{}
	if pe.Exp != nil && pe.Exp.Word != nil {
		words = append(words, pe.Exp.Word)
	}
	if pe.Repl != nil {
		words = append(words, pe.Repl.Orig, pe.Repl.With)
	}
	for _, w := range words {
		if w != nil {
			x.r.walkSubsts(w, x.st, x.c)
		}
	}
	if pe.Index != nil {
		x.arith(pe.Index)
	}
	if pe.Slice != nil {
		x.arith(pe.Slice.Offset)
		x.arith(pe.Slice.Length)
	}
}

// safeOnHoles: operations that carry holes through unchanged.
func safeOnHoles(pe *syntax.ParamExp) bool {
	if pe.Repl != nil || pe.Slice != nil || pe.Length {
		return false
	}
	if pe.Index != nil {
		return false
	}
	if pe.Exp == nil {
		return true
	}
	switch pe.Exp.Op {
	case syntax.DefaultUnset, syntax.DefaultUnsetOrNull, syntax.AlternateUnset, syntax.AlternateUnsetOrNull,
		syntax.ErrorUnset, syntax.ErrorUnsetOrNull:
		return true
	case syntax.UpperAll, syntax.LowerAll, syntax.UpperFirst, syntax.LowerFirst:
		return pe.Exp.Word == nil
	}
	return false
}

func (x *expander) ifsUnknown() bool {
	v := x.st.get(x.r, "IFS")
	return v.set == Maybe || hasSentinel(v.val)
}

func plainIndex(e syntax.ArithmExpr) bool {
	w, ok := e.(*syntax.Word)
	if !ok {
		return false
	}
	l := w.Lit()
	return l == "@" || l == "*" || isDigits(l)
}

func plainNumber(e syntax.ArithmExpr) bool {
	if e == nil {
		return true
	}
	if w, ok := e.(*syntax.Word); ok {
		return isDigits(strings.TrimPrefix(w.Lit(), "-"))
	}
	if u, ok := e.(*syntax.UnaryArithm); ok && u.Op == syntax.Minus {
		return plainNumber(u.X)
	}
	return false
}

func wordSize(w *syntax.Word) int {
	if w == nil {
		return 0
	}
	return int(w.End().Offset()-w.Pos().Offset()) + 16
}

// config is mvdan's expansion config for a prepared word.
func (r *reader) config(st *state, p *prepared) *expand.Config {
	return &expand.Config{
		Env: environ{r: r, st: st},
		CmdSubst: func(w io.Writer, cs *syntax.CmdSubst) error {
			s, ok := p.subst[cs]
			if !ok {
				s = r.sent(&Hole{Kind: FromOutput, Src: "$(...)"})
			}
			_, err := io.WriteString(w, s)
			return err
		},
		ProcSubst: func(ps *syntax.ProcSubst) (string, error) {
			s, ok := p.proc[ps]
			if !ok {
				s = r.sent(&Hole{Kind: FromProc, Src: "<(...)"})
			}
			return s, nil
		},
	}
}

// checkSize refuses a word whose expansion could pass the bounds.
func (r *reader) checkSize(p *prepared, w *syntax.Word) bool {
	braces := 1
	cp := *p.w
	if syntax.SplitBraces(&cp) {
		braces = braceCount(cp.Parts)
	}
	if braces > maxBraces {
		r.limit("a brace expansion makes more than %d words", maxBraces)
		return false
	}
	limit := maxWord + 2*wordSize(w)
	if p.est*braces > limit {
		r.limit("a word expands to more than %d bytes", limit)
		return false
	}
	return r.charge(p.est*braces + 64)
}

// braceCount is how many words a split word's braces make (bounded).
func braceCount(parts []syntax.WordPart) int {
	n := 1
	for _, p := range parts {
		b, ok := p.(*syntax.BraceExp)
		if !ok {
			continue
		}
		k := 0
		if b.Sequence {
			k = seqLen(b.Elems)
		} else {
			for _, e := range b.Elems {
				k += braceCount(e.Parts)
				if k > maxBraces {
					return maxBraces + 1
				}
			}
		}
		n *= max(k, 1)
		if n > maxBraces {
			return maxBraces + 1
		}
	}
	return n
}

func seqLen(elems []*syntax.Word) int {
	if len(elems) < 2 {
		return 1
	}
	a, b := elems[0].Lit(), elems[1].Lit()
	step := 1
	if len(elems) > 2 {
		s, err := strconv.Atoi(elems[2].Lit())
		if err != nil {
			return maxBraces + 1
		}
		step = max(abs(s), 1)
	}
	x, err1 := strconv.ParseInt(a, 10, 64)
	y, err2 := strconv.ParseInt(b, 10, 64)
	if err1 == nil && err2 == nil {
		d := y - x
		if d < 0 {
			d = -d
		}
		if d/int64(step) > maxBraces {
			return maxBraces + 1
		}
		return int(d/int64(step)) + 1
	}
	if len(a) == 1 && len(b) == 1 {
		return abs(int(b[0])-int(a[0]))/step + 1
	}
	return 1
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// plainWord is a word that expands to itself with no work: literal text
// and simple quotes, nothing for braces, tildes, globs or escapes.
func plainWord(w *syntax.Word) (string, bool) {
	if len(w.Parts) == 1 {
		switch p := w.Parts[0].(type) {
		case *syntax.Lit:
			if plainLit(p.Value, true) {
				return p.Value, true
			}
			return "", false
		case *syntax.SglQuoted:
			return p.Value, !p.Dollar
		}
	}
	var b strings.Builder
	for i, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if !plainLit(p.Value, i == 0) {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", false
			}
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok || strings.ContainsRune(l.Value, '\\') {
					return "", false
				}
				b.WriteString(l.Value)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

func plainLit(s string, first bool) bool {
	if first && strings.HasPrefix(s, "~") {
		return false
	}
	return !strings.ContainsAny(s, "\\{*?[")
}

// fields expands words as arguments of a command.
func (r *reader) fields(words []*syntax.Word, st *state, c *ctx) []Arg {
	out := make([]Arg, 0, len(words))
	for _, w := range words {
		if r.err != nil {
			return out
		}
		if s, ok := plainWord(w); ok {
			out = append(out, Lit(s))
			r.charge(len(s) + 8)
			continue
		}
		p := r.prep(w, st, c)
		if !r.checkSize(p, w) {
			return out
		}
		fs, err := expand.Fields(r.config(st, p), p.w)
		if err != nil {
			out = append(out, r.lostWord(w, p))
			continue
		}
		for _, f := range fs {
			a := r.decode(f)
			a.Split = p.unq && len(a.Holes()) > 0
			a.Glob = p.glob
			out = append(out, a)
			r.charge(len(f))
		}
		if len(fs) == 0 && p.unq && hasSentinelParts(p) {
			// An unquoted hole may expand to nothing, or to something.
			out = append(out, Arg{pieces: []piece{{hole: &Hole{Kind: FromPattern, Src: r.srcOf(w)}}}, Split: true})
		}
	}
	return out
}

func hasSentinelParts(p *prepared) bool { return len(p.subst) > 0 || len(p.proc) > 0 || p.unq }

// literal expands a word as one string: assignment values, redirection
// targets, case words.
func (r *reader) literal(w *syntax.Word, st *state, c *ctx) Arg {
	if w == nil {
		return Arg{}
	}
	if s, ok := plainWord(w); ok {
		r.charge(len(s) + 8)
		return Lit(s)
	}
	p := r.prep(w, st, c)
	if !r.checkSize(p, w) {
		return r.lostWord(w, p)
	}
	s, err := expand.Literal(r.config(st, p), p.w)
	if err != nil {
		return r.lostWord(w, p)
	}
	r.charge(len(s))
	return r.decode(s)
}

// document expands a here-document body.
func (r *reader) document(w *syntax.Word, st *state, c *ctx) Arg {
	p := r.prep(w, st, c)
	if !r.checkSize(p, w) {
		return r.lostWord(w, p)
	}
	s, err := expand.Document(r.config(st, p), p.w)
	if err != nil {
		return r.lostWord(w, p)
	}
	r.charge(len(s))
	return r.decode(s)
}

func (r *reader) lostWord(w *syntax.Word, p *prepared) Arg {
	var from []*Cmd
	for _, s := range p.subst {
		for _, h := range r.decodeLoose(s) {
			from = append(from, h.From...)
		}
	}
	return Arg{pieces: []piece{{hole: &Hole{Kind: FromPattern, Src: r.srcOf(w), From: from}}}, Split: true}
}

// walkSubsts reads the substitutions of a word that is not expanded here
// (a case pattern, a default value), since they may run.
func (r *reader) walkSubsts(w syntax.Node, st *state, c *ctx) {
	syntax.Walk(w, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			r.cmdSubst(n, st, c)
			return false
		case *syntax.ProcSubst:
			r.procSubst(n, st, c)
			return false
		}
		return true
	})
}

// format is printf's output, when st knows the format and the arguments:
// the format is used again while arguments remain.
func format(f string, args []string) (out string, ok bool) {
	defer func() {
		if recover() != nil {
			out, ok = "", false
		}
	}()
	var b strings.Builder
	for i := 0; i < 64; i++ {
		s, used, err := expand.Format(&expand.Config{}, f, args)
		if err != nil {
			return "", false
		}
		b.WriteString(s)
		if used == 0 || used >= len(args) {
			return b.String(), true
		}
		args = args[used:]
	}
	return "", false
}

func itoa(n int) string { return strconv.Itoa(n) }

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
