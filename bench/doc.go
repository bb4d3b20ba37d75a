// Package bench holds st's benchmarks. They drive the real st binary, the
// sim agent and private tmux servers the way the testscript scripts do,
// and print figures (FIGURE name value unit lines, plus b.ReportMetric)
// for a person to read: they assert nothing about timings, since the
// machines they run on are shared and noisy. So most figures come with a
// floor measured in the same run under the same load (floor_test.go: a
// bare `st version`, the sim's own start, the same sims opened straight
// in tmux, tmux's own new-window and new-session) and their ratio, as
// the lines name, name_floor and name_ratio.
//
// Run them with scripts/bench, or:
//
//	go test -run '^$' -bench . -benchtime 1x -count 1 ./bench/
//
// BenchmarkWaitAfterDone measures how long `st worker wait` takes to return
// after a worker's `st worker done`, and after its agent's Stop hook;
// BenchmarkStartOverhead what `st worker start` adds to the start of the
// sim agent driven by a minimal driver; BenchmarkRestore and
// BenchmarkTaskChain a restore of 20 workers and a chain of 20 tasks;
// BenchmarkTmuxGone how soon st says so when its tmux server goes with
// nothing to bring back; BenchmarkScale the figures that grow with the
// number of workers (1, 20, 100); BenchmarkRemote and BenchmarkWebTerminal
// workers on another machine and the web terminal; BenchmarkGoals the
// scale goals of issue 36 item 8 (a report to its wait against a durable
// write of run.json, the list against st status at 100 workers, 100
// reports at once and the writes they make).
package bench
