package orch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/testutil"
)

// Reports with no disk under the registry's lock (keep.go, issue 36 item
// 1): reports that arrive while a write is under way go to disk together,
// a failed write undoes every report in it, and nothing acts on a report
// before it is on disk.

// burstHarness is newHarness with k workers working in run-t1 (w1 and
// w2.., panes %2, %10..), and a coordinator in a turn (so that done
// notices wait in the noticer, where the test sees them).
func burstHarness(t *testing.T, k int) (*harness, []string) {
	h := newHarness(t, api.Working, nil)
	ids := []string{workerID}
	for i := 2; i <= k; i++ {
		id := fmt.Sprintf("%%%d", 8+i)
		h.addWorker(localWorker(id, fmt.Sprintf("w%d", i), api.Working))
		ids = append(ids, id)
	}
	if err := h.hookFrom(coord, "UserPromptSubmit", "prompt", "start the workers"); err != nil {
		t.Fatal(err)
	}
	return h, ids
}

// holdWrites holds the saver's writer (its write lock, which every write
// takes) until release: a disk that is slow to answer.
func (h *harness) holdWrites() (release func()) {
	h.m.reg.saver.wmu.Lock()
	held := true
	return func() {
		if held {
			held = false
			h.m.reg.saver.wmu.Unlock()
		}
	}
}

// reportAll runs st worker done for each worker at once; each answer
// comes on the channel (nil: kept).
func (h *harness) reportAll(ids []string, summary string) <-chan error {
	errs := make(chan error, len(ids))
	for _, id := range ids {
		go func(id string) {
			_, err := h.m.Done(context.Background(), api.DoneRequest{Pane: id, Summary: summary + " " + id})
			errs <- err
		}(id)
	}
	return errs
}

// awaitInFlight waits until k reports are staged and waiting for the disk.
func (h *harness) awaitInFlight(k int) {
	h.t.Helper()
	testutil.WaitFor(h.t, 10*time.Second, func() (bool, string) {
		h.m.reg.mu.Lock()
		n := len(h.m.reg.unsure)
		h.m.reg.mu.Unlock()
		return n == k, fmt.Sprintf("%d reports in flight, want %d", n, k)
	})
}

func TestReportsWhileAWriteIsUnderWayShareTheNext(t *testing.T) {
	const k = 6
	h, ids := burstHarness(t, k)
	release := h.holdWrites()
	defer release()
	w0 := h.m.reg.saver.writes.Load()
	errs := h.reportAll(ids, "did it")
	h.awaitInFlight(k)

	// While the disk works, the registry's lock is free: other requests
	// are answered.
	runGuarded(t, "st status while reports wait for the disk", func() {
		if s := h.m.Status(); s.Workers != k {
			t.Errorf("st status shows %d workers, want %d", s.Workers, k)
		}
	})
	// Nothing acts on a report not on disk: no wait returns it, no notice
	// is queued, no caller is answered.
	res, err := h.m.Wait(context.Background(), api.WaitRequest{Pane: coord, IDs: []string{"w1"}, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut {
		t.Errorf("st worker wait returned a report not on disk yet: %+v", res.Workers)
	}
	if got := h.pendingNotices(coord); len(got) != 0 {
		t.Errorf("notices queued for reports not on disk yet: %v", got)
	}
	select {
	case err := <-errs:
		t.Fatalf("st worker done answered (%v) before its report was on disk", err)
	default:
	}
	if d := h.onDisk(); d.State != api.Working {
		t.Fatalf("run.json has w1 %s while the writer was held", d.State)
	}

	release()
	for range ids {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := h.m.reg.saver.writes.Load() - w0; n != 1 {
		t.Errorf("%d writes of run.json for %d reports staged together, want 1", n, k)
	}
	disk := h.runOnDisk()
	for _, id := range ids {
		if w := runWorker(&disk, id); w == nil || w.State != api.Done || w.Summary != "did it "+id {
			t.Errorf("run.json's worker %s: %+v", id, w)
		}
	}
	if got := h.pendingNotices(coord); len(got) != k {
		t.Errorf("notices for the coordinator once on disk: %v, want %d", got, k)
	}
	res, err = h.m.Wait(context.Background(), api.WaitRequest{Pane: coord, IDs: []string{"w1"}, Timeout: 10 * time.Second})
	if err != nil || res.TimedOut || len(res.Workers) != 1 || res.Workers[0].State != api.Done {
		t.Errorf("st worker wait once on disk: %+v, %v", res, err)
	}
}

func TestFailedWriteUndoesEveryReportInIt(t *testing.T) {
	const k = 4
	h, ids := burstHarness(t, k)
	h.addTasks(&Task{Name: "a", State: api.TaskRunning, Worker: workerID},
		&Task{Name: "b", Deps: []string{"a"}, State: api.TaskWaiting, Reason: "waiting on a", File: h.taskFile("b"),
			Cwd: filepath.Join(h.home, "no-such-folder")}) // b's start fails at its first check
	release := h.holdWrites()
	defer release()
	// The disk breaks while the writer is held (under its lock: see
	// breakSaves).
	blocker := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h.m.reg.saver.path = func(id string) string { return filepath.Join(blocker, id, "run.json") }
	errs := h.reportAll(ids, "lost")
	h.awaitInFlight(k)
	release()
	for range ids {
		err := <-errs
		wantKind(t, err, api.KindInternal)
		if err != nil && !strings.Contains(err.Error(), "st could not keep run "+testRun) {
			t.Errorf("error %q does not say what could not be kept", err)
		}
	}
	h.fixSaves()
	check := func(when string) {
		t.Helper()
		views := map[string]api.WorkerView{}
		list, err := h.m.List(context.Background(), api.IDRequest{Pane: coord, All: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range list {
			views[v.ID] = v
		}
		for _, id := range ids {
			if v := views[id]; v.State != api.Working || v.Summary != "" {
				t.Errorf("%s: st worker list shows %s %s %q", when, id, v.State, v.Summary)
			}
		}
		h.wantTask("a", api.TaskRunning, "")
		h.wantTask("b", api.TaskWaiting, "waiting on a")
		if got := h.pendingNotices(coord); len(got) != 0 {
			t.Errorf("%s: notices queued for undone reports: %v", when, got)
		}
	}
	check("after the failed write")
	// The saver writes the run as it is now, never the undone reports.
	h.m.Sync()
	check("once the disk mended")
	disk := h.runOnDisk()
	for _, id := range ids {
		if w := runWorker(&disk, id); w == nil || w.State != api.Working || w.Reported {
			t.Errorf("run.json once the disk mended: worker %s %+v", id, w)
		}
	}
	// Reported again, they hold.
	errs = h.reportAll(ids, "kept")
	for range ids {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	h.wantTask("a", api.TaskDone, "")
	h.waitTask("b", api.TaskFailed) // its start ran, once a's report was kept
}

// A gate's question is written to gates.json under the gates' own lock,
// not the manager's: while that write is held, st status is answered,
// and once it lands the asker waits for its answer.
func TestGateIsWrittenWithTheManagerFree(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	h.m.gates.wmu.Lock() // the gate book busy (its write under way)
	held := true
	defer func() {
		if held {
			h.m.gates.wmu.Unlock()
		}
	}()
	asked := make(chan error, 1)
	go func() {
		_, err := h.m.AskGate(context.Background(), api.GateRequest{Pane: workerID, Question: "ship it?", Options: []string{"yes", "no"}})
		asked <- err
	}()
	// AskGate is at the gate's write (blocked on the gates' lock).
	testutil.WaitFor(t, 10*time.Second, func() (bool, string) {
		buf := make([]byte, 1<<20)
		return strings.Contains(string(buf[:runtime.Stack(buf, true)]), "(*gateBook).open("), "AskGate never reached the gate's write"
	})
	runGuarded(t, "st status while a gate is being written", func() { h.m.Status() })
	select {
	case err := <-asked:
		t.Fatalf("st gate ask answered (%v) before its gate was written", err)
	default:
	}
	held = false
	h.m.gates.wmu.Unlock()
	if err := <-asked; err != nil {
		t.Fatal(err)
	}
	if w := h.worker(); w.State != api.Waiting {
		t.Errorf("the asker is %s once its gate is written, want waiting", w.State)
	}
}

// A task created waiting, whose dependency's report comes while the
// task's own write is under way, is started once: by that report (the
// write the two share), not again by st task create, which saw it
// waiting when it made it (tasks.txtar's diamond hit this).
func TestTaskMadeReadyDuringItsWriteStartsOnce(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	h.addTasks(&Task{Name: "a", State: api.TaskRunning, Worker: workerID})
	log := h.captureLog()
	release := h.holdWrites()
	defer release()
	created := make(chan error, 1)
	go func() {
		_, err := h.m.CreateTask(context.Background(), api.TaskRequest{Pane: coord, Name: "b", File: h.taskFile("b"), Agent: "sim",
			Deps: []string{"a"}, Cwd: filepath.Join(h.home, "no-such-folder")}) // b's start fails at its first check
		created <- err
	}()
	testutil.WaitFor(t, 10*time.Second, func() (bool, string) {
		h.m.reg.mu.Lock()
		defer h.m.reg.mu.Unlock()
		return runTask(h.m.reg.runs[testRun], "b") != nil, "task b was never staged"
	})
	reported := h.reportAll([]string{workerID}, "did a")
	h.awaitInFlight(1)
	release()
	if err := <-created; err != nil {
		t.Fatal(err)
	}
	if err := <-reported; err != nil {
		t.Fatal(err)
	}
	h.waitTask("b", api.TaskFailed)
	h.wantTask("b", api.TaskFailed, "its worker did not start: the worker's folder "+filepath.Join(h.home, "no-such-folder")+" does not exist")
	if n := log.count("task b of run " + testRun + ": starting its worker"); n != 1 {
		t.Errorf("task b's worker was started %d times, want once", n)
	}
}

// A bug that panics inside a change lets the registry's lock go: the
// request that met it fails, and the daemon's next request is answered
// rather than hung behind a lock held for ever.
func TestPanicInAChangeLetsTheLockGo(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the change's panic did not go on up")
			}
		}()
		h.m.settleChange(func(c *change) { panic("a bug") })
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.m.settleChange(func(c *change) {})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the next change waited for the lock the panic left held")
	}
}
