package orch

import (
	"context"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/tmux"
)

// The watcher keeps worker states true to the tmux server. It follows
// the server's events (tmux.Client.Start: a change anywhere reaches it
// within milliseconds, the server's exit at once), reads the server again
// at each, and records its layout whenever it changed, so that there is
// no moment at which a restore would be impossible. A slow safety poll
// stays, for an event lost to a busy server. Without events (tests with
// a fake tmux) it looks once a second.

const (
	// safetyPoll is how often the server is read with no event.
	safetyPoll = 20 * time.Second
	// eventSettle gathers a burst of events into one read.
	eventSettle = 3 * time.Millisecond
	// quietAfter is how long a working agent's hooks must be silent
	// before st looks at its screen: Claude's Esc ends a turn and fires no
	// hook. quietEvery is how often it looks then.
	quietAfter = time.Second
	quietEvery = 500 * time.Millisecond
)

// Watch keeps worker states true to the panes until ctx ends.
func (m *Manager) Watch(ctx context.Context) {
	poll := safetyPoll
	if m.cfg.Events == nil {
		poll = time.Second
	}
	safety := time.NewTicker(poll)
	defer safety.Stop()
	quiet := time.NewTicker(quietEvery)
	defer quiet.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-m.cfg.Events:
			switch e.Kind {
			case tmux.ServerGone:
				m.serverGone(ctx, e.At)
			default:
				m.settle(ctx)
				m.observe(ctx)
			}
		case <-m.watchKick:
			m.observe(ctx)
		case <-safety.C:
			if m.hasLive() {
				m.observe(ctx)
			}
		case <-quiet.C:
			m.checkQuietTurns(ctx)
		}
	}
}

// settle waits a moment for the rest of a burst of events, and drops them:
// one read covers them all.
func (m *Manager) settle(ctx context.Context) {
	t := time.NewTimer(eventSettle)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			return
		case e := <-m.cfg.Events:
			if e.Kind == tmux.ServerGone {
				m.serverGone(ctx, e.At)
				return
			}
		case <-m.watchKick:
		}
	}
}

// serverGone is the server's exit: st brings it back from its picture of
// it, or, when it has none (or nothing came back), every worker that was
// on it is gone, saying why, and every wait returns.
func (m *Manager) serverGone(ctx context.Context, at time.Time) {
	m.mu.Lock()
	m.serverDown = at
	m.notify()
	m.mu.Unlock()
	if !m.hasLive() {
		return
	}
	m.logf("the tmux server is gone (%s ago)", time.Since(at).Round(time.Microsecond))
	if len(m.layout.Sessions) > 0 {
		m.restore(ctx)
	}
	// Whatever did not come back is gone.
	m.mu.Lock()
	defer m.mu.Unlock()
	dirty := map[*Run]bool{}
	gone := 0
	for id, w := range m.workers {
		if !w.State.Live() || w.Remote() || m.restoredPanes[id] {
			continue
		}
		gone++
		if len(m.layout.Sessions) == 0 {
			w.Error = "the tmux server went down before st had a picture of it to bring back"
		} else {
			w.Error = "the tmux server went down and st could not bring this pane back"
		}
		if m.setState(w, Gone) {
			dirty[m.runOf[id]] = true
		}
	}
	for r := range dirty {
		m.save(r)
	}
	if gone > 0 {
		m.logf("%d workers are gone with the tmux server", gone)
	}
	m.notify()
}

// ServerDown says since when the tmux server has been down (zero while
// it runs), for st status.
func (m *Manager) ServerDown() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.serverDown
}

// checkQuietTurns makes idle an agent whose turn ended with no hook:
// Claude's Esc ends the turn, fires nothing, and puts the prompt back in
// the box. A turn is over when its screen has lost the signs of work (the
// spinner, "esc to interrupt") twice in a row, whatever text sits in the
// box; a prompt or question on the screen is not an end. It looks only at
// agents in a turn whose hooks have been quiet for a while.
func (m *Manager) checkQuietTurns(ctx context.Context) {
	type cand struct {
		pane string
		ad   agent.Adapter
	}
	var cs []cand
	m.mu.Lock()
	now := m.cfg.Now()
	for id, pi := range m.panes {
		if !pi.inTurn || pi.waiting || now.Sub(pi.lastEvent) < quietAfter {
			continue
		}
		if w := m.workers[id]; w != nil && w.State != Working {
			continue
		}
		if ad, err := agent.Lookup(pi.agent); err == nil {
			cs = append(cs, cand{id, ad})
		}
	}
	m.mu.Unlock()
	for _, c := range cs {
		v, err := m.screen(ctx, c.pane, c.ad)
		if err != nil {
			continue
		}
		m.mu.Lock()
		pi := m.panes[c.pane]
		if pi == nil || !pi.inTurn {
			m.mu.Unlock()
			continue
		}
		if v.Screen == agent.ScreenReady || v.Screen == agent.ScreenTyped {
			pi.quietReady++
		} else {
			pi.quietReady = 0
		}
		if pi.quietReady >= 2 {
			pi.quietReady = 0
			pi.inTurn = false
			m.logf("%s: no hook for %s and no turn on its screen: its turn was interrupted", c.pane, now.Sub(pi.lastEvent).Round(time.Millisecond))
			if w := m.workers[c.pane]; w != nil && w.State == Working {
				m.setState(w, Idle)
				m.save(m.runOf[c.pane])
			}
			m.notify()
			m.notices.kick(c.pane)
		}
		m.mu.Unlock()
	}
}

// Restoring reports whether st is bringing the tmux server back now.
func (m *Manager) Restoring() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.restoring
}
