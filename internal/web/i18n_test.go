package web

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/tdewolff/parse/v2"
	"github.com/tdewolff/parse/v2/js"
)

// The web UI's texts come from one catalogue (assets/i18n.js, English and
// Korean). These tests hold the drawing code to it: TestNoTextInDrawingCode
// reads the JavaScript with a real parser and fails on a text a person
// would read spelled in it; TestTextCheckFindsText shows the check finds
// each way text was spelled in the code before the catalogue;
// TestCatalogue checks that both languages have every key the page uses,
// with the same placeholders; TestPageHasNoText does the same for
// index.html.

// textIssue is a literal of the drawing code that holds text.
type textIssue struct {
	Line int
	Text string
	Why  string
}

func (i textIssue) String() string { return fmt.Sprintf("line %d: %q: %s", i.Line, i.Text, i.Why) }

// Where a text goes on the page: the properties of el() attributes, and
// the calls and assignments that put text in front of a person.
var (
	textProps   = []string{"text", "title", "aria-label", "placeholder", "alt", "label", "body"}
	textAssigns = []string{"textContent", "innerText", "title", "placeholder", "innerHTML", "outerHTML"}
	textMethods = []string{"append", "prepend", "replaceChildren", "before", "after", "replaceWith", "createTextNode", "alert", "confirm", "prompt", "insertAdjacentText", "insertAdjacentHTML"}
)

// codeLiterals are strings of the drawing code that look like words but
// are names the browser knows, never shown: each with why.
var codeLiterals = map[string]string{
	"Content-Type": "an HTTP header",
	"Notification": "the browser's Notification API, tested with 'in'",
	"Escape":       "KeyboardEvent.key",
	"Bearer {}":    "the Authorization header's scheme (HTTP)",
	`ui-monospace, "JetBrains Mono", "DejaVu Sans Mono", Menlo, Consolas, monospace`: "the terminal's font list",
}

var (
	capitalWord = regexp.MustCompile(`\b[A-Z][a-z]+\b`)
	textFunc    = regexp.MustCompile(`(Label|Text|Title|Name|Tag|Mark)$`)
	sentenceEnd = regexp.MustCompile(`[A-Za-z]{2,}[.!?…]( |$)|[a-z]{2,}: [a-z]{2,}`)
)

// prose says why s reads as text for a person, or "": a letter of a
// script other than Latin, a capitalised word, or a sentence's end.
func prose(s string) string {
	if _, ok := codeLiterals[s]; ok {
		return ""
	}
	for _, r := range s {
		if r > unicode.MaxASCII && unicode.IsLetter(r) {
			return "it has letters of a language (text belongs in i18n.js)"
		}
	}
	if w := capitalWord.FindString(s); w != "" {
		return fmt.Sprintf("it has the word %q (text belongs in i18n.js; a name the browser knows goes in codeLiterals)", w)
	}
	if sentenceEnd.MatchString(s) {
		return "it reads as a sentence (text belongs in i18n.js)"
	}
	return ""
}

func hasLetter(s string) bool {
	return strings.IndexFunc(s, unicode.IsLetter) >= 0
}

// frame is a node on the walk's path, and how many of its children were
// entered so far (which one the walk is in).
type frame struct {
	node js.INode
	kids int
}

// textWalker finds text in JavaScript: every string literal and the fixed
// parts of every template, checked where it goes (a text of the page may
// hold no letter at all) and for what it says (prose anywhere).
type textWalker struct {
	src    string
	path   []frame
	issues []textIssue
	keys   []string // t()'s keys; a key ending in "." is a prefix (t(`state.${s}`))
}

func (w *textWalker) Enter(n js.INode) js.IVisitor {
	if len(w.path) > 0 {
		w.path[len(w.path)-1].kids++
	}
	switch n := n.(type) {
	case *js.LiteralExpr:
		if n.TokenType == js.StringToken {
			w.literal(n, jsString(n.Data), string(n.Data))
		}
	case *js.TemplateExpr:
		if n.Tag == nil {
			var parts []string
			for _, p := range n.List {
				parts = append(parts, trimTemplate(p.Value))
			}
			parts = append(parts, trimTemplate(n.Tail))
			w.literal(n, strings.Join(parts, "{}"), "`"+strings.Join(parts, "${}")+"`")
		}
	}
	w.path = append(w.path, frame{node: n})
	return w
}

func (w *textWalker) Exit(js.INode) { w.path = w.path[:len(w.path)-1] }

// trimTemplate is the value of a fixed part of a template (`a${, }b${, }c`).
func trimTemplate(b []byte) string {
	s := strings.TrimPrefix(string(b), "`")
	s = strings.TrimPrefix(s, "}")
	s = strings.TrimSuffix(s, "${")
	return unescape(strings.TrimSuffix(s, "`"))
}

// jsString is a JavaScript string literal's value.
func jsString(b []byte) string {
	s := string(b)
	if len(s) < 2 {
		return s
	}
	return unescape(s[1 : len(s)-1])
}

// unescape reads the escapes of a JavaScript string's inside (\n, \', \u00a0).
func unescape(inner string) string {
	q := strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(inner, `\'`, `'`), "\\`", "`"), `"`, `\"`)
	q = strings.ReplaceAll(q, `\\"`, `\"`) // an escaped quote stays one
	if v, err := strconv.Unquote(`"` + q + `"`); err == nil {
		return v
	}
	return inner
}

// literal checks one literal, whose parent is the top of the path.
func (w *textWalker) literal(n js.INode, val, raw string) {
	find := raw
	if strings.HasPrefix(raw, "`") {
		// A template: find its longest fixed part.
		find = ""
		for _, p := range strings.Split(strings.Trim(raw, "`"), "${}") {
			if len(p) > len(find) {
				find = p
			}
		}
	}
	line := strings.Count(w.src[:max(0, strings.Index(w.src, find))], "\n") + 1
	where, sink := w.context(n)
	switch {
	case where == "key":
		w.keys = append(w.keys, strings.SplitN(val, "{}", 2)[0])
		return
	case where == "name":
		return // a property's name, an import's path
	case sink != "" && hasLetter(val):
		w.issues = append(w.issues, textIssue{line, val, "text of the page spelled in the code (" + sink + "): use t() and i18n.js"})
		return
	}
	if why := prose(val); why != "" {
		w.issues = append(w.issues, textIssue{line, val, why})
	}
}

// context says where the literal on top of the path goes: "key" for
// t()'s first argument, "name" for a property's name or an import, and
// for a text of the page, sink names how it gets there.
func (w *textWalker) context(lit js.INode) (where, sink string) {
	child := lit
	for i := len(w.path) - 1; i >= 0; i-- {
		f := w.path[i]
		switch p := f.node.(type) {
		case *js.PropertyName, *js.ImportStmt, *js.ExportStmt:
			return "name", ""
		case *js.GroupExpr, *js.TemplatePart, *js.TemplateExpr, *js.ArrayExpr, *js.Element, *js.Arg, *js.Args:
			// See through: the literal goes where its whole goes.
		case *js.CondExpr:
			if f.kids == 1 {
				return "", "" // the condition
			}
		case *js.BinaryExpr:
			switch p.Op {
			case js.AddToken, js.OrToken, js.NullishToken, js.AndToken:
			case js.EqToken:
				if f.kids == 2 {
					if d, ok := p.X.(*js.DotExpr); ok && slices.Contains(textAssigns, exprName(d.Y)) {
						return "", "assigned to ." + exprName(d.Y)
					}
				}
				return "", ""
			default:
				return "", "" // compared, never shown
			}
		case *js.Property:
			if p.Name != nil && slices.Contains(textProps, propName(p.Name)) {
				return "", propName(p.Name) + ":"
			}
			return "", ""
		case *js.CallExpr:
			return callContext(p, argIndex(&p.Args, child, w.path[i+1:]))
		case *js.NewExpr:
			if exprName(p.X) == "Notification" {
				return "", "new Notification"
			}
			return "", ""
		case *js.ReturnStmt:
			// A function named for the text it makes (roleLabel,
			// countText, termTitle) returns text of the page.
			if name := w.funcName(i); textFunc.MatchString(name) {
				return "", "returned by " + name + "()"
			}
			return "", ""
		default:
			return "", ""
		}
		child = f.node
	}
	return "", ""
}

// funcName is the name of the function declaration the frame at i is in.
func (w *textWalker) funcName(i int) string {
	for ; i >= 0; i-- {
		switch f := w.path[i].node.(type) {
		case *js.FuncDecl:
			if f.Name != nil {
				return string(f.Name.Data)
			}
			return ""
		case *js.ArrowFunc, *js.MethodDecl:
			return ""
		}
	}
	return ""
}

// argIndex is which argument of args the walk is in.
func argIndex(args *js.Args, _ js.INode, below []frame) int {
	for _, f := range below {
		for i := range args.List {
			if f.node == js.INode(&args.List[i]) {
				return i
			}
		}
	}
	return -1
}

func callContext(c *js.CallExpr, arg int) (where, sink string) {
	name := exprName(c.X)
	switch {
	case arg < 0:
		return "", "" // the callee itself
	case name == "t" && arg == 0:
		return "key", ""
	case name == "el" && arg >= 2:
		return "", "a child of el()"
	case name == "toast" && arg == 0:
		return "", "toast()"
	case name == "setConn" && arg == 1:
		return "", "setConn()"
	case slices.Contains(textMethods, name):
		return "", name + "()"
	}
	return "", ""
}

// exprName is the name a callee or member ends in: el, append, textContent.
func exprName(e js.IExpr) string {
	switch e := e.(type) {
	case *js.Var:
		return string(e.Data)
	case *js.DotExpr:
		return exprName(e.Y)
	case *js.LiteralExpr:
		return string(e.Data)
	case js.LiteralExpr: // a member's name
		return string(e.Data)
	}
	return ""
}

func propName(n *js.PropertyName) string {
	if n.IsComputed() {
		return ""
	}
	if n.Literal.TokenType == js.StringToken {
		return jsString(n.Literal.Data)
	}
	return string(n.Literal.Data)
}

// checkText returns the texts of drawing code src, and the keys it asks t() for.
func checkText(src string) ([]textIssue, []string, error) {
	ast, err := js.Parse(parse.NewInputString(src), js.Options{})
	if err != nil {
		return nil, nil, err
	}
	w := &textWalker{src: src}
	js.Walk(w, ast)
	sort.Slice(w.issues, func(i, j int) bool { return w.issues[i].Line < w.issues[j].Line })
	return w.issues, w.keys, nil
}

// drawingCode is every script of the page but the catalogue and the
// vendored xterm.js.
func drawingCode(t *testing.T) map[string]string {
	t.Helper()
	names, err := fs.Glob(assetsFS, "assets/*.js")
	if err != nil || len(names) == 0 {
		t.Fatalf("no scripts in assets: %v", err)
	}
	out := map[string]string{}
	for _, n := range names {
		if n == "assets/i18n.js" {
			continue
		}
		b, err := fs.ReadFile(assetsFS, n)
		if err != nil {
			t.Fatal(err)
		}
		out[n] = string(b)
	}
	return out
}

func TestNoTextInDrawingCode(t *testing.T) {
	for name, src := range drawingCode(t) {
		issues, keys, err := checkText(src)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, i := range issues {
			t.Errorf("%s %s", name, i)
		}
		if len(keys) < 50 {
			t.Errorf("%s asks t() for %d texts: the check does not see the page's texts", name, len(keys))
		}
	}
}

// TestTextCheckFindsText: each way the UI spelled text before it had a
// catalogue is found, and what is code is not.
func TestTextCheckFindsText(t *testing.T) {
	for _, src := range []string{
		`el('span.badge', { text: 'coordinator' })`,
		`el('span', { title: a.state ? 'working' : undefined })`,
		"el('span.x', { text: `team of ${n}` })",
		`el('div.fold-line', null, el('span.caret'), 'Workers · ' + n)`,
		`el('b', null, x ? 'yes' : 'no')`,
		`toast('Released ' + a.name)`,
		"toast(`st did not answer: ${e.message}`, true)",
		`setConn('down', 'reconnecting')`,
		`$('#x').textContent = ev.reason ? 'gone' : 'closed'`,
		`b.title = Notification.permission === 'granted' ? 'on' : 'off'`,
		`new Notification('asks', {body: q})`,
		`const scopes = [['session', 'This session']]`,
		`const msg = 'No agent is handing work to another.'`,
		`const x = '작업 중'`,
		`row('Kind', v)`,
		`nav.append('nothing here')`,
		"el('span', { 'aria-label': `close ${x}` })",
		`const msg = 'is offline now.'`,
		`function roleLabel(a) { if (a.lead) return 'team lead'; return a.x ? 'worker' : 'agent'; }`,
	} {
		issues, _, err := checkText(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if len(issues) == 0 {
			t.Errorf("the check finds no text in %s", src)
		}
	}
	for _, src := range []string{
		`el('span.badge', { text: t('role.coordinator') })`,
		"el('span.dot', { class: `dot st-${state}${state === 'working' ? ' pulse' : ''}`, title: state ? stateName(state) : '' })",
		`el('div.gate', { dataset: { gate: g.id } }, el('span.gate-icon', { text: '?' }), ' · ')`,
		`function f(e) { if (e.key !== 'Escape') return; }`,
		`fetch(path, { method: 'POST', headers: { 'Content-Type': 'application/json' } })`,
		"toast(t('toast.released', { name: a.name }))",
		`x.textContent = t(ok ? 'a.b' : 'a.c')`,
		`const cls = { agent: 'edge-worker', mate: 'edge-team' }[k]`,
		"t(`state.${s}`)",
	} {
		issues, _, err := checkText(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if len(issues) != 0 {
			t.Errorf("the check takes code for text in %s: %v", src, issues)
		}
	}
}

// catalogue is i18n.js's CATALOGUE: language, key, plural form ("" for a
// plain text), text.
type catalogue map[string]map[string]map[string]string

func readCatalogue(t *testing.T) catalogue {
	t.Helper()
	src, err := fs.ReadFile(assetsFS, "assets/i18n.js")
	if err != nil {
		t.Fatal(err)
	}
	ast, err := js.Parse(parse.NewInputBytes(src), js.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var obj *js.ObjectExpr
	js.Walk(findCatalogue{&obj}, ast)
	if obj == nil {
		t.Fatal("i18n.js has no CATALOGUE")
	}
	cat := catalogue{}
	for _, lp := range obj.List {
		lang := propName(lp.Name)
		texts := map[string]map[string]string{}
		lo, ok := lp.Value.(*js.ObjectExpr)
		if !ok {
			t.Fatalf("CATALOGUE.%s is not an object", lang)
		}
		for _, kp := range lo.List {
			key := propName(kp.Name)
			if _, dup := texts[key]; dup {
				t.Errorf("%s: %q twice", lang, key)
			}
			switch v := kp.Value.(type) {
			case *js.LiteralExpr:
				texts[key] = map[string]string{"": jsString(v.Data)}
			case *js.ObjectExpr:
				forms := map[string]string{}
				for _, fp := range v.List {
					lit, ok := fp.Value.(*js.LiteralExpr)
					if !ok {
						t.Fatalf("%s %s: a plural form that is not a string", lang, key)
					}
					forms[propName(fp.Name)] = jsString(lit.Data)
				}
				texts[key] = forms
			default:
				t.Fatalf("%s %s: not a string or plural forms", lang, key)
			}
		}
		cat[lang] = texts
	}
	return cat
}

type findCatalogue struct{ obj **js.ObjectExpr }

func (f findCatalogue) Enter(n js.INode) js.IVisitor {
	if d, ok := n.(*js.VarDecl); ok {
		for _, b := range d.List {
			if v, ok := b.Binding.(*js.Var); ok && string(v.Data) == "CATALOGUE" {
				*f.obj, _ = b.Default.(*js.ObjectExpr)
			}
		}
	}
	return f
}
func (findCatalogue) Exit(js.INode) {}

var placeholder = regexp.MustCompile(`\{(\w+)(?:\|([^}]+))?\}`)

// placeholders are the names a text puts in, and the Korean particles
// it asks for.
func placeholders(s string) (names []string, particles []string) {
	for _, m := range placeholder.FindAllStringSubmatch(s, -1) {
		names = append(names, m[1])
		if m[2] != "" {
			particles = append(particles, m[2])
		}
	}
	sort.Strings(names)
	return slices.Compact(names), particles
}

func TestCatalogue(t *testing.T) {
	cat := readCatalogue(t)
	if len(cat) != 2 || cat["en"] == nil || cat["ko"] == nil {
		t.Fatalf("the catalogue's languages are %v, want en and ko", slices.Collect(mapsKeys(cat)))
	}
	pluralForms := map[string][]string{"en": {"one", "other"}, "ko": {"other"}}
	for lang, texts := range cat {
		other := cat["ko"]
		if lang == "ko" {
			other = cat["en"]
		}
		for key, forms := range texts {
			if _, ok := other[key]; !ok {
				t.Errorf("%q is in %s only", key, lang)
				continue
			}
			if _, plain := forms[""]; !plain {
				got := slices.Sorted(mapsKeys(forms))
				if !slices.Equal(got, pluralForms[lang]) {
					t.Errorf("%s %q has plural forms %v, want %v", lang, key, got, pluralForms[lang])
				}
			}
			want, _ := placeholders(anyForm(other[key]))
			for form, text := range forms {
				names, particles := placeholders(text)
				if !slices.Equal(names, want) {
					t.Errorf("%s %q (%s) puts in %v, the other language %v", lang, key, form, names, want)
				}
				for _, p := range particles {
					if lang != "ko" || !slices.Contains([]string{"은", "는", "이", "가", "을", "를", "과", "와", "으로", "로"}, p) {
						t.Errorf("%s %q: particle %q", lang, key, p)
					}
				}
				if strings.TrimSpace(text) == "" {
					t.Errorf("%s %q is empty", lang, key)
				}
			}
		}
	}
	keysUsed(t, cat)
	// The spec's Korean words.
	for key, want := range map[string]string{"workers.head": "워커 · {counts}", "state.working": "작업 중", "state.done": "끝남",
		"workers.completed": "끝난 워커 {n}명", "chart.empty": "다른 에이전트에게 일을 맡긴 에이전트가 없습니다.", "state.count": "{state} {n}"} {
		if got := cat["ko"][key][""]; got != want {
			t.Errorf("ko %q = %q, want the spec's %q", key, got, want)
		}
	}
}

// keysUsed checks that every key the page asks for is in the catalogue,
// and every text of the catalogue is asked for.
func keysUsed(t *testing.T, cat catalogue) {
	t.Helper()
	used := map[string]bool{}
	for name, src := range drawingCode(t) {
		_, keys, err := checkText(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			used[k] = true
			if strings.HasSuffix(k, ".") {
				if !slices.ContainsFunc(slices.Collect(mapsKeys(cat["en"])), func(c string) bool { return strings.HasPrefix(c, k) }) {
					t.Errorf("%s asks for %s* and the catalogue has none", name, k)
				}
			} else if _, ok := cat["en"][k]; !ok {
				t.Errorf("%s asks for %q, which is not in the catalogue", name, k)
			}
		}
	}
	// The catalogue's own helpers (durations) ask for texts too.
	if src, err := fs.ReadFile(assetsFS, "assets/i18n.js"); err == nil {
		_, keys, err := checkText(string(src))
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			used[k] = true
		}
	}
	for _, k := range pageKeys(t) {
		used[k] = true
		if _, ok := cat["en"][k]; !ok {
			t.Errorf("index.html asks for %q, which is not in the catalogue", k)
		}
	}
	for k := range cat["en"] {
		if !used[k] && !slices.ContainsFunc(slices.Collect(mapsKeys(used)), func(u string) bool { return strings.HasSuffix(u, ".") && strings.HasPrefix(k, u) }) {
			t.Errorf("%q is in the catalogue, but nothing asks for it", k)
		}
	}
}

func anyForm(forms map[string]string) string {
	if s, ok := forms[""]; ok {
		return s
	}
	return forms["other"]
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// pageKeys are the catalogue keys index.html names (data-i18n,
// data-i18n-title, data-i18n-aria-label).
func pageKeys(t *testing.T) []string {
	t.Helper()
	var keys []string
	walkPage(t, func(tok xml.Token) {
		if se, ok := tok.(xml.StartElement); ok {
			for _, a := range se.Attr {
				if strings.HasPrefix(a.Name.Local, "data-i18n") {
					keys = append(keys, a.Value)
				}
			}
		}
	})
	return keys
}

func walkPage(t *testing.T, f func(xml.Token)) {
	t.Helper()
	b, err := fs.ReadFile(assetsFS, "assets/index.html")
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(bytes.Replace(b, []byte("<!doctype html>"), nil, 1)))
	d.Strict, d.AutoClose, d.Entity = false, xml.HTMLAutoClose, xml.HTMLEntity
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("index.html: %v", err)
		}
		f(tok)
	}
}

// TestPageHasNoText: index.html's words come from the catalogue too
// (data-i18n); only st's own name is spelled there.
func TestPageHasNoText(t *testing.T) {
	walkPage(t, func(tok xml.Token) {
		switch tok := tok.(type) {
		case xml.CharData:
			if s := strings.TrimSpace(string(tok)); hasLetter(s) && s != "st" {
				t.Errorf("index.html spells %q: give its element a data-i18n key", s)
			}
		case xml.StartElement:
			for _, a := range tok.Attr {
				if slices.Contains([]string{"title", "aria-label", "placeholder", "alt"}, a.Name.Local) && hasLetter(a.Value) {
					t.Errorf("index.html spells %s=%q: use data-i18n-%s", a.Name.Local, a.Value, a.Name.Local)
				}
			}
		}
	})
	if len(pageKeys(t)) < 15 {
		t.Errorf("index.html names %d catalogue keys: the check does not see its texts", len(pageKeys(t)))
	}
}
