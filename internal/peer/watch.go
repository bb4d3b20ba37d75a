package peer

import (
	"context"
	"maps"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/syncs"
)

// The watch of each machine this machine has workers on: it long-polls
// that machine's st for this machine's workers there (the manager takes
// what it answers), marks them unreachable while it cannot be reached,
// and tells it of coordinators that moved (the manager keeps the moves
// still to tell) and of how deep their chains are. It runs, in the
// manager's background work, while that machine has live workers of this
// machine's runs or something to be told.

// loop is the watch of one machine.
type loop struct {
	kick chan struct{}
	// lastAttempt is when the moves were last told; the next try waits
	// for the hub's retry. Guarded by the hub's lock.
	lastAttempt time.Time
}

// watch starts the watch of machine slug, or wakes it.
func (h *Hub) watch(slug string) *loop {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.watchLocked(slug)
}

// watchLocked is watch.
func (h *Hub) watchLocked(slug string) *loop {
	syncs.AssertLocked(&h.mu)
	if l := h.loops[slug]; l != nil {
		select {
		case l.kick <- struct{}{}:
		default:
		}
		return l
	}
	l := &loop{kick: make(chan struct{}, 1)}
	h.loops[slug] = l
	h.local.Go(func(ctx context.Context) { h.run(ctx, slug, l) })
	return l
}

// Kick wakes the watch of machine slug (orch.Remote): the manager queued
// moves of coordinators to tell it, at once.
func (h *Hub) Kick(slug string) {
	if h.cfg.Account == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.watchLocked(slug).lastAttempt = time.Time{}
}

// next is the loop's next round: the moves to tell now (due), and the
// depths to tell with the watch; ok is false when the loop has no work
// left (it is gone from the hub then).
func (h *Hub) next(ctx context.Context, slug string, l *loop) (moves []api.PeerReparent, due bool, depths map[string]int, ok bool) {
	for {
		// The manager first, with the hub's lock let go.
		work := ctx.Err() == nil && h.remotes.HasWorkOn(slug)
		if work {
			moves, depths = h.remotes.Moves(slug), h.remotes.DepthsOn(slug)
		}
		h.mu.Lock()
		if !work && ctx.Err() == nil {
			// watch kicks under the hub's lock: a kick that came since the
			// manager was asked (a worker added there) is seen here, and
			// the manager is asked again; one after this finds no loop and
			// starts a new one.
			select {
			case <-l.kick:
				h.mu.Unlock()
				continue
			default:
			}
		}
		if !work {
			delete(h.loops, slug)
			h.mu.Unlock()
			return nil, false, nil, false
		}
		due = len(moves) > 0 && h.cfg.Now().Sub(l.lastAttempt) >= h.retry()
		if due {
			l.lastAttempt = h.cfg.Now()
		}
		h.mu.Unlock()
		return moves, due, depths, true
	}
}

func (h *Hub) run(ctx context.Context, slug string, l *loop) {
	var since uint64
	var boot string
	for {
		moves, due, depths, ok := h.next(ctx, slug, l)
		if !ok {
			return
		}
		if due {
			h.tellMoves(ctx, slug, moves)
		}
		wctx, cancel := context.WithTimeout(ctx, watchWait+10*time.Second)
		stopKick := make(chan struct{})
		go func() {
			select {
			case <-l.kick:
				cancel()
			case <-stopKick:
			}
		}()
		var res api.PeerWatchResult
		err := h.cfg.Account.Call(wctx, slug, api.PeerRouteWatch, api.PeerWatchRequest{Boot: boot, Since: since, Wait: watchWait, Depths: depths}, &res)
		if err == nil {
			h.toldDepth(slug, depths)
		}
		kicked := wctx.Err() == context.Canceled && ctx.Err() == nil
		close(stopKick)
		cancel()
		switch {
		case kicked:
		case err != nil:
			h.remotes.MarkUnreachable(slug, err)
			wait := pollAgain
			if len(moves) > 0 && h.retry() < wait {
				wait = h.retry()
			}
			select {
			case <-ctx.Done():
			case <-l.kick:
			case <-time.After(wait):
			}
		default:
			since, boot = res.Seq, res.Boot
			h.applyWatch(slug, res)
		}
	}
}

// applyWatch takes what machine slug answered of its workers: each view
// that passes the checks, and the refs of those that do not (their
// records stay as last seen); then their open attention items that pass
// theirs (after the states, so that an item of a worker just started
// finds its record live).
func (h *Hub) applyWatch(slug string, res api.PeerWatchResult) {
	vs := res.Workers
	var taken []api.WorkerView
	var refused []string
	for i := range vs {
		v := vs[i]
		if err := checkView(&v); err != nil {
			h.logf("%s: not taken: %v", slug, err)
			refused = append(refused, v.Ref)
			continue
		}
		taken = append(taken, v)
	}
	h.remotes.ApplyWatch(slug, taken, refused)
	items, dropped := checkAttention(res.Attention)
	if dropped > 0 {
		h.logf("%s: %d attention item(s) not taken: a kind, id, pane or size this st does not take", slug, dropped)
	}
	h.remotes.MirrorAttention(slug, items)
}

func (h *Hub) toldDepth(slug string, depths map[string]int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.toldDepths[slug] = depths
}

// TellDepths tells each machine with workers of this machine's runs how
// deep those runs' coordinators are in their whole chain now, where it
// changed since that machine was last told (an adoption here made the
// chain above them longer or shorter): the limit of four levels counts
// there what lies above (issue 25, item 3). A machine that does not
// answer hears it with its watch's next call.
func (h *Hub) TellDepths(ctx context.Context) {
	if h.cfg.Account == nil {
		return
	}
	h.mu.Lock()
	told := maps.Clone(h.toldDepths)
	h.mu.Unlock()
	for slug, d := range h.remotes.UntoldDepths(told) {
		cctx, cancel := context.WithTimeout(ctx, depthTellWait)
		var res api.PeerWatchResult
		err := h.cfg.Account.Call(cctx, slug, api.PeerRouteWatch, api.PeerWatchRequest{Depths: d}, &res)
		cancel()
		if err != nil {
			h.logf("could not tell %s how deep its coordinators here are now (its watch will): %v", slug, err)
			continue
		}
		h.toldDepth(slug, d)
		h.applyWatch(slug, res)
	}
}

// tellMoves tells machine slug the coordinators' new panes. Nothing is
// typed to the workers' agents there.
func (h *Hub) tellMoves(ctx context.Context, slug string, moves []api.PeerReparent) {
	for _, mv := range moves {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		// That machine knows the old pane by its bare id.
		err := h.cfg.Account.Call(cctx, slug, api.PeerRouteReparent, api.PeerReparent{Old: api.PaneOf(mv.Old), New: mv.New}, &struct{}{})
		cancel()
		if err != nil {
			h.logf("could not tell %s that coordinator %s is %s now (trying again in %s): %v", slug, mv.Old, mv.New, h.retry(), err)
			return
		}
		h.logf("told %s that coordinator %s is %s now", slug, mv.Old, mv.New)
		h.remotes.MoveTold(slug, mv)
	}
}
