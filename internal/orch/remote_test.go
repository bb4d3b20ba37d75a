package orch

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
)

// The watch of another machine (internal/peer's), as this machine's
// records of its workers there take it: MarkUnreachable when the machine
// cannot be reached, ApplyWatch with what it answers (the views that
// passed the hub's checks, and the refs of those that did not).

const (
	refA = "aaaaaaaaaaaaaaaa"
	refB = "bbbbbbbbbbbbbbbb"
	refC = "cccccccccccccccc"
)

// remoteWorker is this machine's record of a worker of run-t1 on machine
// slug, in pane pane there.
func remoteWorker(slug, pane, name, ref string, state api.State) *Worker {
	now := time.Now()
	return &Worker{ID: slug + "/" + pane, Name: name, Agent: "sim", Parent: coord, Level: 1, State: state, Since: now,
		StartedAt: now, Machine: slug, MachineName: slug, Ref: ref}
}

// remote reads this machine's record of a remote worker.
func (h *harness) remote(id string) Worker {
	h.t.Helper()
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	w := h.m.workers[id]
	if w == nil {
		h.t.Fatalf("no worker %s", id)
	}
	return *w
}

func TestMarkUnreachable(t *testing.T) {
	h := remoteHarness(t) // (st worker wait names remote workers through the hub)
	h.addWorker(remoteWorker("beta", "%4", "far", refA, api.Working))
	h.addWorker(remoteWorker("beta", "%5", "over", refB, api.Gone))
	h.addWorker(remoteWorker("gamma", "%4", "elsewhere", refC, api.Working))
	h.addWorker(remoteWorker("beta", "%7", "reported", "dddddddddddddddd", api.Done))
	h.m.Remotes().MarkUnreachable("beta", errors.New("dial tcp 127.0.0.1:1: connection refused"))
	// A worker that reported keeps its report: a wait for it returns.
	if w := h.remote("beta/%7"); w.State != api.Done || w.Error != "" {
		t.Errorf("beta's reported worker: %s %q, want done", w.State, w.Error)
	}
	if res, err := h.m.Wait(context.Background(), api.WaitRequest{Pane: coord, IDs: []string{"beta/%7"}, Timeout: 5 * time.Second}); err != nil || res.TimedOut {
		t.Errorf("a wait for a reported worker whose machine went: %+v, %v", res, err)
	}

	const why = "its machine cannot be reached: dial tcp 127.0.0.1:1: connection refused"
	if w := h.remote("beta/%4"); w.State != api.Unreachable || w.Error != why {
		t.Errorf("beta's live worker: %s %q, want unreachable: %s", w.State, w.Error, why)
	}
	if w := h.remote("beta/%5"); w.State != api.Gone {
		t.Errorf("beta's gone worker is %s", w.State)
	}
	if w := h.remote("gamma/%4"); w.State != api.Working {
		t.Errorf("gamma's worker is %s", w.State)
	}
	if w := h.worker(); w.State != api.Working {
		t.Errorf("the local worker is %s", w.State)
	}
	d := h.runOnDisk()
	if w := runWorker(&d, "beta/%4"); w == nil || w.State != api.Unreachable || w.Error != why {
		t.Errorf("run.json: %+v", w)
	}
	// An unreachable worker is waited for, as one still working.
	res, err := h.m.Wait(context.Background(), api.WaitRequest{Pane: coord, IDs: []string{"beta/%4"}, Timeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut {
		t.Errorf("a wait for an unreachable worker returned %+v", res)
	}
}

func TestApplyWatch(t *testing.T) {
	h := remoteHarness(t) // (st worker wait names remote workers through the hub)
	h.addWorker(remoteWorker("beta", "%4", "far", refA, api.Working))
	h.addWorker(remoteWorker("beta", "%5", "kept", refB, api.Working))
	h.addWorker(remoteWorker("beta", "%6", "released", refC, api.Working))
	h.m.Remotes().MarkUnreachable("beta", errors.New("timeout"))

	view := []api.WorkerView{
		// far reported, and its pane there changed (that machine's tmux restarted).
		{Worker: api.Worker{ID: "%14", Name: "far", Agent: "sim", State: api.Done, Summary: "did it there", Reported: true, Ref: refA}},
		// a worker this machine has no record of.
		{Worker: api.Worker{ID: "%9", Name: "stranger", Agent: "sim", State: api.Working, Ref: "dddddddddddddddd"}},
		// released is not listed: that machine no longer has it.
	}
	// kept's answer had a name no tmux window may have: the hub did not
	// take it (internal/peer TestPeerAnswersAreChecked), and says so.
	refused := []string{refB}
	h.m.Remotes().ApplyWatch("beta", view, refused)

	far := h.remote("beta/%14")
	if far.State != api.Done || far.Summary != "did it there" || far.Error != "" || far.Name != "far" {
		t.Errorf("far: %s %q err %q, want done with its summary", far.State, far.Summary, far.Error)
	}
	if w := h.remote("beta/%5"); w.State != api.Unreachable || w.Name != "kept" || w.Summary != "" {
		t.Errorf("kept after a refused view: %s %q %q, want it as last seen (unreachable)", w.State, w.Name, w.Summary)
	}
	if w := h.remote("beta/%6"); w.State != api.Idle || w.Error != "" {
		t.Errorf("released: %s %q, want idle with no error (back from unreachable)", w.State, w.Error)
	}
	h.m.mu.Lock()
	_, stranger := h.m.workers["beta/%9"]
	_, old := h.m.workers["beta/%4"]
	h.m.mu.Unlock()
	if stranger || old {
		t.Errorf("records: stranger %v, old id of far %v; want neither", stranger, old)
	}
	d := h.runOnDisk()
	if w := runWorker(&d, "beta/%14"); w == nil || w.State != api.Done || w.Summary != "did it there" {
		t.Errorf("run.json's far: %+v", w)
	}
	if len(d.Workers) != 4 {
		t.Errorf("run.json has %d workers, want 4: %v", len(d.Workers), workerIDs(d))
	}
	// A coordinator here hears of the report (its notice is queued; the
	// coordinator is a shell, so the loop drops it: told stays false).
	res, err := h.m.Wait(context.Background(), api.WaitRequest{Pane: coord, IDs: []string{"beta/%14"}, Timeout: time.Minute})
	if err != nil || res.TimedOut || res.Workers[0].State != api.Done {
		t.Errorf("Wait for far = %+v, %v", res, err)
	}

	// The same view again changes nothing, and writes nothing.
	writes := h.m.saver.writes.Load()
	h.m.Remotes().ApplyWatch("beta", view, refused)
	if n := h.m.saver.writes.Load() - writes; n != 0 {
		t.Errorf("%d writes for a view that changed nothing", n)
	}
	// Once kept is no longer listed, it is back from unreachable too.
	h.m.Remotes().ApplyWatch("beta", view[:1], nil)
	if w := h.remote("beta/%5"); w.State != api.Idle {
		t.Errorf("kept once no longer listed: %s, want idle", w.State)
	}
}
