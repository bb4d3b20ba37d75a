package orch

import (
	"sort"

	"github.com/sophonz/st/internal/api"
)

// Graph returns every coordinator and worker st knows on this machine,
// with the panes' subagents.
func (m *Manager) Graph() []api.GraphAgent {
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	panes := m.facts.views(m.reg.workerAtLocked)
	// A shell is not an agent: a coordinator that is a person at a shell
	// has no card, and no line goes from it to its workers (spec: "the
	// worker shows in the graph, but a shell is not an agent").
	shell := func(pane string) bool {
		if api.IsRemote(pane) || api.Retired(pane) {
			return false
		}
		return panes[pane].agent == "" && m.reg.workers[pane] == nil
	}
	var out []api.GraphAgent
	seen := map[string]bool{}
	for _, w := range m.reg.workers {
		if w.State == api.Gone {
			continue
		}
		v := m.viewLocked(w)
		out = append(out, api.GraphAgent{Pane: w.ID, Name: w.Name, Kind: w.Agent, Role: "worker", State: string(w.State),
			Since: w.Since, Summary: w.Summary, Parent: w.Parent, ParentGone: v.ParentGone, Run: v.Run, TeamOf: v.TeamOf,
			Subagents: v.Subagents, Teammates: v.Teammates, ParentShell: !v.ParentGone && shell(w.Parent),
			ParentName: w.ParentName, ParentMachineName: w.ParentMachineName, Tokens: v.Tokens, Pause: pauseOf(w), Screen: v.ScreenStates})
		seen[w.ID] = true
	}
	for _, r := range m.reg.runs {
		if seen[r.Coordinator] || m.rest.gone(r.Coordinator) || !hasWork(r) || shell(r.Coordinator) {
			continue
		}
		seen[r.Coordinator] = true
		pv := panes[r.Coordinator]
		g := api.GraphAgent{Pane: r.Coordinator, Role: "coordinator", Run: r.ID, State: "idle", Since: r.Created,
			Kind: pv.agent, Subagents: pv.subagents, Teammates: pv.teammates}
		if pv.inTurn {
			g.State = "working"
		}
		if !pv.lastEvent.IsZero() {
			g.Since = pv.lastEvent
		}
		if g.Pause = coordPauseOf(r); g.Pause != nil {
			// At its usage limit, as a worker's card says (coordlimit.go).
			g.State = string(api.Paused)
		}
		out = append(out, g)
	}
	// Agents in no run: a person's own Claude or Codex, which can be
	// adopted (dropped on a coordinator in the web UI). A teammate is
	// shown under its lead instead.
	for pane, pv := range panes {
		if alive, _ := m.rest.live(pane); seen[pane] || pv.agent == "" || !alive || pv.teammate {
			continue
		}
		g := api.GraphAgent{Pane: pane, Kind: pv.agent, State: "idle", Since: pv.lastEvent, Subagents: pv.subagents, Teammates: pv.teammates}
		if pv.inTurn {
			g.State = "working"
		}
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pane < out[j].Pane })
	return out
}

// hasWork reports whether run r has a worker that lives or reported.
func hasWork(r *Run) bool {
	for _, w := range r.Workers {
		if w.State.Live() || w.State == api.Done {
			return true
		}
	}
	return false
}

// pauseOf is a paused worker's pause, nil for any other.
func pauseOf(w *Worker) *api.Pause {
	if w.State != api.Paused || w.Pause == nil {
		return nil
	}
	p := *w.Pause
	return &p
}
