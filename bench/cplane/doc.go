// Package cplane holds the control plane's benchmarks: its scale (one
// `st control-plane serve` process and N simulated machines on loopback,
// N = 10, 100, 500, 1,000) and a relay flood. Each runs the control plane
// before the move to SQLite (st built from commit 4f3877d, the last with
// state.json; ST_BENCH_BEFORE_ST names a binary of it, else the benchmark
// builds it from `git archive`) and after it, in the same run, and prints
// each figure beside N = 10 (or beside no flood) as a ratio. They assert
// nothing about timings.
//
// A simulated machine is an in-process client of internal/remote: it signs
// in with its own key, keeps a relay connection as a daemon does,
// heartbeats, lists the machines, and a tenth of them relay a start (an
// api.PeerStart of the size st sends) and a report to another, through
// the relay, with mutual TLS inside as st does.
//
// Run them with `scripts/bench --cplane`, or:
//
//	go test -run '^$' -bench . -benchtime 1x -timeout 60m ./bench/cplane/
package cplane
