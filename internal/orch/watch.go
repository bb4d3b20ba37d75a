package orch

import (
	"context"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/syncs"
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
	// quietEager looks at a quiet turn's screen, each quietEvery, then
	// one each quietSlow while it shows work: an Esc then shows within
	// quietSlow and a tick (the look that confirms it comes at the next
	// tick), 2 s, the limit of the Esc figure (docs/performance.md).
	quietEager = 4
	quietSlow  = 1500 * time.Millisecond
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
	// What st finds as it starts: its panes may have gone while it was
	// down (a reboot), and no event will say so.
	m.observe(ctx)
	m.settleCutStarts()
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-m.cfg.Events:
			switch e.Kind {
			case tmux.ServerGone:
				m.roots.Store(nil) // its panes' first processes with it
				m.serverGone(ctx, e.At)
			default:
				m.drainEvents(ctx)
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
			m.watchScreens(ctx)
		}
	}
}

// drainEvents waits a moment for the rest of a burst of events, and drops them:
// one read covers them all.
func (m *Manager) drainEvents(ctx context.Context) {
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
	if ctx.Err() != nil {
		// st stops (st down): a word of the server's going that waited
		// in the queue is judged by the next st, from what it finds. Here
		// every look at the server fails now (the context is done), and
		// a restore judged from that made every worker gone (issue 32,
		// item 10).
		return
	}
	if m.rest.restoredSince(at) && m.cfg.Tmux.Running(ctx) {
		// A word of a going that st has answered already (the watcher may
		// say it twice): the server st brought back runs.
		return
	}
	if ctx.Err() != nil {
		return // (st began to stop as it looked)
	}
	m.rest.down(at)
	m.reg.notify()
	if !m.hasLive() {
		return
	}
	m.logf("the tmux server is gone (%s ago)", time.Since(at).Round(time.Microsecond))
	pictured := len(m.rest.picture().Sessions) > 0
	if pictured && !m.restore(ctx) {
		return // its sessions are there: nothing is gone
	}
	// Whatever did not come back is gone.
	m.settleChange(func(c *change) {
		gone := 0
		for id, w := range m.reg.workers {
			if !w.State.Live() || w.Remote() || m.rest.wasRestored(id) {
				continue
			}
			gone++
			if pictured {
				w.Error = "the tmux server went down and st could not bring this pane back"
			} else {
				w.Error = "the tmux server went down before st had a picture of it to bring back"
			}
			c.setStateLocked(w, api.Gone)
		}
		if gone > 0 {
			m.logf("%d workers are gone with the tmux server", gone)
		}
	})
}

// reconcile marks workers whose panes are gone. A pane id that exists
// but carries another run (a restarted tmux server reuses ids) counts
// as gone too. A server that is down is left to observe, which brings
// it back.
func (m *Manager) reconcile(ctx context.Context) {
	mark, marked := m.cfg.Tmux.Mark(ctx)
	m.reconcileAt(ctx, mark, marked)
}

// reconcileAt is reconcile with the server's mark read just before (ok
// false: none), which it keeps once every pane is judged.
func (m *Manager) reconcileAt(ctx context.Context, mark tmux.Mark, marked bool) {
	if m.rest.busy() {
		return // the restore relinks everything when it is done
	}
	if m.rest.picture().Server != "" {
		// Panes of another life of the server (it went while st was down,
		// and something else started it again) are not the ones st knows:
		// observe restores st's own into it first.
		id, err := mark.Server, error(nil)
		if !marked {
			id, err = m.cfg.Tmux.ServerID(ctx)
		}
		if err == nil && m.rest.otherLife(id) {
			return
		}
	}
	seq := m.rest.gen()
	listed := m.cfg.Now()
	panes, err := m.cfg.Tmux.ListPanes(ctx)
	if err != nil {
		m.logf("reconcile: %v", err)
		return
	}
	if len(panes) == 0 && !m.cfg.Tmux.Running(ctx) {
		return
	}
	if m.reconcilePanes(panes, listed, seq) && marked {
		m.judged.Store(mark)
	}
}

// reconcileIfChanged is reconcile, unless no pane, window or session of
// the server came, went or died since st last judged every pane: the
// server's mark says so in one short command (at 100 panes, reading them
// all was most of what st worker list cost). The mark is read after the
// request came, and tmux counts a change before the command that made it
// returns, so a pane killed before the request is never listed as live.
func (m *Manager) reconcileIfChanged(ctx context.Context) {
	mark, marked := m.cfg.Tmux.Mark(ctx)
	if marked && !m.rest.busy() && m.judged.Load() == mark {
		return
	}
	m.reconcileAt(ctx, mark, marked)
}

// reconcilePanes is reconcile for panes listed at the time listed.
// Workers that joined after that are left alone: the list cannot know
// their panes (or their new options) yet.
// It reports whether it judged them (not while st brought the server
// back).
func (m *Manager) reconcilePanes(panes []tmux.Pane, listed time.Time, seq int) bool {
	have := map[string]tmux.Pane{}
	live := map[string]bool{}
	pids := map[string]int{}
	for _, p := range panes {
		have[p.ID] = p
		live[p.ID] = true
		pids[p.ID] = p.PID
	}
	judged := false
	m.settleIfChanged(func(c *change) {
		if judged = m.rest.judge(seq, live); judged {
			m.judgePanesLocked(c, panes, have, live, listed)
		}
		// (Else listed while st was bringing the server back: the panes
		// there had no relations yet, and saying their workers are gone
		// would be a lie, and would lose their reports.)
	})
	if judged && m.cfg.Remote != nil {
		m.cfg.Remote.PanesListed(pids, listed) // an offer goes with its pane
	}
	return judged
}

// judgePanesLocked makes gone the workers whose panes are not in have
// (or carry another run, or are dead), and learns the agents the panes'
// options name.
func (m *Manager) judgePanesLocked(c *change, panes []tmux.Pane, have map[string]tmux.Pane, live map[string]bool, listed time.Time) {
	syncs.AssertLocked(&m.reg.mu)
	for id, w := range m.reg.workers {
		if m.reg.unmarkedLocked(id, listed) || !w.State.Live() || w.StartedAt.After(listed) || w.Remote() || m.rest.isResuming(id) {
			// (A starting agent's pane is judged by its resume; an
			// adopted one's once its options are there.)
			continue
		}
		r := m.reg.runOf[id]
		p, ok := have[id]
		if !ok || p.StRun != r.ID || p.Dead {
			c.setStateLocked(w, api.Gone)
		}
	}
	for _, p := range panes {
		if p.StAgent != "" {
			m.facts.learn(p.ID, p.StAgent, p.StAgentSession)
		}
	}
	m.facts.dropClosedMates(live, listed)
}

// hasLive reports whether any worker's pane is expected to exist.
func (m *Manager) hasLive() bool {
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	for _, w := range m.reg.workers {
		if w.State.Live() {
			return true
		}
	}
	return false
}

// kickWatch makes the watcher look at tmux now rather than at its next tick.
func (m *Manager) kickWatch() {
	select {
	case m.watchKick <- struct{}{}:
	default:
	}
}

// checkQuietTurns makes idle an agent whose turn ended with no hook:
// Claude's Esc ends the turn, fires nothing, and puts the prompt back in
// the box. A turn is over when its screen has lost the signs of work (the
// spinner, "esc to interrupt") twice in a row, whatever text sits in the
// box; a prompt or question on the screen is not an end. It looks only at
// agents in a turn whose hooks have been quiet for a while: at work, or,
// for an agent whose Esc at a prompt fires no hook either (QuietPrompts),
// at a prompt, whose going is an interrupt (quietPrompt).
func (m *Manager) checkQuietTurns(ctx context.Context) {
	m.reg.mu.Lock()
	cs := m.facts.quietTurns(quietAfter, func(pane string) bool {
		w := m.reg.workers[pane]
		return w == nil || w.State == api.Working || w.State == api.Waiting
	})
	m.reg.mu.Unlock()
	for pane, q := range cs {
		ad, err := agent.Lookup(q.agent)
		if err != nil || !ad.Hear.QuietEnds || (q.waiting && !ad.Hear.QuietPrompts) {
			continue
		}
		v, err := m.screen(ctx, pane, ad)
		if err != nil {
			continue
		}
		ended, silent := m.facts.quietLook(pane, v.Screen == agent.ScreenReady || v.Screen == agent.ScreenTyped)
		if !ended {
			continue
		}
		if q.waiting {
			m.quietPrompt(pane, ad, silent)
			continue
		}
		m.logf("%s: no hook for %s and no turn on its screen: its turn was interrupted", pane, silent.Round(time.Millisecond))
		m.settleChange(func(c *change) {
			// An agent that fires no hook at its usage limit (Codex)
			// went quiet there: its records say so.
			if w := m.reg.workers[pane]; w != nil && w.State == api.Working {
				if l, ok := m.limitOfLocked(m.workerLimiteeLocked(w), agent.Event{Kind: agent.EvTurnEnd}); ok {
					m.pauseLocked(c, w, l)
				} else {
					c.setStateLocked(w, api.Idle)
				}
			} else if w == nil || !w.State.Live() {
				m.coordQuietLocked(c, pane)
			}
			c.kicks = append(c.kicks, pane)
		})
	}
}

// quietPrompt is a prompt or question that went from the screen of pane's
// agent with no hook: the person pressed Esc there (Claude fires nothing,
// reference §3.6), and its box is back. It is the interrupt the agent's
// hook would have said: the prompt's item closes, a hook that still waits
// for a person's answer is told none, and a worker's turn is over.
func (m *Manager) quietPrompt(pane string, ad *agent.Kind, silent time.Duration) {
	m.logf("%s: its prompt left the screen with no hook for %s (Esc): taken as an interrupt", pane, silent.Round(time.Millisecond))
	ev := agent.Event{Kind: agent.EvInterrupt, Name: "screen"}
	if m.prompts.movedOn(pane, ev) {
		m.reg.notify()
	}
	m.applyEvent(pane, ad, ev, nil)
}
