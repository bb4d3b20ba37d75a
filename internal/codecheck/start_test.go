package codecheck

import (
	"go/ast"
	"go/token"
	"strings"
	"testing"
)

// TestNoPatternsCompiledAtStart: every st process (each hook an agent
// fires, each command) runs every package's initialisation before main,
// and regular expressions compiled there were a fifth of a bare `st
// version`'s CPU (perf, 2026-12-01). A pattern is compiled at its first
// use (sync.OnceValue) instead; a package-level variable set straight by
// regexp.MustCompile or regexp.Compile, in any code that is not a
// test's, fails this check.
func TestNoPatternsCompiledAtStart(t *testing.T) {
	goFiles(t, func(fset *token.FileSet, rel string, f *ast.File) {
		if strings.HasSuffix(rel, "_test.go") {
			return
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, s := range gd.Specs {
				for _, v := range s.(*ast.ValueSpec).Values {
					if compiledNow(v) {
						t.Errorf("%s:%d: a pattern compiled as st starts; compile it at its first use: sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(...) })",
							rel, fset.Position(v.Pos()).Line)
					}
				}
			}
		}
	})
}

// compiledNow reports whether e compiles a pattern when it is evaluated
// (not inside a function literal, which runs later): a call of
// regexp.MustCompile or regexp.Compile, anywhere in e.
func compiledNow(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CallExpr:
			if sel, ok := x.Fun.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "regexp" && (sel.Sel.Name == "MustCompile" || sel.Sel.Name == "Compile") {
					found = true
				}
			}
		}
		return !found
	})
	return found
}
