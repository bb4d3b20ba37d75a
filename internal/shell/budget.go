package shell

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Bounds. mvdan's parser recurses once per level of nesting, a few
// kilobytes of stack each, and a crash of the hook's process would let a
// command through; so the text's structure is bounded before it is
// parsed. Long literal text (here-documents, quoted strings, comments)
// costs nothing: it is a single node.
const (
	// MaxText is the longest command st reads.
	MaxText = 1 << 20
	// maxNest bounds the characters and words that may open a level of
	// nesting, outside literal text: every nested level needs one.
	maxNest = 1500
	// maxNodes bounds the words and operators outside literal text.
	maxNodes = 40000
	// maxWord bounds one expanded word beyond its own length.
	maxWord = 64 << 10
	// maxBraces bounds the words one brace expansion may make.
	maxBraces = 256
	// maxDepth bounds texts run inside texts (bash -c in eval in $(...)).
	maxDepth = 8
	// maxCalls bounds function calls inside function calls.
	maxCalls = 12
	// maxLoopItems: a for loop over more known words than this walks its
	// body once with the variable unknown.
	maxLoopItems = 16
)

// LimitError says which bound a command went past. A reader that hits
// one stops: what it has not read may do anything.
type LimitError struct{ What string }

func (e *LimitError) Error() string { return e.What }

// ParseError is mvdan's parse error, kept for the reason a caller gives.
type ParseError struct{ Err error }

func (e *ParseError) Error() string { return e.Err.Error() }
func (e *ParseError) Unwrap() error { return e.Err }

var errReserved = errors.New("the text holds the characters U+FDD0 or U+FDD1, which st reserves")

// parse parses src with mvdan within the bounds.
func parse(src string) (*syntax.File, error) {
	if len(src) > MaxText {
		return nil, &LimitError{fmt.Sprintf("the command is %d bytes; st reads at most %d", len(src), MaxText)}
	}
	if hasSentinel(src) {
		return nil, &LimitError{errReserved.Error()}
	}
	regions, fill := literalRegions(src)
	if len(regions) == 0 {
		if err := structureCost(src, nil); err != nil {
			return nil, err
		}
		return parseText(src)
	}
	skel := skeleton(src, regions, fill)
	if err := structureCost(skel, regions); err != nil {
		// The bound holds for the text with its literals made plain;
		// past it nothing is parsed.
		return nil, err
	}
	f, err := parseText(skel)
	if err == nil && verified(f, regions) {
		// The skeleton parses as the text does: the regions are literal
		// in both, and nothing in them can end them. So the text's
		// structure is the skeleton's, within the bounds.
		return parseText(src)
	}
	// The regions were not what they looked like: count the whole text.
	if err := structureCost(src, nil); err != nil {
		return nil, err
	}
	return parseText(src)
}

func parseText(src string) (*syntax.File, error) {
	p := syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true))
	f, err := p.Parse(strings.NewReader(src), "")
	if err != nil {
		return nil, &ParseError{err}
	}
	return f, nil
}

type region struct{ start, end int }

// structureCost counts what may open a level of nesting and what makes a
// node, outside the regions (which the skeleton has filled).
func structureCost(s string, regions []region) error {
	nest, nodes := 0, 0
	ri := 0
	inWord := false
	word := 0
	for i := 0; i < len(s); i++ {
		for ri < len(regions) && regions[ri].end <= i {
			ri++
		}
		if ri < len(regions) && i >= regions[ri].start {
			i = regions[ri].end - 1
			inWord = false
			continue
		}
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				if isReserved(s[word:i]) {
					nest++
				}
				nodes++
			}
			inWord = false
			if c == '\n' {
				nodes++
			}
			continue
		case strings.IndexByte("({[$`<>!-+~=?:*\"'", c) >= 0:
			nest++
			nodes++
		case c == ';' || c == '|' || c == '&' || c == ')' || c == '}' || c == ']':
			nodes++
		}
		if !inWord {
			inWord = true
			word = i
		}
	}
	if inWord && isReserved(s[word:]) {
		nest++
	}
	switch {
	case nest > maxNest:
		return &LimitError{fmt.Sprintf("the command nests too deeply for st to check (%d places that may open a level, outside quoted text; at most %d)", nest, maxNest)}
	case nodes > maxNodes:
		return &LimitError{fmt.Sprintf("the command has too many words and operators for st to check (%d outside quoted text; at most %d)", nodes, maxNodes)}
	}
	return nil
}

func isReserved(w string) bool {
	switch w {
	case "if", "then", "else", "elif", "while", "until", "for", "do", "case", "select", "function", "time", "coproc", "in":
		return true
	}
	return false
}

// literalRegions finds, by a plain scan, stretches of text that look like
// they cannot change the parse: the inside of single quotes, of double
// quotes without $, ` or \, comments, and here-document bodies. The scan
// may be wrong; verified checks its regions against mvdan's own parse of
// the skeleton. It returns the regions and a filler byte that no
// here-document delimiter holds.
func literalRegions(s string) ([]region, byte) {
	sc := &regionScan{s: s}
	for sc.i < len(s) {
		sc.step()
	}
	regions := sc.regions
	// Regions must not hold a line with a delimiter in it (a line the
	// scan took for a body line may end a here-document for mvdan).
	if len(sc.delims) > 0 {
		regions = splitAtDelims(s, regions, sc.delims)
	}
	sort.Slice(regions, func(a, b int) bool { return regions[a].start < regions[b].start })
	merged := regions[:0]
	for _, r := range regions {
		if n := len(merged); n > 0 && r.start <= merged[n-1].end {
			merged[n-1].end = max(merged[n-1].end, r.end)
			continue
		}
		merged = append(merged, r)
	}
	fill := byte('x')
	for _, f := range []byte("xyzqjkXYZ") {
		if !slices.ContainsFunc(sc.delims, func(d string) bool { return strings.IndexByte(d, f) >= 0 }) {
			fill = f
			break
		}
	}
	return merged, fill
}

// regionScan is literalRegions' scan of the text.
type regionScan struct {
	s       string
	i       int
	regions []region
	delims  []string
	hds     []pendingDoc // here-documents whose bodies start at the next line
}

type pendingDoc struct {
	delim  string
	quoted bool
}

func (sc *regionScan) add(a, b int) {
	if b > a {
		sc.regions = append(sc.regions, region{a, b})
	}
}

// dqRuns adds the runs of s[a:b] without $, ` or \ .
func (sc *regionScan) dqRuns(a, b int) {
	start := a
	for j := a; j < b; j++ {
		if c := sc.s[j]; c == '$' || c == '`' || c == '\\' {
			sc.add(start, j)
			start = j + 1
		}
	}
	sc.add(start, b)
}

// step reads what starts at sc.i.
func (sc *regionScan) step() {
	s, i := sc.s, sc.i
	switch c := s[i]; {
	case c == '\\':
		sc.i += 2
	case c == '\'' && (i == 0 || s[i-1] != '$'):
		end := strings.IndexByte(s[i+1:], '\'')
		if end < 0 {
			sc.add(i+1, len(s))
			sc.i = len(s)
			return
		}
		sc.add(i+1, i+1+end)
		sc.i += end + 2
	case c == '"':
		j := i + 1
		for j < len(s) && s[j] != '"' {
			if s[j] == '\\' {
				j++
			}
			j++
		}
		sc.dqRuns(i+1, min(j, len(s)))
		sc.i = j + 1
	case c == '#' && (i == 0 || strings.IndexByte(" \t\n;&|()", s[i-1]) >= 0):
		end := strings.IndexByte(s[i:], '\n')
		if end < 0 {
			end = len(s) - i
		}
		sc.add(i+1, i+end)
		sc.i += end
	case c == '<' && strings.HasPrefix(s[i:], "<<") && !strings.HasPrefix(s[i:], "<<<"):
		sc.heredoc()
	case c == '\n':
		sc.i++
		sc.bodies()
	default:
		sc.i++
	}
}

// heredoc reads a here-document's operator and delimiter.
func (sc *regionScan) heredoc() {
	s := sc.s
	j := sc.i + 2
	if j < len(s) && s[j] == '-' {
		j++
	}
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	k := j
	for k < len(s) && strings.IndexByte(" \t\n;&|()<>", s[k]) < 0 {
		k++
	}
	raw := s[j:k]
	delim := strings.NewReplacer("'", "", "\"", "", "\\", "").Replace(raw)
	sc.hds = append(sc.hds, pendingDoc{delim, delim != raw})
	sc.delims = append(sc.delims, delim)
	sc.i = k
}

// bodies reads the bodies of the here-documents of the line that ended:
// each runs to the first line holding its delimiter; that line and any
// like it stay as written.
func (sc *regionScan) bodies() {
	s := sc.s
	for _, h := range sc.hds {
		for sc.i < len(s) {
			i := sc.i
			end := strings.IndexByte(s[i:], '\n')
			line, next := s[i:], len(s)
			if end >= 0 {
				line, next = s[i:i+end], i+end+1
			}
			sc.i = next
			if h.delim == "" || strings.Contains(line, h.delim) {
				break
			}
			// The newline goes with the line: a body is one region.
			if h.quoted {
				sc.add(i, next)
			} else {
				sc.dqRuns(i, next)
			}
		}
	}
	sc.hds = nil
}

// splitAtDelims drops from the regions every line that holds a delimiter.
func splitAtDelims(s string, regions []region, delims []string) []region {
	var out []region
	for _, r := range regions {
		start := r.start
		for start < r.end {
			lineStart := strings.LastIndexByte(s[:start], '\n') + 1
			lineEnd := strings.IndexByte(s[start:], '\n')
			if lineEnd < 0 {
				lineEnd = len(s)
			} else {
				lineEnd += start
			}
			line := s[lineStart:lineEnd]
			bad := false
			for _, d := range delims {
				if d == "" || strings.Contains(line, d) {
					bad = true
				}
			}
			stop := min(lineEnd+1, r.end)
			if !bad && stop > start {
				if n := len(out); n > 0 && out[n-1].end == start {
					out[n-1].end = stop
				} else {
					out = append(out, region{start, stop})
				}
			}
			start = stop
		}
	}
	return out
}

// skeleton is s with the regions filled (newlines kept).
func skeleton(s string, regions []region, fill byte) string {
	b := []byte(s)
	for _, r := range regions {
		for i := r.start; i < r.end; i++ {
			if b[i] != '\n' {
				b[i] = fill
			}
		}
	}
	return string(b)
}

// verified reports whether every region lies inside literal text of the
// skeleton's parse: single quotes, the literal parts of double quotes and
// here-documents, comments.
func verified(f *syntax.File, regions []region) bool {
	var spans []region
	lit := func(a, b syntax.Pos) {
		spans = append(spans, region{int(a.Offset()), int(b.Offset())})
	}
	litParts := func(parts []syntax.WordPart) {
		for _, p := range parts {
			if l, ok := p.(*syntax.Lit); ok {
				lit(l.Pos(), l.End())
			}
		}
	}
	comments := func(cs []syntax.Comment) {
		for _, c := range cs {
			spans = append(spans, region{int(c.Hash.Offset()) + 1, int(c.End().Offset())})
		}
	}
	comments(f.Last)
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.SglQuoted:
			if !n.Dollar {
				spans = append(spans, region{int(n.Left.Offset()) + 1, int(n.Right.Offset())})
			}
		case *syntax.DblQuoted:
			litParts(n.Parts)
		case *syntax.Redirect:
			if n.Hdoc != nil {
				litParts(n.Hdoc.Parts)
			}
		case *syntax.Stmt:
			comments(n.Comments)
		case *syntax.Block:
			comments(n.Last)
		case *syntax.Subshell:
			comments(n.Last)
		case *syntax.CmdSubst:
			comments(n.Last)
		case *syntax.IfClause:
			comments(n.CondLast)
			comments(n.ThenLast)
			comments(n.Last)
		case *syntax.WhileClause:
			comments(n.CondLast)
			comments(n.DoLast)
		case *syntax.ForClause:
			comments(n.DoLast)
		case *syntax.CaseClause:
			comments(n.Last)
		case *syntax.CaseItem:
			comments(n.Comments)
			comments(n.Last)
		case *syntax.ArrayExpr:
			comments(n.Last)
		case *syntax.ProcSubst:
			comments(n.Last)
		}
		return true
	})
	sort.Slice(spans, func(a, b int) bool { return spans[a].start < spans[b].start })
	// maxEnd[k] is the furthest end of spans[0..k]: a region is covered
	// when some span starting at or before it ends at or after it.
	maxEnd := make([]int, len(spans))
	for k, sp := range spans {
		maxEnd[k] = sp.end
		if k > 0 && maxEnd[k-1] > sp.end {
			maxEnd[k] = maxEnd[k-1]
		}
	}
	for _, r := range regions {
		k := sort.Search(len(spans), func(i int) bool { return spans[i].start > r.start }) - 1
		if k < 0 || maxEnd[k] < r.end {
			return false
		}
	}
	return true
}
