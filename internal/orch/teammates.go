package orch

// Claude's agent teams and subagents, kept as facts of their lead's pane.
//
// A teammate of a Claude agent team (docs/agent-teams.md) is not an st
// worker: st never types into it, never waits for it and never adopts it
// unless a person drops its card on a coordinator. st only watches: who
// leads it, whether it runs in a pane of its own or in its lead's process,
// and whether it works or is idle, all from hooks:
//
//   - the lead's PostToolUse of the Agent call that spawned it (name, team,
//     pane or "in-process");
//   - a teammate's own hooks, which carry its name, team and lead (st hook
//     reads them from its command line); no UserPromptSubmit fires for a
//     teammate's turns, so its first tool call or SessionStart says it
//     works, and Stop or TeammateIdle that it is idle;
//   - for an in-process teammate, SubagentStart/SubagentStop, tool calls
//     with its agent_id and TeammateIdle, all in its lead's pane;
//   - the lead's SendMessage to it, which starts a turn of its own.
//
// Teams are kept by name, since every one of those names the team; the
// lead's pane is found again from the lead's conversation id when it moved.

import (
	"context"
	"sort"
	"time"

	"github.com/sophonz/st/internal/agent"
)

// team is a Claude agent team st has heard of.
type team struct {
	name        string
	leadSession string // the lead's conversation id
	leadPane    string // where the lead was last heard from
	members     map[string]*mate
}

// mate is a teammate as st keeps it: what it shows, and what it needs to
// follow it.
type mate struct {
	Teammate
	// agentID is what an in-process teammate's hooks carry as agent_id.
	agentID string
	// heard is when st last heard of it, so that a list of panes made
	// before that does not count its pane as closed.
	heard time.Time
}

// Bounds on what hooks may make st keep.
const (
	maxTeams     = 256
	maxTeammates = 64
	maxDoneSubs  = 20
)

// Teammate and subagent states.
const (
	mateWorking = "working"
	mateWaiting = "waiting"
	mateIdle    = "idle"
	subDone     = "done"
)

func (m *Manager) teamNamed(name string) *team {
	if m.teams == nil {
		m.teams = map[string]*team{}
	}
	t := m.teams[name]
	if t == nil {
		if len(m.teams) >= maxTeams {
			m.pruneTeams()
			if len(m.teams) >= maxTeams {
				return nil
			}
		}
		t = &team{name: name, members: map[string]*mate{}}
		m.teams[name] = t
	}
	return t
}

// member finds or makes a teammate of t (nil when t is full).
func (m *Manager) member(t *team, name string) *mate {
	if t == nil {
		return nil
	}
	mt := t.members[name]
	if mt == nil {
		if len(t.members) >= maxTeammates {
			return nil
		}
		now := m.cfg.Now()
		mt = &mate{Teammate: Teammate{Name: name, Team: t.name, State: mateWorking, Since: now, Started: now}, heard: now}
		t.members[name] = mt
	}
	return mt
}

func (m *Manager) setMate(mt *mate, state string) {
	if mt == nil {
		return
	}
	mt.heard = m.cfg.Now()
	if mt.State != state {
		mt.State, mt.Since = state, mt.heard
	}
}

// dropClosedMates forgets the teammates whose panes were not in tmux's
// list of panes made at listed (the teammate's SessionEnd may not have
// come: a pane killed with its server, or st down then). Called with
// m.mu held, from reconcile.
func (m *Manager) dropClosedMates(live map[string]bool, listed time.Time) {
	for _, t := range m.teams {
		for name, mt := range t.members {
			if mt.Pane != "" && !live[mt.Pane] && mt.heard.Before(listed) {
				delete(t.members, name)
			}
		}
	}
}

// mateByPane is the teammate whose own pane this is.
func (m *Manager) mateByPane(pane string) (*team, *mate) {
	for _, t := range m.teams {
		for _, mt := range t.members {
			if mt.Pane == pane {
				return t, mt
			}
		}
	}
	return nil, nil
}

// leadOf is the pane of t's lead now, or "" when st does not see it: the
// pane it was last heard from while that pane still holds its
// conversation, else the pane that does (a tmux restart moved it).
func (m *Manager) leadOf(t *team) string {
	if pi := m.panes[t.leadPane]; pi != nil && (t.leadSession == "" || pi.session == "" || pi.session == t.leadSession) {
		return t.leadPane
	}
	if t.leadSession == "" {
		return ""
	}
	for pane, pi := range m.panes {
		if pi.session == t.leadSession {
			return pane
		}
	}
	return ""
}

// ledBy lists the teams whose lead is in pane.
func (m *Manager) ledBy(pane string) []*team {
	var out []*team
	for _, t := range m.teams {
		if m.leadOf(t) == pane {
			out = append(out, t)
		}
	}
	return out
}

// isLeadPane reports whether an event from pane (with conversation sess)
// comes from t's lead: an in-process teammate's hooks fire there.
func isLeadPane(t *team, pane, sess string) bool {
	if t.leadPane == pane || (sess != "" && t.leadSession == sess) {
		return true
	}
	// Claude names a lead's team after the first 8 characters of its
	// conversation id ("session-0702c391").
	return len(sess) >= 8 && t.name == "session-"+sess[:8]
}

// aside applies what a hook event says about Claude's subagents and agent
// teams: a lead's teammates and subagents, or, from a teammate's own pane,
// the teammate itself. flags is a teammate's identity from its command
// line (nil for any other agent). It reports whether the event is about
// another agent than the pane's own, which then leaves the pane's own turn
// alone. Called with m.mu held.
func (m *Manager) aside(pane string, ev agent.Event, flags *agent.Teammate) bool {
	now := m.cfg.Now()
	if flags != nil && !flags.Valid() {
		// Any program of the user may call st's socket: a name st would
		// print must look as Claude writes it.
		m.logf("hook from %s: ignored a teammate identity that Claude would not write", pane)
		flags = nil
	}
	if flags != nil && m.workers[pane] == nil {
		t := m.teamNamed(flags.Team)
		if t != nil && flags.LeadSession != "" {
			t.leadSession = flags.LeadSession
		}
		if mt := m.member(t, flags.Name); mt != nil {
			mt.Pane, mt.InProcess, mt.heard = pane, false, now
			if flags.Color != "" {
				mt.Color = flags.Color
			}
		}
	}
	// A teammate's own pane: its own turns.
	if t, mt := m.mateByPane(pane); mt != nil {
		if ev.SessionID != "" && ev.Kind != agent.EvTeammateIdle {
			mt.Session = ev.SessionID
		}
		switch ev.Kind {
		case agent.EvSessionStart, agent.EvTurnStart:
			// Its first prompt waits in its inbox: it works at once.
			m.setMate(mt, mateWorking)
			return false
		case agent.EvTool:
			if !ev.Aside() {
				m.setMate(mt, mateWorking)
			}
		case agent.EvWaiting:
			m.setMate(mt, mateWaiting)
			return false
		case agent.EvTurnEnd, agent.EvInterrupt, agent.EvTeammateIdle:
			m.setMate(mt, mateIdle)
			return ev.Kind == agent.EvTeammateIdle
		case agent.EvSessionEnd:
			delete(t.members, mt.Name)
			return false
		}
	}
	switch ev.Kind {
	case agent.EvTeammateIdle:
		tm := ev.Teammate
		t := m.teamNamed(tm.Team)
		if t == nil {
			return true
		}
		if isLeadPane(t, pane, ev.SessionID) {
			// An in-process teammate, whose hooks fire in its lead's pane.
			mt := m.member(t, tm.Name)
			if mt != nil && mt.Pane == "" {
				mt.InProcess = true
			}
			m.setMate(mt, mateIdle)
			return true
		}
		// A teammate in a pane st did not know yet.
		if m.workers[pane] == nil {
			if mt := m.member(t, tm.Name); mt != nil {
				mt.Pane = pane
				m.setMate(mt, mateIdle)
			}
		}
		return true
	case agent.EvSubagent:
		if mt := m.inProcessMate(pane, ev.SubagentID, ev.SubagentType); mt != nil {
			if ev.SubagentDone {
				m.setMate(mt, mateIdle)
			} else {
				m.setMate(mt, mateWorking)
			}
			return true
		}
		m.subagent(pane, ev.SubagentID, ev.SubagentType, ev.SubagentDone, now)
		return true
	case agent.EvTool:
		if tm := ev.Teammate; tm != nil && m.workers[tm.Pane] == nil {
			// The lead's Agent call spawned a teammate.
			t := m.teamNamed(tm.Team)
			if t != nil {
				t.leadPane = pane
				if ev.SessionID != "" {
					t.leadSession = ev.SessionID
				}
			}
			if mt := m.member(t, tm.Name); mt != nil {
				mt.Pane, mt.InProcess, mt.agentID = tm.Pane, tm.InProcess, tm.AgentID
				if tm.Color != "" {
					mt.Color = tm.Color
				}
				m.setMate(mt, mateWorking)
			}
			// Hooks run side by side, so an in-process teammate's
			// SubagentStart may have come first and made it a subagent.
			if pi := m.panes[pane]; pi != nil && tm.AgentID != "" {
				delete(pi.subagents, tm.AgentID)
			}
		}
		if ev.MessageTo != "" {
			for _, t := range m.ledBy(pane) {
				if mt := t.members[ev.MessageTo]; mt != nil {
					m.setMate(mt, mateWorking)
				}
			}
		}
		if ev.SubagentID != "" {
			if mt := m.inProcessMate(pane, ev.SubagentID, ev.SubagentType); mt != nil {
				m.setMate(mt, mateWorking)
			} else {
				m.subagent(pane, ev.SubagentID, ev.SubagentType, false, now)
			}
			return true
		}
	case agent.EvSessionEnd:
		// The lead's end ends its team (Claude stops its teammates).
		for _, t := range m.teams {
			if isLeadPane(t, pane, ev.SessionID) {
				delete(m.teams, t.name)
			}
		}
	}
	if ev.Name == "Stop" && ev.LiveTeammates == 0 {
		// A lead's Stop lists its live teammates; none listed means the
		// in-process ones were stopped (one in a pane ends with its pane).
		for _, t := range m.ledBy(pane) {
			for name, mt := range t.members {
				if mt.Pane == "" {
					delete(t.members, name)
				}
			}
		}
	}
	return false
}

// inProcessMate is the in-process teammate of a team led from pane that
// an agent_id (or, at its SubagentStart, an agent_type, which is its name)
// names, or nil.
func (m *Manager) inProcessMate(pane, id, typ string) *mate {
	for _, t := range m.ledBy(pane) {
		for _, mt := range t.members {
			if mt.Pane != "" {
				continue
			}
			if (id != "" && mt.agentID == id) || (mt.agentID == "" && typ != "" && mt.Name == typ) {
				return mt
			}
		}
	}
	return nil
}

// subagent records a subagent of pane's agent (Task/Agent tool), working
// or done. A tool call of one st has not seen start makes it known too.
func (m *Manager) subagent(pane, id, typ string, done bool, now time.Time) {
	if id == "" {
		return
	}
	pi := m.panes[pane]
	if pi == nil {
		return
	}
	if pi.subagents == nil {
		pi.subagents = map[string]*Subagent{}
	}
	s := pi.subagents[id]
	if s == nil {
		s = &Subagent{ID: id, Type: typ, Started: now, Since: now}
		pi.subagents[id] = s
		m.trimSubagents(pi)
	}
	if typ != "" {
		s.Type = typ
	}
	st := mateWorking
	if done {
		st = subDone
	}
	if s.State != st {
		s.State, s.Since = st, now
	}
}

// trimSubagents keeps the newest few finished subagents of a pane.
func (m *Manager) trimSubagents(pi *paneInfo) {
	var done []*Subagent
	for _, s := range pi.subagents {
		if s.State == subDone {
			done = append(done, s)
		}
	}
	if len(done) <= maxDoneSubs {
		return
	}
	sort.Slice(done, func(i, j int) bool { return done[i].Since.Before(done[j].Since) })
	for _, s := range done[:len(done)-maxDoneSubs] {
		delete(pi.subagents, s.ID)
	}
}

// pruneTeams forgets teams whose lead st cannot see. Called with m.mu held.
func (m *Manager) pruneTeams() {
	for name, t := range m.teams {
		if m.leadOf(t) == "" {
			delete(m.teams, name)
		}
	}
}

// teammatesOf lists the teammates of the teams led from pane, oldest
// first. One that became an st worker (a person dropped it on a
// coordinator) is left out. Called with m.mu held.
func (m *Manager) teammatesOf(pane string) []Teammate {
	var out []Teammate
	for _, t := range m.ledBy(pane) {
		for _, mt := range t.members {
			if w := m.workers[mt.Pane]; mt.Pane != "" && w != nil && w.State.Live() {
				continue
			}
			v := mt.Teammate
			v.For = roundDur(m.cfg.Now().Sub(v.Since))
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Started.Equal(out[j].Started) {
			return out[i].Started.Before(out[j].Started)
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// subagentsOf lists the subagents of pane's agent, oldest first. Called
// with m.mu held.
func (m *Manager) subagentsOf(pane string) []Subagent {
	pi := m.panes[pane]
	if pi == nil {
		return nil
	}
	var out []Subagent
	for _, s := range pi.subagents {
		v := *s
		v.For = roundDur(m.cfg.Now().Sub(v.Since))
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out
}

// teammatePane reports whether pane is a teammate's own, under a lead st
// sees: it is shown under that lead, not as an agent of its own. Called
// with m.mu held.
func (m *Manager) teammatePane(pane string) bool {
	t, mt := m.mateByPane(pane)
	if mt == nil || m.leadOf(t) == "" {
		return false
	}
	w := m.workers[pane]
	return w == nil || !w.State.Live()
}

// refuseTeammate refuses to adopt a teammate, unless a person asked (a
// card dropped on a coordinator): a teammate answers to its lead, and as
// an st worker it would get st's lines typed into it. Called with m.mu
// held.
func (m *Manager) refuseTeammate(pane string, byPerson bool) error {
	if byPerson || !m.teammatePane(pane) {
		return nil
	}
	t, mt := m.mateByPane(pane)
	return errorf(KindConflict, "leave it to its lead; a person who wants it as a worker drops its card on a coordinator in st web",
		"refused: %s is teammate %s of %s's Claude agent team (%s), not an agent of its own", pane, mt.Name, m.leadOf(t), t.name)
}

// AdoptDropped is Adopt for a person who dropped an agent's card on a
// coordinator's in the web UI: a teammate may be adopted that way.
func (m *Manager) AdoptDropped(ctx context.Context, req IDRequest) (*WorkerView, error) {
	return m.adopt(ctx, req, true)
}

// paneKind is what st ls says runs in pane: the agent's kind, and
// "teammate" after it for a teammate's own pane. Called with m.mu held.
func (m *Manager) paneKind(pane, kind string) string {
	if kind != "" && m.teammatePane(pane) {
		return kind + " teammate"
	}
	return kind
}

// teammatePanes adds to agents (pane -> what st ls says runs there) the
// teammates' panes that their lead's spawn told of before any hook of
// their own came. Called with m.mu held.
func (m *Manager) teammatePanes(agents map[string]string) {
	for _, t := range m.teams {
		lead := m.leadOf(t)
		if lead == "" || m.panes[lead] == nil {
			continue
		}
		for _, mt := range t.members {
			if mt.Pane != "" && agents[mt.Pane] == "" && m.teammatePane(mt.Pane) {
				agents[mt.Pane] = m.panes[lead].agent + " teammate"
			}
		}
	}
}
