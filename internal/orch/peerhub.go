package orch

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/store"
)

// peerHub is this machine's side of the account's other machines, as
// far as state goes: whether it takes workers from them (accept-remote),
// the watch loop of each machine it has workers on, the coordinators'
// moves still to tell, and where coordinators moved (for machines that
// ask). It has its own lock; the registry's may be held when it is
// taken, never the other way.
type peerHub struct {
	mu sync.Mutex
	// boot names this life of st, since the registry's change count
	// starts again with it.
	boot string
	// acceptRemote: this machine takes workers from the account's other
	// machines (st orch accept-remote).
	acceptRemote bool
	// loops are the watches of other machines, by slug.
	loops map[string]*peerLoop
	// toldDepths is what each machine was last told of how deep the
	// coordinators of this machine's runs with workers there are.
	toldDepths map[string]map[string]int
}

// peerLoop is the watch of one machine: it long-polls that machine's st
// for this machine's workers there, marks them unreachable while it cannot
// be reached, and tells it of coordinators that moved. It runs while this
// machine has live workers there or something to tell it.
type peerLoop struct {
	kick chan struct{}
	// reparents are the moves of coordinators that machine has workers
	// of, not told yet. Old is the id that machine knows, retired
	// (%4~gen) when a restart of the tmux server ended its life, so that
	// it is never taken for a pane of the server's new life; New is where
	// the coordinator is now ("" when it did not come back: nothing to
	// tell, but its workers' machine is answered that it is gone).
	reparents   []api.PeerReparent
	lastAttempt time.Time
}

// toTell reports whether any move is there to tell.
func (pl *peerLoop) toTell() bool {
	for _, mv := range pl.reparents {
		if mv.New != "" {
			return true
		}
	}
	return false
}

// ensurePeerWatch starts the watch of machine slug. Called with m.mu held.
func (m *Manager) ensurePeerWatch(slug string) {
	m.hub.mu.Lock()
	defer m.hub.mu.Unlock()
	m.ensurePeerWatchLocked(slug)
}

// ensurePeerWatchLocked is ensurePeerWatch with m.hub.mu held too.
func (m *Manager) ensurePeerWatchLocked(slug string) *peerLoop {
	h := m.hub
	if h.loops == nil {
		h.loops = map[string]*peerLoop{}
	}
	if pl := h.loops[slug]; pl != nil {
		select {
		case pl.kick <- struct{}{}:
		default:
		}
		return pl
	}
	pl := &peerLoop{kick: make(chan struct{}, 1)}
	h.loops[slug] = pl
	m.bg.Go(func(ctx context.Context) { m.runPeerLoop(ctx, slug, pl) })
	return pl
}

// needsPeer says whether the loop of slug has work. Called with m.mu and
// m.hub.mu held.
func (m *Manager) needsPeer(slug string, pl *peerLoop) bool {
	if pl.toTell() {
		return true
	}
	for _, w := range m.workers {
		if w.Machine == slug && w.State.Live() {
			return true
		}
	}
	return false
}

func (m *Manager) runPeerLoop(ctx context.Context, slug string, pl *peerLoop) {
	var since uint64
	var boot string
	for {
		m.mu.Lock()
		m.hub.mu.Lock()
		if ctx.Err() != nil || m.cfg.Peers == nil || !m.needsPeer(slug, pl) {
			delete(m.hub.loops, slug)
			m.hub.mu.Unlock()
			m.mu.Unlock()
			return
		}
		var reparents []api.PeerReparent
		for _, mv := range pl.reparents {
			if mv.New != "" {
				reparents = append(reparents, mv)
			}
		}
		due := len(reparents) > 0 && m.cfg.Now().Sub(pl.lastAttempt) >= m.peerRetry()
		if due {
			pl.lastAttempt = m.cfg.Now()
		}
		depths := m.depthsFor(slug)
		m.hub.mu.Unlock()
		m.mu.Unlock()
		if due {
			m.tellMoves(ctx, slug, pl, reparents)
		}
		wctx, cancel := context.WithTimeout(ctx, peerWatchWait+10*time.Second)
		stopKick := make(chan struct{})
		go func() {
			select {
			case <-pl.kick:
				cancel()
			case <-stopKick:
			}
		}()
		var res api.PeerWatchResult
		err := m.cfg.Peers.Call(wctx, slug, api.PeerRouteWatch, api.PeerWatchRequest{Boot: boot, Since: since, Wait: peerWatchWait, Depths: depths}, &res)
		if err == nil {
			m.toldDepth(slug, depths)
		}
		kicked := wctx.Err() == context.Canceled && ctx.Err() == nil
		close(stopKick)
		cancel()
		switch {
		case kicked:
		case err != nil:
			m.markUnreachable(slug, err)
			wait := peerPollAgain
			if len(reparents) > 0 && m.peerRetry() < wait {
				wait = m.peerRetry()
			}
			select {
			case <-ctx.Done():
			case <-pl.kick:
			case <-time.After(wait):
			}
		default:
			since, boot = res.Seq, res.Boot
			m.applyWatch(slug, res.Workers)
		}
	}
}

// depthsFor is how deep in its whole chain the coordinator of each run
// with live workers on machine slug is now, by run. Called with m.mu held.
func (m *Manager) depthsFor(slug string) map[string]int {
	out := map[string]int{}
	for _, w := range m.workers {
		if r := m.runOf[w.ID]; w.Machine == slug && w.State.Live() && r != nil {
			if _, ok := out[r.ID]; !ok {
				out[r.ID], _ = m.chainDepth(r.Coordinator)
			}
		}
	}
	return out
}

func (m *Manager) toldDepth(slug string, depths map[string]int) {
	m.hub.mu.Lock()
	defer m.hub.mu.Unlock()
	if m.hub.toldDepths == nil {
		m.hub.toldDepths = map[string]map[string]int{}
	}
	m.hub.toldDepths[slug] = depths
}

// tellDepths tells each machine with workers of this machine's runs how
// deep those runs' coordinators are in their whole chain now, where it
// changed since that machine was last told (an adoption here made the
// chain above them longer or shorter): the limit of four levels counts
// there what lies above (issue 25, item 3). A machine that does not
// answer hears it with its watch's next call.
func (m *Manager) tellDepths(ctx context.Context) {
	if m.cfg.Peers == nil {
		return
	}
	m.mu.Lock()
	m.hub.mu.Lock()
	due := map[string]map[string]int{}
	for _, w := range m.workers {
		if _, seen := due[w.Machine]; !w.Remote() || !w.State.Live() || seen {
			continue
		}
		if d := m.depthsFor(w.Machine); !maps.Equal(d, m.hub.toldDepths[w.Machine]) {
			due[w.Machine] = d
		}
	}
	m.hub.mu.Unlock()
	m.mu.Unlock()
	for slug, d := range due {
		cctx, cancel := context.WithTimeout(ctx, depthTellWait)
		var res api.PeerWatchResult
		err := m.cfg.Peers.Call(cctx, slug, api.PeerRouteWatch, api.PeerWatchRequest{Depths: d}, &res)
		cancel()
		if err != nil {
			m.logf("could not tell %s how deep its coordinators here are now (its watch will): %v", slug, err)
			continue
		}
		m.toldDepth(slug, d)
		m.applyWatch(slug, res.Workers)
	}
}

// depthTellWait bounds telling a machine the chain's depth at once; the
// watch tells it later when it cannot be reached now.
const depthTellWait = 5 * time.Second

// takeDepths takes what machine from says of how deep the coordinators of
// its runs here are now. Only its own runs, and only depths within the
// limit (a chain deeper than four has nothing more to start anyway).
func (m *Manager) takeDepths(from string, depths map[string]int) {
	m.mu.Lock()
	c := m.newChange()
	for id, d := range depths {
		r := m.runs[id]
		if d < 0 || d > MaxChain || r == nil || r.CoordinatorMachine != from || r.BaseDepth == d {
			continue
		}
		m.logf("%s: the coordinator of run %s is %d level(s) deep in its chain now (was %d)", from, id, d, r.BaseDepth)
		r.BaseDepth = d
		c.touch(r)
	}
	if len(c.runs) == 0 {
		m.mu.Unlock()
		return
	}
	m.settleUnlock(c)
}

func (m *Manager) peerRetry() time.Duration {
	if m.cfg.PeerRetry > 0 {
		return m.cfg.PeerRetry
	}
	return DefaultPeerRetry
}

// tellMoves tells machine slug the coordinators' new panes. Nothing is
// typed to the workers' agents there.
func (m *Manager) tellMoves(ctx context.Context, slug string, pl *peerLoop, moves []api.PeerReparent) {
	for _, mv := range moves {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		// That machine knows the old pane by its bare id.
		err := m.cfg.Peers.Call(cctx, slug, api.PeerRouteReparent, api.PeerReparent{Old: api.PaneOf(mv.Old), New: mv.New}, &struct{}{})
		cancel()
		if err != nil {
			m.logf("could not tell %s that coordinator %s is %s now (trying again in %s): %v", slug, mv.Old, mv.New, m.peerRetry(), err)
			return
		}
		m.logf("told %s that coordinator %s is %s now", slug, mv.Old, mv.New)
		m.hub.mu.Lock()
		for i, o := range pl.reparents {
			if o == mv {
				pl.reparents = append(pl.reparents[:i:i], pl.reparents[i+1:]...)
				break
			}
		}
		m.hub.mu.Unlock()
	}
}

// applyWatch brings this machine's records of workers on slug in step
// with what that machine says.
func (m *Manager) applyWatch(slug string, vs []api.WorkerView) {
	m.mu.Lock()
	byRef := map[string]*Worker{}
	for _, w := range m.workers {
		if w.Machine == slug && w.Ref != "" {
			byRef[w.Ref] = w
		}
	}
	c := m.newChange()
	for i := range vs {
		v := &vs[i]
		w := byRef[v.Ref]
		if w == nil {
			continue
		}
		if err := checkPeerView(v); err != nil {
			m.logf("%s: not taken: %v", slug, err)
			delete(byRef, v.Ref) // as it was last seen
			continue
		}
		before := *w
		m.applyRemote(c, w, v)
		if before.State != w.State || before.Summary != w.Summary || before.Name != w.Name || before.ID != w.ID || before.LastAnswer != w.LastAnswer ||
			before.TeamSize != w.TeamSize || before.TeamDepth != w.TeamDepth {
			c.touch(m.runOf[w.ID])
		}
		delete(byRef, v.Ref)
	}
	// A worker that machine no longer has (released there, or its record
	// lost) stays in the run as it was last seen, unless it was
	// unreachable: then it is back to what it was.
	for _, w := range byRef {
		if w.State == api.Unreachable {
			w.Error = ""
			c.setState(w, api.Idle)
		}
	}
	if len(c.runs) == 0 {
		m.mu.Unlock()
		return
	}
	m.settleUnlock(c)
}

// markUnreachable marks the live workers on slug unreachable: wait
// counts them as still working.
func (m *Manager) markUnreachable(slug string, err error) {
	m.mu.Lock()
	c := m.newChange()
	for _, w := range m.workers {
		// A worker that reported keeps its report: a wait has what it
		// waited for, whatever its machine does now.
		if w.Machine == slug && w.State.Live() && w.State != api.Unreachable && w.State != api.Done {
			m.logf("worker %s: its machine cannot be reached: %v", w.ID, err)
			w.Error = "its machine cannot be reached: " + err.Error()
			c.setState(w, api.Unreachable)
		}
	}
	if len(c.runs) == 0 {
		m.mu.Unlock()
		return
	}
	m.settleUnlock(c)
}

// queueMoves records coordinators that moved to new panes (moved, old
// id -> new) and queues telling each machine that has workers of theirs.
// After a restart of the whole server (restarted), an old id is known
// by its retired form (retire), and the moves not yet told of an earlier
// life follow this one: to the coordinator's new pane, or to nothing
// when it did not come back. Called with m.mu held, after the relations
// moved.
func (m *Manager) queueMoves(moved map[string]string, retire func(string) string, restarted bool) {
	m.hub.mu.Lock()
	defer m.hub.mu.Unlock()
	for _, pl := range m.hub.loops {
		for i := range pl.reparents {
			mv := &pl.reparents[i]
			if n, ok := moved[mv.New]; ok {
				mv.New = n
			} else if restarted {
				mv.New = ""
			}
		}
	}
	tell := map[string]map[api.PeerReparent]bool{}
	add := func(slug string, mv api.PeerReparent) {
		if tell[slug] == nil {
			tell[slug] = map[api.PeerReparent]bool{}
		}
		tell[slug][mv] = true
	}
	for _, w := range m.workers {
		if !w.Remote() || !w.State.Live() {
			continue
		}
		for o, n := range moved {
			if w.Parent == n && o != n {
				add(w.Machine, api.PeerReparent{Old: retire(o), New: n})
			}
		}
		if restarted && api.Retired(w.Parent) {
			// Its coordinator did not come back: that machine keeps its
			// old id, which a new pane here may have now. It is told the
			// retired one, which names only the gone pane (and answered
			// so meanwhile).
			add(w.Machine, api.PeerReparent{Old: w.Parent, New: w.Parent})
		}
	}
	for slug, mvs := range tell {
		pl := m.ensurePeerWatchLocked(slug)
		for mv := range mvs {
			pl.reparents = append(without(pl.reparents, mv.Old), mv)
		}
		sort.Slice(pl.reparents, func(i, j int) bool { return pl.reparents[i].Old < pl.reparents[j].Old })
		pl.lastAttempt = time.Time{}
	}
}

// without is mvs without the move of old.
func without(mvs []api.PeerReparent, old string) []api.PeerReparent {
	out := mvs[:0:0]
	for _, mv := range mvs {
		if mv.Old != old {
			out = append(out, mv)
		}
	}
	return out
}

// paneFor answers machine from about its workers' coordinator pane id,
// as from knows it: whether from has workers of it (handed), and when a
// move of it is not told to from yet (mv), where the coordinator is now
// (mv.New; "" when it did not come back, or its retired id when that is
// to be told). A move is found by its retired id only, and only when no
// live worker of from has pane as its parent in the server's current
// life: a bare id means a pane of the current life first (a coordinator
// started since, in a pane that got an old id, is not taken for the one
// that went). A coordinator that did not come back, told already or from
// before a restart of st, is found by its workers' retired parent.
// Called with m.mu held.
func (m *Manager) paneFor(from, pane string) (handed bool, mv *api.PeerReparent) {
	for _, w := range m.workers {
		if w.Machine == from && w.State.Live() && w.Parent == pane {
			return true, nil
		}
	}
	m.hub.mu.Lock()
	if pl := m.hub.loops[from]; pl != nil {
		for i := len(pl.reparents) - 1; i >= 0; i-- {
			if r := pl.reparents[i]; api.PaneOf(r.Old) == pane {
				m.hub.mu.Unlock()
				return true, &r
			}
		}
	}
	m.hub.mu.Unlock()
	for _, w := range m.workers {
		if w.Machine == from && api.Retired(w.Parent) && api.PaneOf(w.Parent) == pane {
			return true, &api.PeerReparent{Old: w.Parent, New: w.Parent}
		}
	}
	return false, nil
}

// resumePeerWatches starts the watch of every machine this machine has
// live workers on (after a restart of st).
func (m *Manager) resumePeerWatches() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cfg.Peers == nil {
		return
	}
	for _, w := range m.workers {
		if w.Remote() && w.State.Live() {
			m.ensurePeerWatch(w.Machine)
		}
	}
}

func (m *Manager) acceptPath() string { return filepath.Join(m.cfg.Home, "accept-remote.json") }

func (m *Manager) loadAcceptRemote() bool {
	var v struct {
		On bool `json:"on"`
	}
	if err := store.ReadJSON(m.acceptPath(), &v); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			m.logf("accept-remote: %v (taking no workers from other machines until st orch accept-remote on)", err)
		}
		return false
	}
	return v.On
}

// AcceptRemote says whether this machine takes workers from the
// account's other machines.
func (m *Manager) AcceptRemote() bool {
	m.hub.mu.Lock()
	defer m.hub.mu.Unlock()
	return m.hub.acceptRemote
}

// SetAcceptRemote turns taking workers from other machines on or off,
// and keeps the setting across restarts.
func (m *Manager) SetAcceptRemote(on bool) error {
	m.hub.mu.Lock()
	defer m.hub.mu.Unlock()
	if err := store.WriteJSON(m.acceptPath(), map[string]bool{"on": on}, 0o600); err != nil {
		return errorf(api.KindInternal, "free some disk space and try again", "st could not keep the setting: %v", err)
	}
	m.hub.acceptRemote = on
	m.logf("accept-remote %v", on)
	return nil
}
