package orch

import (
	"github.com/sophonz/st/internal/api"
)

// ShowTo is answer as an asker sees it: the texts (task, report, answers)
// of only the workers it may read, and of the others their name, state
// and times (api.WorkerView.HideTexts); an attention item about a worker
// it may not read, without the worker's answer or error in its text
// (api.Attention.HideText). may is authz's decision for that
// asker (authz.MayRead: st worker read's), asked once per worker; may("")
// says the asker may read every worker (a person). The socket and the
// peer API pass every answer through it as it leaves, so that what st
// worker read refuses no list, show or wait shows.
//
// A view of a worker of a past run (st's history) that shares its pane id
// with a worker now is not that worker: only an asker that may read every
// worker reads its texts.
//
// may is called without the manager's lock (authz's facts take it).
// Answers of other types are returned as they are.
func (m *Manager) ShowTo(answer any, may func(id string) bool) any {
	all := once(func() bool { return may("") })
	keep := func(v *api.WorkerView) {
		if all() || (may(v.ID) && m.isRecord(v)) {
			return
		}
		v.HideTexts()
	}
	switch a := answer.(type) {
	case *api.WorkerView:
		if a != nil {
			keep(a)
		}
	case []api.WorkerView:
		for i := range a {
			keep(&a[i])
		}
	case *api.WaitResult:
		if a != nil {
			for i := range a.Workers {
				keep(&a.Workers[i])
			}
		}
	case *api.RunView:
		if a != nil {
			for i := range a.Views {
				keep(&a.Views[i])
			}
			if !all() {
				a.Workers = nil // a view's run leaves them out for its views; so here, had one not
			}
		}
	case *api.DiffResult:
		if a != nil {
			keep(&a.Worker)
		}
	case *api.MergeResult:
		if a != nil {
			keep(&a.Worker)
		}
	case *api.AttentionList:
		// An item of a worker's turn holds its last answer or its error
		// (issue 34's items, read by st attention from any pane).
		if a != nil {
			for i := range a.Items {
				if it := &a.Items[i]; it.OfWorkerText() && !all() && !may(it.Pane) {
					it.HideText()
				}
			}
		}
	case *api.Attention:
		if a != nil && a.OfWorkerText() && !all() && !may(a.Pane) {
			a.HideText()
		}
	case []api.GraphAgent:
		for i := range a {
			if a[i].Role == "worker" && !all() && !may(a[i].Pane) {
				a[i].HideTexts()
			}
		}
	}
	return answer
}

// isRecord reports whether v is a view of the worker st has now under
// its id (not of a past run's worker whose pane id it reuses).
func (m *Manager) isRecord(v *api.WorkerView) bool {
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	w := m.reg.workers[v.ID]
	return w != nil && w.StartedAt.Equal(v.StartedAt)
}

// once is f, called at most once (its answer kept): a person's
// answer costs one decision, not one a worker.
func once(f func() bool) func() bool {
	var done, v bool
	return func() bool {
		if !done {
			v, done = f(), true
		}
		return v
	}
}
