package orch

import (
	"sort"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/attention"
	"github.com/sophonz/st/internal/syncs"
)

// A coordinator at its usage limit is handled as a worker is (issue 35,
// §3): its own agent's hooks and records say the limit, its run keeps
// the pause (Run.CoordPause), st orch show, st status and the web UI's
// card say "paused (usage limit, resets 13:54)", an attention item
// opens, and after the reset st goes on by limit.go's rules (a Claude
// that goes on by itself is waited for; otherwise st types continue once
// its box is up, through the one delivery). The coordinator's pane is
// the person's own: the delivery types only into an empty box it
// recognizes, never over a person's text or into a screen it does not
// know, and a person who types there first has gone on themselves.
// What is a worker's alone stays so: a coordinator has no state of its
// own to move, and no --on-limit (it waits: moving it would move the
// person's own conversation).

// coordEventLocked follows an event of pane's own agent, when pane
// coordinates a run here and is no live worker: its kind and
// conversation file are kept on the run (for the reads after the pause),
// a turn that ended at the usage limit pauses it, and a turn that starts
// or a tool it uses ends its pause.
func (m *Manager) coordEventLocked(c *change, pane, kind string, ev agent.Event, aside bool) {
	syncs.AssertLocked(&m.reg.mu)
	r := m.coordRunLocked(pane)
	if r == nil || aside || ev.Aside() {
		// (A subagent's or teammate's event is not the coordinator's
		// own turn.)
		return
	}
	if r.CoordAgent != kind {
		r.CoordAgent = kind
		c.touchLocked(r)
	}
	if ev.Transcript != "" && r.CoordTranscript != ev.Transcript {
		r.CoordTranscript = ev.Transcript
		c.touchLocked(r)
	}
	who := limitee{pane: pane, r: r}
	switch ev.Kind {
	case agent.EvTurnStart:
		if r.CoordPause != nil {
			m.goOnLocked(c, who, "its turn started")
		}
	case agent.EvTool:
		if r.CoordPause != nil {
			m.goOnLocked(c, who, "it used a tool")
		}
	case agent.EvTurnEnd:
		if l, ok := m.limitOfLocked(who, ev); ok {
			m.pauseCoordLocked(c, who, l)
		}
	}
}

// coordQuietLocked is the end, with no hook, of a turn in pane, which
// is no worker: an agent that fires no hook at its usage limit (Codex)
// went quiet there, and its records say so.
func (m *Manager) coordQuietLocked(c *change, pane string) {
	syncs.AssertLocked(&m.reg.mu)
	r := m.coordRunLocked(pane)
	if r == nil || r.CoordAgent == "" || r.CoordPause != nil {
		return
	}
	who := limitee{pane: pane, r: r}
	if l, ok := m.limitOfLocked(who, agent.Event{Kind: agent.EvTurnEnd}); ok {
		m.pauseCoordLocked(c, who, l)
	}
}

// pauseCoordLocked pauses the coordinator who at its agent's usage
// limit l: the pause on its run, an item for a person, and a look again
// at the reset (goOnAfterLimit).
func (m *Manager) pauseCoordLocked(c *change, who limitee, l agent.UsageLimit) {
	syncs.AssertLocked(&m.reg.mu)
	p := newPause(who.kind(), l)
	m.logf("%s: at its usage limit, resets %s (%s goes on)", who, l.Resets.Format(time.RFC3339), p.By)
	who.r.CoordPause, who.r.CoordLimitSeen = p, l.Resets
	c.touchLocked(who.r)
	c.attnLocked(attnOp{key: attention.PaneKey(who.pane, attention.Turn), open: m.itemOfLocked(who.pane, api.AttnPaused, firstLine(l.Text))})
	c.pauses = append(c.pauses, who.pane)
}

// coordGoesOnLocked ends the pause of run r's coordinator in pane: its
// agent went on (how). Its item closes; the notices held for it go.
func (m *Manager) coordGoesOnLocked(c *change, r *Run, pane, how string) {
	syncs.AssertLocked(&m.reg.mu)
	if r.CoordPause == nil {
		return
	}
	m.logf("coordinator %s of %s: paused -> working (%s)", pane, r.ID, how)
	r.CoordPause, r.CoordError = nil, ""
	c.touchLocked(r)
	c.attnLocked(attnOp{key: attention.PaneKey(pane, attention.Turn), by: "agent"})
	c.kicks = append(c.kicks, pane)
}

// coordPaused reports whether pane is a coordinator paused at its usage
// limit: the notices for it wait, since a line typed into an agent at
// its limit starts a turn that stops at the limit again (and, after the
// reset, would race the continue).
func (m *Manager) coordPaused(pane string) bool {
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	who, ok := m.limiteeLocked(pane)
	return ok && who.w == nil && who.r.CoordPause != nil
}

// pausedCoordsLocked lists the coordinators here paused at their usage
// limits, for st status.
func (m *Manager) pausedCoordsLocked() []api.PausedCoordinator {
	syncs.AssertLocked(&m.reg.mu)
	var out []api.PausedCoordinator
	for _, r := range m.reg.runs {
		if r.CoordPause == nil || r.CoordinatorMachine != "" || m.coordRunLocked(r.Coordinator) != r {
			continue
		}
		out = append(out, api.PausedCoordinator{Pane: r.Coordinator, Run: r.ID, Agent: r.CoordAgent, Pause: *r.CoordPause})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Run < out[j].Run })
	return out
}

// coordPauseOf is the pause of run r's coordinator, a copy, or nil
// (the graph's card).
func coordPauseOf(r *Run) *api.Pause {
	if r.CoordPause == nil {
		return nil
	}
	p := *r.CoordPause
	return &p
}
