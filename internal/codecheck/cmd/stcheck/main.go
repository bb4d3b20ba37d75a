// Command stcheck runs st's own checks of its code (internal/codecheck's
// analyzers: funclen, locked, lockpair, startpattern, lockio) over the packages
// named, with their tests: scripts/check runs it over ./... .
//
//	go run ./internal/codecheck/cmd/stcheck ./...
package main

import (
	"github.com/sophonz/st/internal/codecheck"
	"golang.org/x/tools/go/analysis/multichecker"
)

func main() { multichecker.Main(codecheck.Analyzers...) }
