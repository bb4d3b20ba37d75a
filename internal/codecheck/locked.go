package codecheck

import (
	"go/ast"
	"go/types"
	"strings"
	"sync"

	"regexp"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/types/typeutil"
)

// heldDoc is how a comment says a function needs a lock held.
var heldDoc = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)called with [a-z.]+( and [a-z.]+)? held`)
})

// Locked: a function that must be called with a lock held is named
// …Locked and checks the lock first, with syncs.AssertLocked (which panics
// under -race when no one holds it): the project's convention, in every
// package. A comment that says "called with x.mu held" instead of the
// name is reported too: a comment checks nothing. Tests are not held to
// it.
var Locked = &analysis.Analyzer{
	Name: "locked",
	Doc:  "reports …Locked functions that do not begin with syncs.AssertLocked, and functions whose comment says they need a lock held that are not named …Locked",
	Run:  runLockedRule,
}

func runLockedRule(pass *analysis.Pass) (any, error) {
	if pass.Pkg.Name() == "syncs" {
		return nil, nil // AssertLocked itself
	}
	for _, f := range pass.Files {
		if strings.HasSuffix(pass.Fset.Position(f.Pos()).Filename, "_test.go") {
			continue
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			locked := strings.HasSuffix(fd.Name.Name, "Locked")
			if !locked && fd.Doc != nil && heldDoc().MatchString(fd.Doc.Text()) {
				pass.Reportf(fd.Name.Pos(), "%s says in its comment that it needs a lock held: name it …Locked, and check it (syncs.AssertLocked)", fd.Name.Name)
			}
			if locked && !assertsFirst(pass, fd.Body) {
				pass.Reportf(fd.Name.Pos(), "%s is …Locked but does not begin with syncs.AssertLocked(&…mu)", fd.Name.Name)
			}
		}
	}
	return nil, nil
}

// assertsFirst reports whether body begins with a call of
// syncs.AssertLocked.
func assertsFirst(pass *analysis.Pass, body *ast.BlockStmt) bool {
	if len(body.List) == 0 {
		return false
	}
	es, ok := body.List[0].(*ast.ExprStmt)
	if !ok {
		return false
	}
	ce, ok := es.X.(*ast.CallExpr)
	if !ok {
		return false
	}
	fn, ok := typeutil.Callee(pass.TypesInfo, ce).(*types.Func)
	return ok && fn.Pkg() != nil && fn.Pkg().Name() == "syncs" && fn.Name() == "AssertLocked"
}
