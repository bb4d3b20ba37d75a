package orch

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/testutil"
)

func TestWaitReturnsAtOnceForSettledWorkers(t *testing.T) {
	for _, s := range []api.State{api.Idle, api.Waiting, api.Done, api.Blocked, api.Failed, api.Gone} {
		t.Run(string(s), func(t *testing.T) {
			h := newHarness(t, s, nil)
			start := time.Now()
			res, err := h.m.Wait(context.Background(), api.WaitRequest{Pane: coord, Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if el := time.Since(start); el > 5*time.Second {
				t.Errorf("Wait took %s for a %s worker", el, s)
			}
			if res.TimedOut || len(res.Workers) != 1 || res.Workers[0].State != s || res.Workers[0].Run != testRun {
				t.Errorf("Wait = %+v", res)
			}
			// The parent has now seen a report.
			if told := h.seenOnDisk().Told; told != (s == api.Done) {
				t.Errorf("told on disk = %v after the parent waited for a %s worker", told, s)
			}
		})
	}
}

func TestWaitTimesOut(t *testing.T) {
	for _, s := range []api.State{api.Starting, api.Working} {
		t.Run(string(s), func(t *testing.T) {
			h := newHarness(t, s, nil)
			const timeout = 100 * time.Millisecond
			start := time.Now()
			res, err := h.m.Wait(context.Background(), api.WaitRequest{Pane: coord, IDs: []string{"w1"}, Timeout: timeout})
			if err != nil {
				t.Fatal(err)
			}
			if el := time.Since(start); el < timeout {
				t.Errorf("Wait returned after %s, before its timeout of %s", el, timeout)
			}
			if !res.TimedOut || len(res.Workers) != 1 || res.Workers[0].State != s {
				t.Errorf("Wait = %+v, want timed out with the worker %s", res, s)
			}
		})
	}
}

func TestWaitIsWokenByAHook(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	type result struct {
		res *api.WaitResult
		err error
		el  time.Duration
	}
	ch := make(chan result, 1)
	start := time.Now()
	go func() {
		res, err := h.m.Wait(context.Background(), api.WaitRequest{Pane: coord, Timeout: 30 * time.Second})
		ch <- result{res, err, time.Since(start)}
	}()
	// Once Wait is parked in its select, it can only be the hook's
	// wake-up that ends it.
	testutil.WaitBlocked(t, 10*time.Second, "orch.(*Manager).Wait")
	select {
	case r := <-ch:
		t.Fatalf("Wait returned before the hook: %+v, %v", r.res, r.err)
	default:
	}
	h.hook("Stop", "last_assistant_message", "stopped", "background_tasks", noTasks)
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.el > 5*time.Second {
			t.Errorf("Wait took %s after the hook", r.el)
		}
		if r.res.TimedOut || r.res.Workers[0].State != api.Idle || r.res.Workers[0].LastAnswer != "stopped" {
			t.Errorf("Wait = %+v", r.res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait was not woken by the Stop hook")
	}
}

func TestWaitEndsWithItsContext(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := h.m.Wait(ctx, api.WaitRequest{Pane: coord}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait error = %v, want the context's", err)
	}
}

func TestWaitByNameFromAnotherPane(t *testing.T) {
	h := newHarness(t, api.Done, nil)
	res, err := h.m.Wait(context.Background(), api.WaitRequest{Pane: shell, IDs: []string{"w1"}, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Workers) != 1 || res.Workers[0].ID != workerID {
		t.Fatalf("Wait = %+v", res)
	}
	if h.seenOnDisk().Told {
		t.Error("a pane that is not the parent marked the report as seen")
	}
}

func TestWaitRefusals(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	tests := []struct {
		name string
		req  api.WaitRequest
		kind string
	}{
		{"no pane and no ids", api.WaitRequest{Timeout: time.Second}, api.KindUsage},
		{"a pane with no workers", api.WaitRequest{Pane: shell, Timeout: time.Second}, api.KindNotFound},
		{"an unknown name", api.WaitRequest{Pane: coord, IDs: []string{"nosuch"}, Timeout: time.Second}, api.KindNotFound},
		{"an unknown pane id", api.WaitRequest{Pane: coord, IDs: []string{"%77"}, Timeout: time.Second}, api.KindNotFound},
		{"an empty id", api.WaitRequest{Pane: coord, IDs: []string{""}, Timeout: time.Second}, api.KindUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.m.Wait(context.Background(), tt.req)
			wantKind(t, err, tt.kind)
		})
	}
}

// waitAsync runs a wait in the background and hands its answer back.
func (h *harness) waitAsync(req api.WaitRequest) <-chan *api.WaitResult {
	out := make(chan *api.WaitResult, 1)
	go func() {
		res, err := h.m.Wait(context.Background(), req)
		if err != nil {
			h.t.Errorf("Wait: %v", err)
		}
		out <- res
	}()
	return out
}

// A task that waits on its dependencies has no worker yet; a wait by its
// name waits for it (it is no "no worker named b"), through its worker's
// start, until that worker reports.
func TestWaitForATaskBeforeItsWorker(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	h.addTasks(&Task{Name: "a", State: api.TaskRunning, Worker: workerID},
		&Task{Name: "b", Deps: []string{"a"}, State: api.TaskWaiting, Reason: "waiting on a"})
	res, err := h.m.Wait(context.Background(), api.WaitRequest{Pane: coord, IDs: []string{"b"}, Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("a wait for a task that waits on its dependencies: %v", err)
	}
	if !res.TimedOut || len(res.Workers) != 0 || len(res.Tasks) != 1 || res.Tasks[0].Name != "b" || res.Tasks[0].State != api.TaskWaiting {
		t.Fatalf("Wait = %+v, want b still waiting past the timeout", res)
	}

	got := h.waitAsync(api.WaitRequest{Pane: coord, IDs: []string{"b"}, Timeout: time.Minute})
	// b's worker starts (as startTask leaves it) and works.
	h.addWorker(localWorker("%5", "b", api.Working))
	h.m.settleChange(func(c *change) {
		r := h.m.reg.runs[testRun]
		runTask(r, "b").State, runTask(r, "b").Worker = api.TaskRunning, "%5"
		c.touchLocked(r)
	})
	if _, err := h.m.Done(context.Background(), api.DoneRequest{Pane: "%5", Summary: "did b"}); err != nil {
		t.Fatal(err)
	}
	res = <-got
	if res == nil || res.TimedOut || len(res.Tasks) != 0 || len(res.Workers) != 1 || res.Workers[0].ID != "%5" ||
		res.Workers[0].State != api.Done || res.Workers[0].Summary != "did b" {
		t.Fatalf("Wait = %+v, want b's worker %%5 done with its summary", res)
	}
}

// A task that can never start (its dependency was cancelled) ends a wait
// for it, with the reason.
func TestWaitForATaskThatCannotStart(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	h.addTasks(&Task{Name: "a", State: api.TaskRunning, Worker: workerID},
		&Task{Name: "b", Deps: []string{"a"}, State: api.TaskWaiting, Reason: "waiting on a"})
	got := h.waitAsync(api.WaitRequest{Pane: coord, IDs: []string{"b"}, Timeout: time.Minute})
	if _, err := h.m.CancelTask(context.Background(), api.IDRequest{Pane: coord, ID: "a"}); err != nil {
		t.Fatal(err)
	}
	res := <-got
	if res == nil || res.TimedOut || len(res.Tasks) != 1 || res.Tasks[0].State != api.TaskFailed ||
		res.Tasks[0].Reason != "did not start: its dependency a was cancelled" {
		t.Fatalf("Wait = %+v, want b failed: its dependency a was cancelled", res)
	}
}

// A wait with no ids covers the tasks the pane made that have no worker
// yet: it does not end when the one worker there is reports, while the
// tasks after it are still to start.
func TestWaitWithNoIDsCoversTasksNotStarted(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	h.addTasks(&Task{Name: "a", State: api.TaskRunning, Worker: workerID},
		&Task{Name: "b", Deps: []string{"a"}, State: api.TaskWaiting, Reason: "waiting on a"},
		&Task{Name: "c", Deps: []string{"b"}, State: api.TaskWaiting, Reason: "waiting on b"})
	got := h.waitAsync(api.WaitRequest{Pane: coord, Timeout: time.Minute})
	// a's report makes b ready; b's start fails (its file is not there),
	// and c, which waits on b, can never start.
	if _, err := h.m.Done(context.Background(), api.DoneRequest{Pane: workerID, Summary: "did a"}); err != nil {
		t.Fatal(err)
	}
	res := <-got
	if res == nil || res.TimedOut || len(res.Workers) != 1 || res.Workers[0].State != api.Done {
		t.Fatalf("Wait = %+v, want w1 done", res)
	}
	reasons := map[string]string{}
	for _, tv := range res.Tasks {
		reasons[tv.Name] = string(tv.State) + ": " + tv.Reason
	}
	if !strings.HasPrefix(reasons["b"], "failed: its worker did not start") || reasons["c"] != "failed: did not start: its dependency b failed" {
		t.Fatalf("tasks in the answer: %q, want b and c failed, with why", reasons)
	}
}
