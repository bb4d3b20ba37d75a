// Package faults holds st's fault tests (issue 8): the real st binary, the
// sim agent and a private tmux server, with a fault injected in the middle
// of the work, each repeated and each printing a line
//
//	FAULT name trials losses what-a-loss-is
//
// that scripts/faults gathers into a table. In CI (go test ./...) they run
// with small counts; ST_FAULTS_FULL=1 (scripts/faults) runs the counts of
// the issue: kill -9 of the daemon while 100 workers report (20 trials),
// the tmux server killed in the middle of a run (10), a full disk while
// run.json is written (5), a corrupted run.json (1); and those of issue
// 24: a reboot (10), a fresh machine taking a remote start (5), an agent
// that cannot come back among five (10), a coordinator's tmux restart
// seen from the worker's machine (5), an upgrade from the previous
// release with workers running (3), a sleep past the certificate's end
// (3). They assert counts and outcomes, never timings; the restores print
// their figures (FIGURE lines) beside tmux's own start of the same
// sessions.
package faults
