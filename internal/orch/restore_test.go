package orch

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/tmux"
)

// Restore on the fake tmux server: what st does with its records when
// the server's panes change under it (relink), and when the server goes
// with nothing to bring back.

func (h *harness) workerByName(name string) api.WorkerView {
	h.t.Helper()
	v, err := h.m.Show(context.Background(), "", testRun)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, w := range v.Views {
		if w.Name == name {
			return w
		}
	}
	h.t.Fatalf("run %s has no worker %s", testRun, name)
	return api.WorkerView{}
}

// After a restart of the tmux server, the panes that came back have new
// ids: their workers follow, their turns ended; the panes that did not
// come back are retired, so that a new pane with their old id is never
// taken for them.
func TestRelinkAfterAServerRestart(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	ctx := context.Background()
	h.addWorker(localWorker("%3", "lost", api.Idle))
	h.addTasks(&Task{Name: "a", State: api.TaskRunning, Worker: workerID}, &Task{Name: "b", State: api.TaskRunning, Worker: "%3"})
	// The coordinator runs an agent: its hooks told st so.
	if err := h.hookFrom(coord, "SessionStart", "source", "startup"); err != nil {
		t.Fatal(err)
	}
	// The new server's panes: the coordinator is %11, w1 is %12.
	h.addPane("%11", map[string]string{})
	h.addPane("%12", map[string]string{})
	moved := map[string]string{coord: "%11", workerID: "%12"}
	opts := map[string]map[string]string{"%12": {"@st_run": testRun, "@st_role": "worker", "@st_parent": coord, "@st_name": "w1"}}
	h.m.relink(ctx, moved, opts, true)

	w1 := h.workerByName("w1")
	if w1.ID != "%12" || w1.Parent != "%11" || w1.State != api.Idle {
		t.Errorf("w1 after the restart: %s parent %s %s, want %%12 parent %%11 idle (its turn died with the server)", w1.ID, w1.Parent, w1.State)
	}
	lost := h.workerByName("lost")
	if !strings.HasPrefix(lost.ID, "%3"+api.RetiredMark) || api.PaneOf(lost.ID) != "%3" || lost.Parent != "%11" {
		t.Errorf("the worker whose pane did not come back: %s parent %s, want %%3 retired", lost.ID, lost.Parent)
	}
	run, err := h.m.Show(ctx, "%11", "")
	if err != nil {
		t.Fatalf("the coordinator's new pane has no run: %v", err)
	}
	if run.Coordinator != "%11" {
		t.Errorf("coordinator %s", run.Coordinator)
	}
	if got := h.tasks()["a"].Worker; got != "%12" {
		t.Errorf("task a's worker %s, want %%12", got)
	}
	if got := h.tasks()["b"].Worker; got != lost.ID {
		t.Errorf("task b's worker %s, want %s", got, lost.ID)
	}
	// On disk as in memory.
	d := h.runOnDisk()
	if d.Coordinator != "%11" || runWorker(&d, "%12") == nil || runWorker(&d, lost.ID) == nil || runWorker(&d, workerID) != nil {
		t.Errorf("run.json after the restart: coordinator %s, workers %v", d.Coordinator, workerIDs(d))
	}
	// What the hooks told of the coordinator's pane moved with it.
	ap := h.m.AgentPanes()
	if ap["%11"] != "sim" || ap[coord] != "" {
		t.Errorf("agent panes %v: the coordinator's agent should be in %%11 only", ap)
	}
	// st's options on the new pane, with the relations renamed.
	if got := h.tm.Option("%12", "@st_parent"); got != "%11" {
		t.Errorf("@st_parent of %%12 = %q, want %%11", got)
	}
	// The old ids name nothing now (a new pane may take them).
	if _, err := h.m.Read(ctx, api.IDRequest{ID: "%3"}); err == nil {
		t.Error("the retired pane id %3 still names a worker")
	}
	// The coordinator's wait, from its new pane, finds its workers.
	res, err := h.m.Wait(ctx, api.WaitRequest{Pane: "%11", IDs: []string{"w1"}, Timeout: time.Minute})
	if err != nil || len(res.Workers) != 1 || res.Workers[0].ID != "%12" {
		t.Errorf("Wait from the new pane = %+v, %v", res, err)
	}
}

func workerIDs(r Run) []string {
	var out []string
	for _, w := range r.Workers {
		out = append(out, w.ID)
	}
	return out
}

// A list of panes made around a restore (a generation ago, or while one
// runs) saw a half-made server: it judges no worker.
func TestReconcileAroundARestoreJudgesNothing(t *testing.T) {
	without := []tmux.Pane{{ID: coord, StRun: testRun}, {ID: shell}} // w1's pane missing
	tests := []struct {
		name  string
		edit  func(rs *restorer) int // returns the generation the list was made at
		state api.State
	}{
		{"listed before a restore ended", func(rs *restorer) int { g := rs.gen(); rs.begin(); rs.end(); return g }, api.Working},
		{"listed while a restore runs", func(rs *restorer) int { rs.begin(); return rs.gen() }, api.Working},
		{"listed with no restore", func(rs *restorer) int { return rs.gen() }, api.Gone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, api.Working, nil)
			seq := tt.edit(h.m.rest)
			h.m.reconcilePanes(without, time.Now(), seq)
			if got := h.worker().State; got != tt.state {
				t.Errorf("w1 is %s, want %s", got, tt.state)
			}
			if got := h.onDisk().State; got != tt.state {
				t.Errorf("run.json has w1 %s, want %s", got, tt.state)
			}
		})
	}
}

// The server goes before st had a picture of it: nothing can come back,
// and every worker that was on it is gone, saying why; its task fails,
// and the coordinator's wait returns.
func TestServerGoneWithNoPicture(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	ctx := context.Background()
	h.addWorker(localWorker("%3", "w2", api.Done))
	h.addTasks(&Task{Name: "a", State: api.TaskRunning, Worker: workerID})
	at := time.Now()
	h.m.serverGone(ctx, at)
	if got := h.m.ServerDown(); !got.Equal(at) {
		t.Errorf("ServerDown = %v, want %v", got, at)
	}
	const why = "the tmux server went down before st had a picture of it to bring back"
	res, err := h.m.Wait(ctx, api.WaitRequest{Pane: coord, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range res.Workers {
		if w.State != api.Gone || w.Error != why {
			t.Errorf("worker %s: %s %q, want gone: %s", w.Name, w.State, w.Error, why)
		}
	}
	if len(res.Workers) != 2 || res.TimedOut {
		t.Errorf("Wait = %+v", res)
	}
	if d := h.onDisk(); d.State != api.Gone || d.Error != why {
		t.Errorf("run.json: %s %q", d.State, d.Error)
	}
	h.wantTask("a", api.TaskFailed, "its worker "+workerID+" is gone (its pane closed) before it reported")
}

// An agent whose conversation comes back in another pane (resumed by
// hand after its pane closed) takes its worker record along: only on the
// SessionStart of that pane's agent, started to resume that very
// conversation (what the daemon read of its command line, HookOrigin;
// issue 31, item 1). Any other event with the id, or one with no such
// proof, moves nothing.
func TestAgentBackInAnotherPaneTakesItsWorker(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	ctx := context.Background()
	h.hook("UserPromptSubmit", "prompt", "go") // w1's conversation is agentSes
	// Its pane closes; st sees it gone.
	h.closePane(workerID)
	h.addPane("%7", map[string]string{})
	h.m.reconcile(ctx)
	if got := h.worker().State; got != api.Gone {
		t.Fatalf("w1 is %s after its pane closed, want gone", got)
	}
	// The conversation's id from %7, with no proof that %7's agent
	// resumed it: nothing moves.
	resumed := api.HookRequest{Agent: "sim", Event: "SessionStart", Pane: "%7", Payload: payload("SessionStart", "source", "resume")}
	for _, try := range []struct {
		req  api.HookRequest
		from HookOrigin
	}{
		{api.HookRequest{Agent: "sim", Event: "UserPromptSubmit", Pane: "%7", Payload: payload("UserPromptSubmit", "prompt", "resumed")}, HookOrigin{Resumed: agentSes}},
		{resumed, HookOrigin{}},
		{resumed, HookOrigin{Resumed: "11111111-2222-3333-4444-555555555555"}},
	} {
		if _, err := h.m.HookFrom(ctx, try.req, try.from); err != nil {
			t.Fatal(err)
		}
		if w := h.workerByName("w1"); w.ID != workerID || w.State != api.Gone {
			t.Fatalf("w1 moved to %s (%s) on %s with %+v", w.ID, w.State, try.req.Event, try.from)
		}
	}
	// %7's agent, started to resume it, says so in its SessionStart.
	if _, err := h.m.HookFrom(ctx, resumed, HookOrigin{Resumed: agentSes}); err != nil {
		t.Fatal(err)
	}
	w := h.workerByName("w1")
	if w.ID != "%7" || w.State != api.Idle || w.AgentSession != agentSes {
		t.Errorf("w1: %s %s %s, want %%7 idle (its agent back at its box)", w.ID, w.State, w.AgentSession)
	}
	if d := runWorker(ptr(h.runOnDisk()), "%7"); d == nil || d.Name != "w1" {
		t.Errorf("run.json has no w1 in %%7: %v", workerIDs(h.runOnDisk()))
	}
	for k, want := range map[string]string{"@st_run": testRun, "@st_role": "worker", "@st_parent": coord, "@st_name": "w1"} {
		if got := h.tm.Option("%7", k); got != want {
			t.Errorf("%%7 %s = %q, want %q", k, got, want)
		}
	}
	// Another conversation in a new pane takes nothing.
	h.addPane("%8", map[string]string{})
	h.m.reconcile(ctx)
	if _, err := h.m.Hook(ctx, api.HookRequest{Agent: "sim", Event: "SessionStart", Pane: "%8",
		Payload: []byte(`{"session_id":"11111111-2222-3333-4444-555555555555","hook_event_name":"SessionStart","source":"startup"}`)}); err != nil {
		t.Fatal(err)
	}
	if w := h.workerByName("w1"); w.ID != "%7" {
		t.Errorf("w1 moved to %s on another conversation's hook", w.ID)
	}
}
