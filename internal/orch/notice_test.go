package orch

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/testutil"
)

// Notices: the lines st types into a coordinator between its turns. The
// noticer's take decides what one line says; these tests fill a noticer
// of their own by hand (with no loop running), so what take returns is
// all there is to see.

func worker(h *harness, id string) *Worker {
	h.m.reg.mu.Lock()
	defer h.m.reg.mu.Unlock()
	return h.m.reg.workers[id]
}

func TestNoticeNamesEveryDoneWorkerInOneLine(t *testing.T) {
	h := newHarness(t, api.Done, nil)
	h.addWorker(localWorker("%3", "w2", api.Done))
	n := newNoticer(h.m)
	w1, w2 := worker(h, workerID), worker(h, "%3")
	n.pending[coord] = []notice{{worker: w1}, {worker: w2}}

	line, covers := n.take(coord)
	if want := "st: 2 workers are done: w1 (%2), w2 (%3). Read each report with: /bin/st worker read ID"; line != want {
		t.Errorf("line %q, want %q", line, want)
	}
	if len(covers) != 2 {
		t.Errorf("the line covers %d notices, want 2", len(covers))
	}

	// The coordinator read w1's report meanwhile: only w2 is left to tell.
	if _, err := h.m.Wait(context.Background(), api.WaitRequest{Pane: coord, IDs: []string{"w1"}}); err != nil {
		t.Fatal(err)
	}
	line, covers = n.take(coord)
	if want := "st: worker w2 (%3) is done. Read its report with: /bin/st worker read %3"; line != want {
		t.Errorf("line %q, want %q", line, want)
	}
	if len(covers) != 1 || covers[0].worker != w2 {
		t.Errorf("covers %v", covers)
	}

	// Typed: the report is seen, on disk too, and nothing is left.
	n.finish(coord, covers)
	if d := runWorker(ptr(h.seenRunOnDisk()), "%3"); d == nil || !d.Told {
		t.Errorf("run.json after the notice was typed: %+v", d)
	}
	if line, _ := n.take(coord); line != "" {
		t.Errorf("left to type: %q", line)
	}
}

func ptr[T any](v T) *T { return &v }

// A worker that is no longer done (a new turn), or no longer a worker
// here, is not announced.
func TestNoticeDropsWhatNoLongerHolds(t *testing.T) {
	h := newHarness(t, api.Done, nil)
	h.addWorker(localWorker("%3", "w2", api.Done))
	n := newNoticer(h.m)
	n.pending[coord] = []notice{{worker: worker(h, workerID)}, {worker: worker(h, "%3")}}
	h.hook("UserPromptSubmit", "prompt", "one more thing") // w1 works again
	h.m.reg.mu.Lock()
	h.m.reg.removeWorkerLocked(h.m.reg.workers["%3"]) // w2 released
	h.m.reg.mu.Unlock()
	if line, covers := n.take(coord); line != "" || covers != nil {
		t.Errorf("take = %q %v, want nothing", line, covers)
	}
	if len(n.pending[coord]) != 0 {
		t.Errorf("kept: %v", n.pending[coord])
	}
}

// A plain line (a released worker's "you are no one's worker now") goes
// before the done lines, alone.
func TestNoticePlainLineFirst(t *testing.T) {
	h := newHarness(t, api.Done, nil)
	n := newNoticer(h.m)
	const plain = "st: you are no one's worker now"
	n.pending[coord] = []notice{{worker: worker(h, workerID)}, {text: plain}}
	line, covers := n.take(coord)
	if line != plain || len(covers) != 1 || covers[0].text != plain {
		t.Fatalf("take = %q %v, want the plain line alone", line, covers)
	}
	n.finish(coord, covers)
	if h.seenOnDisk().Told {
		t.Error("typing a plain line marked a report as seen")
	}
	line, _ = n.take(coord)
	if want := "st: worker w1 (%2) is done. Read its report with: /bin/st worker read %2"; line != want {
		t.Errorf("then %q, want %q", line, want)
	}
}

// A coordinator pane where no agent runs (a shell) gets nothing typed;
// the report stays unseen, for st worker wait to show.
func TestNoticeToAShellTypesNothing(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	if _, err := h.m.Done(context.Background(), api.DoneRequest{Pane: workerID, Summary: "did it"}); err != nil {
		t.Fatal(err)
	}
	// The notice loop of %1 runs, finds no agent there, and ends.
	testutil.WaitFor(t, 10*time.Second, func() (bool, string) {
		n := h.m.notices
		n.mu.Lock()
		defer n.mu.Unlock()
		_, running := n.kicks[coord]
		return !running && len(n.pending[coord]) == 0, "the notice loop of the coordinator still runs"
	})
	h.tm.Lock()
	typed := append([]string(nil), h.tm.Unexpected...)
	h.tm.Unlock()
	if len(typed) != 0 {
		t.Errorf("tmux commands into the shell: %v", typed)
	}
	if d := h.seenOnDisk(); d.Told || d.State != api.Done {
		t.Errorf("run.json: %s told=%v, want done and not told", d.State, d.Told)
	}
	res, err := h.m.Wait(context.Background(), api.WaitRequest{Pane: coord, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.TimedOut || len(res.Workers) != 1 || res.Workers[0].State != api.Done || res.Workers[0].Summary != "did it" {
		t.Errorf("Wait = %+v", res)
	}
	if !h.seenOnDisk().Told {
		t.Error("the report is not seen after the coordinator's wait showed it")
	}
}

// A done notice is queued once per worker, however often it is asked for.
func TestNoticeQueuedOnce(t *testing.T) {
	h := newHarness(t, api.Done, nil)
	// The coordinator is an agent in a turn: its notices wait.
	if err := h.hookFrom(coord, "UserPromptSubmit", "prompt", "go"); err != nil {
		t.Fatal(err)
	}
	w := worker(h, workerID)
	h.m.notices.queueDone(coord, w)
	h.m.notices.queueDone(coord, w)
	if got := h.pendingNotices(coord); len(got) != 1 {
		t.Errorf("pending %v, want one notice", got)
	}
}

// A coordinator is told of a report once, whatever its worker does
// meanwhile (issue 32, item 9). The worker w1 reports, and at the same
// moment a notice of its own worker's report is typed into w1: that turn
// (a notice, not new work) moves w1 to working and back to done with the
// same report standing, while st types "w1 is done" into the
// coordinator. The two run at once, many times; every report must be
// typed into the coordinator exactly once.
func TestDoneNoticeTypedOnceWhileTheWorkerIsToldOfItsOwn(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	// The coordinator is an agent in a turn: the noticer's own loop
	// leaves its notices pending, and this test types them (take, finish).
	if err := h.hookFrom(coord, "UserPromptSubmit", "prompt", "go"); err != nil {
		t.Fatal(err)
	}
	n := h.m.notices
	const ownNotice = "st: worker w2 (%3) is done. Read its report with: /bin/st worker read %3"
	typeAll := func() int {
		typed := 0
		for {
			line, covers := n.take(coord)
			if line == "" {
				return typed
			}
			typed++
			n.finish(coord, covers)
		}
	}
	for i := range 300 {
		h.hook("UserPromptSubmit", "prompt", fmt.Sprintf("task %d", i))
		if _, err := h.m.Done(context.Background(), api.DoneRequest{Pane: workerID, Summary: fmt.Sprintf("report %d", i)}); err != nil {
			t.Fatal(err)
		}
		var typed atomic.Int32
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { // st types "w1 is done" into the coordinator
			defer wg.Done()
			typed.Add(int32(typeAll()))
		}()
		go func() { // w1's turn of its own worker's notice
			defer wg.Done()
			h.m.facts.markNotice(workerID, ownNotice)
			h.hook("UserPromptSubmit", "prompt", ownNotice)
			h.hook("Stop", "last_assistant_message", "read w2's report")
		}()
		wg.Wait()
		typed.Add(int32(typeAll())) // what is left once both are over
		if got := typed.Load(); got != 1 {
			t.Fatalf("trial %d: the report of w1 was typed into the coordinator %d times, want once", i, got)
		}
		h.m.reg.mu.Lock()
		st, told := h.m.reg.workers[workerID].State, h.m.reg.workers[workerID].Told
		h.m.reg.mu.Unlock()
		if st != api.Done || !told {
			t.Fatalf("trial %d: w1 is %s, told=%v; want done, and its report seen (the notice named it)", i, st, told)
		}
	}
}
