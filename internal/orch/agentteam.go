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
//
// All of it is paneFacts' (facts.go): its …Locked functions run with
// f.mu held; the others take it.

import (
	"sort"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/syncs"
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
	api.Teammate
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

func (f *paneFacts) teamNamedLocked(name string) *team {
	syncs.AssertLocked(&f.mu)
	if f.teams == nil {
		f.teams = map[string]*team{}
	}
	t := f.teams[name]
	if t == nil {
		if len(f.teams) >= maxTeams {
			f.pruneTeamsLocked()
			if len(f.teams) >= maxTeams {
				return nil
			}
		}
		t = &team{name: name, members: map[string]*mate{}}
		f.teams[name] = t
	}
	return t
}

// memberLocked finds or makes a teammate of t (nil when t is full).
func (f *paneFacts) memberLocked(t *team, name string) *mate {
	syncs.AssertLocked(&f.mu)
	if t == nil {
		return nil
	}
	mt := t.members[name]
	if mt == nil {
		if len(t.members) >= maxTeammates {
			return nil
		}
		now := f.now()
		mt = &mate{Teammate: api.Teammate{Name: name, Team: t.name, State: mateWorking, Since: now, Started: now}, heard: now}
		t.members[name] = mt
	}
	return mt
}

func (f *paneFacts) setMateLocked(mt *mate, state string) {
	syncs.AssertLocked(&f.mu)
	if mt == nil {
		return
	}
	mt.heard = f.now()
	if mt.State != state {
		mt.State, mt.Since = state, mt.heard
	}
}

// dropClosedMates forgets the teammates whose panes were not in tmux's
// list of panes made at listed (the teammate's SessionEnd may not have
// come: a pane killed with its server, or st down then).
func (f *paneFacts) dropClosedMates(live map[string]bool, listed time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.teams {
		for name, mt := range t.members {
			if mt.Pane != "" && !live[mt.Pane] && mt.heard.Before(listed) {
				delete(t.members, name)
			}
		}
	}
}

// mateByPaneLocked is the teammate whose own pane this is.
func (f *paneFacts) mateByPaneLocked(pane string) (*team, *mate) {
	syncs.AssertLocked(&f.mu)
	for _, t := range f.teams {
		for _, mt := range t.members {
			if mt.Pane == pane {
				return t, mt
			}
		}
	}
	return nil, nil
}

// leadOfLocked is the pane of t's lead now, or "" when st does not see it: the
// pane it was last heard from while that pane still holds its
// conversation, else the pane that does (a tmux restart moved it).
func (f *paneFacts) leadOfLocked(t *team) string {
	syncs.AssertLocked(&f.mu)
	if pi := f.panes[t.leadPane]; pi != nil && (t.leadSession == "" || pi.session == "" || pi.session == t.leadSession) {
		return t.leadPane
	}
	if t.leadSession == "" {
		return ""
	}
	for pane, pi := range f.panes {
		if pi.session == t.leadSession {
			return pane
		}
	}
	return ""
}

// ledByLocked lists the teams whose lead is in pane.
func (f *paneFacts) ledByLocked(pane string) []*team {
	syncs.AssertLocked(&f.mu)
	var out []*team
	for _, t := range f.teams {
		if f.leadOfLocked(t) == pane {
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

// asideLocked applies what a hook event says about Claude's subagents and agent
// teams: a lead's teammates and subagents, or, from a teammate's own pane,
// the teammate itself. flags is a teammate's identity from its command
// line (nil for any other agent). It reports whether the event is about
// another agent than the pane's own, which then leaves the pane's own turn
// alone.
func (f *paneFacts) asideLocked(pane string, ev agent.Event, flags *agent.Teammate, workers workerPanes) bool {
	syncs.AssertLocked(&f.mu)
	now := f.now()
	f.teammateFlagsLocked(pane, flags, now, workers)
	// A teammate's own pane: its own turns.
	if t, mt := f.mateByPaneLocked(pane); mt != nil {
		if own, aside := f.mateEventLocked(t, mt, ev); own {
			return aside
		}
	}
	switch ev.Kind {
	case agent.EvTeammateIdle:
		return f.mateIdleLocked(pane, ev, workers)
	case agent.EvSubagent:
		if mt := f.inProcessMateLocked(pane, ev.SubagentID, ev.SubagentType); mt != nil {
			if ev.SubagentDone {
				f.setMateLocked(mt, mateIdle)
			} else {
				f.setMateLocked(mt, mateWorking)
			}
			return true
		}
		f.subagentLocked(pane, ev.SubagentID, ev.SubagentType, ev.SubagentDone, now)
		return true
	case agent.EvTool:
		if f.leadToolLocked(pane, ev, now, workers) {
			return true
		}
	case agent.EvSessionEnd:
		// The lead's end ends its team (Claude stops its teammates).
		for _, t := range f.teams {
			if isLeadPane(t, pane, ev.SessionID) {
				delete(f.teams, t.name)
			}
		}
	}
	if ev.Name == "Stop" && ev.LiveTeammates == 0 {
		// A lead's Stop lists its live teammates; none listed means the
		// in-process ones were stopped (one in a pane ends with its pane).
		for _, t := range f.ledByLocked(pane) {
			for name, mt := range t.members {
				if mt.Pane == "" {
					delete(t.members, name)
				}
			}
		}
	}
	return false
}

// teammateFlagsLocked records a teammate's identity from its command line.
func (f *paneFacts) teammateFlagsLocked(pane string, flags *agent.Teammate, now time.Time, workers workerPanes) {
	syncs.AssertLocked(&f.mu)
	if flags != nil && !flags.Valid() {
		// Any program of the user may call st's socket: a name st would
		// print must look as Claude writes it.
		f.logf("hook from %s: ignored a teammate identity that Claude would not write", pane)
		return
	}
	if flags == nil || workers.known(pane) {
		return
	}
	t := f.teamNamedLocked(flags.Team)
	if t != nil && flags.LeadSession != "" {
		t.leadSession = flags.LeadSession
	}
	if mt := f.memberLocked(t, flags.Name); mt != nil {
		mt.Pane, mt.InProcess, mt.heard = pane, false, now
		if flags.Color != "" {
			mt.Color = flags.Color
		}
	}
}

// mateEventLocked applies an event from a teammate's own pane. own reports
// that the event was the teammate's to take; aside, that it leaves the
// pane's turn alone.
func (f *paneFacts) mateEventLocked(t *team, mt *mate, ev agent.Event) (own, aside bool) {
	syncs.AssertLocked(&f.mu)
	if ev.SessionID != "" && ev.Kind != agent.EvTeammateIdle {
		mt.Session = ev.SessionID
	}
	switch ev.Kind {
	case agent.EvSessionStart, agent.EvTurnStart:
		// Its first prompt waits in its inbox: it works at once.
		f.setMateLocked(mt, mateWorking)
		return true, false
	case agent.EvTool:
		if !ev.Aside() {
			f.setMateLocked(mt, mateWorking)
		}
	case agent.EvWaiting:
		f.setMateLocked(mt, mateWaiting)
		return true, false
	case agent.EvTurnEnd, agent.EvInterrupt, agent.EvTeammateIdle:
		f.setMateLocked(mt, mateIdle)
		return true, ev.Kind == agent.EvTeammateIdle
	case agent.EvSessionEnd:
		delete(t.members, mt.Name)
		return true, false
	}
	return false, false
}

// mateIdleLocked applies TeammateIdle: of an in-process teammate, in its lead's
// pane, or of a teammate in a pane st did not know yet.
func (f *paneFacts) mateIdleLocked(pane string, ev agent.Event, workers workerPanes) bool {
	syncs.AssertLocked(&f.mu)
	tm := ev.Teammate
	t := f.teamNamedLocked(tm.Team)
	if t == nil {
		return true
	}
	if isLeadPane(t, pane, ev.SessionID) {
		// An in-process teammate, whose hooks fire in its lead's pane.
		mt := f.memberLocked(t, tm.Name)
		if mt != nil && mt.Pane == "" {
			mt.InProcess = true
		}
		f.setMateLocked(mt, mateIdle)
		return true
	}
	if !workers.known(pane) {
		if mt := f.memberLocked(t, tm.Name); mt != nil {
			mt.Pane = pane
			f.setMateLocked(mt, mateIdle)
		}
	}
	return true
}

// leadToolLocked applies a lead's tool call: an Agent call that spawned a
// teammate, a SendMessage to one, or a call of an in-process teammate or
// subagent (which it reports as aside).
func (f *paneFacts) leadToolLocked(pane string, ev agent.Event, now time.Time, workers workerPanes) bool {
	syncs.AssertLocked(&f.mu)
	if tm := ev.Teammate; tm != nil && !workers.known(tm.Pane) {
		// The lead's Agent call spawned a teammate.
		t := f.teamNamedLocked(tm.Team)
		if t != nil {
			t.leadPane = pane
			if ev.SessionID != "" {
				t.leadSession = ev.SessionID
			}
		}
		if mt := f.memberLocked(t, tm.Name); mt != nil {
			mt.Pane, mt.InProcess, mt.agentID = tm.Pane, tm.InProcess, tm.AgentID
			if tm.Color != "" {
				mt.Color = tm.Color
			}
			f.setMateLocked(mt, mateWorking)
		}
		// Hooks run side by side, so an in-process teammate's
		// SubagentStart may have come first and made it a subagent.
		if pi := f.panes[pane]; pi != nil && tm.AgentID != "" {
			delete(pi.subagents, tm.AgentID)
		}
	}
	if ev.MessageTo != "" {
		for _, t := range f.ledByLocked(pane) {
			if mt := t.members[ev.MessageTo]; mt != nil {
				f.setMateLocked(mt, mateWorking)
			}
		}
	}
	if ev.SubagentID == "" {
		return false
	}
	if mt := f.inProcessMateLocked(pane, ev.SubagentID, ev.SubagentType); mt != nil {
		f.setMateLocked(mt, mateWorking)
	} else {
		f.subagentLocked(pane, ev.SubagentID, ev.SubagentType, false, now)
	}
	return true
}

// inProcessMateLocked is the in-process teammate of a team led from pane that
// an agent_id (or, at its SubagentStart, an agent_type, which is its name)
// names, or nil.
func (f *paneFacts) inProcessMateLocked(pane, id, typ string) *mate {
	syncs.AssertLocked(&f.mu)
	for _, t := range f.ledByLocked(pane) {
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

// subagentLocked records a subagent of pane's agent (Task/Agent tool), working
// or done. A tool call of one st has not seen start makes it known too.
func (f *paneFacts) subagentLocked(pane, id, typ string, done bool, now time.Time) {
	syncs.AssertLocked(&f.mu)
	if id == "" {
		return
	}
	pi := f.panes[pane]
	if pi == nil {
		return
	}
	if pi.subagents == nil {
		pi.subagents = map[string]*api.Subagent{}
	}
	s := pi.subagents[id]
	if s == nil {
		s = &api.Subagent{ID: id, Type: typ, Started: now, Since: now}
		pi.subagents[id] = s
		f.trimSubagentsLocked(pi)
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

// trimSubagentsLocked keeps the newest few finished subagents of a pane.
func (f *paneFacts) trimSubagentsLocked(pi *paneInfo) {
	syncs.AssertLocked(&f.mu)
	var done []*api.Subagent
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

// pruneTeamsLocked forgets teams whose lead st cannot see.
func (f *paneFacts) pruneTeamsLocked() {
	syncs.AssertLocked(&f.mu)
	for name, t := range f.teams {
		if f.leadOfLocked(t) == "" {
			delete(f.teams, name)
		}
	}
}
