package orch

import (
	"context"

	"github.com/sophonz/st/internal/agent"
)

// An agent without hooks (one a user described in config.toml with no
// hooks: agent.Kind.ScreenStates) tells st nothing itself: st reads its
// states off its screen, by its description's markers, and moves its
// worker with the events a hook would have sent. Listings mark such a
// worker's states as read from the screen, since a screen can be misread
// (a marker in the agent's own output) where a hook cannot.

// screenEvent names the events read off a screen (Event.Name).
const screenEvent = "screen"

// watchScreens looks once at the screen of each live worker whose agent
// has no hooks.
func (m *Manager) watchScreens(ctx context.Context) {
	type look struct {
		pane string
		ad   *agent.Kind
	}
	var looks []look
	m.reg.mu.Lock()
	for id, w := range m.reg.workers {
		if !w.State.Live() || w.Remote() || m.rest.isResuming(id) {
			continue
		}
		if ad, err := agent.Lookup(w.Agent); err == nil && ad.ScreenStates() {
			looks = append(looks, look{id, ad})
		}
	}
	m.reg.mu.Unlock()
	for _, l := range looks {
		v, err := m.screen(ctx, l.pane, l.ad)
		if err != nil {
			continue // (a pane gone is the watcher's to judge)
		}
		m.screenLook(l.pane, l.ad, v)
	}
}

// screenLook turns one look at the screen of an agent without hooks into
// the event its hooks would have sent, if the look changes anything: its
// box first up (session start), work on a screen that was not in a turn
// (turn start), a question (waiting), work again after one (a tool), and
// its box back, empty or not, twice in a row (turn end: one look could
// catch the box between two steps of a turn).
func (m *Manager) screenLook(pane string, ad *agent.Kind, v agent.View) {
	kind, inTurn := m.facts.agentIn(pane)
	waiting := m.facts.waiting(pane)
	var ev agent.Event
	switch v.Screen {
	case agent.ScreenWorking:
		m.facts.quietLook(pane, false)
		switch {
		case !inTurn:
			ev.Kind = agent.EvTurnStart
		case waiting:
			ev.Kind = agent.EvTool
		default:
			return
		}
	case agent.ScreenPrompt:
		if waiting {
			return
		}
		ev.Kind = agent.EvWaiting
	case agent.ScreenReady, agent.ScreenTyped:
		m.facts.sawBox(pane)
		switch {
		case kind == "":
			ev.Kind = agent.EvSessionStart
		case inTurn:
			if ended, _ := m.facts.quietLook(pane, true); !ended {
				return
			}
			ev.Kind = agent.EvTurnEnd
		default:
			return
		}
	default:
		return
	}
	ev.Name = screenEvent
	m.applyEvent(pane, ad, ev, nil)
}
