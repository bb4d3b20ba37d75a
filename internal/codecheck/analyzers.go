package codecheck

import "golang.org/x/tools/go/analysis"

// Analyzers are st's checks of its own code, which cmd/stcheck runs over
// the module from scripts/check.
var Analyzers = []*analysis.Analyzer{FuncLen, Locked, LockPair, StartPattern, LockIO}
