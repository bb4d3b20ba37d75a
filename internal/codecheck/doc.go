// Package codecheck holds the checks of st's own code that no compiler or
// linter makes, as go/analysis passes (Analyzers) that cmd/stcheck runs
// over the whole module from scripts/check:
//
//   - funclen: no function over 80 lines, function literals measured too
//     (a few long test functions listed may only shrink);
//   - locked: in every package, a function that must be called with a
//     lock held is named …Locked and begins with syncs.AssertLocked, and
//     no comment says it instead;
//   - lockpair: no lock taken in one function and let go in another (an
//     unlock that the same function takes again before it returns, as a
//     group commit's wait does, is fine);
//   - startpattern: no regular expression compiled as a process starts;
//   - lockio: no file I/O and no process run (git, tmux) while a lock is held (in a
//     …Locked function, or between a Lock and its Unlock), but where a
//     "// lockio: REASON" comment says why (a write lock held through
//     its own write); the calls it counts are listed in lockio.go.
//
// Each has an analysistest test whose testdata breaks its rule.
package codecheck
