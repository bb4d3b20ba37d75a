package codecheck

import (
	"go/ast"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// MaxLines is the longest a function may be, from its func line to its
// closing brace.
const MaxLines = 80

// module is st's module path, which longTests' keys are relative to.
const module = "github.com/sophonz/st/"

// longTests are the test functions over MaxLines when the check came
// (issue 26 item 9), with their lengths then: each may only shrink. They
// are tables of cases or end-to-end scenarios in other engineers' tiers
// (tests/browser, bench) or real agents' runs, where one function reads
// as one story; a new test function over MaxLines, or one of these grown,
// fails the check.
var longTests = map[string]int{
	"bench/load_test.go:restoreFigures":                                    82,
	"bench/load_test.go:scaleAt":                                           190,
	"bench/webterm_test.go:BenchmarkWebTerminal":                           102,
	"cmd/st/guard_test.go:TestHookGuard":                                   144,
	"cmd/st/script_test.go:TestScripts":                                    88,
	"internal/agent/claudelike_test.go:TestRecognizeClaudeLike":            104,
	"internal/agent/simagent/model_test.go:TestRenderStates":               98,
	"internal/agent/simagent/model_test.go:TestTaskTurn":                   82,
	"internal/daemon/security_test.go:TestWebUIWithoutTokenIs401":          97,
	"internal/guard/guard_test.go:TestGuardTable":                          101,
	"internal/guard/rules_test.go:TestServerEnds":                          114,
	"internal/hooks/codex_real_test.go:TestRealCodexTrust":                 99,
	"internal/hooks/hooks_test.go:TestCodexTrustWithFakeCodex":             84,
	"internal/plugin/agents_test.go:TestClaudeMenuShowsCommand":            81,
	"internal/plugin/install_test.go:TestInstallStatusUninstallRealClaude": 122,
	"internal/plugin/plugin_test.go:TestRenderTexts":                       92,
	"internal/controlplane/relay_test.go:TestBehindTLSTerminator":          86,
	"internal/controlplane/signin_test.go:TestAccessAndRestart":            82,
	"internal/controlplane/signin_test.go:TestAccountsLoginFind":           88,
	"internal/controlplane/signin_test.go:TestRenewAndLogout":              85,
	"internal/controlplane/signin_test.go:TestRevocation":                  97,
	"internal/shell/writes_test.go:TestWrites":                             233,
	"internal/tmux/web_test.go:TestRealTmuxWebSession":                     101,
	"internal/worktree/git_test.go:TestWorktreeLifecycle":                  134,
	"internal/worktree/scope_test.go:TestShellOutside":                     110,
	"tests/browser/browser_test.go:TestDesktop":                            117,
	"tests/browser/machines_test.go:windowOfAnotherMachine":                89,
	"tests/browser/real_team_test.go:TestRealTeamInBrowser":                119,
	"tests/browser/real_test.go:TestRealDaemon":                            231,
	"tests/browser/team_test.go:TestTeamsInTheUI":                          118,
	"tests/machines/machines_test.go:workerLifecycle":                      115,
	"tests/real/capture_test.go:TestCaptureScreens":                        107,
	"tests/real/team_test.go:TestClaudeAgentTeam":                          97,
	"internal/guard/guard_test.go:TestGuard":                               236,
}

// FuncLen: no function is over MaxLines lines. A function literal is a
// function too: one outside any function (a package-level variable's
// value, a table's entry) is measured by itself, where the source-text
// check of before measured declarations only; one inside a function is
// measured as part of it.
var FuncLen = &analysis.Analyzer{
	Name: "funclen",
	Doc:  "reports functions (declared or literal) over 80 lines, from the func line to the closing brace",
	Run:  runFuncLen,
}

func runFuncLen(pass *analysis.Pass) (any, error) {
	for _, f := range pass.Files {
		file := pass.Fset.Position(f.Pos()).Filename
		rel := strings.TrimPrefix(strings.TrimSuffix(pass.Pkg.Path(), "_test"), module) + "/" + filepath.Base(file)
		test := strings.HasSuffix(file, "_test.go")
		ast.Inspect(f, func(n ast.Node) bool {
			var name string
			switch x := n.(type) {
			case *ast.FuncDecl:
				if x.Body == nil {
					return false
				}
				name = x.Name.Name
				if x.Recv != nil && len(x.Recv.List) > 0 {
					name = recvName(x.Recv.List[0].Type) + "." + name
				}
			case *ast.FuncLit:
				name = "func literal"
			default:
				return true
			}
			lines := pass.Fset.Position(n.End()).Line - pass.Fset.Position(n.Pos()).Line + 1
			if lines <= MaxLines {
				return false // a literal inside counts as part of it
			}
			key := path.Clean(rel) + ":" + name
			if max, ok := longTests[key]; ok && test {
				if lines > max {
					pass.Reportf(n.Pos(), "%s grew to %d lines (it was %d, the limit is %d): make it shorter", name, lines, max, MaxLines)
				}
				return false
			}
			pass.Reportf(n.Pos(), "%s is %d lines, over %d: split it (a step of its own, a helper named for what it does)", name, lines, MaxLines)
			return false
		})
	}
	return nil, nil
}

func recvName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.IndexExpr:
		return recvName(x.X)
	case *ast.IndexListExpr:
		return recvName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return "?"
}
