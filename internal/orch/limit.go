package orch

import (
	"context"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/syncs"
)

// A worker whose agent reaches its plan's usage limit is paused, not
// failed (issue 35, reference §13): it shows as paused until the reset,
// and its turn goes on after it. Claude goes on by itself 30-90 s after
// the reset unless its user turned that off: st then only watches, and
// types the agent's continue line itself when nothing came by the end of
// the kind's grace. Codex never goes on by itself: st types once its
// composer is up. The line goes through the one delivery (deliver.go): it
// waits for a box st recognizes, so nothing is typed into a modal or over
// the agent's own going on, and it is typed once (Pause.Typed, on disk
// before the keys).

// limitOfLocked reads whether w's turn ended at its agent's usage limit.
func (m *Manager) limitOfLocked(w *Worker, ev agent.Event) (agent.UsageLimit, bool) {
	syncs.AssertLocked(&m.mu)
	ad, err := agent.Lookup(w.Agent)
	if err != nil || w.Remote() {
		// (A worker on another machine is its machine's to pause.)
		return agent.UsageLimit{}, false
	}
	if ev.Transcript == "" {
		ev.Transcript = w.Transcript
	}
	return ad.LimitOf(ev, m.cfg.Now())
}

// pauseLocked pauses w at its agent's usage limit l, or, with --on-limit
// fail, ends its turn as a failed one.
func (m *Manager) pauseLocked(c *change, w *Worker, l agent.UsageLimit) {
	syncs.AssertLocked(&m.mu)
	if w.OnLimit == api.OnLimitFail {
		w.LastAnswer = l.Text
		c.touchLocked(m.runOf[w.ID])
		c.setStateLocked(w, api.Idle)
		return
	}
	p := &api.Pause{Reason: "usage limit", Resets: l.Resets, Exact: l.Exact, Text: l.Text, By: "st", GoesOnBy: l.Resets}
	if ad, err := agent.Lookup(w.Agent); err == nil && ad.Limits.ContinuesItself != nil && ad.Limits.ContinuesItself() {
		p.By, p.GoesOnBy = "agent", l.Resets.Add(ad.Limits.Grace)
	}
	if l.Text != "" {
		w.LastAnswer = l.Text
	}
	m.logf("worker %s (%s): at its usage limit, resets %s (%s goes on)", w.ID, w.Name, l.Resets.Format(time.RFC3339), p.By)
	w.Pause = p
	c.touchLocked(m.runOf[w.ID])
	c.setStateLocked(w, api.Paused)
	c.pauses = append(c.pauses, w.ID)
}

// goOnAfterLimit waits for pane's usage limit to reset and, when its
// agent has not gone on by itself by then, types its continue line once.
func (m *Manager) goOnAfterLimit(ctx context.Context, pane string) {
	m.mu.Lock()
	w := m.workers[pane]
	var p api.Pause
	if w != nil && w.State == api.Paused && w.Pause != nil {
		p = *w.Pause
	}
	m.mu.Unlock()
	if p.Resets.IsZero() || p.Typed {
		return
	}
	if err := syncs.Sleep(ctx, p.GoesOnBy.Sub(m.cfg.Now())); err != nil {
		return
	}
	ad, err := agent.Lookup(w.Agent)
	if err != nil || ad.Limits == nil {
		return
	}
	// Still paused by the same limit, and not typed for: mark it typed
	// on disk first, so that no restart of st types it again.
	still := false
	m.settleIfChanged(func(c *change) {
		w := m.workers[pane]
		if w == nil || w.State != api.Paused || w.Pause == nil || !w.Pause.Resets.Equal(p.Resets) || w.Pause.Typed {
			return
		}
		w.Pause.Typed = true
		c.touchLocked(m.runOf[w.ID])
		still = true
	})
	if !still {
		return
	}
	m.logf("worker %s: its usage limit reset at %s and %s did not go on: typing %q", pane, p.Resets.Format(time.RFC3339), ad.Name, ad.Limits.ContinueLine)
	m.closeLimitMenu(ctx, pane, ad)
	d := delivery{pane: pane, adapter: ad, text: ad.Limits.ContinueLine, blockedTimeout: sendTimeout, hookTimeout: DefaultHookTimeout}
	if err := m.deliver(ctx, &d); err != nil {
		m.logf("worker %s: st could not type %q after its usage limit: %v", pane, ad.Limits.ContinueLine, err)
		m.settleIfChanged(func(c *change) {
			if w := m.workers[pane]; w != nil && w.State == api.Paused {
				w.Error = "st could not type " + ad.Limits.ContinueLine + " after its usage limit: " + err.Error() + " (type it in its window)"
				c.touchLocked(m.runOf[w.ID])
			}
		})
	}
}

// closeLimitMenu closes the menu an agent put up over its box at its
// limit (Claude with its own going on turned off), with the key that
// chooses nothing, so that the one delivery finds the box. It presses
// the key only on a screen the kind recognizes as that menu: any other
// screen is left alone, and the delivery waits for the box as always.
func (m *Manager) closeLimitMenu(ctx context.Context, pane string, ad *agent.Kind) {
	if ad.Limits.Menu == nil || ad.Limits.MenuKey == "" {
		return
	}
	out, err := m.cfg.Tmux.Capture(ctx, pane)
	if err != nil || !ad.Limits.Menu(out) {
		return
	}
	m.logf("worker %s: closing %s's usage-limit menu with %s before typing", pane, ad.Name, ad.Limits.MenuKey)
	if err := m.cfg.Tmux.SendKeys(ctx, pane, ad.Limits.MenuKey); err != nil {
		m.logf("worker %s: st could not close the usage-limit menu: %v", pane, err)
	}
}
