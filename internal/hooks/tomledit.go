package hooks

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Codex keeps the trust of each hook in config.toml:
//
//	[hooks.state."/home/u/.codex/hooks.json:stop:0:0"]
//	trusted_hash = "sha256:..."
//
// st edits that file as text: it finds the few expressions it changes
// with go-toml's parser (which gives their byte ranges) and splices, so
// comments, tables st does not know and their order stay byte for byte.
// Every result is parsed again and checked before it is written.

// trust is one hook's key and the hash Codex computes for its definition.
type trust struct{ Key, Hash string }

// trustEdit is a change to config.toml's [hooks.state] tables.
type trustEdit struct {
	set    []trust           // write trusted_hash for these keys
	remove []string          // these keys' entries go
	rename map[string]string // old key -> new key: hooks that moved in hooks.json
}

func (e trustEdit) empty() bool { return len(e.set) == 0 && len(e.remove) == 0 && len(e.rename) == 0 }

// tomlExpr is one top-level expression of the file: a table header or a
// key/value, with the byte ranges st may change.
type tomlExpr struct {
	table     bool     // a [table] header ([[array]] headers are not kept)
	path      []string // the full key: its table's key, then its own
	own       int      // index in path of the expression's first key part
	parts     []unstable.Range
	lineStart int // the lines the expression spans, its newline included
	lineEnd   int
	inTable   int // key/values: index of their [table] expression, or -1
	lastLine  int // tables: end of the last line of their key/values
	value     unstable.Range
	valueKind unstable.Kind
	valueData string
	inlineTH  *unstable.Range // an inline table's trusted_hash value
}

func parseTOML(data []byte) ([]tomlExpr, error) {
	var p unstable.Parser
	p.Reset(data)
	var (
		out      []tomlExpr
		table    []string
		tableIdx = -1
		inArray  bool
	)
	lineEnd := func(off int) int {
		if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
			return off + i + 1
		}
		return len(data)
	}
	for p.NextExpression() {
		n := p.Expression()
		switch n.Kind {
		case unstable.Table, unstable.ArrayTable:
			parts, ranges := keyParts(n.Key())
			table, inArray = parts, n.Kind == unstable.ArrayTable
			if inArray {
				tableIdx = -1
				continue
			}
			first, last := int(ranges[0].Offset), int(ranges[len(ranges)-1].Offset+ranges[len(ranges)-1].Length)
			e := tomlExpr{table: true, path: parts, parts: ranges, inTable: -1,
				lineStart: bytes.LastIndexByte(data[:first], '\n') + 1, lineEnd: lineEnd(last)}
			e.lastLine = e.lineEnd
			out = append(out, e)
			tableIdx = len(out) - 1
		case unstable.KeyValue:
			parts, ranges := keyParts(n.Key())
			prefix := table
			if inArray {
				prefix = append([]string{"[["}, table...) // never matches hooks.state
			}
			v := n.Value()
			start := int(n.Raw.Offset)
			e := tomlExpr{path: append(slices.Clone(prefix), parts...), own: len(prefix), parts: ranges,
				inTable: tableIdx, lineStart: bytes.LastIndexByte(data[:start], '\n') + 1,
				lineEnd: lineEnd(int(n.Raw.Offset + n.Raw.Length)), value: v.Raw, valueKind: v.Kind, valueData: string(v.Data)}
			if v.Kind == unstable.InlineTable {
				it := v.Children()
				for it.Next() {
					c := it.Node()
					if c.Kind != unstable.KeyValue {
						continue
					}
					k, _ := keyParts(c.Key())
					if len(k) == 1 && k[0] == "trusted_hash" && c.Value().Kind == unstable.String {
						r := c.Value().Raw
						e.inlineTH = &r
					}
				}
			}
			if tableIdx >= 0 {
				out[tableIdx].lastLine = e.lineEnd
			}
			out = append(out, e)
		}
	}
	if err := p.Error(); err != nil {
		return nil, err
	}
	return out, nil
}

func keyParts(it unstable.Iterator) ([]string, []unstable.Range) {
	var parts []string
	var ranges []unstable.Range
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
		ranges = append(ranges, it.Node().Raw)
	}
	return parts, ranges
}

// under reports whether path is hooks.state.KEY or below it.
func under(path []string, key string) bool {
	return len(path) >= 3 && path[0] == "hooks" && path[1] == "state" && path[2] == key
}

// splice is a replacement of data[from:to].
type splice struct {
	from, to int
	text     string
}

func applySplices(data []byte, ss []splice) []byte {
	sort.Slice(ss, func(a, b int) bool { return ss[a].from > ss[b].from })
	out := slices.Clone(data)
	last := len(data) + 1
	for _, s := range ss {
		if s.to > last { // overlapping: the outer one (a deleted table) wins
			continue
		}
		out = slices.Concat(out[:s.from], []byte(s.text), out[s.to:])
		last = s.from
	}
	return out
}

// editTrust applies e to config.toml's text, in three passes (removals,
// renames, then new hashes), each over a fresh parse.
func editTrust(data []byte, e trustEdit) ([]byte, error) {
	if e.empty() {
		return data, nil
	}
	if err := checkTOML(data); err != nil {
		return nil, err
	}
	exprs, err := parseTOML(data)
	if err != nil {
		return nil, err
	}
	setKeys := map[string]bool{}
	for _, t := range e.set {
		setKeys[t.Key] = true
	}
	// A hook moving onto a key that still has an entry takes its place.
	remove := map[string]bool{}
	for _, k := range e.remove {
		remove[k] = true
	}
	for _, to := range e.rename {
		if _, moving := e.rename[to]; !moving && has(exprs, to) {
			remove[to] = true
		}
	}
	for k := range setKeys {
		if _, moving := e.rename[k]; !moving {
			delete(remove, k)
		}
	}
	out := data
	if len(remove) > 0 {
		out = applySplices(out, removeSplices(out, exprs, remove))
		if exprs, err = parseTOML(out); err != nil {
			return nil, fmt.Errorf("internal error removing trust entries: %w", err)
		}
	}
	if len(e.rename) > 0 {
		var ss []splice
		for _, x := range exprs {
			if len(x.path) < 3 || x.path[0] != "hooks" || x.path[1] != "state" || x.own > 2 {
				continue
			}
			if to, ok := e.rename[x.path[2]]; ok {
				r := x.parts[2-x.own]
				ss = append(ss, splice{int(r.Offset), int(r.Offset + r.Length), tomlQuote(to)})
			}
		}
		out = applySplices(out, ss)
		if exprs, err = parseTOML(out); err != nil {
			return nil, fmt.Errorf("internal error moving trust entries: %w", err)
		}
	}
	if len(e.set) > 0 {
		out, err = setTrust(out, exprs, e.set)
		if err != nil {
			return nil, err
		}
	}
	if err := verifyTrust(out, e, remove); err != nil {
		return nil, err
	}
	return out, nil
}

func has(exprs []tomlExpr, key string) bool {
	for _, x := range exprs {
		if under(x.path, key) {
			return true
		}
	}
	return false
}

// removeSplices deletes every expression under hooks.state.KEY for the
// keys: a [hooks.state."KEY"] table from its header to its last key/value
// (and the blank line st put before it), other forms line by line.
func removeSplices(data []byte, exprs []tomlExpr, keys map[string]bool) []splice {
	var ss []splice
	for _, x := range exprs {
		if len(x.path) < 3 || x.path[0] != "hooks" || x.path[1] != "state" || !keys[x.path[2]] {
			continue
		}
		if x.table {
			from, to := x.lineStart, x.lastLine
			if prev := bytes.LastIndexByte(data[:max(from-1, 0)], '\n') + 1; from > 0 && len(bytes.TrimSpace(data[prev:from])) == 0 {
				from = prev
			} else if next := bytes.IndexByte(data[to:], '\n'); next >= 0 && len(bytes.TrimSpace(data[to:to+next])) == 0 {
				to += next + 1
			}
			ss = append(ss, splice{from, to, ""})
			continue
		}
		if x.inTable >= 0 && under(exprs[x.inTable].path, x.path[2]) {
			continue // goes with its table
		}
		ss = append(ss, splice{x.lineStart, x.lineEnd, ""})
	}
	// Blank lines taken along may join two regions: merge them.
	sort.Slice(ss, func(a, b int) bool { return ss[a].from < ss[b].from })
	var merged []splice
	for _, s := range ss {
		if n := len(merged); n > 0 && s.from <= merged[n-1].to {
			merged[n-1].to = max(merged[n-1].to, s.to)
			continue
		}
		merged = append(merged, s)
	}
	return merged
}

// setTrust writes trusted_hash for each key: over the value where there
// is one, into the key's table where there is a table, else in a new table
// at the end of the file.
func setTrust(data []byte, exprs []tomlExpr, set []trust) ([]byte, error) {
	eol := "\n"
	if bytes.Contains(data, []byte("\r\n")) {
		eol = "\r\n"
	}
	var ss []splice
	var appendix []trust
	for _, t := range set {
		done := false
		for _, x := range exprs {
			if !x.table && len(x.path) == 4 && under(x.path, t.Key) && x.path[3] == "trusted_hash" {
				if x.valueKind != unstable.String || x.valueData != t.Hash {
					ss = append(ss, splice{int(x.value.Offset), int(x.value.Offset + x.value.Length), tomlQuote(t.Hash)})
				}
				done = true
				break
			}
		}
		if done {
			continue
		}
		for _, x := range exprs {
			if !x.table && len(x.path) == 3 && under(x.path, t.Key) {
				if x.valueKind != unstable.InlineTable || x.inlineTH == nil {
					return nil, fmt.Errorf(`config.toml sets hooks.state.%s in a form st does not edit; write trusted_hash = %s into it by hand`, tomlQuote(t.Key), tomlQuote(t.Hash))
				}
				ss = append(ss, splice{int(x.inlineTH.Offset), int(x.inlineTH.Offset + x.inlineTH.Length), tomlQuote(t.Hash)})
				done = true
				break
			}
		}
		if done {
			continue
		}
		for _, x := range exprs {
			if x.table && len(x.path) == 3 && under(x.path, t.Key) {
				text := "trusted_hash = " + tomlQuote(t.Hash) + eol
				if x.lineEnd == len(data) && !bytes.HasSuffix(data, []byte("\n")) {
					text = eol + strings.TrimSuffix(text, eol)
				}
				ss = append(ss, splice{x.lineEnd, x.lineEnd, text})
				done = true
				break
			}
		}
		if !done {
			appendix = append(appendix, t)
		}
	}
	out := applySplices(data, ss)
	if len(appendix) > 0 {
		var b strings.Builder
		if len(out) > 0 && !bytes.HasSuffix(out, []byte("\n")) {
			b.WriteString(eol)
		}
		for _, t := range appendix {
			if len(out) > 0 || b.Len() > 0 {
				b.WriteString(eol)
			}
			fmt.Fprintf(&b, "[hooks.state.%s]%strusted_hash = %s%s", tomlQuote(t.Key), eol, tomlQuote(t.Hash), eol)
		}
		out = append(out, b.String()...)
	}
	return out, nil
}

// verifyTrust parses the result again and checks that it says what the
// edit meant.
func verifyTrust(out []byte, e trustEdit, removed map[string]bool) error {
	state, err := readTrust(out)
	if err != nil {
		return fmt.Errorf("config.toml defines hooks.state in a form st does not edit (%v); nothing was written", err)
	}
	for _, t := range e.set {
		if state[t.Key] != t.Hash {
			return fmt.Errorf("config.toml defines hooks.state in a form st does not edit (the trust of %s did not take); nothing was written", t.Key)
		}
	}
	arrive := map[string]bool{}
	for _, to := range e.rename {
		arrive[to] = true
	}
	for _, t := range e.set {
		arrive[t.Key] = true
	}
	for k := range removed {
		if _, still := state[k]; still && !arrive[k] {
			return fmt.Errorf("config.toml defines hooks.state in a form st does not edit (%s could not be removed); nothing was written", k)
		}
	}
	return nil
}

// checkTOML reports a file Codex could not read either, with its line.
func checkTOML(data []byte) error {
	var v map[string]any
	if err := toml.Unmarshal(data, &v); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return fmt.Errorf("invalid TOML at line %d, column %d: %v", row, col, err)
		}
		return fmt.Errorf("invalid TOML: %v", err)
	}
	return nil
}

// readTrust returns config.toml's hooks.state: trusted_hash by key.
func readTrust(data []byte) (map[string]string, error) {
	var v map[string]any
	if err := toml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	out := map[string]string{}
	hooks, ok := v["hooks"]
	if !ok {
		return out, nil
	}
	hm, ok := hooks.(map[string]any)
	if !ok {
		return nil, errors.New("hooks is not a table")
	}
	state, ok := hm["state"]
	if !ok {
		return out, nil
	}
	sm, ok := state.(map[string]any)
	if !ok {
		return nil, errors.New("hooks.state is not a table")
	}
	for k, e := range sm {
		em, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("hooks.state.%s is not a table", tomlQuote(k))
		}
		h, _ := em["trusted_hash"].(string)
		out[k] = h
	}
	return out, nil
}

// tomlQuote writes s as a TOML basic string.
func tomlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
