package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// The hook files of both agents have one shape:
//
//	{"hooks": {"Stop": [{"matcher": "*", "hooks": [{"type": "command", "command": "..."}]}]}}
//
// st edits them in place with gjson/sjson, so that every byte it does not
// mean to change (other keys, their order, the user's formatting, the
// user's own hooks) stays as it was, and adds its own groups after the
// user's.

// pos is a handler's place in an event's list: the group's index and the
// handler's index in the group. Codex keys a hook's trust by it.
type pos struct{ Group, Handler int }

// eventPlan is what an edit did to one event's list.
type eventPlan struct {
	Event   string
	Removed []pos       // st's handlers taken out (positions before the edit)
	Moved   map[pos]pos // other handlers whose position changed
	At      *pos        // where st's handler is after the edit; nil when none is
}

type docEdit struct {
	out     string
	changed bool
	events  []eventPlan
}

// hookHandler and hookGroup give the JSON st writes, keys in this order.
type hookHandler struct {
	Type    string `json:"type"`
	Command string `json:"command"`
}

type hookGroup struct {
	Matcher string        `json:"matcher,omitempty"`
	Hooks   []hookHandler `json:"hooks"`
}

func wantGroup(sp spec, st, event string) hookGroup {
	g := hookGroup{Hooks: []hookHandler{{Type: "command", Command: Command(st, sp.agent, event)}}}
	if sp.matcher[event] {
		g.Matcher = "*"
	}
	return g
}

// foundHandler and foundGroup are an event's list as found in a file.
type foundHandler struct {
	st      bool
	command string
}

type foundGroup struct {
	matcher  gjson.Result
	handlers []foundHandler
	hasST    bool
	stOnly   bool // it has handlers, and every one is st's
}

func readGroups(doc string, sp spec, st, event string) []foundGroup {
	var gs []foundGroup
	gjson.Get(doc, "hooks."+event).ForEach(func(_, g gjson.Result) bool {
		fg := foundGroup{matcher: g.Get("matcher")}
		g.Get("hooks").ForEach(func(_, h gjson.Result) bool {
			cmd := h.Get("command")
			fh := foundHandler{command: cmd.String()}
			if h.Get("type").String() == "command" && cmd.Type == gjson.String {
				_, _, fh.st = parseCommand(cmd.String(), sp.agent, st)
			}
			fg.handlers = append(fg.handlers, fh)
			fg.hasST = fg.hasST || fh.st
			return true
		})
		fg.stOnly = len(fg.handlers) > 0
		for _, h := range fg.handlers {
			fg.stOnly = fg.stOnly && h.st
		}
		gs = append(gs, fg)
		return true
	})
	return gs
}

// MalformedError is a hook file st will not edit: not JSON, or not of
// the shape the agent reads. The file is left as it was.
type MalformedError struct {
	Path string
	Err  error
}

func (e *MalformedError) Error() string {
	return fmt.Sprintf("%s is not a hooks file st can edit: %v; it was left as it was", e.Path, e.Err)
}

func (e *MalformedError) Unwrap() error { return e.Err }

// checkDoc refuses a document that is not a JSON object, or whose hooks
// (for the events st uses) are not of the shape the agent reads.
func checkDoc(doc string, sp spec) error {
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			// Offset counts the bytes read, the bad one included.
			line, col := lineCol(doc, max(int(se.Offset)-1, 0))
			return fmt.Errorf("invalid JSON at line %d, column %d: %v", line, col, err)
		}
		return fmt.Errorf("invalid JSON: %v", err)
	}
	if !gjson.Valid(doc) {
		return errors.New("invalid JSON")
	}
	root, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("the top level is %s, not an object", kindOf(v))
	}
	hv, ok := root["hooks"]
	if !ok {
		return nil
	}
	hooks, ok := hv.(map[string]any)
	if !ok {
		return fmt.Errorf(`"hooks" is %s, not an object`, kindOf(hv))
	}
	for _, ev := range sp.events {
		lv, ok := hooks[ev]
		if !ok {
			continue
		}
		list, ok := lv.([]any)
		if !ok {
			return fmt.Errorf(`"hooks.%s" is %s, not a list`, ev, kindOf(lv))
		}
		for i, gv := range list {
			g, ok := gv.(map[string]any)
			if !ok {
				return fmt.Errorf(`"hooks.%s[%d]" is %s, not an object`, ev, i, kindOf(gv))
			}
			hsv, ok := g["hooks"]
			if !ok {
				continue
			}
			hs, ok := hsv.([]any)
			if !ok {
				return fmt.Errorf(`"hooks.%s[%d].hooks" is %s, not a list`, ev, i, kindOf(hsv))
			}
			for j, h := range hs {
				if _, ok := h.(map[string]any); !ok {
					return fmt.Errorf(`"hooks.%s[%d].hooks[%d]" is %s, not an object`, ev, i, j, kindOf(h))
				}
			}
		}
	}
	return nil
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	default:
		return "a number"
	}
}

func lineCol(s string, off int) (line, col int) {
	if off > len(s) {
		off = len(s)
	}
	line = 1 + strings.Count(s[:off], "\n")
	col = off - strings.LastIndexByte(s[:off], '\n')
	return line, col
}

// editDoc puts st's hooks into doc (install) or takes them out. An empty
// doc is an empty object.
func editDoc(doc string, sp spec, st string, install bool) (docEdit, error) {
	orig := doc
	if strings.TrimSpace(doc) == "" {
		doc = "{\n}\n"
	}
	if err := checkDoc(doc, sp); err != nil {
		return docEdit{}, &MalformedError{Err: err}
	}
	start := doc
	var plans []eventPlan
	removed := false
	for _, ev := range sp.events {
		var p eventPlan
		var err error
		doc, p, err = editEvent(doc, sp, st, ev, install)
		if err != nil {
			return docEdit{}, fmt.Errorf("hooks.%s: %w", ev, err)
		}
		removed = removed || len(p.Removed) > 0
		plans = append(plans, p)
	}
	if removed {
		if h := gjson.Get(doc, "hooks"); h.IsObject() && len(h.Map()) == 0 {
			var err error
			if doc, err = sjson.Delete(doc, "hooks"); err != nil {
				return docEdit{}, err
			}
		}
	}
	if doc == start {
		doc = orig
	}
	if err := verifyDoc(start, doc, sp, st, install); err != nil {
		return docEdit{}, fmt.Errorf("internal error: st's edit went wrong, nothing was written: %w", err)
	}
	return docEdit{out: doc, changed: doc != orig, events: plans}, nil
}

func editEvent(doc string, sp spec, st, ev string, install bool) (string, eventPlan, error) {
	plan := eventPlan{Event: ev, Moved: map[pos]pos{}}
	base := "hooks." + ev
	groups := readGroups(doc, sp, st, ev)
	keep := -1
	if install {
		for i, g := range groups {
			if g.stOnly {
				keep = i
				break
			}
		}
	}
	gone := stGone(groups, keep)
	plan.Removed = gone.removed
	// Fix the kept group in place first: deletions move indices.
	want := wantGroup(sp, st, ev)
	var err error
	if keep >= 0 {
		if doc, err = fixKept(doc, base, keep, groups[keep], want); err != nil {
			return "", plan, err
		}
	}
	if doc, err = deleteAll(doc, base, gone.dels); err != nil {
		return "", plan, err
	}
	ng := plan.where(groups, gone, keep)
	switch {
	case install && keep < 0:
		if doc, err = appendGroup(doc, ev, want); err != nil {
			return "", plan, err
		}
		plan.At = &pos{ng, 0}
	case !install && len(gone.dels) > 0 && ng == 0:
		// st's were the only groups: the event goes, as before st.
		if doc, err = sjson.Delete(doc, base); err != nil {
			return "", plan, err
		}
	}
	return doc, plan, nil
}

// goneHooks is what of an event's groups st takes out: whole groups of
// st's only (but the kept one), and st's handlers in groups of the
// user's (but the kept one's first).
type goneHooks struct {
	dels    []pos // Handler -1: the whole group
	removed []pos // every handler that goes, for the trust entries
	groups  map[int]bool
	handles map[pos]bool
}

func stGone(groups []foundGroup, keep int) goneHooks {
	g := goneHooks{groups: map[int]bool{}, handles: map[pos]bool{}}
	for i, gr := range groups {
		if !gr.hasST {
			continue
		}
		if gr.stOnly && i != keep {
			g.dels = append(g.dels, pos{i, -1})
			g.groups[i] = true
			for j := range gr.handlers {
				g.removed = append(g.removed, pos{i, j})
			}
			continue
		}
		for j, h := range gr.handlers {
			if h.st && !(i == keep && j == 0) {
				g.dels = append(g.dels, pos{i, j})
				g.handles[pos{i, j}] = true
				g.removed = append(g.removed, pos{i, j})
			}
		}
	}
	return g
}

// fixKept makes the kept group (at index keep of base) run st's command
// with st's matcher.
func fixKept(doc, base string, keep int, g foundGroup, want hookGroup) (string, error) {
	var err error
	if g.handlers[0].command != want.Hooks[0].Command {
		if doc, err = sjson.Set(doc, fmt.Sprintf("%s.%d.hooks.0.command", base, keep), want.Hooks[0].Command); err != nil {
			return "", err
		}
	}
	if want.Matcher != "" && g.matcher.String() != want.Matcher {
		if doc, err = sjson.Set(doc, fmt.Sprintf("%s.%d.matcher", base, keep), want.Matcher); err != nil {
			return "", err
		}
	}
	return doc, nil
}

// deleteAll deletes dels from base, the last first (a deletion moves the
// indices after it).
func deleteAll(doc, base string, dels []pos) (string, error) {
	sort.Slice(dels, func(a, b int) bool {
		if dels[a].Group != dels[b].Group {
			return dels[a].Group > dels[b].Group
		}
		return dels[a].Handler > dels[b].Handler
	})
	var err error
	for _, d := range dels {
		path := fmt.Sprintf("%s.%d", base, d.Group)
		if d.Handler >= 0 {
			path += fmt.Sprintf(".hooks.%d", d.Handler)
		}
		if doc, err = sjson.Delete(doc, path); err != nil {
			return "", err
		}
	}
	return doc, nil
}

// where records in the plan where every handler that stays is now (and
// where st's kept one is), and returns how many groups are left.
func (plan *eventPlan) where(groups []foundGroup, gone goneHooks, keep int) int {
	ng := 0
	for i, g := range groups {
		if gone.groups[i] {
			continue
		}
		nh := 0
		for j := range g.handlers {
			if gone.handles[pos{i, j}] {
				continue
			}
			if i == keep && j == 0 {
				plan.At = &pos{ng, nh}
			} else if ng != i || nh != j {
				plan.Moved[pos{i, j}] = pos{ng, nh}
			}
			nh++
		}
		ng++
	}
	return ng
}

// appendGroup adds g at the end of hooks.EVENT, making the list and the
// hooks object when they are missing.
func appendGroup(doc, ev string, g hookGroup) (string, error) {
	switch {
	case !gjson.Get(doc, "hooks").Exists():
		return insertLast(doc, "", "hooks", map[string][]hookGroup{ev: {g}})
	case !gjson.Get(doc, "hooks."+ev).Exists():
		return insertLast(doc, "hooks", ev, []hookGroup{g})
	default:
		return insertLast(doc, "hooks."+ev, "", g)
	}
}

// insertLast adds v as the last member (key != "") of the object at path,
// or the last element of the array at path ("" is the top level). It
// follows the document's layout: on a line of its own, indented like the
// member before it, when the document is laid out on lines; inline
// otherwise. sjson would put it inline always.
func insertLast(doc, path, key string, v any) (string, error) {
	var c gjson.Result
	start, end := -1, -1
	if path == "" {
		c = gjson.Parse(doc)
		start = strings.IndexByte(doc, '{')
		end = strings.LastIndexByte(doc, '}') + 1
	} else {
		c = gjson.Get(doc, path)
		start, end = c.Index, c.Index+len(c.Raw)
	}
	fallback := func() (string, error) {
		raw := encodeJSON(v, "", "", false)
		if key != "" {
			return sjson.SetRaw(doc, joinPath(path, key), raw)
		}
		return sjson.SetRaw(doc, path+".-1", raw)
	}
	if start < 0 || end <= start || end > len(doc) || (doc[start] != '{' && doc[start] != '[') {
		return fallback()
	}
	lastStart, lastEnd, sane := -1, -1, true
	c.ForEach(func(k, e gjson.Result) bool {
		s := e.Index
		if key != "" {
			s = k.Index
		}
		if e.Index <= 0 || e.Index+len(e.Raw) > len(doc) || doc[e.Index:e.Index+len(e.Raw)] != e.Raw {
			sane = false
			return false
		}
		lastStart, lastEnd = s, e.Index+len(e.Raw)
		return true
	})
	if !sane {
		return fallback()
	}
	unit := indentUnit(doc)
	member := func(prefix string, pretty bool) string {
		s := encodeJSON(v, prefix, unit, pretty)
		if key != "" {
			sep := ":"
			if pretty {
				sep = ": "
			}
			s = encodeJSON(key, "", "", false) + sep + s
		}
		return s
	}
	if lastEnd >= 0 {
		if ind, own := lineIndent(doc, lastStart); own {
			return doc[:lastEnd] + ",\n" + ind + member(ind, true) + doc[lastEnd:], nil
		}
		sep := ","
		if strings.Contains(doc, ", ") {
			sep = ", "
		}
		return doc[:lastEnd] + sep + member("", false) + doc[lastEnd:], nil
	}
	if !strings.Contains(doc, "\n") {
		return doc[:start+1] + member("", false) + doc[end-1:], nil
	}
	outer, _ := lineIndent(doc, start)
	ind := outer + unit
	return doc[:start+1] + "\n" + ind + member(ind, true) + "\n" + outer + doc[end-1:], nil
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func encodeJSON(v any, prefix, unit string, pretty bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if pretty {
		enc.SetIndent(prefix, unit)
	}
	if err := enc.Encode(v); err != nil {
		panic(err) // only st's own types and strings are encoded
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// lineIndent is the white space that starts the line holding offset i,
// and whether only white space precedes i on that line.
func lineIndent(doc string, i int) (string, bool) {
	ls := strings.LastIndexByte(doc[:i], '\n') + 1
	before := doc[ls:i]
	rest := strings.TrimLeft(before, " \t")
	return before[:len(before)-len(rest)], rest == ""
}

// indentUnit is the indentation of the first indented line: the
// document's unit. Two spaces when nothing is indented.
func indentUnit(doc string) string {
	for _, line := range strings.Split(doc, "\n") {
		t := strings.TrimLeft(line, " \t")
		if t != "" && len(t) < len(line) {
			return line[:len(line)-len(t)]
		}
	}
	return "  "
}

// verifyDoc checks an edit before it is written: the result is a hooks
// file; st's hooks are there exactly once each (install) or gone
// (uninstall); everything else means the same as before.
func verifyDoc(before, after string, sp spec, st string, install bool) error {
	if strings.TrimSpace(after) == "" {
		after = "{}"
	}
	if err := checkDoc(after, sp); err != nil {
		return err
	}
	for _, ev := range sp.events {
		n := 0
		for _, g := range readGroups(after, sp, st, ev) {
			for _, h := range g.handlers {
				if h.st {
					n++
				}
			}
		}
		if install {
			gs := readGroups(after, sp, st, ev)
			want := wantGroup(sp, st, ev)
			ok := n == 1 && len(gs) > 0
			if ok {
				found := false
				for _, g := range gs {
					if g.stOnly && len(g.handlers) == 1 && g.handlers[0].command == want.Hooks[0].Command &&
						(want.Matcher == "" || g.matcher.String() == want.Matcher) {
						found = true
					}
				}
				ok = found
			}
			if !ok {
				return fmt.Errorf("hooks.%s does not hold st's hook exactly once", ev)
			}
		} else if n != 0 {
			return fmt.Errorf("hooks.%s still holds st's hook", ev)
		}
	}
	if !reflect.DeepEqual(userView(before, sp, st), userView(after, sp, st)) {
		return errors.New("the user's settings would have changed")
	}
	return nil
}

// userView is doc as a value, without st's hooks: what must not change.
func userView(doc string, sp spec, st string) any {
	var v any
	d := json.NewDecoder(strings.NewReader(doc))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return err.Error()
	}
	root, _ := v.(map[string]any)
	hooks, _ := root["hooks"].(map[string]any)
	if hooks == nil {
		return v
	}
	for _, ev := range sp.events {
		list, _ := hooks[ev].([]any)
		if list == nil {
			continue
		}
		var keep []any
		for _, gv := range list {
			g, _ := gv.(map[string]any)
			hs, _ := g["hooks"].([]any)
			var kept []any
			hadST := false
			for _, hv := range hs {
				h, _ := hv.(map[string]any)
				cmd, _ := h["command"].(string)
				if _, _, isST := parseCommand(cmd, sp.agent, st); isST && h["type"] == "command" {
					hadST = true
					continue
				}
				kept = append(kept, hv)
			}
			if hadST && len(kept) == 0 {
				continue
			}
			if hadST {
				g["hooks"] = kept
			}
			keep = append(keep, g)
		}
		if len(keep) == 0 {
			delete(hooks, ev)
		} else {
			hooks[ev] = keep
		}
	}
	if len(hooks) == 0 {
		delete(root, "hooks")
	}
	return v
}
