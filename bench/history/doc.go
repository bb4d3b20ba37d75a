// Package history holds the benchmark of st's start with a long history
// (BenchmarkHistory): $ST_HOME/orch holding 1, 300 and 3,000 copies of a
// finished run of 10 workers (made by a real run of 10 sim workers that
// reported and whose windows and coordinator closed), `st up`'s time and
// the daemon's memory, each beside the same figure at 1 run (its floor,
// in the same run), for the st built from this checkout and for the st
// before finished runs were left on disk (beforeCommit, built from `git
// archive` in a temporary folder). It prints FIGURE lines as package
// bench does, which scripts/bench --history gathers into a table, and
// asserts nothing about timings.
package history
