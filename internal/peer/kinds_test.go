package peer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sophonz/st/internal/api"
)

// TestPeerKindsAreThatMachines (issue 33 item 5 across machines): the
// machine that runs an agent decides which kinds exist there; its
// config.toml may describe one this machine does not know ("toy" here).
// A start of it there is handed over, not refused here, and the views of
// it are taken, with the screen-states mark that machine gave. An agent
// name not of a kind's form is still refused, as a boundary: in a start
// asked here (before that machine is asked), in a view from there, in a
// start asked of this machine, and in another machine's graph.
func TestPeerKindsAreThatMachines(t *testing.T) {
	ctx := context.Background()
	task := filepath.Join(t.TempDir(), "t.md")
	os.WriteFile(task, []byte("summary: x\n"), 0o600)

	peers := &fakeAccount{}
	h := peerHarness(t, peers, nil)
	asked := 0
	agentThere := "toy"
	peers.answer = func(slug, op string, req any) (any, error) {
		asked++
		if p := req.(api.PeerStart); p.Agent != "toy" {
			t.Errorf("beta was asked for agent %q, want toy", p.Agent)
		}
		return api.WorkerView{Worker: api.Worker{ID: "%3", Name: "far", Agent: agentThere, State: api.Working, Ref: req.(api.PeerStart).Ref},
			ScreenStates: true}, nil
	}
	v, err := h.m.StartWorker(ctx, api.StartRequest{Pane: coord, Agent: "toy", Task: task, Machine: "beta", Name: "far"})
	if err != nil {
		t.Fatalf("a start of beta's own kind toy was refused here: %v", err)
	}
	if asked != 1 || v.Agent != "toy" || !v.ScreenStates {
		t.Fatalf("the start's view: asked %d, agent %q, screen states %v; want 1, toy, true", asked, v.Agent, v.ScreenStates)
	}
	// A watch answer of it is taken too: its state moves.
	h.hub.applyWatch("beta", api.PeerWatchResult{Workers: []api.WorkerView{{Worker: api.Worker{ID: "%3", Name: "far", Agent: "toy", State: api.Done, Summary: "did it", Ref: v.Ref}, ScreenStates: true}}})
	// (The views here, as st worker list shows them: its kind, its state,
	// and the mark that beta reads its states from its screen.)
	if w := h.record("beta/%3"); w.State != api.Done || w.Agent != "toy" || w.Summary != "did it" || !w.ScreenStates {
		t.Errorf("a watch answer of beta's kind: %s %q %q screen %v; want done, toy, did it, true", w.State, w.Agent, w.Summary, w.ScreenStates)
	}
	graphShowsToy(t, h)

	for _, bad := range []string{"Toy", "toy\x1b[2J", "../../bin/sh", "-toy", "t y", strings.Repeat("a", 40)} {
		// Asked here: refused before beta is asked.
		asked = 0
		if _, err := h.m.StartWorker(ctx, api.StartRequest{Pane: coord, Agent: bad, Task: task, Machine: "beta", Name: "far2"}); err == nil || asked != 0 {
			t.Errorf("start of agent %q on beta: err %v, beta asked %d times; want refused here", bad, err, asked)
		} else if strings.ContainsRune(err.Error(), 0x1b) {
			t.Errorf("the refusal echoes the name raw: %q", err)
		}
		// Answered by beta: not taken.
		agentThere = bad
		if _, err := h.m.StartWorker(ctx, api.StartRequest{Pane: coord, Agent: "toy", Task: task, Machine: "beta", Name: "far3"}); err == nil {
			t.Errorf("a view of agent %q from beta was taken", bad)
		}
		// Asked of this machine by alpha: refused, not echoed raw.
		req := api.PeerStart{Run: "run-abcdef", Coordinator: "%0", Parent: "%0", Level: 1, Ref: "0123456789abcdef", Agent: bad, TaskName: "t.md", TaskText: "x", Name: "w"}
		if _, err := h.hub.startFor(ctx, "alpha", req); err == nil || strings.ContainsRune(err.Error(), 0x1b) {
			t.Errorf("a start of agent %q asked by alpha: %v", bad, err)
		}
	}
	for _, rec := range h.records() {
		if rec.ID != "beta/%3" && strings.HasPrefix(rec.ID, "beta/") {
			t.Errorf("a record %q of a refused view was kept", rec.ID)
		}
	}

	// A kind this machine does not know, asked of it by alpha: refused,
	// naming the kinds it does know, so that the user there can choose.
	req := api.PeerStart{Run: "run-abcdef", Coordinator: "%0", Parent: "%0", Level: 1, Ref: "0123456789abcdef", Agent: "toy", TaskName: "t.md", TaskText: "x", Name: "w"}
	_, err = h.hub.startFor(ctx, "alpha", req)
	if err == nil || !strings.Contains(err.Error(), `"toy"`) || !strings.Contains(err.Error(), "sim") {
		t.Errorf("a start of an agent this machine does not know: %v; want it refused, naming toy and the kinds here (sim)", err)
	}

	// Another machine's graph: its kind shown, a bad form left out.
	g := CheckGraph([]api.GraphAgent{{Pane: "%3", Kind: "toy", Name: "far"}, {Pane: "%4", Kind: "To y", Name: "bad"}})
	if len(g) != 1 || g[0].Kind != "toy" {
		t.Errorf("CheckGraph kept %+v; want only the toy agent", g)
	}
}

// graphShowsToy checks the web UI's graph: beta's worker of kind toy is
// in it, with its kind and beta's mark (this machine has no description
// of toy to take the mark from).
func graphShowsToy(t *testing.T, h *harness) {
	t.Helper()
	found := false
	for _, g := range h.m.Graph() {
		if g.Pane == "beta/%3" {
			found = true
			if g.Kind != "toy" || !g.Screen || g.State != string(api.Done) {
				t.Errorf("the graph's row of beta/%%3: kind %q, screen %v, state %s; want toy, true, done", g.Kind, g.Screen, g.State)
			}
		}
	}
	if !found {
		t.Error("the graph leaves out beta's worker of kind toy")
	}
}
