package orch

import (
	"strings"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/authz"
	"github.com/sophonz/st/internal/syncs"
)

// The Manager answers the facts internal/authz decides by that its
// records hold: who owns a worker, whose coordinator a pane is, what a
// pane's agent is to st. internal/peer's Hub answers authz with these and
// its own (what was offered to another machine, whether this machine
// takes workers). Deciding is authz's; these only say what st's state
// holds.

// SimForAgents: a person allowed agents to start the sim agent.
func (m *Manager) SimForAgents() bool { return m.cfg.SimForAgents }

// Owns reports whether id (as the pane caller names it, the way st worker
// commands resolve ids) is a worker of caller, or under one of its
// workers.
func (m *Manager) Owns(caller, id string) bool {
	if caller == "" || id == "" {
		return false
	}
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	w := m.reg.ownedLookupLocked(caller, id)
	for i := 0; w != nil && i < MaxChain+2; i++ {
		if w.Parent == caller {
			return true
		}
		w = m.reg.workers[w.Parent]
	}
	return false
}

// ownedLookupLocked finds the worker id names for caller: a worker here as
// resolve finds it, or this machine's record of a worker on another
// machine (machine/%N or machine/name, the machine by slug or name).
func (reg *registry) ownedLookupLocked(caller, id string) *Worker {
	syncs.AssertLocked(&reg.mu)
	mach, rest, remote := api.SplitRemote(id)
	if !remote {
		w, err := reg.resolveLocked(caller, id)
		if err != nil {
			return nil
		}
		return w
	}
	var found *Worker
	for _, w := range reg.workers {
		if !w.Remote() || (w.Machine != mach && !strings.EqualFold(w.MachineName, mach)) {
			continue
		}
		if w.ID == w.Machine+"/"+rest || w.Name == rest {
			if w.Parent == caller && (found == nil || found.Parent != caller || w.State.Live()) {
				found = w
			} else if found == nil {
				found = w
			}
		}
	}
	return found
}

// ParentOf is the parent of the live worker id here: a pane here, or
// machine/%N for another machine's coordinator ("" for no live worker).
func (m *Manager) ParentOf(id string) string {
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	w, err := m.reg.resolveLocked("", id)
	if err != nil || !w.State.Live() || w.Remote() {
		return ""
	}
	return w.Parent
}

// CoordinatesFor reports whether pane here is the coordinator of workers
// that machine runs for it, or was before a tmux restart moved it: the
// only panes here a machine may ask about (PeerPane), whether or not this
// machine takes workers itself.
func (m *Manager) CoordinatesFor(machine, pane string) bool {
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	handed, _ := m.reg.paneForLocked(machine, pane)
	return handed
}

// AskedGate reports whether the gate id was asked from pane (the one
// pane, with a person, that may withdraw it).
func (m *Manager) AskedGate(pane, id string) bool {
	g, ok := m.gates.get(id)
	return ok && pane != "" && g.Pane == pane
}

// PaneRole is what the agent in pane is to st: a worker, a coordinator,
// a teammate of a Claude agent team, or one st does not know ("").
func (m *Manager) PaneRole(pane string) authz.Role {
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	if w := m.reg.workers[pane]; w != nil && w.State.Live() {
		return authz.Worker
	}
	for _, r := range m.reg.runs {
		if r.Coordinator == pane {
			return authz.Coordinator
		}
	}
	if m.facts.teammate(pane, m.reg.workerAtLocked) {
		return authz.Teammate
	}
	return authz.Unknown
}
