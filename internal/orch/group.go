package orch

import (
	"context"
	"sync"
)

// group runs the manager's background work: every goroutine st starts on
// its own (a ready task's start, a notice loop, a machine's watch, a push,
// the saver) runs under one context, which Close cancels, and Close waits
// for them all. Nothing outlives the manager, and a test that stops it
// leaves nothing of it running.
type group struct {
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	stopped bool
	wg      sync.WaitGroup
}

func newGroup() *group {
	ctx, cancel := context.WithCancel(context.Background())
	return &group{ctx: ctx, cancel: cancel}
}

// Go runs f in the background with the group's context. After stop it
// runs nothing.
func (g *group) Go(f func(ctx context.Context)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		f(g.ctx)
	}()
}

// stop cancels the group's context and waits for its work to end.
func (g *group) stop() {
	g.mu.Lock()
	g.stopped = true
	g.mu.Unlock()
	g.cancel()
	g.wg.Wait()
}
