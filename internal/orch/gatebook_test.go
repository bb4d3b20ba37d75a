package orch

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/tokens"
)

// The gate book's writes with no lock of the registry's waiting on them
// (issue 36 item 1, gatebook.go): its in-memory lock is never held
// through a write of gates.json.

// holdGateWrites makes the gate book's writes wait until the returned
// release is called (a slow disk); writing is closed when the first one
// is under way.
func (h *harness) holdGateWrites() (writing <-chan struct{}, release func()) {
	w, rel := make(chan struct{}), make(chan struct{})
	var once, let sync.Once
	h.m.gates.wmu.Lock()
	h.m.gates.write = func(path string, v any, mode os.FileMode) error {
		once.Do(func() { close(w) })
		<-rel
		return store.WriteJSON(path, v, mode)
	}
	h.m.gates.wmu.Unlock()
	release = func() { let.Do(func() { close(rel) }) }
	h.t.Cleanup(release)
	return w, release
}

// breakGateWrites makes every write of gates.json fail, as a full disk
// would, until mend is called.
func (h *harness) breakGateWrites() (mend func()) {
	h.m.gates.wmu.Lock()
	h.m.gates.write = func(string, any, os.FileMode) error { return errors.New("no space left on device") }
	h.m.gates.wmu.Unlock()
	return func() {
		h.m.gates.wmu.Lock()
		h.m.gates.write = store.WriteJSON
		h.m.gates.wmu.Unlock()
	}
}

// While an answer's write of gates.json is held up: st status, st worker
// list and st gate list are answered (the gate still open in it: the
// answer is not kept yet), and a worker's hook that spends its run's
// budget opens the budget's gate (under the registry's lock) without
// waiting for that write. The old code held the gates' lock through the
// write, and opened the budget's gate with its write under the
// registry's lock: both stalled.
func TestGateWriteLeavesTheRegistryFree(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	ctx := context.Background()
	h.m.reg.mu.Lock()
	h.m.reg.runs[testRun].Budget = &tokens.Budget{Tokens: 100}
	h.m.reg.mu.Unlock()
	g := h.ask(coord, 0)
	writing, release := h.holdGateWrites()
	answered := make(chan error, 1)
	go func() {
		_, err := h.m.AnswerGate(ctx, api.GateRequest{ID: g.ID, Option: "yes"})
		answered <- err
	}()
	select {
	case <-writing:
	case <-time.After(10 * time.Second):
		t.Fatal("the answer never wrote the gates")
	}
	runGuarded(t, "st gate list while an answer is being written", func() {
		gs := h.m.Gates(ctx, true)
		if len(gs) != 1 || gs[0].State != api.GateOpen {
			t.Errorf("st gate list while the answer is written: %+v, want gate %s still open", gs, g.ID)
		}
	})
	runGuarded(t, "who asked the gate, while it is being written", func() {
		if !h.m.AskedGate(coord, g.ID) {
			t.Errorf("AskedGate(%s, %s) = false while its answer is written", coord, g.ID)
		}
	})
	tr := newTranscript(t)
	tr.say(150, 0)
	hooked := make(chan error, 1)
	go func() {
		hooked <- h.hookFrom(workerID, "Stop", "transcript_path", tr.path, "last_assistant_message", "done")
	}()
	var budgetGate string
	testutil.WaitFor(t, 10*time.Second, func() (bool, string) {
		var open []api.Gate
		runGuarded(t, "st gate list while a budget's gate is opened", func() { open = h.m.Gates(ctx, false) })
		for _, o := range open {
			if o.ID != g.ID && strings.Contains(o.Question, "has spent its budget") {
				budgetGate = o.ID
			}
		}
		return budgetGate != "", "no budget gate yet"
	})
	runGuarded(t, "st status while a budget's gate waits for the gates' write", func() { h.m.Status() })
	runGuarded(t, "st worker list while a budget's gate waits for the gates' write", func() {
		if _, err := h.m.List(ctx, api.IDRequest{Pane: coord}); err != nil {
			t.Error(err)
		}
	})
	select {
	case err := <-answered:
		t.Fatalf("st gate answer answered (%v) before its answer was written", err)
	default:
	}
	release()
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
	if err := <-hooked; err != nil {
		t.Fatal(err)
	}
	if d := gateOnDisk(t, h.home, g.ID); d.State != api.GateAnswered || d.Answer != "yes" {
		t.Errorf("gates.json once the answer's write landed: %+v", d)
	}
	if d := gateOnDisk(t, h.home, budgetGate); d.State != api.GateOpen {
		t.Errorf("gates.json has the budget's gate %s as %s, want open", budgetGate, d.State)
	}
}

// A change of the gates that gates.json cannot keep is undone and
// refused with the cause: a new gate is not listed, an answer or a
// withdrawal leaves the gate open (on disk too) and its asker waiting,
// answer tokens answer nothing. Once the disk mends, each goes through.
func TestFailedGateWriteIsUndone(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	ctx := context.Background()
	mend := h.breakGateWrites()
	_, err := h.m.AskGate(ctx, api.GateRequest{Pane: workerID, Question: "Ship it?", Options: []string{"yes", "no"}})
	wantKind(t, err, api.KindInternal)
	if !strings.Contains(err.Error(), "no space left on device") {
		t.Errorf("the refusal %q does not say why", err)
	}
	if gs := h.m.Gates(ctx, true); len(gs) != 0 {
		t.Errorf("st gate list --all after a gate that could not be written: %+v", gs)
	}
	if w := h.worker(); w.State != api.Working {
		t.Errorf("a gate that could not be written moved its asker to %s", w.State)
	}
	mend()
	g := h.ask(workerID, 0)
	mend = h.breakGateWrites()
	_, err = h.m.AnswerGate(ctx, api.GateRequest{ID: g.ID, Option: "yes"})
	wantKind(t, err, api.KindInternal)
	_, err = h.m.WithdrawGate(ctx, api.GateRequest{Pane: workerID, ID: g.ID})
	wantKind(t, err, api.KindInternal)
	toks, err := h.m.MintAnswerTokens(g.ID)
	wantKind(t, err, api.KindInternal)
	if toks != nil {
		t.Errorf("tokens %v from a write that failed", toks)
	}
	if gs := h.m.Gates(ctx, false); len(gs) != 1 || gs[0].State != api.GateOpen || gs[0].Answer != "" || gs[0].AnsweredAt != nil {
		t.Errorf("st gate list after an answer and a withdrawal that could not be written: %+v", gs)
	}
	if d := gateOnDisk(t, h.home, g.ID); d.State != api.GateOpen || len(d.AnswerKeys) != 0 {
		t.Errorf("gates.json: %+v", d)
	}
	if w := h.worker(); w.State != api.Waiting {
		t.Errorf("the asker is %s after its gate's answer failed, want waiting", w.State)
	}
	mend()
	g2, toks := h.askWithTokens()
	if g2.ID == g.ID {
		t.Fatal("the same id twice")
	}
	a, err := h.m.AnswerGateByToken(ctx, toks["no"])
	if err != nil || a.Answer != "no" {
		t.Fatalf("an answer by token once the disk mended: %+v %v", a, err)
	}
	if a, err := h.m.AnswerGate(ctx, api.GateRequest{ID: g.ID, Option: "yes"}); err != nil || a.Answer != "yes" {
		t.Fatalf("the first gate's answer once the disk mended: %+v %v", a, err)
	}
}
