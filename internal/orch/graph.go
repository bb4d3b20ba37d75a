package orch

import (
	"sort"
)

// Graph returns every coordinator and worker st knows on this machine,
// with the panes' subagents.
func (m *Manager) Graph() []GraphAgent {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []GraphAgent
	seen := map[string]bool{}
	subs := m.subagentsOf
	// A shell is not an agent: a coordinator that is a person at a shell
	// has no card, and no line goes from it to its workers (spec: "the
	// worker shows in the graph, but a shell is not an agent").
	shell := func(pane string) bool {
		if isRemotePane(pane) || retired(pane) {
			return false
		}
		pi := m.panes[pane]
		return (pi == nil || pi.agent == "") && m.workers[pane] == nil
	}
	for _, w := range m.workers {
		if w.State == Gone {
			continue
		}
		v := m.view(w)
		out = append(out, GraphAgent{Pane: w.ID, Name: w.Name, Kind: w.Agent, Role: "worker", State: string(w.State),
			Since: w.Since, Summary: w.Summary, Parent: w.Parent, ParentGone: v.ParentGone, Run: v.Run, TeamOf: v.TeamOf,
			Subagents: v.Subagents, Teammates: v.Teammates, ParentShell: !v.ParentGone && shell(w.Parent),
			ParentName: w.ParentName, ParentMachineName: w.ParentMachineName})
		seen[w.ID] = true
	}
	for _, r := range m.runs {
		if seen[r.Coordinator] || (m.livePanes != nil && !m.livePanes[r.Coordinator]) {
			continue
		}
		has := false
		for _, w := range r.Workers {
			if w.State.Live() || w.State == Done {
				has = true
			}
		}
		if !has {
			continue
		}
		if shell(r.Coordinator) {
			continue
		}
		seen[r.Coordinator] = true
		g := GraphAgent{Pane: r.Coordinator, Role: "coordinator", Run: r.ID, State: "idle", Since: r.Created,
			Subagents: subs(r.Coordinator), Teammates: m.teammatesOf(r.Coordinator)}
		if pi := m.panes[r.Coordinator]; pi != nil {
			g.Kind = pi.agent
			if pi.inTurn {
				g.State = "working"
			}
			if !pi.lastEvent.IsZero() {
				g.Since = pi.lastEvent
			}
		}
		out = append(out, g)
	}
	// Agents in no run: a person's own Claude or Codex, which can be
	// adopted (dropped on a coordinator in the web UI). A teammate is
	// shown under its lead instead.
	for pane, pi := range m.panes {
		if seen[pane] || pi.agent == "" || m.livePanes == nil || !m.livePanes[pane] || m.teammatePane(pane) {
			continue
		}
		g := GraphAgent{Pane: pane, Kind: pi.agent, State: "idle", Since: pi.lastEvent, Subagents: subs(pane), Teammates: m.teammatesOf(pane)}
		if pi.inTurn {
			g.State = "working"
		}
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pane < out[j].Pane })
	return out
}
