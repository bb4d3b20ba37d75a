package orch

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// The manager's group: nothing it runs outlives Close.

func TestGroupRunsNothingAfterStop(t *testing.T) {
	g := newGroup()
	g.stop()
	ran := make(chan struct{})
	g.Go(func(context.Context) { close(ran) })
	g.stop() // would wait for it, had it been started
	select {
	case <-ran:
		t.Error("Go after stop ran its work")
	default:
	}
}

func TestGroupStopCancelsAndWaits(t *testing.T) {
	g := newGroup()
	started, cancelled, release := make(chan struct{}), make(chan error, 1), make(chan struct{})
	var finished atomic.Bool
	g.Go(func(ctx context.Context) {
		close(started)
		<-ctx.Done()
		cancelled <- ctx.Err()
		<-release // work that goes on for a while after its context ends
		finished.Store(true)
	})
	<-started
	stopped := make(chan bool, 1)
	go func() {
		g.stop()
		stopped <- finished.Load()
	}()
	select {
	case err := <-cancelled:
		if err != context.Canceled {
			t.Errorf("the work's context ended with %v, want context.Canceled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("stop did not cancel the work's context")
	}
	select {
	case <-stopped:
		t.Fatal("stop returned while the work still ran")
	default:
	}
	close(release)
	select {
	case fin := <-stopped:
		if !fin {
			t.Error("stop returned before the work ended")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("stop did not return once the work ended")
	}
}

// Work started by work (a notice loop started by a report's effects)
// before stop is waited for too; after stop, it is not started.
func TestGroupWorkStartedByWork(t *testing.T) {
	g := newGroup()
	var inner atomic.Int32
	ready := make(chan struct{})
	g.Go(func(ctx context.Context) {
		g.Go(func(ctx context.Context) {
			<-ctx.Done()
			inner.Add(1)
		})
		close(ready)
		<-ctx.Done()
		g.Go(func(context.Context) { inner.Add(10) }) // after stop began: never runs
	})
	<-ready
	g.stop()
	if got := inner.Load(); got != 1 {
		t.Errorf("inner work count %d, want 1 (the one started before stop, waited for; none after)", got)
	}
}
