package shell

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Env is what is known of where a command starts.
type Env struct {
	// Cwd is the folder it starts in; "" when unknown.
	Cwd string
	// Vars are variables known to be set in its environment (TMUX, UID).
	Vars map[string]string
	// Unset are variables known not to be set. Every other variable may
	// be set to anything.
	Unset []string
	// ReadFile, when set, reads a file on disk that the command runs as
	// shell text (bash FILE, . FILE, ./FILE); false when it cannot.
	ReadFile func(path string) ([]byte, bool)
}

// Cmd is one program (or function body, or builtin) that may run: its
// arguments after wrappers such as sudo or env, where it runs, and what it
// reads. Shell text it runs that st cannot read is a Cmd of its own with
// Text set.
type Cmd struct {
	// Args are the program and its arguments.
	Args []Arg
	// Redirs are its redirections, in order.
	Redirs []Redir
	// Dir is the folder it runs in: absolute when the start folder is
	// known, else relative to it; holes where st lost track (cd "$X").
	Dir Arg
	// Stdin is what it reads on its standard input: known text (a
	// here-document, the output of echo in a pipe), or a hole whose From
	// are the commands that feed it.
	Stdin Arg
	// Via says how it came to run, outermost first: "bash -c", "eval",
	// "$(...)", "sudo", "find -exec", "xargs", "trap", "function f".
	Via []string
	// Text, when set, is shell text st cannot read in full that runs as a
	// script here (bash -c "$X", eval "$(...)", . <(curl ...)).
	Text *Arg
	// Wrappers are the programs it was found inside (sudo, env, nohup...).
	Wrappers []string
	// OtherUser: it may run as another user (sudo, su, unshare -r...),
	// so its user id (and the socket paths made from it) is unknown.
	OtherUser bool
	// Src is the source text of the command, for messages.
	Src string
	// File is the file on disk the command was read from (a script it
	// runs); "" for the command's own text.
	File string
	// Made: the program is a file the text itself wrote (cp, ln, echo >)
	// whose content st cannot tell.
	Made bool

	env *envView
	r   *reader
	st  *state
}

// Redir is a redirection of a command.
type Redir struct {
	Op     string // ">", ">>", "<", "<<", "<<<", "&>", ">&", "<>", ...
	Fd     string // the file descriptor written before it, "" for the default
	Target Arg    // the file (or fd); for here-documents, the delimiter
	Body   *Arg   // here-documents and here-strings: the text
}

// Name is the program's base name when it is known, else "".
func (c *Cmd) Name() string {
	if len(c.Args) == 0 {
		return ""
	}
	s, ok := c.Args[0].Known()
	if !ok {
		return ""
	}
	return path.Base(s)
}

// Getenv is a variable as the command sees it in its environment: set
// (Yes, No, Maybe) and its value.
func (c *Cmd) Getenv(name string) (Arg, Tri) {
	if c.env == nil {
		return Arg{}, No
	}
	return c.env.get(name)
}

// Script is what Read found in a command: every command that may run, in
// the order they appear. Err is set when st could not read the text
// (parse error, or a bound passed): then Cmds holds what was read before.
type Script struct {
	Cmds []*Cmd
	Err  error
	r    *reader
	file *syntax.File
}

// Read parses a command line once and follows it as far as it can be
// known: variables, wrappers, nested shell text, here-documents, pipes.
func Read(src string, env Env) (s *Script) {
	r := newReader(src, env)
	s = &Script{r: r}
	defer func() {
		// A bug of the reader must not let a command through: its
		// callers refuse on an error.
		if p := recover(); p != nil {
			s.Cmds = r.cmds
			s.Err = &LimitError{fmt.Sprintf("st's reader failed on this command (%v)", p)}
		}
	}()
	f, err := parse(src)
	if err != nil {
		s.Err = err
		return s
	}
	s.file = f
	st := r.initial()
	r.walkFile(f, st, &ctx{stdin: Lit("")})
	s.Cmds = r.cmds
	s.Err = r.err
	return s
}

// ReadText reads shell text that from runs (tmux run-shell, a string of
// an interpreter), with from's environment, its folder, and the variables
// in set changed ("" values in unset are removed). It shares from's
// bounds.
func (s *Script) ReadText(text Arg, from *Cmd, via string, set map[string]Arg, unset ...string) (out *Script) {
	r := s.r
	if from != nil && from.r != nil {
		r = from.r
	}
	out = &Script{r: r}
	if r.err != nil {
		out.Err = r.err
		return out
	}
	st := r.initial()
	dir := Lit(r.env.Cwd)
	var vias []string
	var c0 *ctx
	if from != nil {
		st = from.st.child(from.env)
		dir = from.Dir
		vias = from.Via
		c0 = &ctx{via: append(append([]string(nil), vias...), via), depth: depthOf(from) + 1, stdin: Lit("")}
	} else {
		c0 = &ctx{via: []string{via}, depth: 1, stdin: Lit("")}
	}
	st = st.own()
	st.dir = r.encode(dir)
	for k, v := range set {
		st.setVar(r, k, variable{set: Yes, exported: Yes, val: r.encode(v), assigned: true})
	}
	for _, k := range unset {
		st.setVar(r, k, variable{set: No, exported: No, assigned: true})
	}
	start := len(r.cmds)
	defer func() {
		if p := recover(); p != nil {
			out.Cmds = append([]*Cmd(nil), r.cmds[start:]...)
			out.Err = &LimitError{fmt.Sprintf("st's reader failed on this command (%v)", p)}
			r.err = out.Err
		}
	}()
	r.text(text, st, c0)
	out.Cmds = append([]*Cmd(nil), r.cmds[start:]...)
	out.Err = r.err
	return out
}

func depthOf(c *Cmd) int { return len(c.Via) }

// Unexplained returns the first of words (matched without case) that
// sits in text the parse did not account for in a way bash agrees with:
// a here-document whose delimiter bash reads differently, a comment bash
// does not see as one. Only for a Script from Read that parsed.
func (s *Script) Unexplained(words ...string) (string, bool) {
	if s.file == nil {
		return "", false
	}
	low := strings.ToLower(s.r.src)
	if !slices.ContainsFunc(words, func(w string) bool { return strings.Contains(low, strings.ToLower(w)) }) {
		return "", false
	}
	spans := explainedSpans(s.r.src, s.file)
	for _, w := range words {
		w = strings.ToLower(w)
		for i := 0; ; {
			j := strings.Index(low[i:], w)
			if j < 0 {
				break
			}
			at := i + j
			if !covered(spans, region{at, at + len(w)}) {
				return w, true
			}
			i = at + 1
		}
	}
	return "", false
}

func covered(spans []region, r region) bool {
	k := sort.Search(len(spans), func(i int) bool { return spans[i].start > r.start }) - 1
	return k >= 0 && spans[k].end >= r.end
}

// explainedSpans are the spans of every word of the parse, of the
// here-document bodies and comments bash reads as mvdan does, merged.
func explainedSpans(src string, f *syntax.File) []region {
	var spans []region
	add := func(a, b syntax.Pos) {
		if a.IsValid() && b.IsValid() {
			spans = append(spans, region{int(a.Offset()), int(b.Offset())})
		}
	}
	comment := func(cs []syntax.Comment) {
		for _, c := range cs {
			at := int(c.Hash.Offset())
			if at == 0 || strings.IndexByte(" \t\n;&|()", src[at-1]) >= 0 {
				add(c.Pos(), c.End())
			}
		}
	}
	comment(f.Last)
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Word:
			add(n.Pos(), n.End())
		case *syntax.Lit:
			add(n.Pos(), n.End())
		case *syntax.Assign:
			add(n.Pos(), n.End())
		case *syntax.Redirect:
			if n.Word != nil {
				add(n.Word.Pos(), n.Word.End())
				syntax.Walk(n.Word, func(syntax.Node) bool { return true })
			}
			if n.Hdoc != nil {
				if heredocAgrees(src, n) {
					add(n.Hdoc.Pos(), n.Hdoc.End())
					return true
				}
				// Walk only its delimiter: its body is not explained.
				return false
			}
		case *syntax.Stmt:
			comment(n.Comments)
		case *syntax.Block:
			comment(n.Last)
		case *syntax.Subshell:
			comment(n.Last)
		case *syntax.CmdSubst:
			comment(n.Last)
		case *syntax.IfClause:
			comment(n.CondLast)
			comment(n.ThenLast)
			comment(n.Last)
		case *syntax.WhileClause:
			comment(n.CondLast)
			comment(n.DoLast)
		case *syntax.ForClause:
			comment(n.DoLast)
		case *syntax.CaseClause:
			comment(n.Last)
		case *syntax.CaseItem:
			comment(n.Comments)
			comment(n.Last)
		}
		return true
	})
	sort.Slice(spans, func(a, b int) bool { return spans[a].start < spans[b].start })
	var merged []region
	for _, sp := range spans {
		if n := len(merged); n > 0 && sp.start <= merged[n-1].end {
			if sp.end > merged[n-1].end {
				merged[n-1].end = sp.end
			}
			continue
		}
		merged = append(merged, sp)
	}
	return merged
}

// heredocAgrees reports whether bash reads a here-document's delimiter as
// mvdan did: the word must end where bash's word ends (mvdan ends
// `'E'#x` at the quote, bash reads the delimiter E#x), and be made of
// plain quoting.
func heredocAgrees(src string, rd *syntax.Redirect) bool {
	end := int(rd.Word.End().Offset())
	if end < len(src) && strings.IndexByte(" \t\n;&|()<>", src[end]) < 0 {
		return false
	}
	for _, p := range rd.Word.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
		case *syntax.SglQuoted:
			if p.Dollar {
				return false
			}
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

// srcOf is the source text of a node of the text being walked.
func (r *reader) srcOf(n syntax.Node) string {
	if n == nil || !n.Pos().IsValid() || !n.End().IsValid() {
		return ""
	}
	a, b := int(n.Pos().Offset()), int(n.End().Offset())
	if a < 0 || b > len(r.cur) || a > b {
		return ""
	}
	return r.cur[a:b]
}

func (r *reader) limit(format string, args ...any) {
	if r.err == nil {
		r.err = &LimitError{fmt.Sprintf(format, args...)}
	}
}

// charge spends work; past the budget the reader stops.
func (r *reader) charge(n int) bool {
	r.work -= n
	if r.work < 0 {
		r.limit("the command takes more work to follow than st allows (it expands to too much text)")
		return false
	}
	return r.err == nil
}
