package shell

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// variable is what st knows of a shell variable. Values are kept with
// sentinels for their holes (see value.go), so that mvdan's expansion can
// carry them.
type variable struct {
	set      Tri
	exported Tri
	val      string
	list     []string // an indexed array
	isList   bool
	assigned bool // set by the text being read, not inherited
	lower    bool // declare -l
	upper    bool // declare -u
}

func (v variable) same(w variable) bool {
	return v.set == w.set && v.exported == w.exported && v.val == w.val && v.isList == w.isList &&
		slices.Equal(v.list, w.list) && v.lower == w.lower && v.upper == w.upper
}

// funcDef is a shell function, with the text it was parsed from.
type funcDef struct {
	name string
	body *syntax.Stmt
	src  string
}

// state is the shell's state at a point of the text: what bash would
// carry from one command to the next. A state handed to a command (or a
// branch) is shared; own copies it before a change.
type state struct {
	vars      map[string]variable
	pos       []string // $1... encoded; valid when posKnown
	posKnown  bool
	dir       string // the current folder, encoded
	funcs     map[string][]*funcDef
	aliases   map[string][]string
	hashed    map[string]string
	allexport bool
	// clobbered: a file st cannot read was sourced, or text it cannot
	// read was run in this shell: every variable may have changed.
	clobbered bool
	// cleared: the shell started with an empty environment (env -i):
	// variables never set are unset, not unknown.
	cleared bool
	shared  bool
}

func (r *reader) initial() *state {
	st := &state{vars: map[string]variable{}, dir: r.encode(Lit(r.env.Cwd))}
	if r.env.Cwd == "" {
		st.dir = r.sent(&Hole{Kind: FromVar, Var: "PWD", Src: "$PWD"})
	}
	return st
}

// own returns a state that may be changed: st itself, or a copy when st
// is shared.
func (st *state) own() *state {
	if !st.shared {
		return st
	}
	return st.clone()
}

func (st *state) clone() *state {
	c := *st
	c.shared = false
	c.vars = make(map[string]variable, len(st.vars))
	for k, v := range st.vars {
		c.vars[k] = v
	}
	c.pos = slices.Clone(st.pos)
	c.funcs = cloneMap(st.funcs)
	c.aliases = cloneMap(st.aliases)
	c.hashed = cloneMap(st.hashed)
	return &c
}

func cloneMap[V any](m map[string]V) map[string]V {
	if m == nil {
		return nil
	}
	c := make(map[string]V, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// get is a variable, or what the environment may hold for it.
func (st *state) get(r *reader, name string) variable {
	if v, ok := st.vars[name]; ok {
		return v
	}
	switch name {
	case "IFS":
		// bash sets IFS itself; it does not take it from the environment.
		return variable{set: Yes, val: " \t\n"}
	case "PWD":
		return variable{set: Yes, exported: Yes, val: st.dir}
	}
	if st.cleared {
		return variable{set: No, exported: No}
	}
	if !st.clobbered {
		if v, ok := r.env.Vars[name]; ok {
			return variable{set: Yes, exported: Yes, val: v}
		}
		if slices.Contains(r.env.Unset, name) {
			return variable{set: No, exported: No}
		}
	}
	return variable{set: Maybe, exported: Maybe, val: r.sent(r.varHole(name))}
}

// varHole is the one hole of an inherited variable.
func (r *reader) varHole(name string) *Hole {
	if h, ok := r.varHoles[name]; ok {
		return h
	}
	h := &Hole{Kind: FromVar, Var: name, Src: "$" + name}
	r.varHoles[name] = h
	return h
}

// setVar sets a variable; st must be owned.
func (st *state) setVar(r *reader, name string, v variable) {
	old := st.get(r, name)
	if v.exported == No && v.set != No && old.exported != No {
		// An inherited variable stays exported when it is set again.
		v.exported = old.exported
	}
	if st.allexport && v.set != No {
		v.exported = Yes
	}
	st.vars[name] = v
}

// assign sets a variable to a value by an assignment of the text.
func (st *state) assign(r *reader, name, val string) {
	old := st.get(r, name)
	switch {
	case old.lower:
		val = strings.ToLower(val)
	case old.upper:
		val = strings.ToUpper(val)
	}
	st.setVar(r, name, variable{set: Yes, exported: old.exported, val: val, assigned: true, lower: old.lower, upper: old.upper})
}

// lost marks a variable as set to something st cannot know.
func (st *state) lost(r *reader, name string, from []*Cmd) {
	old := st.get(r, name)
	h := &Hole{Kind: FromVar, Var: name, Src: "$" + name, From: from}
	if len(from) > 0 {
		h.Kind = FromOutput
	}
	st.setVar(r, name, variable{set: Yes, exported: old.exported, val: r.sent(h), assigned: true})
}

// merge is the state after one of two paths ran: what both agree on, and
// holes for the rest.
func (r *reader) merge(a, b *state) *state {
	if a == b {
		return a
	}
	m := a.clone()
	names := map[string]bool{}
	for k := range a.vars {
		names[k] = true
	}
	for k := range b.vars {
		names[k] = true
	}
	for k := range names {
		va, vb := a.get(r, k), b.get(r, k)
		if va.same(vb) {
			m.vars[k] = va
			continue
		}
		var from []*Cmd
		for _, h := range append(r.decodeLoose(va.val+listText(va)), r.decodeLoose(vb.val+listText(vb))...) {
			from = append(from, h.From...)
		}
		h := &Hole{Kind: FromVar, Var: k, Src: "$" + k, From: from}
		if len(from) > 0 {
			h.Kind = FromOutput
		}
		m.vars[k] = variable{set: va.set.or(vb.set), exported: va.exported.or(vb.exported), val: r.sent(h), assigned: va.assigned || vb.assigned}
		r.charge(16)
	}
	if !(a.posKnown && b.posKnown && slices.Equal(a.pos, b.pos)) {
		m.posKnown, m.pos = false, nil
	}
	if a.dir != b.dir {
		m.dir = r.sent(&Hole{Kind: FromVar, Var: "PWD", Src: "$PWD"})
	}
	for k, fs := range b.funcs {
		if m.funcs == nil {
			m.funcs = map[string][]*funcDef{}
		}
		for _, f := range fs {
			if !slices.Contains(m.funcs[k], f) {
				m.funcs[k] = append(m.funcs[k], f)
			}
		}
	}
	for k, as := range b.aliases {
		if m.aliases == nil {
			m.aliases = map[string][]string{}
		}
		for _, v := range as {
			if !slices.Contains(m.aliases[k], v) {
				m.aliases[k] = append(m.aliases[k], v)
			}
		}
	}
	for k, v := range b.hashed {
		if m.hashed == nil {
			m.hashed = map[string]string{}
		}
		if old, ok := m.hashed[k]; ok && old != v {
			v = r.sent(&Hole{Kind: FromPattern, Src: "hash -p"})
		}
		m.hashed[k] = v
	}
	m.allexport = a.allexport || b.allexport
	m.clobbered = a.clobbered || b.clobbered
	return m
}

func listText(v variable) string {
	s := ""
	for _, e := range v.list {
		s += e
	}
	return s
}

// clobber: text st cannot read ran in this shell. Every variable, the
// folder and the positional parameters may have changed.
func (r *reader) clobber(st *state) *state {
	st = st.own()
	for k, v := range st.vars {
		if v.set == No {
			v.set = Maybe
		}
		v.val = r.sent(&Hole{Kind: FromVar, Var: k, Src: "$" + k})
		v.list = nil
		v.isList = false
		st.vars[k] = v
	}
	st.clobbered = true
	st.posKnown, st.pos = false, nil
	st.dir = r.sent(&Hole{Kind: FromVar, Var: "PWD", Src: "$PWD"})
	return st
}

// envView is the environment a program sees: the shell's exported
// variables, with changes of its own (prefix assignments, env, sudo).
type envView struct {
	r     *reader
	st    *state
	over  map[string]variable
	clear bool // env -i: only over is set
	reset bool // sudo: every variable may be dropped
}

func (r *reader) view(st *state) *envView {
	st.shared = true
	return &envView{r: r, st: st}
}

// with is a copy of the view with changes.
func (e *envView) with() *envView {
	c := *e
	c.over = cloneMap(e.over)
	if c.over == nil {
		c.over = map[string]variable{}
	}
	return &c
}

func (e *envView) variable(name string) variable {
	if v, ok := e.over[name]; ok {
		return v
	}
	if e.clear {
		return variable{set: No}
	}
	v := e.st.get(e.r, name)
	switch v.exported {
	case No:
		return variable{set: No}
	case Maybe:
		if v.set == Yes {
			v.set = Maybe
		}
	}
	if e.reset && v.set != No {
		v.set = Maybe
	}
	return v
}

func (e *envView) get(name string) (Arg, Tri) {
	v := e.variable(name)
	if v.set == No {
		return Arg{}, No
	}
	return e.r.decode(v.val), v.set
}

// child is the state of a new shell started with this environment.
func (st *state) child(e *envView) *state {
	c := &state{vars: map[string]variable{}, dir: st.dir, clobbered: st.clobbered, cleared: e.clear}
	names := map[string]bool{}
	for k := range st.vars {
		names[k] = true
	}
	for k := range e.over {
		names[k] = true
	}
	for k := range names {
		v := e.variable(k)
		if v.set != No {
			v.exported = v.set
		} else {
			v.exported = No
		}
		v.assigned = true
		c.vars[k] = v
	}
	if e.reset {
		// Every inherited variable may be gone.
		c.clobbered = true
	}
	return c
}

// environ is the state as mvdan's expand.Environ, for expanding words.
type environ struct {
	r  *reader
	st *state
}

func (e environ) Get(name string) expand.Variable {
	switch name {
	case "@", "*":
		if !e.st.posKnown {
			return expand.Variable{}
		}
		return expand.Variable{Set: true, Kind: expand.Indexed, List: e.st.pos}
	case "#":
		if !e.st.posKnown {
			return expand.Variable{}
		}
		return expand.Variable{Set: true, Kind: expand.String, Str: itoa(len(e.st.pos))}
	}
	if isDigits(name) {
		n := atoi(name)
		if e.st.posKnown && n >= 1 {
			if n <= len(e.st.pos) {
				return expand.Variable{Set: true, Kind: expand.String, Str: e.st.pos[n-1]}
			}
			return expand.Variable{}
		}
	}
	v := e.st.get(e.r, name)
	if v.set == No {
		return expand.Variable{}
	}
	if v.isList {
		return expand.Variable{Set: true, Kind: expand.Indexed, List: v.list, Exported: v.exported == Yes}
	}
	return expand.Variable{Set: true, Kind: expand.String, Str: v.val, Exported: v.exported == Yes}
}

func (e environ) Each(fn func(string, expand.Variable) bool) {
	for k := range e.st.vars {
		if !fn(k, e.Get(k)) {
			return
		}
	}
}
