package orch

import (
	"context"
	"slices"
	"strings"
	"testing"

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
// These are the records' half (the manager's); internal/peer's
// TestPeerTakesRetiredPanes is the half that talks to the machines.
func TestPeerAnswersNameRetiredPanes(t *testing.T) {
	ctx := context.Background()

	// The coordinator's side: beta's worker went with beta's tmux server
	// (its answer, with the retired id, passed the hub's checks).
	h := remoteHarness(t)
	h.addWorker(remoteWorker("beta", "%4", "far", refA, api.Working))
	h.m.Remotes().ApplyWatch("beta", []api.WorkerView{{Worker: api.Worker{ID: "%4~mx4abc", Name: "far", Agent: "sim", State: api.Gone, Ref: refA}}}, nil)
	if w := h.remote("beta/%4~mx4abc"); w.State != api.Gone {
		t.Errorf("beta's answer with a retired id: %s %s, want beta/%%4~mx4abc gone", w.ID, w.State)
	}
	// This machine's tmux restarts and the coordinator does not come back:
	// its workers' machines are to be told its retired id, at once.
	h.addWorker(remoteWorker("gamma", "%7", "near", refB, api.Working))
	h.m.relink(ctx, map[string]string{}, nil, true)
	near := h.remote("gamma/%7")
	if !strings.HasPrefix(near.Parent, coord+api.RetiredMark) {
		t.Fatalf("near's coordinator after the restart: %q, want %s retired", near.Parent, coord)
	}
	if got, want := h.m.Remotes().Moves("gamma"), []api.PeerReparent{{Old: near.Parent, New: near.Parent}}; len(got) != 1 || got[0] != want[0] {
		t.Errorf("to tell gamma: %v, want %v (told as %s -> %s: the bare id it knows, and the retired one)", got, want, coord, near.Parent)
	}
	if k := h.remoteFake().kicks(); !slices.Contains(k, "gamma") {
		t.Errorf("the watch of gamma was not woken to tell it: kicked %v", k)
	}
	// And gamma, asking about the old id, hears the retired one.
	if res := h.m.Hosted().Coordinator(ctx, "gamma", coord); res.Live || res.Retired != near.Parent {
		t.Errorf("gamma asks about %s: %+v, want it retired as %s", coord, res, near.Parent)
	}

	// The worker's side: this machine takes the retired id from alpha
	// (the hub checked it), and names the gone coordinator by it.
	w := newHarness(t, api.Working, nil)
	w.m.reg.mu.Lock()
	w.m.reg.runs[testRun].Coordinator, w.m.reg.runs[testRun].CoordinatorMachine = "alpha/%0", "alpha"
	w.m.reg.workers[workerID].Parent = "alpha/%0"
	w.m.reg.mu.Unlock()
	w.m.Hosted().Reparent(ctx, "alpha", "%0", "%0~mx4egnk7")
	vs, err := w.m.List(ctx, api.IDRequest{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 || vs[0].Parent != "alpha/%0~mx4egnk7" || !vs[0].ParentGone {
		t.Errorf("the worker's list: %+v, want its parent alpha/%%0~mx4egnk7, gone", vs)
	}
}

// TestPeerDepthsOnlyForItsOwnRuns: what another machine says of how deep
// its coordinators are (issue 25, item 3) is taken only for its own runs
// here, and only within the limit: a RAIL (a machine of the account
// counts its own chain, as it does when it starts a worker here), never a
// way to change another machine's runs or this machine's own.
func TestPeerDepthsOnlyForItsOwnRuns(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	h.m.reg.mu.Lock()
	h.m.reg.runs[testRun].Coordinator, h.m.reg.runs[testRun].CoordinatorMachine = "alpha/%0", "alpha"
	own := &Run{ID: "run-000001", Coordinator: coord}
	h.m.reg.runs[own.ID] = own
	h.m.reg.mu.Unlock()
	depth := func(id string) int {
		h.m.reg.mu.Lock()
		defer h.m.reg.mu.Unlock()
		return h.m.reg.runs[id].BaseDepth
	}
	h.m.Hosted().SetDepths("gamma", map[string]int{testRun: 3}) // not gamma's run
	h.m.Hosted().SetDepths("alpha", map[string]int{own.ID: 3})  // this machine's own
	h.m.Hosted().SetDepths("alpha", map[string]int{testRun: 9}) // past the limit
	h.m.Hosted().SetDepths("alpha", map[string]int{"../x": 1})  // not a run id
	if d, o := depth(testRun), depth(own.ID); d != 0 || o != 0 {
		t.Errorf("depths after refused words: %d and %d, want 0 and 0", d, o)
	}
	h.m.Hosted().SetDepths("alpha", map[string]int{testRun: 2})
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
	h.m.reg.mu.Lock()
	fourth, fifth := h.m.reg.checkChainLocked(workerID, 0, "a new worker"), h.m.reg.checkChainLocked(workerID, 1, "a team")
	h.m.reg.mu.Unlock()
	if fourth != nil {
		t.Errorf("a fourth level refused: %v", fourth)
	}
	if fifth == nil || !strings.Contains(fifth.Error(), "2 level(s) above on alpha") {
		t.Errorf("a fifth level: %v, want refused naming the levels above on alpha", fifth)
	}
}

// TestHostedAttentionIsTheAskersOnly (issue 34, item 3): the watch of
// machine alpha carries the open items of alpha's workers here, of the
// kinds that travel, with no prompt of this machine's (answered here);
// never this machine's own agents' items, nor those of another machine's
// workers. A run hosted for alpha opens no run-done item here: it ends on
// alpha.
func TestHostedAttentionIsTheAskersOnly(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	h.m.reg.mu.Lock()
	h.m.reg.runs[testRun].Coordinator, h.m.reg.runs[testRun].CoordinatorMachine = "alpha/%0", "alpha"
	h.m.reg.workers[workerID].Parent, h.m.reg.workers[workerID].Ref = "alpha/%0", refA
	h.m.reg.mu.Unlock()
	book := h.m.AttentionBook()
	book.Open("pane:"+workerID+":prompt", api.Attention{Kind: api.AttnPermission, Pane: workerID, Text: "rm x", Command: "rm x", Prompt: "prompt-1"})
	book.Open("gate:g1", api.Attention{Kind: api.AttnGate, Pane: workerID, Text: "Ship?", Gate: "g1"})
	book.Open("pane:"+coord+":prompt", api.Attention{Kind: api.AttnQuestion, Pane: coord, Text: "this machine's own"})
	got := h.m.Hosted().Attention("alpha")
	if len(got) != 1 || got[0].Pane != workerID || got[0].Kind != api.AttnPermission || got[0].Prompt != "" || got[0].Command != "rm x" {
		t.Fatalf("alpha's watch carries %+v, want its worker's permission item only, with no prompt", got)
	}
	if got := h.m.Hosted().Attention("gamma"); len(got) != 0 {
		t.Errorf("gamma's watch carries alpha's worker's items: %+v", got)
	}
	h.m.settleChange(func(c *change) { c.setStateLocked(h.m.reg.workers[workerID], api.Done) })
	h.m.Sync()
	for _, a := range book.List(false).Items {
		if a.Kind == api.AttnRunDone {
			t.Errorf("a run hosted for alpha opened its run-done item here: %+v", a)
		}
	}
}
