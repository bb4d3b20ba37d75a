package testutil

import (
	"fmt"
	"strings"
	"testing"
)

// fatalTB records the first Fatal of a helper and stops it, as testing
// does, without failing the test that runs the helper.
type fatalTB struct {
	testing.TB
	msg string
}

type stopped struct{}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	panic(stopped{})
}

// TestBuildSTNeedsMain: a package whose TestMain does not call Main would
// leave the 20 MB binary behind; BuildST refuses to build for it, saying
// what to add. (This package's tests have no such TestMain.)
func TestBuildSTNeedsMain(t *testing.T) {
	f := &fatalTB{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil && r != (stopped{}) {
				panic(r)
			}
		}()
		f.msg = "BuildST returned " + BuildST(f)
	}()
	if !strings.Contains(f.msg, "func TestMain(m *testing.M) { testutil.Main(m) }") {
		t.Errorf("BuildST without Main: %q; want a refusal naming the TestMain to add", f.msg)
	}
	if builtDir != "" {
		t.Errorf("BuildST built into %s all the same", builtDir)
	}
}
