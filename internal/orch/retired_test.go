package orch

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
)

// TestPeerAnswersNameRetiredPanes (issue 25, item 4): after a tmux
// restart, a pane that did not come back is named by its retired id
// (%3~gen) in every place, since a new pane may have %3 now; the answers
// between machines too. Before, the other machine's answer with a retired
// id was refused (its worker stayed "working" under an id that is now
// another pane's), a coordinator that did not come back was never named
// to the machines of its workers, which went on naming it by the
// stranger's id, and another machine's orphan dropped out of the graph.
func TestPeerAnswersNameRetiredPanes(t *testing.T) {
	ctx := context.Background()

	// The coordinator's side: beta's worker went with beta's tmux server.
	told := make(chan string, 8)
	h := peerHarness(t, &fakePeers{answer: func(slug, op string, req any) (any, error) {
		if mv, ok := req.(api.PeerReparent); ok {
			told <- slug + " " + mv.Old + " " + mv.New
		}
		return struct{}{}, nil
	}})
	h.addWorker(remoteWorker("beta", "%4", "far", refA, api.Working))
	h.m.applyWatch("beta", []api.WorkerView{{Worker: api.Worker{ID: "%4~mx4abc", Name: "far", Agent: "sim", State: api.Gone, Ref: refA}}})
	if w := h.remote("beta/%4~mx4abc"); w.State != api.Gone {
		t.Errorf("beta's answer with a retired id: %s %s, want beta/%%4~mx4abc gone", w.ID, w.State)
	}

	// This machine's tmux restarts and the coordinator does not come back:
	// its workers' machines are told its retired id.
	h.addWorker(remoteWorker("gamma", "%7", "near", refB, api.Working))
	h.m.relink(ctx, map[string]string{}, nil, true)
	near := h.remote("gamma/%7")
	if !strings.HasPrefix(near.Parent, coord+api.RetiredMark) {
		t.Fatalf("near's coordinator after the restart: %q, want %s retired", near.Parent, coord)
	}
	select {
	case got := <-told:
		if want := "gamma " + coord + " " + near.Parent; got != want {
			t.Errorf("told %q, want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("gamma was not told that %s is %s", coord, near.Parent)
	}
	// And gamma, asking about the old id, hears the retired one.
	res, err := h.m.PeerPane(ctx, "gamma", api.IDRequest{ID: coord})
	if err != nil || res.Live || res.Retired != near.Parent {
		t.Errorf("gamma asks about %s: %+v %v, want it retired as %s", coord, res, err, near.Parent)
	}

	// The worker's side: this machine takes the retired id from alpha, and
	// names the gone coordinator by it.
	w := peerHarness(t, &fakePeers{answer: func(slug, op string, req any) (any, error) { return api.PeerPaneResult{}, nil }})
	w.m.mu.Lock()
	w.m.runs[testRun].Coordinator, w.m.runs[testRun].CoordinatorMachine = "alpha/%0", "alpha"
	w.m.workers[workerID].Parent = "alpha/%0"
	w.m.mu.Unlock()
	if _, err := w.m.PeerReparent(ctx, "alpha", api.PeerReparent{Old: "%0", New: "%0~mx4egnk7"}); err != nil {
		t.Fatalf("alpha tells the retired id of its coordinator: %v", err)
	}
	vs, err := w.m.List(ctx, api.IDRequest{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 || vs[0].Parent != "alpha/%0~mx4egnk7" || !vs[0].ParentGone {
		t.Errorf("the worker's list: %+v, want its parent alpha/%%0~mx4egnk7, gone", vs)
	}
	for _, bad := range []string{"%0~", "%0~MX", "%0~../x", "%x~1"} {
		if _, err := w.m.PeerReparent(ctx, "alpha", api.PeerReparent{Old: "%0", New: bad}); err == nil {
			t.Errorf("a move to %q was taken", bad)
		}
	}

	// Another machine's graph: an orphan whose coordinator is retired
	// stays in it; a parent that is no pane id does not.
	g := checkPeerGraph([]api.GraphAgent{
		{Pane: "%4", Name: "orphan", Kind: "sim", Role: "worker", State: "idle", Parent: "%3~mx4egnk7", Since: time.Now()},
		{Pane: "%5", Name: "odd", Kind: "sim", Role: "worker", State: "idle", Parent: "%3~../../x"},
	})
	if len(g) != 1 || g[0].Pane != "%4" {
		t.Errorf("the graph kept %+v, want the orphan only", g)
	}
}

// TestPeerDepthsOnlyForItsOwnRuns: what another machine says of how deep
// its coordinators are (issue 25, item 3) is taken only for its own runs
// here, and only within the limit: a RAIL (a machine of the account
// counts its own chain, as it does when it starts a worker here), never a
// way to change another machine's runs or this machine's own.
func TestPeerDepthsOnlyForItsOwnRuns(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	h.m.mu.Lock()
	h.m.runs[testRun].Coordinator, h.m.runs[testRun].CoordinatorMachine = "alpha/%0", "alpha"
	own := &Run{ID: "run-000001", Coordinator: coord}
	h.m.runs[own.ID] = own
	h.m.mu.Unlock()
	depth := func(id string) int {
		h.m.mu.Lock()
		defer h.m.mu.Unlock()
		return h.m.runs[id].BaseDepth
	}
	h.m.takeDepths("gamma", map[string]int{testRun: 3}) // not gamma's run
	h.m.takeDepths("alpha", map[string]int{own.ID: 3})  // this machine's own
	h.m.takeDepths("alpha", map[string]int{testRun: 9}) // past the limit
	h.m.takeDepths("alpha", map[string]int{"../x": 1})  // not a run id
	if d, o := depth(testRun), depth(own.ID); d != 0 || o != 0 {
		t.Errorf("depths after refused words: %d and %d, want 0 and 0", d, o)
	}
	h.m.takeDepths("alpha", map[string]int{testRun: 2})
	if d := depth(testRun); d != 2 {
		t.Errorf("alpha's run is %d deep, want 2", d)
	}
	h.m.Sync()
	if d := h.runOnDisk(); d.BaseDepth != 2 {
		t.Errorf("run.json says %d, want 2", d.BaseDepth)
	}
	// A worker there now counts the two levels above: it is at level 1,
	// so a worker of its own would be the fourth level, and one below
	// that the fifth.
	h.m.mu.Lock()
	fourth, fifth := h.m.checkChain(workerID, 0, "a new worker"), h.m.checkChain(workerID, 1, "a team")
	h.m.mu.Unlock()
	if fourth != nil {
		t.Errorf("a fourth level refused: %v", fourth)
	}
	if fifth == nil || !strings.Contains(fifth.Error(), "2 level(s) above on alpha") {
		t.Errorf("a fifth level: %v, want refused naming the levels above on alpha", fifth)
	}
}
