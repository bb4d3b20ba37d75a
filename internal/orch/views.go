package orch

import (
	"context"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/syncs"
)

// Views: what st shows of runs and workers (st orch show, the lists).

// Show returns a run: by id, or the one the calling pane coordinates or works in.
func (m *Manager) Show(ctx context.Context, pane, id string) (*api.RunView, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var r *Run
	if id != "" {
		r = m.runs[id]
		if r == nil {
			return nil, errorf(api.KindNotFound, "st orch show with no id shows this pane's run; st status lists the runs", "there is no run %q", id)
		}
	} else {
		if r = m.paneRunLocked(pane, ""); r == nil {
			return nil, errorf(api.KindNotFound, "st orch start --objective TEXT makes one", "this pane has no run")
		}
	}
	v := &api.RunView{Run: r.wire(), Teammates: m.facts.teammatesOf(r.Coordinator, m.workerAtLocked), Subagents: m.facts.subagentsOf(r.Coordinator)}
	for _, w := range r.Workers {
		v.Views = append(v.Views, m.viewLocked(w))
	}
	v.Workers = nil
	return v, nil
}

func (m *Manager) viewLocked(w *Worker) api.WorkerView {
	syncs.AssertLocked(&m.mu)
	v := api.WorkerView{Worker: w.wire(), For: roundDur(m.cfg.Now().Sub(w.Since))}
	if r := m.runOf[w.ID]; r != nil {
		v.Run = r.ID
	}
	if w.TeamRun != "" {
		v.TeamOf = m.teamSizeLocked(m.runs[w.TeamRun], map[string]bool{})
		v.TeamDepth = m.subtreeDepthLocked(w.ID, map[string]bool{})
	}
	if api.Retired(w.Parent) || (w.Parent != "" && !api.IsRemote(w.Parent) && m.rest.gone(w.Parent)) {
		v.ParentGone = true
	}
	if w.Remote() {
		v.TeamOf, v.TeamDepth = w.TeamSize, w.TeamDepth
	} else {
		v.Teammates, v.Subagents = m.facts.teammatesOf(w.ID, m.workerAtLocked), m.facts.subagentsOf(w.ID)
	}
	return v
}
