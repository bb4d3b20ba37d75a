package orch

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/testutil"
)

// A report is one change (report.go): one write of run.json, and only
// once that is on disk the coordinator's notice and the starts of the
// tasks it made ready. A report that cannot be kept tells no one.

// reportHarness is a run whose worker %2 runs task a; b waits on a and c
// on b. b's start, once tried, fails at its first check after the
// caller's pane is looked up (its folder does not exist), so holding the
// fake's commands holds it there. The coordinator is an agent in a turn,
// so a done notice to it waits in the noticer, where the test sees it.
func reportHarness(t *testing.T) *harness {
	h := newHarness(t, api.Working, nil)
	if err := h.hookFrom(coord, "UserPromptSubmit", "prompt", "start the workers"); err != nil {
		t.Fatal(err)
	}
	h.addTasks(&Task{Name: "a", State: api.TaskRunning, Worker: workerID},
		&Task{Name: "b", Deps: []string{"a"}, State: api.TaskWaiting, Reason: "waiting on a", File: h.taskFile("b"), Cwd: filepath.Join(h.home, "no-such-folder")},
		&Task{Name: "c", Deps: []string{"b"}, State: api.TaskWaiting, Reason: "waiting on b"})
	return h
}

func TestReportIsOneWriteThenItsEffects(t *testing.T) {
	h := reportHarness(t)
	writes := h.m.reg.saver.writes.Load()
	release := h.holdTmux()
	defer release()

	var v *api.WorkerView
	var err error
	runGuarded(t, "Done", func() {
		v, err = h.m.Done(context.Background(), api.DoneRequest{Pane: workerID, Summary: "did a; tests pass"})
	})
	if err != nil {
		t.Fatal(err)
	}
	// When Done returns: one write, holding the report and all it moved.
	if n := h.m.reg.saver.writes.Load() - writes; n != 1 {
		t.Errorf("%d writes of run.json for one report, want 1", n)
	}
	disk := h.runOnDisk()
	if w := runWorker(&disk, workerID); w == nil || w.State != api.Done || w.Summary != "did a; tests pass" || !w.Reported {
		t.Errorf("run.json's worker right after Done: %+v", w)
	}
	want := map[string]api.TaskState{"a": api.TaskDone, "b": api.TaskRunning, "c": api.TaskWaiting}
	for name, state := range want {
		if got := runTask(&disk, name); got.State != state {
			t.Errorf("run.json right after Done: task %s %s (%s), want %s", name, got.State, got.Reason, state)
		}
	}
	if got := runTask(&disk, "b").Worker; got != "" {
		t.Errorf("b has worker %q before its start ran", got)
	}
	if v.State != api.Done {
		t.Errorf("Done returned %s", v.State)
	}
	// The notice is queued (after the write: Done holds the lock until then).
	if got := h.pendingNotices(coord); len(got) != 1 || got[0] != "done "+workerID {
		t.Errorf("notices for the coordinator: %v, want worker %s's", got, workerID)
	}

	// b's start goes on once tmux answers; it fails, and c with it, in one
	// more write.
	release()
	h.waitTask("b", api.TaskFailed)
	h.wantTask("b", api.TaskFailed, "its worker did not start: the worker's folder "+filepath.Join(h.home, "no-such-folder")+" does not exist")
	h.wantTask("c", api.TaskFailed, "did not start: its dependency b failed")
	testutil.WaitFor(t, 10*time.Second, func() (bool, string) {
		n := h.m.reg.saver.writes.Load() - writes
		return n >= 2, fmt.Sprintf("%d writes so far, want 2", n)
	})
	if n := h.m.reg.saver.writes.Load() - writes; n != 2 {
		t.Errorf("%d writes for the report and the failed start of b, want 2", n)
	}
}

func TestReportThatCannotBeKeptIsUndone(t *testing.T) {
	h := reportHarness(t)
	before := h.runOnDisk()
	h.breakSaves()
	_, err := h.m.Done(context.Background(), api.DoneRequest{Pane: workerID, Summary: "the undone report"})
	wantKind(t, err, api.KindInternal)
	if !strings.Contains(err.Error(), "st could not keep run "+testRun) || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("error %q does not say what could not be kept and why", err)
	}
	check := func(when string) {
		t.Helper()
		if w := h.worker(); w.State != api.Working || w.Summary != "" || w.Reported || w.ReportedAt != nil {
			t.Errorf("%s: st worker read shows %s %q reported=%v", when, w.State, w.Summary, w.Reported)
		}
		if d := h.onDisk(); d.State != api.Working || d.Summary != "" || d.Reported {
			t.Errorf("%s: run.json has the worker %s %q", when, d.State, d.Summary)
		}
		h.wantTask("a", api.TaskRunning, "")
		h.wantTask("b", api.TaskWaiting, "waiting on a")
		h.wantTask("c", api.TaskWaiting, "waiting on b")
		if got := h.tasks()["a"].Worker; got != workerID {
			t.Errorf("%s: task a's worker %q", when, got)
		}
		if got := h.pendingNotices(coord); len(got) != 0 {
			t.Errorf("%s: notices queued for an undone report: %v", when, got)
		}
	}
	check("after the failed report")
	// Once the disk mends, the saver writes the run as it is, never the
	// undone report.
	writes := h.m.reg.saver.writes.Load()
	h.fixSaves()
	testutil.WaitFor(t, 10*time.Second, func() (bool, string) {
		return h.m.reg.saver.writes.Load() > writes, "the saver did not write run-t1 once the disk mended"
	})
	check("once the disk mended")
	if after := h.runOnDisk(); len(after.Workers) != len(before.Workers) || len(after.Tasks) != len(before.Tasks) {
		t.Errorf("run.json once the disk mended: %+v, before: %+v", after, before)
	}
	// The worker can report again, and now it holds.
	if _, err := h.m.Done(context.Background(), api.DoneRequest{Pane: workerID, Summary: "the kept report"}); err != nil {
		t.Fatal(err)
	}
	if d := h.onDisk(); d.State != api.Done || d.Summary != "the kept report" {
		t.Errorf("run.json after the second report: %s %q", d.State, d.Summary)
	}
}

// TestReportWritesCountAWholeReport (issue 26 item 7): a whole report,
// from st worker done to its coordinator seeing it, is two writes of
// run.json, not the three it was (the report, the Stop hook, the seen
// mark): the report's own, on disk before it is acknowledged, and its
// turn's end (the answer it came with), which carries the seen mark when
// the coordinator saw the report first (st worker wait, the common way).
// A seen mark that comes after the turn's end (a notice typed once the
// coordinator's own turn ended) rides with the run's next write, or is
// written alone once softLinger passed: what a crash loses of it is a
// report shown twice, never a report.
func TestReportWritesCountAWholeReport(t *testing.T) {
	writes := func(h *harness, since uint64) uint64 { return h.m.reg.saver.writes.Load() - since }
	t.Run("the coordinator waits for it", func(t *testing.T) {
		h := newHarness(t, api.Working, nil)
		w0 := h.m.reg.saver.writes.Load()
		if _, err := h.m.Done(context.Background(), api.DoneRequest{Pane: workerID, Summary: "did it"}); err != nil {
			t.Fatal(err)
		}
		if n := writes(h, w0); n != 1 {
			t.Fatalf("%d writes for st worker done, want 1 (on disk before it is acknowledged)", n)
		}
		if _, err := h.m.Wait(context.Background(), api.WaitRequest{Pane: coord, IDs: []string{"w1"}}); err != nil {
			t.Fatal(err)
		}
		h.m.Sync() // what the daemon does before it answers the wait
		h.hook("Stop", "last_assistant_message", "Reported.", "background_tasks", noTasks)
		h.m.Sync()
		if n := writes(h, w0); n != 2 {
			t.Errorf("%d writes for a whole report (done, the wait, the Stop hook), want 2", n)
		}
		if d := h.onDisk(); d.State != api.Done || d.Summary != "did it" || d.ReportAnswer != "Reported." || !d.Told {
			t.Errorf("run.json after the two writes: %s %q answer %q told=%v, want all of the report, seen", d.State, d.Summary, d.ReportAnswer, d.Told)
		}
	})
	t.Run("a notice tells it after the turn's end", func(t *testing.T) {
		h := newHarness(t, api.Working, nil)
		h.addWorker(localWorker("%3", "w2", api.Working))
		// The coordinator is in a turn: the notice waits in the noticer.
		if err := h.hookFrom(coord, "UserPromptSubmit", "prompt", "go on"); err != nil {
			t.Fatal(err)
		}
		w0 := h.m.reg.saver.writes.Load()
		if _, err := h.m.Done(context.Background(), api.DoneRequest{Pane: workerID, Summary: "did it"}); err != nil {
			t.Fatal(err)
		}
		h.hook("Stop", "last_assistant_message", "Reported.", "background_tasks", noTasks)
		line, covers := h.m.notices.take(coord)
		if len(covers) != 1 {
			t.Fatalf("the notice: %q covers %d, want w1's", line, len(covers))
		}
		h.m.notices.finish(coord, covers) // typed
		h.m.Sync()
		if n := writes(h, w0); n != 2 {
			t.Errorf("%d writes for the report, its Stop hook and the notice, want 2", n)
		}
		if h.onDisk().Told {
			t.Error("the seen mark was written alone at once")
		}
		// The run's next write (w2 starts a turn) carries it.
		if err := h.hookFrom("%3", "UserPromptSubmit", "prompt", "more"); err != nil {
			t.Fatal(err)
		}
		h.m.Sync()
		if n := writes(h, w0); n != 3 {
			t.Errorf("%d writes with w2's turn, want 3 (the seen mark rides with it)", n)
		}
		if !h.onDisk().Told {
			t.Error("the run's next write did not carry the seen mark")
		}
	})
	t.Run("alone, after the linger", func(t *testing.T) {
		h := newHarness(t, api.Done, nil)
		h.m.reg.saver.mu.Lock()
		h.m.reg.saver.linger = 50 * time.Millisecond
		h.m.reg.saver.mu.Unlock()
		w0 := h.m.reg.saver.writes.Load()
		if _, err := h.m.Wait(context.Background(), api.WaitRequest{Pane: coord, IDs: []string{"w1"}}); err != nil {
			t.Fatal(err)
		}
		testutil.WaitFor(t, 10*time.Second, func() (bool, string) {
			return h.onDisk().Told, "the seen mark is not on disk after the linger"
		})
		if n := writes(h, w0); n != 1 {
			t.Errorf("%d writes for the seen mark alone, want 1", n)
		}
	})
}

// A wait's answer marks its reports seen, a soft change: it takes no
// snapshot of the run then (each wait that returned encoded the whole
// run under the registry's lock), and the seen mark still reaches the
// disk with the run's next write.
func TestWaitsAnswerTakesNoSnapshot(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	if _, err := h.m.Done(context.Background(), api.DoneRequest{Pane: workerID, Summary: "did it"}); err != nil {
		t.Fatal(err)
	}
	s0, w0 := h.m.reg.saver.snaps.Load(), h.m.reg.saver.writes.Load()
	if _, err := h.m.Wait(context.Background(), api.WaitRequest{Pane: coord, IDs: []string{"w1"}}); err != nil {
		t.Fatal(err)
	}
	h.m.Sync() // what the daemon does before it answers the wait
	if s, w := h.m.reg.saver.snaps.Load()-s0, h.m.reg.saver.writes.Load()-w0; s != 0 || w != 0 {
		t.Errorf("the wait's answer took %d snapshots and %d writes, want none", s, w)
	}
	if d := h.seenOnDisk(); !d.Told {
		t.Errorf("run.json once written: told=%v, want the report seen", d.Told)
	}
}
