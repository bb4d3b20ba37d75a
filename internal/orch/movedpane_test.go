package orch

import (
	"context"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
)

// TestMovedPaneAnswersByRetiredID (issue 24, item 3): after a tmux
// restart here, the workers' machine asks about its coordinator by the
// bare old id it knows. The answer was looked up by bare ids across the
// server's lives, so an old %1 that became %3 was followed on to %5 (an
// old %3's new pane, an unrelated agent), and a worker started since
// under the new %3 was told its coordinator had moved to %5. Moves are
// kept by retired id now; a bare id is a pane of the current life first.
func TestMovedPaneAnswersByRetiredID(t *testing.T) {
	h := remoteHarness(t) // (it tells no machine: the moves stay untold)
	ctx := context.Background()
	h.addWorker(remoteWorker("beta", "%4", "far", "0123456789abcdef", api.Working))
	// The restart: the coordinator %1 is %3 now, the old %3 (another
	// agent) is %5.
	for _, p := range []string{"%3", "%5", "%8"} {
		h.addPane(p, map[string]string{})
	}
	h.m.relink(ctx, map[string]string{coord: "%3", "%3": "%5", workerID: "%6"}, nil, true)
	ask := func(pane string) (*api.PeerPaneResult, error) {
		return h.m.Hosted().Coordinator(ctx, "beta", pane), nil
	}
	if res, err := ask(coord); err != nil || res.Live || res.Now != "%3" {
		t.Errorf("beta asks about %s: %+v %v, want moved to %%3", coord, res, err)
	}
	// A worker started since, under the coordinator's new pane %3.
	h.addWorker(&Worker{ID: "beta/%9", Name: "later", Agent: "sim", Parent: "%3", Level: 1, State: api.Working,
		Since: time.Now(), StartedAt: time.Now(), Machine: "beta", Ref: "fedcba9876543210"})
	if res, err := ask("%3"); err != nil || !res.Live || res.Now != "" {
		t.Errorf("beta asks about %%3, the coordinator of a worker started since: %+v %v, want live", res, err)
	}
	// Another restart before beta was told: the coordinator is %8 now.
	h.m.relink(ctx, map[string]string{"%3": "%8", "%5": "%10"}, nil, true)
	if res, err := ask(coord); err != nil || res.Live || res.Now != "%8" {
		t.Errorf("after a second restart, beta asks about %s: %+v %v, want moved to %%8", coord, res, err)
	}
	// A third, where the coordinator does not come back: gone, though a
	// pane of the new life has its first id.
	h.addPane(coord, map[string]string{})
	h.m.relink(ctx, map[string]string{}, nil, true)
	if res, err := ask(coord); err != nil || res.Live || res.Now != "" {
		t.Errorf("beta asks about %s whose coordinator did not come back: %+v %v, want gone", coord, res, err)
	}
}
