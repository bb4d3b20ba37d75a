package orch

import (
	"context"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/tmux"
	"github.com/sophonz/st/internal/tokens"
)

// Runs: a coordinator's piece of work (st orch start, st orch show). The
// registry keeps them (registry.go); a run is made by its coordinator's
// first worker too (place.go).

// Show returns a run: by id, or the one the calling pane coordinates or works in.
func (m *Manager) Show(ctx context.Context, pane, id string) (*api.RunView, error) {
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	var r *Run
	if id != "" {
		r = m.reg.runs[id]
		if r == nil {
			return nil, errorf(api.KindNotFound, "st orch show with no id shows this pane's run; st status lists the runs", "there is no run %q", id)
		}
	} else {
		if r = m.reg.paneRunLocked(pane, ""); r == nil {
			return nil, errorf(api.KindNotFound, "st orch start --objective TEXT makes one", "this pane has no run")
		}
	}
	v := &api.RunView{Run: r.wire(), Teammates: m.facts.teammatesOf(r.Coordinator, m.reg.workerAtLocked), Subagents: m.facts.subagentsOf(r.Coordinator)}
	for _, w := range r.Workers {
		v.Views = append(v.Views, m.viewLocked(w))
	}
	v.Workers = nil
	v.Tokens, v.BudgetUse = m.runTokensLocked(r), m.budgetViewLocked(r)
	return v, nil
}

// StartRun makes a run whose coordinator is the calling pane.
func (m *Manager) StartRun(ctx context.Context, req api.StartRunRequest) (*api.Run, error) {
	if err := checkText("objective", req.Objective); err != nil {
		return nil, err
	}
	if !api.ValidOnLimit(req.OnLimit) {
		return nil, errorf(api.KindUsage, "st orch start --on-limit wait|move|fail", "--on-limit takes wait, move or fail, not %q", req.OnLimit)
	}
	var budget *tokens.Budget // nil: the default
	switch req.Budget {
	case "":
	case "none":
		budget = &tokens.Budget{}
	default:
		b, err := tokens.ParseBudget(req.Budget)
		if err != nil {
			return nil, errorf(api.KindUsage, "st orch start --budget 500k (tokens) or --budget '$5' (dollars of estimated cost)", "%v", err)
		}
		if b.USD > 0 && len(m.cfg.Prices.Models) == 0 {
			return nil, errorf(api.KindUsage, "give a budget in tokens (--budget 500k), or prices in config.toml's [tokens.prices] (docs/tokens.md)",
				"a dollar budget needs a price table: st knows no prices, so it can tell no cost")
		}
		budget = &b
	}
	p, err := m.callerPane(ctx, req.Pane)
	if err != nil {
		return nil, err
	}
	// What the coordinator's conversation spent before this run (an
	// earlier run of it, its talk before st orch start) is not this
	// run's: read now, outside the lock, and taken off its tokens.
	before := m.tokens.conversationSoFar(p.ID)
	cp, err := m.newRun(p, req.Objective, budget, req.OnLimit, before)
	if err != nil {
		return nil, err
	}
	m.markCoordinator(ctx, p.ID, cp.ID)
	return cp, nil
}

// newRun makes and writes the run of coordinator p, unless p is a live
// worker (its workers join its run).
func (m *Manager) newRun(p tmux.Pane, objective string, budget *tokens.Budget, onLimit string, before *tokens.Ledger) (*api.Run, error) {
	var cp api.Run
	err := m.keep(func(c *change) (func(), error) {
		if w := m.reg.workers[p.ID]; w != nil && w.State.Live() {
			return nil, errorf(api.KindConflict, "start workers from this pane with st worker start; they join run "+m.reg.runOf[p.ID].ID,
				"this pane is worker %s of run %s, so it cannot start a run of its own", w.Name, m.reg.runOf[p.ID].ID)
		}
		r := m.reg.newRunLocked(p, objective)
		r.OnLimit = onLimit
		if before != nil {
			r.CoordLedger, r.CoordBase = before, before.ByModel()
		}
		if budget != nil { // given: it, or none (zero), over the default
			r.Budget = budget
			if budget.IsZero() {
				r.Budget = nil
			}
		}
		cp = r.wire()
		c.touchLocked(r)
		return func() { m.reg.dropRunLocked(r) }, nil
	})
	if err != nil {
		return nil, err
	}
	return &cp, nil
}
