package orch

import (
	"context"
	"errors"
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
