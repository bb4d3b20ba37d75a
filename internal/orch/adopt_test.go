package orch

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/tmux"
)

// An adoption's write with no disk under the registry's lock (issue 36
// item 1): staged, written with the lock let go, undone when the disk
// cannot keep it.

// adoptShell has the coordinator adopt the agent in the shell's pane, in
// the background; its answer comes on the channel.
func (h *harness) adoptShell() <-chan error {
	h.claudeHook(shell, nil, "SessionStart", "source", "startup")
	done := make(chan error, 1)
	go func() {
		_, err := h.m.Adopt(context.Background(), api.IDRequest{Pane: coord, ID: shell})
		done <- err
	}()
	return done
}

// awaitFlying waits until a change is staged and waiting for the disk
// with the registry's lock let go (a write under the lock fails the
// test, rather than hang it).
func (h *harness) awaitFlying() {
	h.t.Helper()
	testutil.WaitFor(h.t, 10*time.Second, func() (bool, string) {
		if !h.m.reg.mu.TryLock() {
			return false, "the registry's lock is held (a write under it?), no change in flight"
		}
		n := len(h.m.reg.flying)
		h.m.reg.mu.Unlock()
		return n > 0, "no change in flight"
	})
}

// While an adoption's write is held up, st status and st worker list are
// answered, and the adoption answers only once its worker is on disk,
// with st's relations on its pane.
func TestAdoptionIsWrittenWithTheManagerFree(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	release := h.holdWrites()
	defer release()
	adopted := h.adoptShell()
	h.awaitFlying()
	runGuarded(t, "st status while an adoption is being written", func() { h.m.Status() })
	runGuarded(t, "st worker list while an adoption is being written", func() {
		if _, err := h.m.List(context.Background(), api.IDRequest{Pane: coord}); err != nil {
			t.Error(err)
		}
	})
	select {
	case err := <-adopted:
		t.Fatalf("st worker adopt answered (%v) before its worker was written", err)
	default:
	}
	release()
	if err := <-adopted; err != nil {
		t.Fatal(err)
	}
	found := false
	for _, w := range h.runOnDisk().Workers {
		found = found || w.ID == shell
	}
	if !found {
		t.Errorf("run.json has no worker %s once st worker adopt answered", shell)
	}
	if got := h.tm.Option(shell, "@st_run"); got != testRun {
		t.Errorf("the adopted pane's @st_run is %q, want %s", got, testRun)
	}
}

// An adoption the disk cannot keep is undone: refused with the cause, no
// worker in st worker list, no relations on the pane; once the disk
// works, the same adoption goes through.
func TestFailedAdoptionWriteIsUndone(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	h.breakSaves()
	err := <-h.adoptShell()
	wantKind(t, err, api.KindInternal)
	vs, lerr := h.m.List(context.Background(), api.IDRequest{Pane: coord})
	if lerr != nil {
		t.Fatal(lerr)
	}
	for _, v := range vs {
		if v.ID == shell {
			t.Errorf("st worker list shows %s after its adoption failed: %+v", shell, v)
		}
	}
	if got := h.tm.Option(shell, "@st_run"); got != "" {
		t.Errorf("the pane of a failed adoption carries @st_run=%q", got)
	}
	h.fixSaves()
	if err := <-h.adoptShell(); err != nil {
		t.Fatalf("the adoption once the disk works: %v", err)
	}
}

// A listing of the panes taken while an adoption's options were being put
// on its pane does not make the adopted worker gone; one taken after
// them judges it as any other.
func TestListingBeforeAdoptedPaneIsMarkedLeavesItAlone(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	releaseWrites := h.holdWrites()
	defer releaseWrites()
	adopted := h.adoptShell()
	h.awaitFlying()
	releaseTmux := h.holdTmux() // its options wait for the server
	defer releaseTmux()
	listed := h.m.cfg.Now().Add(time.Millisecond)
	releaseWrites()
	// The adoption is written and waits to set its pane's options: a
	// listing now finds the pane with none.
	panes := []tmux.Pane{{ID: coord, StRun: testRun}, {ID: workerID, StRun: testRun}, {ID: shell}}
	testutil.WaitFor(t, 10*time.Second, func() (bool, string) {
		h.m.reg.mu.Lock()
		n := len(h.m.reg.flying)
		h.m.reg.mu.Unlock()
		return n == 0, fmt.Sprintf("%d changes in flight", n)
	})
	h.m.reconcilePanes(panes, listed, h.m.rest.gen())
	releaseTmux()
	if err := <-adopted; err != nil {
		t.Fatal(err)
	}
	v, err := h.m.Read(context.Background(), api.IDRequest{ID: shell})
	if err != nil {
		t.Fatal(err)
	}
	if v.State == api.Gone {
		t.Fatalf("a listing taken before the adopted pane's options were set made it gone")
	}
	// A listing after them that does not find the pane judges it gone.
	h.m.reconcilePanes(panes[:2], h.m.cfg.Now().Add(time.Millisecond), h.m.rest.gen())
	if v, _ := h.m.Read(context.Background(), api.IDRequest{ID: shell}); v.State != api.Gone {
		t.Errorf("after a later listing without its pane, the adopted worker is %s, want gone", v.State)
	}
}
