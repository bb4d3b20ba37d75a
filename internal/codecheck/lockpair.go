package codecheck

import (
	"go/ast"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// LockPair: a lock is let go in the function that took it (or, deferred,
// when it returns), and a function that takes a lock lets it go: a lock
// taken in one function and let go in another (the settleUnlock of before
// issue 26) is a hand-off no reader can follow. A function may let go a
// lock its caller holds if it takes it again before it returns (unlock,
// wait, relock: a group commit waits for its write so): what it was given
// held, it hands back held.
//
// It reads each function in source order, per lock (the expression of a
// sync.Mutex or sync.RWMutex, such as m.mu): an Unlock with no Lock before
// it and none after it, or a Lock with no Unlock (or deferred Unlock)
// after it and no Unlock before it, is reported. A function literal is a
// function of its own, but one deferred at once (defer func() { ... }())
// is read as part of the function that defers it. Tests are not held to
// it.
var LockPair = &analysis.Analyzer{
	Name: "lockpair",
	Doc:  "reports locks taken in one function and let go in another",
	Run:  runLockPair,
}

// lockEvent is one Lock or Unlock call, in source order.
type lockEvent struct {
	node ast.Node
	key  string // m.mu, or m.mu(r) for the read lock
	lock bool
}

func runLockPair(pass *analysis.Pass) (any, error) {
	for _, f := range pass.Files {
		if strings.HasSuffix(pass.Fset.Position(f.Pos()).Filename, "_test.go") {
			continue
		}
		deferred := map[*ast.FuncLit]bool{} // read as part of the function that defers them
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.FuncDecl:
				if x.Body != nil {
					checkPairs(pass, x.Body)
				}
			case *ast.DeferStmt:
				if lit, ok := x.Call.Fun.(*ast.FuncLit); ok {
					deferred[lit] = true
				}
			case *ast.FuncLit:
				if !deferred[x] {
					checkPairs(pass, x.Body)
				}
			}
			return true
		})
	}
	return nil, nil
}

// checkPairs reports the unpaired locks of one function's body.
func checkPairs(pass *analysis.Pass, body *ast.BlockStmt) {
	var events []lockEvent
	var walk func(n ast.Node) bool
	walk = func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.FuncLit:
			return false // a function of its own
		case *ast.DeferStmt:
			if lit, ok := x.Call.Fun.(*ast.FuncLit); ok {
				ast.Inspect(lit.Body, walk) // runs as this function returns
				return false
			}
		case *ast.CallExpr:
			if ev, ok := lockCall(pass, x); ok {
				events = append(events, ev)
			}
		}
		return true
	}
	ast.Inspect(body, walk)
	for i, ev := range events {
		before, after := false, false
		for j, o := range events {
			if o.key != ev.key || o.lock == ev.lock {
				continue
			}
			if j < i {
				before = true
			} else {
				after = true
			}
		}
		switch {
		case ev.lock && !after && !before:
			pass.Reportf(ev.node.Pos(), "%s is taken here and let go in another function: let it go here (defer), or name the function …Locked and take the lock in its caller", strings.TrimSuffix(ev.key, "(r)"))
		case !ev.lock && !before && !after:
			pass.Reportf(ev.node.Pos(), "%s is let go here, but was taken in another function: let it go where it is taken, or take it again before returning", strings.TrimSuffix(ev.key, "(r)"))
		}
	}
}

// lockCall reads call as a Lock, RLock, Unlock or RUnlock (or a TryLock:
// a lock taken when it succeeds) of a
// sync.Mutex or sync.RWMutex.
func lockCall(pass *analysis.Pass, call *ast.CallExpr) (lockEvent, bool) {
	se, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return lockEvent{}, false
	}
	sel := pass.TypesInfo.Selections[se]
	if sel == nil {
		return lockEvent{}, false
	}
	fn, ok := sel.Obj().(*types.Func)
	if !ok || fn.Pkg() == nil || fn.Pkg().Path() != "sync" {
		return lockEvent{}, false
	}
	key := types.ExprString(se.X)
	switch fn.Name() {
	case "Lock", "TryLock":
		return lockEvent{call, key, true}, true
	case "Unlock":
		return lockEvent{call, key, false}, true
	case "RLock", "TryRLock":
		return lockEvent{call, key + "(r)", true}, true
	case "RUnlock":
		return lockEvent{call, key + "(r)", false}, true
	}
	return lockEvent{}, false
}
