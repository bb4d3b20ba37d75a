// Package bench holds st's benchmarks. They drive the real st binary, the
// sim agent and a private tmux server the way the testscript scripts do,
// and print figures (FIGURE name value unit lines, plus b.ReportMetric)
// for a person to read: they assert nothing about timings, since the
// machines they run on are shared and noisy.
//
// Run them with scripts/bench, or:
//
//	go test -run '^$' -bench . -benchtime 1x -count 1 ./bench/
//
// BenchmarkWaitAfterDone measures how long `st worker wait` takes to return
// after a worker's `st worker done`; BenchmarkStartOverhead measures what
// `st worker start` adds to the start of the sim agent driven by a minimal
// driver.
package bench
