package codecheck

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"
)

// Each analyzer's testdata holds code that breaks its rule, marked with
// the finding it must give (// want), beside code that keeps it, which
// must give none: analysistest fails on a finding missing or one more.

func TestFuncLen(t *testing.T) {
	longTests["funclen/a_test.go:TestKept"] = 100
	longTests["funclen/a_test.go:TestGrown"] = 85
	t.Cleanup(func() {
		delete(longTests, "funclen/a_test.go:TestKept")
		delete(longTests, "funclen/a_test.go:TestGrown")
	})
	analysistest.Run(t, analysistest.TestData(), FuncLen, "funclen")
}

func TestLocked(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), Locked, "locked")
}

func TestLockPair(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), LockPair, "lockpair")
}

func TestStartPattern(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), StartPattern, "startpattern")
}

func TestLockIO(t *testing.T) {
	own := ownPackage
	ownPackage = func(path string) bool { return path == "lockio" || path == "lockiodisk" }
	ioPrimitives["lockiotmux"] = ioPrimitives["github.com/sophonz/st/internal/tmux"]
	t.Cleanup(func() {
		ownPackage = own
		delete(ioPrimitives, "lockiotmux")
	})
	analysistest.Run(t, analysistest.TestData(), LockIO, "lockio")
}
