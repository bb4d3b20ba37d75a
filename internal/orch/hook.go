package orch

import (
	"context"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/syncs"
	"github.com/sophonz/st/internal/tmux"
)

// HookOrigin is what st's daemon read of the process that sent a hook
// event (from /proc), never what the event says of itself.
type HookOrigin struct {
	// Resumed is the conversation that the pane's agent process, among
	// the sender's parents, was started to resume: its command line
	// (agent.ResumedSession). "" for none, or where nothing was read.
	Resumed string
}

// Hook is HookFrom with nothing known of the sender: the event moves no
// worker to its pane.
func (m *Manager) Hook(ctx context.Context, req api.HookRequest) (*api.HookResponse, error) {
	return m.HookFrom(ctx, req, HookOrigin{})
}

// HookFrom applies one hook event from an agent's pane, and says whether
// a tool call about to run must be refused (outside the worker's scope).
// What the event tells of the pane goes to paneFacts; what it moves of a
// worker is one change, on disk before the hook is answered. The daemon
// took the event only from a process in the pane it names.
func (m *Manager) HookFrom(ctx context.Context, req api.HookRequest, from HookOrigin) (*api.HookResponse, error) {
	ad, err := agent.Lookup(req.Agent)
	if err != nil {
		return nil, errorf(api.KindUsage, "", "%v", err)
	}
	ev, err := ad.MapEvent(req.Event, req.Payload)
	if err != nil {
		return nil, errorf(api.KindUsage, "", "hook %s %s: %v", req.Agent, req.Event, err)
	}
	if !tmux.ValidPaneID(req.Pane) {
		return &api.HookResponse{}, nil // an agent outside tmux: nothing st drives
	}
	if ev.SessionID != "" && !agent.ValidSession(ad.Name, ev.SessionID) {
		// Not kept, nor ever put on a command line: the rest of the
		// event still tells what the agent does.
		m.logf("%s: a %s hook (%.40q) named the conversation %.80q, which is not a %s conversation id; st keeps none from it",
			req.Pane, req.Agent, req.Event, ev.SessionID, ad.Name)
		ev.SessionID = ""
	}
	if ev.Kind == agent.EvSessionStart && ev.Resumed && ev.SessionID != "" && from.Resumed == ev.SessionID {
		// Only the pane's own agent, started to resume this very
		// conversation, takes a worker's relations to its pane.
		m.followMovedAgent(ctx, req.Pane, ev.SessionID)
	}
	if m.prompts.movedOn(req.Pane, ev) {
		m.reg.notify()
	}
	if deny := m.applyEvent(req.Pane, ad, ev, (*agent.Teammate)(req.Teammate)); deny != "" {
		return &api.HookResponse{Deny: true, Reason: deny}, nil
	}
	return &api.HookResponse{}, nil
}

// applyEvent applies one event of pane's agent (from its hook, or read on
// the screen of an agent without hooks), and returns why a tool call about
// to run is refused ("" for none).
func (m *Manager) applyEvent(pane string, ad *agent.Kind, ev agent.Event, teammate *agent.Teammate) (deny string) {
	// The worker's records, read before its change (tokens.go): what the
	// agent spent so far rides in the change this event makes.
	tr := m.tokens.read(pane, ad, ev.Transcript)
	if tr != nil {
		m.noteRolloutLimits(pane, ad, tr.limits)
	}
	m.settleIfChanged(func(c *change) {
		hf := m.facts.event(pane, ad.Name, ev, teammate, m.reg.workerAtLocked)
		if hf.newAgent && !hf.teammate {
			// Kept on the pane, so st still knows an agent runs there after a
			// restart of st, and so that a tmux restart can resume it (not a
			// teammate: it is its lead's to start, and alone it is no teammate).
			m.keepAgentOnPane(pane, ad.Name, hf.session)
		}
		w := m.reg.workers[pane]
		if w == nil || !w.State.Live() {
			m.noteCoordTokensLocked(c, pane, tr)
			m.coordEventLocked(c, pane, ad.Name, ev, hf.aside)
		}
		if w != nil && w.State.Live() {
			m.noteTokensLocked(c, w, tr)
			if deny = checkScope(w, ev); deny != "" {
				m.logf("worker %s: refused a %s call outside its scope", w.ID, ev.Tool)
				return // (nothing to write, no one to wake)
			}
		}
		c.kicks = append(c.kicks, pane)
		m.hookAttnLocked(c, pane, ev, hf, ad.Hear.Answers != "" && ev.Name == ad.Hear.Answers)
		if w != nil && w.State.Live() && !hf.aside {
			m.workerEventLocked(c, w, ev, hf)
		}
	})
	return deny
}

// followMovedAgent moves the relations of an agent that came back in
// another pane (a worker or coordinator resumed by other means than
// st's own restore: `claude --resume ID` in a window of its own) to pane.
func (m *Manager) followMovedAgent(ctx context.Context, pane, session string) {
	m.reg.mu.Lock()
	old := m.movedAgentLocked(pane, session)
	var opts map[string]string
	if old != "" {
		opts = m.paneOptionsLocked(old)
	}
	m.reg.mu.Unlock()
	if old != "" {
		m.logf("the agent of %s (conversation %s) is back in %s: moving its relations", old, session, pane)
		m.relink(ctx, map[string]string{old: pane}, map[string]map[string]string{pane: opts}, false)
	}
}

// keepAgentOnPane records the agent of pane in tmux's options, in the
// background.
func (m *Manager) keepAgentOnPane(pane, kind, session string) {
	m.bg.Go(func(ctx context.Context) {
		o := map[string]string{"@st_agent": kind}
		if session != "" {
			o["@st_agent_session"] = session
		}
		m.cfg.Tmux.SetOptions(ctx, map[string]map[string]string{pane: o})
		m.kickWatch()
	})
}

// workerEventLocked moves live worker w along with an event of its own
// agent.
func (m *Manager) workerEventLocked(c *change, w *Worker, ev agent.Event, hf hookFacts) {
	syncs.AssertLocked(&m.reg.mu)
	if ev.SessionID != "" && w.AgentSession != ev.SessionID {
		w.AgentSession = ev.SessionID
		c.touchLocked(m.reg.runOf[w.ID])
	}
	if ev.Transcript != "" && w.Transcript != ev.Transcript && !ev.Aside() {
		w.Transcript = ev.Transcript
		c.touchLocked(m.reg.runOf[w.ID])
	}
	switch ev.Kind {
	case agent.EvTurnStart:
		if w.Reported && !m.newWorkLocked(w, ev, hf) {
			// The reported piece of work goes on (as a tool would): the
			// report stands, and its turn's end finds it done again.
			m.logf("worker %s (%s): a turn after its report with no new prompt (%s): its report stands", w.ID, w.Name, ev.Name)
			m.wentOnLocked(m.workerLimiteeLocked(w), "its turn went on after its report")
			if w.State != api.Done {
				c.setStateLocked(w, api.Working)
			}
			return
		}
		m.wentOnLocked(m.workerLimiteeLocked(w), "its turn started")
		// New work makes a new report due.
		if w.Reported {
			w.Reported = false
			c.touchLocked(m.reg.runOf[w.ID])
		}
		c.setStateLocked(w, api.Working)
	case agent.EvTool:
		m.wentOnLocked(m.workerLimiteeLocked(w), "it used a tool")
		if w.State != api.Done {
			c.setStateLocked(w, api.Working)
		}
	case agent.EvWaiting:
		c.setStateLocked(w, api.Waiting)
	case agent.EvTurnEnd:
		if l, ok := m.limitOfLocked(m.workerLimiteeLocked(w), ev); ok {
			m.pauseLocked(c, w, l)
			return
		}
		w.LastAnswer = ev.LastAnswer
		if w.Reported && w.ReportAnswer == "" {
			w.ReportAnswer = ev.LastAnswer // the answer that came with the report
		}
		c.touchLocked(m.reg.runOf[w.ID])
		if w.Reported {
			c.setStateLocked(w, api.Done)
		} else {
			c.setStateLocked(w, api.Idle)
			if ev.Failed && w.State == api.Idle {
				c.failedTurnAttnLocked(w, ev.LastAnswer)
			}
		}
	case agent.EvInterrupt:
		c.setStateLocked(w, api.Idle)
	case agent.EvSessionEnd:
		// The agent exited: its pane closing, or the whole tmux server
		// going down (then st brings it back). The watcher tells which.
		m.kickWatch()
	}
}

// newWorkLocked says whether a turn start of reported worker w is new
// work, which makes a new report due. Only a new prompt is: a line st
// typed (a task, st worker send) or a person did, which its hook carries.
// Not new work: a notice st typed in (its own workers are done); a turn
// start with no prompt, which the agent started itself (Gemini fires
// BeforeAgent again for a request of its own, a tool's result or a
// continuation, whose text is empty); and, for an agent without hooks, a
// busy screen before its box came back after the report: the reported
// turn's own busy line, still on screen (its whole turn can be shorter
// than one look). Nor is the turn start of its task while st still types
// it (w.Typing): the report came first, and answers that very line.
func (m *Manager) newWorkLocked(w *Worker, ev agent.Event, hf hookFacts) bool {
	syncs.AssertLocked(&m.reg.mu)
	switch {
	case w.Typing:
		return false
	case hf.notice != "" && ev.Prompt == hf.notice:
		return false
	case ev.Prompt != "":
		return true
	case ev.Name == screenEvent:
		return m.facts.boxSinceReport(w.ID)
	default:
		return false
	}
}
