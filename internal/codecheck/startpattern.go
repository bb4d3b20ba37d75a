package codecheck

import (
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/types/typeutil"
)

// StartPattern: every st process (each hook an agent fires, each
// command) runs every package's initialisation before main, and regular
// expressions compiled there were a fifth of a bare `st version`'s CPU
// (perf, 2026-12-01). A pattern is compiled at its first use
// (sync.OnceValue) instead; a package-level variable whose value compiles
// one (regexp.MustCompile or regexp.Compile, outside a function literal,
// which runs later), in any code that is not a test's, is reported.
var StartPattern = &analysis.Analyzer{
	Name: "startpattern",
	Doc:  "reports regular expressions compiled by a package-level variable's initialisation (outside tests)",
	Run:  runStartPattern,
}

func runStartPattern(pass *analysis.Pass) (any, error) {
	for _, f := range pass.Files {
		if strings.HasSuffix(pass.Fset.Position(f.Pos()).Filename, "_test.go") {
			continue
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, s := range gd.Specs {
				for _, v := range s.(*ast.ValueSpec).Values {
					if at := compiledNow(pass, v); at != nil {
						pass.Reportf(at.Pos(), "a pattern compiled as the program starts; compile it at its first use: sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(...) })")
					}
				}
			}
		}
	}
	return nil, nil
}

// compiledNow is the call in e that compiles a pattern when e is
// evaluated, or nil.
func compiledNow(pass *analysis.Pass, e ast.Expr) ast.Node {
	var found ast.Node
	ast.Inspect(e, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CallExpr:
			if fn, ok := typeutil.Callee(pass.TypesInfo, x).(*types.Func); ok && fn.Pkg() != nil && fn.Pkg().Path() == "regexp" &&
				(fn.Name() == "MustCompile" || fn.Name() == "Compile") {
				found = x
			}
		}
		return found == nil
	})
	return found
}
