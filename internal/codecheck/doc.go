// Package codecheck holds the checks of st's own code that no compiler
// or linter makes, as tests that fail the build's tests when they stop
// holding (shape_test.go, start_test.go): no function over 80 lines, no
// pattern compiled as a process starts, and in the packages
// whose state has owners with locks, every function that must be called
// with a lock held named …Locked and checking it, and no lock let go in a
// function other than the one that took it. It has no code of its own.
package codecheck
