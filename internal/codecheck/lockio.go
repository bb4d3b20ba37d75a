package codecheck

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"sort"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/types/typeutil"
)

// LockIO: no file I/O, and no process run, while a lock is held (issue
// 36 items 1 and 7). A write's fsync under the registry's lock stalls
// every request that takes it; the project stages under the lock and
// writes with it let go (docs/group-commit.md).
//
// What counts as I/O (ioPrimitives): in os, the calls that open, read,
// write, rename, remove or make files and folders (os.WriteFile,
// os.Rename, os.MkdirAll, ...; not os.Stat or os.Lstat, which read a
// file's metadata only); the reads, writes and Sync of an *os.File;
// renameio's WriteFile and CloseAtomicallyReplace; an *exec.Cmd's Run,
// Output, CombinedOutput, Start and Wait (git and every other program
// st runs); syscall.Fsync; a tmux command (internal/tmux's Runner.Run:
// a process that waits on the tmux server). And every function that
// calls one of these, directly or through other functions, in any
// package of the module (an analysis fact: store.WriteJSON,
// worktree.Open, the git methods of internal/worktree and tmux.Client's
// commands are I/O by that). Otherwise only static calls are followed: a
// call through another interface or a function value (a book's write
// field, which a test swaps) is not; nor the body of a function literal,
// but for one called or deferred on the spot.
//
// Where the lock is held: all through a function named …Locked (its
// caller's lock, the one its syncs.AssertLocked names, until the
// function lets it go), and in any function from a Lock (or RLock) of a
// sync.Mutex or sync.RWMutex to its Unlock, or to the end with a
// deferred Unlock. Branches are followed: the lock counts as held after
// an if, a switch or a loop only when it is held on every way through
// that does not return. A function literal that is not called on the
// spot is a function of its own: run with a lock held when it is passed
// to a function that calls that parameter with one held (settleChange's
// f, keep's f: a callsUnderLock fact, through functions that hand it
// on), with none otherwise. Deferred calls are not judged.
//
// A justified exception (a write lock held through its own write, which
// is what that lock is for) says why on the call's line or the line
// above it: "// lockio: REASON". Tests are not held to it.
var LockIO = &analysis.Analyzer{
	Name:      "lockio",
	Doc:       "reports file I/O and processes run while a lock is held (in a …Locked function, or between a Lock and its Unlock)",
	Run:       runLockIO,
	FactTypes: []analysis.Fact{new(doesIO), new(callsUnderLock)},
}

// callsUnderLock marks a function that calls some of its function
// parameters (by index) with a lock held (settleChange's f, keep's f): a
// function literal passed there is read as run with that lock held.
type callsUnderLock struct{ Params []int }

func (*callsUnderLock) AFact() {}

func (f *callsUnderLock) String() string {
	return fmt.Sprintf("calls parameters %v with a lock held", f.Params)
}

// ownPackage says whether a package is st's own, whose functions get
// facts (a variable: the test's packages are its own too).
var ownPackage = func(path string) bool { return strings.HasPrefix(path+"/", module) }

// doesIO marks a function that does file I/O or runs a process, itself
// or through the functions it calls; Via names the call that does it.
type doesIO struct{ Via string }

func (*doesIO) AFact() {}

func (f *doesIO) String() string { return "does I/O: " + f.Via }

// ioPrimitives are the calls that do I/O themselves, by package path
// and name ("Type.Method" for a method).
var ioPrimitives = map[string]map[string]bool{
	"os": set("Create", "CreateTemp", "Open", "OpenFile", "ReadFile", "WriteFile", "Rename", "Remove", "RemoveAll",
		"Mkdir", "MkdirAll", "MkdirTemp", "ReadDir", "Truncate", "Symlink", "Link", "Chmod", "Chtimes",
		"File.Write", "File.WriteString", "File.WriteAt", "File.Read", "File.ReadAt", "File.ReadFrom",
		"File.Sync", "File.Truncate", "File.ReadDir", "File.Readdir", "File.Readdirnames"),
	"os/exec":                       set("Cmd.Run", "Cmd.Output", "Cmd.CombinedOutput", "Cmd.Start", "Cmd.Wait"),
	"github.com/google/renameio/v2": set("WriteFile", "PendingFile.CloseAtomicallyReplace"),
	"github.com/google/renameio":    set("WriteFile", "PendingFile.CloseAtomicallyReplace"),
	"syscall":                       set("Fsync"),
	// A tmux command: a process (the real Runner runs tmux) that waits
	// on the tmux server, which a slow or busy server makes long.
	"github.com/sophonz/st/internal/tmux": set("Runner.Run"),
}

// calleeOf is the function call calls: a static one, or the method of
// an interface (a primitive may be one: tmux.Runner.Run); nil for a
// function value.
func calleeOf(pass *analysis.Pass, call *ast.CallExpr) *types.Func {
	fn, _ := typeutil.Callee(pass.TypesInfo, call).(*types.Func)
	return fn
}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// funcName is fn's name as ioPrimitives and the messages write it:
// Name, or Type.Method.
func funcName(fn *types.Func) string {
	sig, ok := fn.Type().(*types.Signature)
	if !ok || sig.Recv() == nil {
		return fn.Name()
	}
	t := sig.Recv().Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok {
		return n.Obj().Name() + "." + fn.Name()
	}
	return fn.Name()
}

// shortName is fn as a message names it: pkg.Name or pkg.Type.Method.
func shortName(fn *types.Func) string {
	if fn.Pkg() == nil {
		return funcName(fn)
	}
	return fn.Pkg().Name() + "." + funcName(fn)
}

// ioOf says whether calling fn does I/O, and how: a primitive, or a
// function marked so (by this package's known, or by a fact of another).
func ioOf(pass *analysis.Pass, known map[*types.Func]string, fn *types.Func) (string, bool) {
	if fn == nil || fn.Pkg() == nil {
		return "", false
	}
	if names := ioPrimitives[fn.Pkg().Path()]; names[funcName(fn)] {
		return shortName(fn), true
	}
	if via, ok := known[fn]; ok {
		return shortName(fn) + " (" + via + ")", true
	}
	if fn.Pkg() != pass.Pkg {
		var f doesIO
		if pass.ImportObjectFact(fn.Origin(), &f) {
			return shortName(fn) + " (" + f.Via + ")", true
		}
	}
	return "", false
}

// primitiveOf is the I/O primitive that calling fn reaches, or "".
func primitiveOf(pass *analysis.Pass, known map[*types.Func]string, fn *types.Func) string {
	if fn == nil || fn.Pkg() == nil {
		return ""
	}
	if names := ioPrimitives[fn.Pkg().Path()]; names[funcName(fn)] {
		return shortName(fn)
	}
	if via, ok := known[fn]; ok {
		return via
	}
	var f doesIO
	if fn.Pkg() != pass.Pkg && pass.ImportObjectFact(fn.Origin(), &f) {
		return f.Via
	}
	return ""
}

func runLockIO(pass *analysis.Pass) (any, error) {
	var decls []*ast.FuncDecl
	var files []*ast.File
	for _, f := range pass.Files {
		if strings.HasSuffix(pass.Fset.Position(f.Pos()).Filename, "_test.go") {
			continue
		}
		files = append(files, f)
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				decls = append(decls, fd)
			}
		}
	}
	known := markIO(pass, decls)
	underLock := markUnderLock(pass, files, known)
	for _, f := range files {
		allow := allowComments(pass, f)
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			c := &ioChecker{pass: pass, known: known, allow: allow, underLock: underLock}
			c.function(fd.Body, c.lockedHeld(fd))
			c.literals(fd.Body)
		}
	}
	return nil, nil
}

// literals reads the function literals in body as functions of their
// own: with a lock held when they are passed where a function calls them
// with one (callsUnderLock), with none otherwise.
func (c *ioChecker) literals(body ast.Node) {
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		fn := typeutil.StaticCallee(c.pass.TypesInfo, call)
		for _, i := range c.lockedParams(fn) {
			if i < len(call.Args) {
				if lit, ok := call.Args[i].(*ast.FuncLit); ok && !c.onTheSpot[lit] {
					c.onTheSpot[lit] = true
					c.function(lit.Body, held{"the lock " + shortName(fn) + " holds as it calls it": false})
				}
			}
		}
		return true
	})
	ast.Inspect(body, func(n ast.Node) bool {
		if lit, ok := n.(*ast.FuncLit); ok && !c.onTheSpot[lit] {
			c.onTheSpot[lit] = true
			c.function(lit.Body, held{})
		}
		return true
	})
}

// lockedParams are the parameters fn calls with a lock held.
func (c *ioChecker) lockedParams(fn *types.Func) []int {
	if fn == nil {
		return nil
	}
	if ps, ok := c.underLock[fn]; ok {
		return ps
	}
	var f callsUnderLock
	if fn.Pkg() != nil && fn.Pkg() != c.pass.Pkg && c.pass.ImportObjectFact(fn.Origin(), &f) {
		return f.Params
	}
	return nil
}

// markUnderLock finds the functions of this package that call one of
// their function parameters with a lock held, themselves or by handing
// it to another that does (settleChange hands f to settle), to a fixed
// point, and exports a fact for each exported one.
func markUnderLock(pass *analysis.Pass, files []*ast.File, known map[*types.Func]string) map[*types.Func][]int {
	out := map[*types.Func][]int{}
	if !ownPackage(pass.Pkg.Path()) {
		return out // (sync.Once.Do holds its lock through f, and is no concern here)
	}
	for changed := true; changed; {
		changed = false
		for _, f := range files {
			allow := allowComments(pass, f)
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				fn, _ := pass.TypesInfo.Defs[fd.Name].(*types.Func)
				if fn == nil {
					continue
				}
				c := &ioChecker{pass: pass, known: known, allow: allow, underLock: out, quiet: true, params: paramIndex(pass, fd)}
				c.function(fd.Body, c.lockedHeld(fd))
				c.forwarded(fd.Body)
				if ps := c.calledHeldList(); len(ps) > len(out[fn]) {
					out[fn], changed = ps, true
				}
			}
		}
	}
	for fn, ps := range out {
		if fn.Exported() {
			pass.ExportObjectFact(fn, &callsUnderLock{Params: ps})
		}
	}
	return out
}

// paramIndex are fd's parameters of function type, by their index.
func paramIndex(pass *analysis.Pass, fd *ast.FuncDecl) map[types.Object]int {
	out := map[types.Object]int{}
	i := 0
	for _, fl := range fd.Type.Params.List {
		names := fl.Names
		if len(names) == 0 {
			i++
			continue
		}
		for _, n := range names {
			if obj := pass.TypesInfo.Defs[n]; obj != nil {
				if _, ok := obj.Type().Underlying().(*types.Signature); ok {
					out[obj] = i
				}
			}
			i++
		}
	}
	return out
}

// forwarded records the parameters handed on to a function that calls
// them with a lock held.
func (c *ioChecker) forwarded(body ast.Node) {
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		for _, i := range c.lockedParams(typeutil.StaticCallee(c.pass.TypesInfo, call)) {
			if i < len(call.Args) {
				c.noteParamCall(call.Args[i])
			}
		}
		return true
	})
}

// noteParamCall records e when it is one of the function's parameters.
func (c *ioChecker) noteParamCall(e ast.Expr) {
	id, ok := e.(*ast.Ident)
	if !ok {
		return
	}
	if i, ok := c.params[c.pass.TypesInfo.Uses[id]]; ok {
		if c.calledHeld == nil {
			c.calledHeld = map[int]bool{}
		}
		c.calledHeld[i] = true
	}
}

func (c *ioChecker) calledHeldList() []int {
	var out []int
	for i := range c.calledHeld {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

// markIO finds the functions of this package that do I/O, through each
// other too (to a fixed point), and exports a fact for each.
//
// Only st's own packages are marked: in the standard library and other
// modules only the primitives count (crypto/rand reads /dev/urandom
// where getrandom is missing, which would make every new id I/O).
func markIO(pass *analysis.Pass, decls []*ast.FuncDecl) map[*types.Func]string {
	known := map[*types.Func]string{}
	if !ownPackage(pass.Pkg.Path()) {
		return known
	}
	for changed := true; changed; {
		changed = false
		for _, fd := range decls {
			fn, _ := pass.TypesInfo.Defs[fd.Name].(*types.Func)
			if fn == nil || known[fn] != "" {
				continue
			}
			callsIn(fd.Body, func(call *ast.CallExpr) {
				if known[fn] != "" {
					return
				}
				if via := primitiveOf(pass, known, calleeOf(pass, call)); via != "" {
					known[fn], changed = via, true
				}
			})
		}
	}
	fns := make([]*types.Func, 0, len(known))
	for fn := range known {
		fns = append(fns, fn)
	}
	sort.Slice(fns, func(i, j int) bool { return fns[i].Pos() < fns[j].Pos() })
	for _, fn := range fns {
		if fn.Exported() { // (only those can be called from another package)
			pass.ExportObjectFact(fn, &doesIO{Via: known[fn]})
		}
	}
	return known
}

// callsIn calls f with every call that runs as body runs: those in
// function literals called or deferred on the spot, and no others.
func callsIn(body ast.Node, f func(*ast.CallExpr)) {
	ast.Inspect(body, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.GoStmt:
			return false // runs elsewhere
		case *ast.CallExpr:
			f(x)
			if lit, ok := x.Fun.(*ast.FuncLit); ok {
				callsIn(lit.Body, f)
			}
		}
		return true
	})
}

// allowComments are the lines of f with a "lockio:" comment, and its
// reason (which may be empty: that is reported).
func allowComments(pass *analysis.Pass, f *ast.File) map[int]string {
	out := map[int]string{}
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			text := strings.TrimSpace(strings.TrimPrefix(c.Text, "//"))
			if rest, ok := strings.CutPrefix(text, "lockio:"); ok {
				out[pass.Fset.Position(c.Pos()).Line] = strings.TrimSpace(rest)
			}
		}
	}
	return out
}

// held are the locks held at a point of a function: each one's
// expression (m.reg.mu), and whether its Lock's line (or the line above)
// says why I/O may run while it is held (a lockio: comment: a write lock
// held through its write).
type held map[string]bool

func (h held) copy() held {
	c := make(held, len(h))
	for k, v := range h {
		c[k] = v
	}
	return c
}

// meet is the locks held in both a and b.
func meet(a, b held) held {
	out := held{}
	for k, v := range a {
		if _, ok := b[k]; ok {
			out[k] = v
		}
	}
	return out
}

// lockedHeld is what a …Locked function holds as it begins: the lock its
// syncs.AssertLocked names (a lockio: comment there allows I/O under
// it), or its caller's lock, unnamed.
func (c *ioChecker) lockedHeld(fd *ast.FuncDecl) held {
	if !strings.HasSuffix(fd.Name.Name, "Locked") {
		return held{}
	}
	if len(fd.Body.List) > 0 {
		if es, ok := fd.Body.List[0].(*ast.ExprStmt); ok {
			if ce, ok := es.X.(*ast.CallExpr); ok && len(ce.Args) == 1 {
				fn, _ := typeutil.Callee(c.pass.TypesInfo, ce).(*types.Func)
				if u, ok := ce.Args[0].(*ast.UnaryExpr); ok && fn != nil && fn.Name() == "AssertLocked" {
					return held{types.ExprString(u.X): c.allowed(ce)}
				}
			}
		}
	}
	return held{"its caller's lock (" + fd.Name.Name + ")": false}
}

// ioChecker reads the statements of one function in order, with the
// locks held at each, and reports the I/O calls made while any is.
type ioChecker struct {
	pass      *analysis.Pass
	known     map[*types.Func]string
	allow     map[int]string
	underLock map[*types.Func][]int // this package's callsUnderLock
	onTheSpot map[*ast.FuncLit]bool // read as part of the function around them, or already read
	// quiet: only find which of params (fd's, by object) are called with
	// a lock held (calledHeld); nothing is reported.
	quiet      bool
	params     map[types.Object]int
	calledHeld map[int]bool
}

func (c *ioChecker) function(body *ast.BlockStmt, h held) {
	if c.onTheSpot == nil {
		c.onTheSpot = map[*ast.FuncLit]bool{}
	}
	c.block(body.List, h)
}

// block reads list in order from h; it returns the locks held after it,
// and whether it always ends the way through (a return, a panic, a
// branch).
func (c *ioChecker) block(list []ast.Stmt, h held) (held, bool) {
	for _, s := range list {
		var ends bool
		h, ends = c.stmt(s, h)
		if ends {
			return h, true
		}
	}
	return h, false
}

func (c *ioChecker) stmt(s ast.Stmt, h held) (held, bool) {
	switch x := s.(type) {
	case *ast.BlockStmt:
		return c.block(x.List, h.copy())
	case *ast.LabeledStmt:
		return c.stmt(x.Stmt, h)
	case *ast.ExprStmt:
		c.exprs(h, x.X)
		if call, ok := x.X.(*ast.CallExpr); ok {
			if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "panic" {
				return h, true
			}
			return c.lockEffect(call, h), false
		}
	case *ast.DeferStmt:
		// A deferred Unlock lets go at the return: held till then.
		// Deferred calls are not judged (they run as it returns, in
		// the reverse order of their defers).
	case *ast.GoStmt:
		// Its literal is a function of its own (run elsewhere).
	case *ast.ReturnStmt:
		c.exprs(h, exprNodes(x.Results)...)
		return h, true
	case *ast.BranchStmt:
		return h, true
	case *ast.IfStmt:
		return c.ifStmt(x, h)
	case *ast.ForStmt:
		if x.Init != nil {
			h, _ = c.stmt(x.Init, h)
		}
		c.exprs(h, x.Cond)
		after, _ := c.block(x.Body.List, h.copy())
		return meet(h, after), false
	case *ast.RangeStmt:
		c.exprs(h, x.X)
		after, _ := c.block(x.Body.List, h.copy())
		return meet(h, after), false
	case *ast.SwitchStmt:
		if x.Init != nil {
			h, _ = c.stmt(x.Init, h)
		}
		c.exprs(h, x.Tag)
		return c.clauses(x.Body, h, true)
	case *ast.TypeSwitchStmt:
		if x.Init != nil {
			h, _ = c.stmt(x.Init, h)
		}
		c.stmt(x.Assign, h)
		return c.clauses(x.Body, h, true)
	case *ast.SelectStmt:
		return c.clauses(x.Body, h, false)
	default:
		c.exprs(h, s)
	}
	return h, false
}

// ifStmt reads an if: its TryLock in the condition takes the lock on the
// way it succeeds.
func (c *ioChecker) ifStmt(x *ast.IfStmt, h held) (held, bool) {
	if x.Init != nil {
		h, _ = c.stmt(x.Init, h)
	}
	c.exprs(h, x.Cond)
	then, other := h.copy(), h.copy()
	cond, negated := x.Cond, false
	if u, ok := cond.(*ast.UnaryExpr); ok && u.Op == token.NOT {
		cond, negated = u.X, true
	}
	if call, ok := cond.(*ast.CallExpr); ok {
		if key, lock, ok := lockOf(c.pass, call); ok && lock {
			if negated {
				other[key] = c.allowed(call)
			} else {
				then[key] = c.allowed(call)
			}
		}
	}
	thenAfter, thenEnds := c.block(x.Body.List, then)
	otherAfter, otherEnds := other, false
	if x.Else != nil {
		otherAfter, otherEnds = c.stmt(x.Else, other)
	}
	switch {
	case thenEnds && otherEnds:
		return thenAfter, true
	case thenEnds:
		return otherAfter, false
	case otherEnds:
		return thenAfter, false
	}
	return meet(thenAfter, otherAfter), false
}

// clauses reads the cases of a switch or a select, each from h. A
// switch with no default may run none of them; a select runs one.
func (c *ioChecker) clauses(body *ast.BlockStmt, h held, isSwitch bool) (held, bool) {
	var after held
	all, hasDefault := true, false
	for _, cl := range body.List {
		var list []ast.Stmt
		switch cc := cl.(type) {
		case *ast.CaseClause:
			c.exprs(h, exprNodes(cc.List)...)
			list, hasDefault = cc.Body, hasDefault || cc.List == nil
		case *ast.CommClause:
			if cc.Comm != nil {
				c.stmt(cc.Comm, h.copy())
			}
			list = cc.Body
		}
		a, ends := c.block(list, h.copy())
		if ends {
			continue
		}
		all = false
		if after == nil {
			after = a
		} else {
			after = meet(after, a)
		}
	}
	if isSwitch && !hasDefault {
		all = false
		if after == nil {
			after = h
		} else {
			after = meet(after, h)
		}
	}
	if all && len(body.List) > 0 {
		return h, true
	}
	if after == nil {
		after = h
	}
	return after, false
}

func exprNodes(es []ast.Expr) []ast.Node {
	out := make([]ast.Node, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// lockEffect is h after call, when call takes or lets go a lock.
func (c *ioChecker) lockEffect(call *ast.CallExpr, h held) held {
	key, lock, ok := lockOf(c.pass, call)
	if !ok {
		return h
	}
	h = h.copy()
	if lock {
		h[key] = c.allowed(call)
		return h
	}
	if _, mine := h[key]; mine {
		delete(h, key)
		return h
	}
	// A lock taken by the caller, let go here (a …Locked function's
	// wait): its caller's lock is let go.
	for k := range h {
		if strings.HasPrefix(k, "its caller's lock") {
			delete(h, k)
		}
	}
	return h
}

// lockOf reads call as a Lock or RLock (lock) or an Unlock or RUnlock
// of a sync.Mutex or sync.RWMutex, keyed by its expression. TryLock is a
// lock only in an if's condition (ifStmt).
func lockOf(pass *analysis.Pass, call *ast.CallExpr) (key string, lock, ok bool) {
	ev, ok := lockCall(pass, call)
	if !ok {
		return "", false, false
	}
	return strings.TrimSuffix(ev.key, "(r)"), ev.lock, true
}

// exprs reports the I/O calls in es made with h held.
func (c *ioChecker) exprs(h held, es ...ast.Node) {
	if len(h) == 0 {
		return
	}
	for _, e := range es {
		if e == nil {
			continue
		}
		callsIn(e, func(call *ast.CallExpr) {
			if lit, ok := call.Fun.(*ast.FuncLit); ok {
				c.onTheSpot[lit] = true
			}
			if c.quiet {
				if !allAllowed(h) {
					c.noteParamCall(call.Fun)
				}
				return
			}
			via, ok := ioOf(c.pass, c.known, calleeOf(c.pass, call))
			if !ok {
				return
			}
			c.report(call, via, h)
		})
	}
}

// allAllowed says whether every lock of h allows I/O (a lockio:
// comment where it was taken).
func allAllowed(h held) bool {
	for _, ok := range h {
		if !ok {
			return false
		}
	}
	return true
}

// allowed says whether node's line, or the line above it, has a
// lockio: comment with its reason (one with none is reported).
func (c *ioChecker) allowed(node ast.Node) bool {
	line := c.pass.Fset.Position(node.Pos()).Line
	for _, l := range []int{line, line - 1} {
		if reason, ok := c.allow[l]; ok {
			if reason == "" && !c.quiet {
				c.pass.Reportf(node.Pos(), "a lockio: comment needs its reason: say why I/O may run here with the lock held")
			}
			return true
		}
	}
	return false
}

func (c *ioChecker) report(call *ast.CallExpr, via string, h held) {
	var locks []string
	for k, ok := range h {
		if !ok {
			locks = append(locks, k)
		}
	}
	if len(locks) == 0 || c.allowed(call) {
		return
	}
	sort.Strings(locks)
	c.pass.Reportf(call.Pos(), "%s does I/O with %s held: stage under the lock and do the I/O once it is let go, or say why: // lockio: REASON (on this line, or on the lock's)",
		via, strings.Join(locks, " and "))
}
