package worktree

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Globs are compiled to a small automaton (an NFA over runes) rather than
// matched with path.Match, for two reasons: "**" spans folders, which
// path.Match cannot do, and two automata can be intersected, which tells
// exactly whether two scopes can both cover some path (and gives one as an
// example) even when no such file exists yet.
//
// Syntax, as in .gitignore:
//   - '*' is any run of characters but '/', '?' one such character,
//     "[a-z]" and "[!a-z]" (or "[^a-z]") a class, and '\' quotes the next
//     character;
//   - "**" as a whole segment spans folders: "**/x" is x at any depth,
//     "a/**/b" is b anywhere under a, "a/**" is a and everything in it;
//   - a glob without any of these ("src", "README.md") is that file or
//     folder and everything in it, because people write --owns src for
//     the folder;
//   - a trailing '/' means the folder and everything in it.

type predKind uint8

const (
	pLit   predKind = iota // one given character
	pOne                   // any character but '/'
	pAll                   // any character
	pClass                 // a bracket class; never '/'
)

type runeRange struct{ lo, hi rune }

type pred struct {
	kind   predKind
	c      rune
	neg    bool
	ranges []runeRange
}

func (p pred) match(c rune) bool {
	switch p.kind {
	case pLit:
		return c == p.c
	case pOne:
		return c != '/'
	case pAll:
		return true
	default:
		if c == '/' {
			return false
		}
		in := false
		for _, r := range p.ranges {
			if c >= r.lo && c <= r.hi {
				in = true
				break
			}
		}
		return in != p.neg
	}
}

type edge struct {
	p  pred
	to int
}

type nfa struct {
	eps    [][]int
	edges  [][]edge
	accept int
}

func (n *nfa) state() int {
	n.eps = append(n.eps, nil)
	n.edges = append(n.edges, nil)
	return len(n.eps) - 1
}

func (n *nfa) addEps(from, to int) { n.eps[from] = append(n.eps[from], to) }
func (n *nfa) addEdge(from int, p pred) int {
	to := n.state()
	n.edges[from] = append(n.edges[from], edge{p, to})
	return to
}
func (n *nfa) loop(s int, p pred) { n.edges[s] = append(n.edges[s], edge{p, s}) }

// closure extends the state set (in list and mark) with every state
// reachable by empty moves.
func (n *nfa) closure(list []int, mark []bool) []int {
	for i := 0; i < len(list); i++ {
		for _, t := range n.eps[list[i]] {
			if !mark[t] {
				mark[t] = true
				list = append(list, t)
			}
		}
	}
	return list
}

func (n *nfa) match(p string) bool {
	mark := make([]bool, len(n.eps))
	mark[0] = true
	cur := n.closure([]int{0}, mark)
	var next []int
	for _, c := range p {
		clear(mark)
		next = next[:0]
		for _, s := range cur {
			for _, e := range n.edges[s] {
				if !mark[e.to] && e.p.match(c) {
					mark[e.to] = true
					next = append(next, e.to)
				}
			}
		}
		if len(next) == 0 {
			return false
		}
		next = n.closure(next, mark)
		cur, next = next, cur
	}
	for _, s := range cur {
		if s == n.accept {
			return true
		}
	}
	return false
}

// normGlob strips what does not change a glob's meaning ("./", empty and
// "." segments) and turns the folder forms into "**".
func normGlob(g string) string {
	g = strings.TrimSpace(g)
	dir := strings.HasSuffix(g, "/")
	var segs []string
	for _, s := range strings.Split(g, "/") {
		if s != "" && s != "." {
			segs = append(segs, s)
		}
	}
	if len(segs) == 0 {
		return ""
	}
	if dir || !hasMeta(g) {
		if segs[len(segs)-1] != "**" {
			segs = append(segs, "**")
		}
	}
	return strings.Join(segs, "/")
}

func hasMeta(g string) bool { return strings.ContainsAny(g, `*?[\`) }

// ValidGlob refuses a glob that cannot name paths inside the repository.
func ValidGlob(g string) error {
	t := strings.TrimSpace(g)
	switch {
	case t == "":
		return errors.New("an empty --owns glob owns nothing. Try: --owns 'src/**'")
	case strings.HasPrefix(t, "/") || strings.HasPrefix(t, "~"):
		return fmt.Errorf("--owns %q is an absolute path; globs are relative to the repository root. Try: --owns 'src/**'", g)
	case strings.ContainsAny(t, "\x00\n\r"):
		return fmt.Errorf("--owns %q contains a control character", g)
	}
	for _, s := range strings.Split(t, "/") {
		if s == ".." {
			return fmt.Errorf("--owns %q leaves the repository with \"..\"; globs are relative to the repository root. Try: a path from the root, such as 'src/**'", g)
		}
		if s != "**" && strings.Contains(s, "**") {
			return fmt.Errorf("--owns %q: \"**\" must be a whole path segment. Try: %q", g, strings.ReplaceAll(t, s, fixDoubleStar(s)))
		}
	}
	if i := strings.IndexByte(t, '['); i >= 0 {
		if j := strings.IndexByte(t[i:], ']'); j > 0 && strings.Contains(t[i:i+j], "/") {
			return fmt.Errorf("--owns %q: a [] class cannot hold '/'; a path segment never spans folders", g)
		}
	}
	if normGlob(t) == "" {
		return fmt.Errorf("--owns %q names no path. Try: --owns 'src/**', or '**' for everything", g)
	}
	if _, err := compileGlob(t); err != nil {
		return fmt.Errorf("--owns %q: %w", g, err)
	}
	return nil
}

// fixDoubleStar suggests the segment people mean by "**.go" or "a**".
func fixDoubleStar(s string) string {
	switch {
	case strings.HasPrefix(s, "**"):
		return "**/*" + strings.TrimLeft(s, "*")
	case strings.HasSuffix(s, "**"):
		return strings.TrimRight(s, "*") + "*/**"
	}
	return strings.ReplaceAll(s, "**", "*")
}

// compileGlob builds the automaton of a (valid) glob.
func compileGlob(g string) (*nfa, error) {
	g = normGlob(g)
	if g == "" {
		return nil, errors.New("empty glob")
	}
	n := &nfa{}
	cur := n.state()
	segs := strings.Split(g, "/")
	needSlash := false
	for i, seg := range segs {
		if seg == "**" {
			cur = n.starStar(cur, i, len(segs))
			needSlash = false
			continue
		}
		if needSlash {
			cur = n.addEdge(cur, pred{kind: pLit, c: '/'})
		}
		var err error
		if cur, err = n.segment(cur, []rune(seg)); err != nil {
			return nil, err
		}
		needSlash = true
	}
	n.accept = cur
	return n, nil
}

// starStar adds the "**" segment i of n segments after cur, and returns
// the state after it.
func (n *nfa) starStar(cur, i, segs int) int {
	slash := pred{kind: pLit, c: '/'}
	all := pred{kind: pAll}
	// anyDirs adds "(.*/)?" after from and returns the state after it.
	anyDirs := func(from int) int {
		end := n.state()
		n.addEps(from, end)
		mid := n.addEdge(from, all)
		n.loop(mid, all)
		back := n.addEdge(mid, slash)
		n.addEps(back, end)
		return end
	}
	switch {
	case segs == 1: // everything: any non-empty path
		cur = n.addEdge(cur, all)
		n.loop(cur, all)
		return cur
	case i == 0:
		return anyDirs(cur)
	case i == segs-1: // "(/.*)?": the folder itself and all inside it
		end := n.state()
		n.addEps(cur, end)
		in := n.addEdge(cur, slash)
		n.loop(in, all)
		n.addEps(in, end)
		return end
	}
	return anyDirs(n.addEdge(cur, slash))
}

// segment adds one segment of a glob (no '/') after cur, and returns the
// state after it.
func (n *nfa) segment(cur int, rs []rune) (int, error) {
	for j := 0; j < len(rs); j++ {
		switch c := rs[j]; c {
		case '*':
			// "x+ or nothing" rather than a loop on cur, so that an
			// example path made from the automaton prefers a letter
			// to an empty run ("src/x.go", not "src/.go").
			end := n.state()
			n.addEps(cur, end)
			some := n.addEdge(cur, pred{kind: pOne})
			n.loop(some, pred{kind: pOne})
			n.addEps(some, end)
			cur = end
		case '?':
			cur = n.addEdge(cur, pred{kind: pOne})
		case '\\':
			if j+1 >= len(rs) {
				return 0, errors.New(`a trailing '\' quotes nothing`)
			}
			j++
			cur = n.addEdge(cur, pred{kind: pLit, c: rs[j]})
		case '[':
			p, k, err := parseClass(rs, j)
			if err != nil {
				return 0, err
			}
			cur = n.addEdge(cur, p)
			j = k
		default:
			cur = n.addEdge(cur, pred{kind: pLit, c: c})
		}
	}
	return cur, nil
}

// parseClass reads the class starting at rs[i] == '[' and returns it with
// the index of its closing ']'.
func parseClass(rs []rune, i int) (pred, int, error) {
	p := pred{kind: pClass}
	j := i + 1
	if j < len(rs) && (rs[j] == '!' || rs[j] == '^') {
		p.neg = true
		j++
	}
	first := true
	for ; j < len(rs); j++ {
		c := rs[j]
		if c == ']' && !first {
			if len(p.ranges) == 0 {
				return p, 0, errors.New("empty [] class")
			}
			return p, j, nil
		}
		first = false
		if c == '\\' {
			j++
			if j >= len(rs) {
				break
			}
			c = rs[j]
		}
		lo, hi := c, c
		if j+2 < len(rs) && rs[j+1] == '-' && rs[j+2] != ']' {
			hi = rs[j+2]
			if hi == '\\' && j+3 < len(rs) {
				hi = rs[j+3]
				j++
			}
			j += 2
			if hi < lo {
				return p, 0, fmt.Errorf("class range %c-%c runs backwards", lo, hi)
			}
		}
		if lo <= '/' && '/' <= hi {
			return p, 0, errors.New("a [] class cannot hold '/'; a path segment never spans folders")
		}
		p.ranges = append(p.ranges, runeRange{lo, hi})
	}
	return p, 0, errors.New("'[' without a closing ']'")
}

// meet finds a character both predicates accept, preferring plain letters
// so that example paths read well.
func meet(a, b pred) (rune, bool) {
	var cands []rune
	for _, p := range []pred{a, b} {
		if p.kind == pLit {
			cands = append(cands, p.c)
		}
	}
	cands = append(cands, 'x', 'a', 'z', '0', '_', '-', '.', '/')
	for _, p := range []pred{a, b} {
		for _, r := range p.ranges {
			cands = append(cands, r.lo, r.hi, r.hi+1)
			if r.lo > 1 {
				cands = append(cands, r.lo-1)
			}
		}
	}
	for _, c := range cands {
		if a.match(c) && b.match(c) {
			return c, true
		}
	}
	return 0, false
}

// intersect returns a path both automata accept, if there is one. It walks
// pairs of states depth first, letters before empty moves; each pair is
// visited once, so it ends.
func intersect(a, b *nfa) (string, bool) {
	type pair struct{ a, b int }
	seen := map[pair]bool{}
	var buf []rune
	var walk func(p pair) bool
	walk = func(p pair) bool {
		if seen[p] {
			return false
		}
		seen[p] = true
		if p.a == a.accept && p.b == b.accept && len(buf) > 0 {
			return true
		}
		for _, ea := range a.edges[p.a] {
			for _, eb := range b.edges[p.b] {
				c, ok := meet(ea.p, eb.p)
				if !ok {
					continue
				}
				buf = append(buf, c)
				if walk(pair{ea.to, eb.to}) {
					return true
				}
				buf = buf[:len(buf)-1]
			}
		}
		for _, t := range a.eps[p.a] {
			if walk(pair{t, p.b}) {
				return true
			}
		}
		for _, t := range b.eps[p.b] {
			if walk(pair{p.a, t}) {
				return true
			}
		}
		return false
	}
	if walk(pair{0, 0}) {
		return string(buf), true
	}
	return "", false
}

// cleanRel makes a repository path comparable with globs: no "./",
// no empty or "." segments.
func cleanRel(p string) string {
	if p == "" {
		return ""
	}
	c := path.Clean(p)
	if c == "." {
		return "."
	}
	return strings.TrimPrefix(c, "./")
}
