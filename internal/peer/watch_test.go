package peer

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/orch"
	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/testutil/faketmux"
)

// TestMovesAreToldToTheWorkersMachines: a coordinator here whose agent
// came back in another pane (its conversation's hook from there) is told
// to the machine of its workers at once, through the manager's records
// of the move (orch's queueMoves, then Kick) and the watch of that
// machine, which tells it and then forgets the move.
func TestMovesAreToldToTheWorkersMachines(t *testing.T) {
	told := make(chan api.PeerReparent, 4)
	acc := &fakeAccount{answer: func(slug, op string, req any) (any, error) {
		if mv, ok := req.(api.PeerReparent); ok && slug == "beta" {
			told <- mv
		}
		return struct{}{}, nil
	}, watching: make(chan string, 1)}
	h := newHarness(t, api.Working, acc, func(s *setup) {
		s.runs[0].Workers = append(s.runs[0].Workers, &orch.Worker{ID: "beta/%4", Name: "far", Agent: "sim", Parent: coord, Level: 1,
			State: api.Working, Machine: "beta", MachineName: "beta", Ref: "0123456789abcdef", StartedAt: time.Now()})
	})
	// The watch of beta (started for its live worker) waits there: only a
	// kick makes it tell anything now.
	select {
	case <-acc.watching:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch of beta did not start")
	}
	// The coordinator's agent runs in %1, then its pane goes and the same
	// conversation speaks from %5.
	if err := h.hookFrom(coord, "SessionStart"); err != nil {
		t.Fatal(err)
	}
	h.tm.Edit(func(s *faketmux.Server) {
		s.Panes[0] = &faketmux.Pane{ID: "%5", Window: "@5", Index: "0", Session: "$0", SessName: "main", WinName: "coord", Cmd: "sim",
			Path: "/tmp", PID: 5, Opts: map[string]string{}}
	})
	h.lookAtTmux()
	// Its own process resumed that conversation (a hook's word alone moves
	// nothing: issue 31, item 1).
	b, _ := json.Marshal(map[string]any{"session_id": agentSes, "cwd": "/tmp", "hook_event_name": "SessionStart", "source": "resume"})
	if _, err := h.m.HookFrom(context.Background(), api.HookRequest{Agent: "sim", Event: "SessionStart", Pane: "%5", Payload: b},
		orch.HookOrigin{Resumed: agentSes}); err != nil {
		t.Fatal(err)
	}
	select {
	case mv := <-told:
		if mv.Old != coord || mv.New != "%5" {
			t.Errorf("beta was told %+v, want %s -> %%5", mv, coord)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("beta was not told that its workers' coordinator moved")
	}
	if w := h.record("beta/%4"); w.Parent != "%5" {
		t.Errorf("the record of beta's worker: parent %s, want %%5", w.Parent)
	}
	testutil.WaitFor(t, 10*time.Second, func() (bool, string) {
		mvs := h.m.Remotes().Moves("beta")
		return len(mvs) == 0, fmt.Sprintf("the told move is still to tell: %v", mvs)
	})
}

// TestPeerTakesRetiredPanes (issue 25, item 4): the hub's half of
// orch's TestPeerAnswersNameRetiredPanes. What another machine answers
// with a retired id (a pane of its tmux server that went) passes the
// checks and is taken; a move names the coordinator by the bare id the
// other machine knows; a move to a retired id is taken, and only a
// well-formed one; another machine's orphan whose coordinator is retired
// stays in its graph.
func TestPeerTakesRetiredPanes(t *testing.T) {
	ctx := context.Background()
	told := make(chan api.PeerReparent, 4)
	acc := &fakeAccount{answer: func(slug, op string, req any) (any, error) {
		if mv, ok := req.(api.PeerReparent); ok {
			told <- mv
		}
		return struct{}{}, nil
	}}
	h := peerHarness(t, acc, func(s *setup) {
		s.runs[0].Workers = append(s.runs[0].Workers, &orch.Worker{ID: "beta/%4", Name: "far", Agent: "sim", Parent: coord, Level: 1,
			State: api.Working, Machine: "beta", MachineName: "beta", Ref: refA, StartedAt: time.Now()})
	})
	// beta's worker went with beta's tmux server.
	h.hub.applyWatch("beta", []api.WorkerView{{Worker: api.Worker{ID: "%4~mx4abc", Name: "far", Agent: "sim", State: api.Gone, Ref: refA}}})
	if w := h.record("beta/%4~mx4abc"); w.State != api.Gone {
		t.Errorf("beta's answer with a retired id: %s %s, want beta/%%4~mx4abc gone", w.ID, w.State)
	}
	// A coordinator here that did not come back is told by its bare id,
	// and its retired one.
	h.hub.tellMoves(ctx, "gamma", []api.PeerReparent{{Old: coord + "~mx4egnk7", New: coord + "~mx4egnk7"}})
	select {
	case mv := <-told:
		if mv.Old != coord || mv.New != coord+"~mx4egnk7" {
			t.Errorf("gamma was told %+v, want %s -> %s~mx4egnk7", mv, coord, coord)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("gamma was not told")
	}
	// The worker's side: a move to a retired id, well formed, is taken.
	if _, err := h.hub.reparentFor(ctx, "alpha", api.PeerReparent{Old: "%0", New: "%0~mx4egnk7"}); err != nil {
		t.Errorf("alpha tells the retired id of its coordinator: %v", err)
	}
	for _, bad := range []string{"%0~", "%0~MX", "%0~../x", "%x~1"} {
		if _, err := h.hub.reparentFor(ctx, "alpha", api.PeerReparent{Old: "%0", New: bad}); err == nil {
			t.Errorf("a move to %q was taken", bad)
		}
	}
	// Another machine's graph: an orphan whose coordinator is retired
	// stays in it; a parent that is no pane id does not.
	g := CheckGraph([]api.GraphAgent{
		{Pane: "%4", Name: "orphan", Kind: "sim", Role: "worker", State: "idle", Parent: "%3~mx4egnk7", Since: time.Now()},
		{Pane: "%5", Name: "odd", Kind: "sim", Role: "worker", State: "idle", Parent: "%3~../../x"},
	})
	if len(g) != 1 || g[0].Pane != "%4" {
		t.Errorf("the graph kept %+v, want the orphan only", g)
	}
}

const refA = "aaaaaaaaaaaaaaaa"
