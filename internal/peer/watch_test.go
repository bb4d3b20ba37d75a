package peer

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
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
	h.hub.applyWatch("beta", api.PeerWatchResult{Workers: []api.WorkerView{{Worker: api.Worker{ID: "%4~mx4abc", Name: "far", Agent: "sim", State: api.Gone, Ref: refA}}}})
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

// TestPeerMirrorsAttention (issue 34, item 3): the open attention items
// another machine sends with its workers' states show here marked with
// that machine and named by this machine's record (beta/%4), cleaned and
// bounded; items of kinds st does not carry, of panes that are not this
// machine's workers there, or malformed, are not taken; an item no longer
// sent closes here; none of them is handed to the push.
func TestPeerMirrorsAttention(t *testing.T) {
	ctx := context.Background()
	refA := "0123456789abcdef"
	pushed := make(chan api.Attention, 10)
	h := peerHarness(t, &fakeAccount{}, func(s *setup) {
		s.onAttention = func(a api.Attention) { pushed <- a }
		s.runs[0].Workers = append(s.runs[0].Workers, &orch.Worker{ID: "beta/%4", Name: "far", Agent: "sim", Parent: coord, Level: 1,
			State: api.Working, Machine: "beta", MachineName: "beta", Ref: refA, StartedAt: time.Now()})
	})
	view := api.WorkerView{Worker: api.Worker{ID: "%4", Name: "far", Agent: "sim", State: api.Waiting, Ref: refA}}
	opened := time.Now().Add(-time.Minute)
	good := api.Attention{ID: "att-7", Kind: api.AttnPermission, Pane: "%4", Name: "someone-else", Agent: "codex",
		Text: "run \x1b[2Jrm -rf x", Command: "rm -rf x", Tool: "Bash", Opened: opened, Prompt: "prompt-1"}
	bad := []api.Attention{
		{ID: "att-8", Kind: api.AttnGate, Pane: "%4", Text: "a gate", Opened: opened},         // answered there
		{ID: "att-9", Kind: api.AttnPermission, Pane: "%9", Text: "not ours", Opened: opened}, // no worker of ours
		{ID: "att-x", Kind: api.AttnPermission, Pane: "%4", Text: "bad id", Opened: opened},   // not st's id
		{ID: "att-10", Kind: "wave", Pane: "%4", Text: "a kind st does not know", Opened: opened},
		{ID: "att-11", Kind: api.AttnQuestion, Pane: "%4", Text: strings.Repeat("x", 5000), Opened: opened},
	}
	h.hub.applyWatch("beta", api.PeerWatchResult{Workers: []api.WorkerView{view}, Attention: append([]api.Attention{good}, bad...)})
	l, err := h.m.Attention(ctx, api.AttentionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 1 || l.Open != 1 {
		t.Fatalf("want beta's one good item here, got %+v", l.Items)
	}
	a := l.Items[0]
	if a.Machine != "beta" || a.Pane != "beta/%4" || a.Name != "far" || a.Agent != "sim" || a.Kind != api.AttnPermission || a.Command != "rm -rf x" {
		t.Errorf("beta's item here: %+v", a)
	}
	if strings.ContainsRune(a.Text, 0x1b) || a.Prompt != "" || !a.Opened.Equal(opened) {
		t.Errorf("beta's item: text %q (made printable), prompt %q (none: answered there), opened %v (want beta's %v)", a.Text, a.Prompt, a.Opened, opened)
	}
	if _, ok := h.m.OpenPrompt("beta/%4"); ok {
		t.Error("an item of another machine is a prompt this machine could answer")
	}
	// Sent again: the same item, not a second one.
	h.hub.applyWatch("beta", api.PeerWatchResult{Workers: []api.WorkerView{view}, Attention: []api.Attention{good}})
	if l, _ := h.m.Attention(ctx, api.AttentionRequest{All: true}); len(l.Items) != 1 {
		t.Fatalf("sent twice, want one item, got %+v", l.Items)
	}
	// More than this machine takes at once: none.
	many := make([]api.Attention, 101)
	for i := range many {
		many[i] = api.Attention{ID: fmt.Sprintf("att-%d", 100+i), Kind: api.AttnNoReport, Pane: "%4", Text: "x", Opened: opened}
	}
	if kept, dropped := checkAttention(many); len(kept) != 0 || dropped != 101 {
		t.Errorf("101 items: kept %d, dropped %d", len(kept), dropped)
	}
	// Closed there: gone from the next answer, closed here.
	view.State = api.Working
	h.hub.applyWatch("beta", api.PeerWatchResult{Workers: []api.WorkerView{view}})
	l, _ = h.m.Attention(ctx, api.AttentionRequest{All: true})
	if l.Open != 0 || len(l.Items) != 1 || l.Items[0].ClosedBy != "closed there" {
		t.Fatalf("closed on beta, want it closed here: %+v", l.Items)
	}
	// The push is beta's: this machine handed none to its own, not even
	// the "no report" of the worker's idle turn it learnt of.
	view.State, view.LastAnswer = api.Idle, "Finished without a report."
	h.hub.applyWatch("beta", api.PeerWatchResult{Workers: []api.WorkerView{view}})
	h.m.Sync()
	if n := h.m.AttentionCount(); n != 0 {
		t.Errorf("beta's worker ended its turn without a report: %d item(s) here; that machine sends its own", n)
	}
	select {
	case a := <-pushed:
		t.Errorf("this machine pushed an item of beta's worker: %+v", a)
	default:
	}
	// A worker that failed there: its failed item shows here too.
	view.State = api.Failed
	failed := api.Attention{ID: "att-12", Kind: api.AttnFailed, Pane: "%4", Text: "its start failed", Opened: opened}
	h.hub.applyWatch("beta", api.PeerWatchResult{Workers: []api.WorkerView{view}, Attention: []api.Attention{failed}})
	if l, _ := h.m.Attention(ctx, api.AttentionRequest{}); len(l.Items) != 1 || l.Items[0].Kind != api.AttnFailed || l.Items[0].Pane != "beta/%4" {
		t.Fatalf("beta's failed worker's item here: %+v", l.Items)
	}
}
