package shell

import (
	"strconv"
	"strings"
)

// HoleKind says where a part of a word that st cannot know comes from.
type HoleKind uint8

const (
	// FromVar: a variable st has no value for: one of the agent's
	// environment, or one whose value this text made uncertain.
	FromVar HoleKind = iota
	// FromOutput: what commands print: $(...), a pipe, read.
	FromOutput
	// FromProc: the /dev/fd path of <(...) or >(...); reading it gives
	// the output of From.
	FromProc
	// FromSpecial: $$, $!, $?, $RANDOM and positional parameters st
	// does not know.
	FromSpecial
	// FromNumber: an arithmetic result.
	FromNumber
	// FromFound: a path find found under one of Under ({} of -exec).
	FromFound
	// FromPattern: an extended glob, or a value st lost track of.
	FromPattern
)

// Hole is a part of a word st cannot know.
type Hole struct {
	Kind  HoleKind
	Src   string // as written: "$c", "$(which tmux)"
	Var   string // FromVar: the variable
	From  []*Cmd // FromOutput, FromProc: the commands whose output it is
	Under []Arg  // FromFound: the folders searched
	// Out is the output of From when st can tell it (FromProc: the
	// content of the file); nil when it cannot.
	Out *Arg
}

type piece struct {
	lit  string
	hole *Hole
}

// Arg is an argument of a command, or any expanded word, as far as st can
// know it: literal text and holes, each hole standing for any text.
type Arg struct {
	pieces []piece
	// Split: a hole sits outside double quotes, so bash may split it
	// into several arguments, or drop it.
	Split bool
	// Glob: unquoted glob characters, so bash may replace it with the
	// names of matching files.
	Glob bool
}

// Lit is an Arg of known text.
func Lit(s string) Arg {
	if s == "" {
		return Arg{}
	}
	return Arg{pieces: []piece{{lit: s}}}
}

// HoleArg is an Arg that is one hole.
func HoleArg(h *Hole) Arg { return Arg{pieces: []piece{{hole: h}}} }

// Text is the Arg's text when it holds no hole (glob characters are kept
// as written).
func (a Arg) Text() (string, bool) {
	switch len(a.pieces) {
	case 0:
		return "", true
	case 1:
		return a.pieces[0].lit, a.pieces[0].hole == nil
	}
	var b strings.Builder
	for _, p := range a.pieces {
		if p.hole != nil {
			return "", false
		}
		b.WriteString(p.lit)
	}
	return b.String(), true
}

// Known is the Arg's value when st knows it exactly: no hole, no glob.
func (a Arg) Known() (string, bool) {
	if a.Glob {
		return "", false
	}
	return a.Text()
}

// IsKnown reports whether the value is known exactly.
func (a Arg) IsKnown() bool {
	_, ok := a.Known()
	return ok
}

// NotOption reports whether the Arg surely does not start with '-': it
// starts with known text that does not, or it is the path of a process
// substitution.
func (a Arg) NotOption() bool {
	if len(a.pieces) == 0 {
		return true
	}
	if p := a.pieces[0]; p.hole == nil {
		return !strings.HasPrefix(p.lit, "-") && !strings.HasPrefix(p.lit, "+")
	} else if p.hole.Kind == FromProc {
		return true
	}
	return false
}

// Parts splits the Arg into its pieces: known text and single holes.
func (a Arg) Parts() []Arg {
	out := make([]Arg, len(a.pieces))
	for i, p := range a.pieces {
		out[i] = Arg{pieces: []piece{p}}
	}
	return out
}

// Holes lists the Arg's holes.
func (a Arg) Holes() []*Hole {
	var hs []*Hole
	for _, p := range a.pieces {
		if p.hole != nil {
			hs = append(hs, p.hole)
		}
	}
	return hs
}

// String shows the Arg, each hole as written.
func (a Arg) String() string {
	var b strings.Builder
	for _, p := range a.pieces {
		if p.hole != nil {
			b.WriteString(p.hole.Src)
		} else {
			b.WriteString(p.lit)
		}
	}
	return b.String()
}

// Len is the length of the Arg's known text.
func (a Arg) Len() int {
	n := 0
	for _, p := range a.pieces {
		n += len(p.lit)
	}
	return n
}

// Concat joins Args.
func Concat(args ...Arg) Arg {
	var out Arg
	for _, a := range args {
		out.pieces = append(out.pieces, a.pieces...)
		out.Split = out.Split || a.Split
		out.Glob = out.Glob || a.Glob
	}
	out.pieces = mergeLits(out.pieces)
	return out
}

func mergeLits(ps []piece) []piece {
	out := ps[:0:0]
	var b strings.Builder
	inLit := false
	flush := func() {
		if inLit && b.Len() > 0 {
			out = append(out, piece{lit: b.String()})
		}
		b.Reset()
		inLit = false
	}
	for _, p := range ps {
		if p.hole != nil {
			flush()
			out = append(out, p)
			continue
		}
		b.WriteString(p.lit)
		inLit = true
	}
	flush()
	return out
}

// Join joins Args with sep between them.
func Join(args []Arg, sep string) Arg {
	var out Arg
	n := 0
	for _, a := range args {
		n += len(a.pieces) + 1
	}
	ps := make([]piece, 0, n)
	for i, a := range args {
		if i > 0 {
			ps = append(ps, piece{lit: sep})
		}
		ps = append(ps, a.pieces...)
		out.Split = out.Split || a.Split
		out.Glob = out.Glob || a.Glob
	}
	out.pieces = mergeLits(ps)
	return out
}

// HasPrefix reports whether the Arg surely starts with p.
func (a Arg) HasPrefix(p string) bool {
	if len(a.pieces) == 0 || a.pieces[0].hole != nil {
		return p == ""
	}
	return strings.HasPrefix(a.pieces[0].lit, p)
}

// CutPrefix removes a known prefix.
func (a Arg) CutPrefix(p string) (Arg, bool) {
	if !a.HasPrefix(p) {
		return a, false
	}
	if p == "" {
		return a, true
	}
	out := a
	out.pieces = append([]piece{{lit: a.pieces[0].lit[len(p):]}}, a.pieces[1:]...)
	out.pieces = mergeLits(out.pieces)
	return out, true
}

// CutAt returns what comes before the first known sep, and whether there
// is one.
func (a Arg) CutAt(sep string) (Arg, bool) {
	for i, p := range a.pieces {
		if p.hole != nil {
			continue
		}
		if j := strings.Index(p.lit, sep); j >= 0 {
			ps := append(append([]piece(nil), a.pieces[:i]...), piece{lit: p.lit[:j]})
			return Arg{pieces: mergeLits(ps)}, true
		}
	}
	return a, false
}

// Base is the last path element of the Arg: what follows its last known
// '/'. A hole after that slash may hold slashes of its own, so the base
// is then uncertain as a whole.
func (a Arg) Base() Arg {
	for i := len(a.pieces) - 1; i >= 0; i-- {
		p := a.pieces[i]
		if p.hole != nil {
			continue
		}
		if j := strings.LastIndexByte(p.lit, '/'); j >= 0 {
			rest := append([]piece{{lit: p.lit[j+1:]}}, a.pieces[i+1:]...)
			return Arg{pieces: mergeLits(rest), Glob: a.Glob}
		}
	}
	return a
}

// Could reports whether the Arg could be s: each hole standing for any
// text, and with Glob, glob characters matching as they would.
func (a Arg) Could(s string) bool {
	if t, ok := a.Text(); ok && !a.Glob {
		return t == s
	}
	if t, ok := a.Text(); ok && t == s {
		return true
	}
	// Literal text longer than s cannot match it.
	if !a.Glob && a.Len() > len(s) {
		return false
	}
	toks := a.tokens(len(s) + 1)
	if toks == nil {
		return false
	}
	return matchTokens(toks, s)
}

// CouldAny reports whether the Arg could be one of ss.
func (a Arg) CouldAny(ss ...string) bool {
	for _, s := range ss {
		if a.Could(s) {
			return true
		}
	}
	return false
}

// CouldContain reports whether the Arg could hold s somewhere in it.
func (a Arg) CouldContain(s string) bool {
	if t, ok := a.Text(); ok {
		return strings.Contains(t, s)
	}
	return Concat(HoleArg(anyHole), a, HoleArg(anyHole)).Could(s)
}

var anyHole = &Hole{Kind: FromPattern, Src: "*"}

// token kinds of a pattern
const (
	tokByte = iota
	tokAny  // a hole or '*': any text
	tokOne  // '?' or a bracket class: any one character
)

type token struct {
	kind int
	b    byte
}

// tokens turns the Arg into a pattern; nil when its literal text is
// longer than limit (it could not match anything that short).
func (a Arg) tokens(limit int) []token {
	var toks []token
	fixed := 0
	for _, p := range a.pieces {
		if p.hole != nil {
			if len(toks) == 0 || toks[len(toks)-1].kind != tokAny {
				toks = append(toks, token{kind: tokAny})
			}
			continue
		}
		s := p.lit
		for i := 0; i < len(s); i++ {
			c := s[i]
			if a.Glob {
				switch c {
				case '*':
					if len(toks) == 0 || toks[len(toks)-1].kind != tokAny {
						toks = append(toks, token{kind: tokAny})
					}
					continue
				case '?':
					toks = append(toks, token{kind: tokOne})
					fixed++
					continue
				case '[':
					if j := strings.IndexByte(s[i+1:], ']'); j >= 0 {
						toks = append(toks, token{kind: tokOne})
						fixed++
						i += j + 1
						continue
					}
				}
			}
			toks = append(toks, token{kind: tokByte, b: c})
			fixed++
		}
		if fixed > limit {
			return nil
		}
	}
	return toks
}

// matchTokens matches a pattern against s, by the classic two-pointer
// algorithm for '*' patterns (linear in practice, no recursion).
func matchTokens(toks []token, s string) bool {
	ti, si := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		if ti < len(toks) {
			t := toks[ti]
			switch {
			case t.kind == tokAny:
				star, mark = ti, si
				ti++
				continue
			case t.kind == tokOne || t.b == s[si]:
				ti++
				si++
				continue
			}
		}
		if star < 0 {
			return false
		}
		ti = star + 1
		mark++
		si = mark
	}
	for ti < len(toks) && toks[ti].kind == tokAny {
		ti++
	}
	return ti == len(toks)
}

// sentinels carry holes through mvdan's expansion: a noncharacter, the
// hole's number, another noncharacter. No text a person writes holds
// them, and case changes leave them alone.
const (
	sentOpen  = "\ufdd0"
	sentClose = "\ufdd1"
)

func sentinel(i int) string { return sentOpen + strconv.Itoa(i) + sentClose }

func hasSentinel(s string) bool {
	return strings.Contains(s, sentOpen) || strings.Contains(s, sentClose)
}

// decode turns expanded text with sentinels back into an Arg. A sentinel
// broken by an operation (a slice through it) makes the whole a hole.
func (r *reader) decode(s string) Arg {
	if !hasSentinel(s) {
		return Lit(s)
	}
	var out Arg
	rest := s
	for {
		i := strings.Index(rest, sentOpen)
		if i < 0 {
			if strings.Contains(rest, sentClose) {
				return r.lostArg(s)
			}
			out.pieces = append(out.pieces, piece{lit: rest})
			break
		}
		if strings.Contains(rest[:i], sentClose) {
			return r.lostArg(s)
		}
		out.pieces = append(out.pieces, piece{lit: rest[:i]})
		rest = rest[i+len(sentOpen):]
		j := strings.Index(rest, sentClose)
		if j < 0 {
			return r.lostArg(s)
		}
		n, err := strconv.Atoi(rest[:j])
		if err != nil || n < 0 || n >= len(r.holes) {
			return r.lostArg(s)
		}
		out.pieces = append(out.pieces, piece{hole: r.holes[n]})
		rest = rest[j+len(sentClose):]
	}
	out.pieces = mergeLits(out.pieces)
	return out
}

// encode turns an Arg into text with sentinels, to store in a variable.
func (r *reader) encode(a Arg) string {
	var b strings.Builder
	for _, p := range a.pieces {
		if p.hole != nil {
			b.WriteString(r.sent(p.hole))
		} else {
			b.WriteString(p.lit)
		}
	}
	return b.String()
}

// sent registers a hole and returns its sentinel.
func (r *reader) sent(h *Hole) string {
	if i, ok := r.holeIndex[h]; ok {
		return sentinel(i)
	}
	r.holes = append(r.holes, h)
	r.holeIndex[h] = len(r.holes) - 1
	return sentinel(len(r.holes) - 1)
}

func (r *reader) lostArg(s string) Arg {
	var from []*Cmd
	for _, h := range r.decodeLoose(s) {
		from = append(from, h.From...)
	}
	return HoleArg(&Hole{Kind: FromPattern, Src: "$(...)", From: from})
}

// decodeLoose finds the holes whose sentinels are whole in s.
func (r *reader) decodeLoose(s string) []*Hole {
	var hs []*Hole
	for {
		i := strings.Index(s, sentOpen)
		if i < 0 {
			return hs
		}
		s = s[i+len(sentOpen):]
		j := strings.Index(s, sentClose)
		if j < 0 {
			return hs
		}
		if n, err := strconv.Atoi(s[:j]); err == nil && n >= 0 && n < len(r.holes) {
			hs = append(hs, r.holes[n])
		}
		s = s[j+len(sentClose):]
	}
}

// Tri is yes, no, or maybe.
type Tri uint8

const (
	No Tri = iota
	Yes
	Maybe
)

func (t Tri) or(u Tri) Tri {
	if t == u {
		return t
	}
	return Maybe
}
