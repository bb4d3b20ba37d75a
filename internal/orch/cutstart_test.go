package orch

import (
	"testing"

	"github.com/sophonz/st/internal/api"
)

// TestCutStartsAreAnEarlierSts: a start is cut short only when an earlier
// st left it typing. A start this st began before its watcher's first
// look (requests are served at once; the watcher may start late on a
// loaded machine) is its own delivery's: settleCutStarts does not type
// its task a second time (CI: tmux-restart.txtar's first worker "was
// busy for 1m30s" after its task went in twice).
func TestCutStartsAreAnEarlierSts(t *testing.T) {
	h := newHarness(t, api.Starting, nil)
	log := h.captureLog()
	mine := localWorker("%7", "mine", api.Starting)
	mine.Typing = true
	h.addWorker(mine)
	h.m.settleCutStarts()
	if n := log.count("its start was cut short"); n != 0 {
		t.Fatalf("a start of this st taken as cut short (%d):\n%s", n, log.String())
	}
	// One that run.json had typing when st started is settled.
	h.m.cutAtLoad[mine] = true
	h.m.settleCutStarts()
	if n := log.count("its start was cut short"); n != 1 {
		t.Fatalf("an earlier st's cut start not settled (%d):\n%s", n, log.String())
	}
}
