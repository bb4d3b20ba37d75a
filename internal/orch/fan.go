package orch

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/worktree"
)

// A fan: several tries of one task (st worker start --fan N), NAME-1 to
// NAME-N, each in a worktree of its own, started at once; st worker pick
// merges the chosen one and removes the others.

// try is another try of a fan that Pick removes: its record, and its
// pane, name and worktree as they were when picked.
type try struct {
	w        *Worker
	id, name string
	tree     Worktree
}

// otherTries finds the worker req names, one of a fan's tries, and the
// other tries of its fan not merged.
func (m *Manager) otherTries(req api.IDRequest) ([]try, error) {
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	w, err := m.reg.resolveLocked(req.Pane, req.ID)
	if err != nil {
		return nil, err
	}
	if w.Fan == "" {
		return nil, errorf(api.KindUsage, "st worker merge "+w.Name+" merges a single worker", "worker %s (%s) is not one of several tries (--fan)", w.Name, w.ID)
	}
	var others []try
	for _, o := range m.reg.runOf[w.ID].Workers {
		if o != w && o.Fan == w.Fan && o.Worktree != nil && !o.Worktree.Merged {
			others = append(others, try{w: o, id: o.ID, name: o.Name, tree: *o.Worktree})
		}
	}
	return others, nil
}

// Fan starts n tries of one task, NAME-1 to NAME-N, each in its own
// worktree, at once.
func (m *Manager) Fan(ctx context.Context, req api.StartRequest) ([]api.WorkerView, error) {
	if req.Fan < 2 || req.Fan > 10 {
		return nil, errorf(api.KindUsage, "--fan 2 to --fan 10", "--fan takes 2 to 10 tries, not %d", req.Fan)
	}
	base := req.Name
	if base == "" {
		base = NameFromTask(req.Task)
	}
	type res struct {
		i   int
		v   *api.WorkerView
		err error
	}
	ch := make(chan res, req.Fan)
	for i := 1; i <= req.Fan; i++ {
		r := startPlan{StartRequest: req, fanGroup: base}
		r.Name = fmt.Sprintf("%s-%d", base, i)
		r.Worktree, r.Fan = true, 0
		go func(i int) {
			v, err := m.startWorker(ctx, r)
			ch <- res{i, v, err}
		}(i)
	}
	out := make([]api.WorkerView, req.Fan)
	var errs []string
	for i := 0; i < req.Fan; i++ {
		x := <-ch
		if x.err != nil {
			errs = append(errs, fmt.Sprintf("%s-%d: %v", base, x.i, x.err))
			continue
		}
		out[x.i-1] = *x.v
	}
	if len(errs) > 0 {
		return out, errorf(api.KindInternal, "st worker list shows the tries that started", "%d of %d tries did not start:\n%s", len(errs), req.Fan, strings.Join(errs, "\n"))
	}
	return out, nil
}

// Pick merges the chosen try of a fan and removes the others: their
// windows, worktrees and branches.
func (m *Manager) Pick(ctx context.Context, req api.IDRequest) (*api.MergeResult, error) {
	if api.IsRemote(req.ID) {
		return nil, notAcrossMachines("st worker pick")
	}
	others, err := m.otherTries(req)
	if err != nil {
		return nil, err
	}
	res, err := m.Merge(ctx, req)
	if err != nil {
		return nil, err
	}
	for _, o := range others {
		m.killPane(ctx, o.id, o.w.Agent)
		repo := &worktree.Repo{Root: o.tree.Root}
		wt := treeOf(&o.tree)
		if err := repo.Remove(&wt, true); err != nil {
			m.logf("pick: remove %s: %v", wt.Path, err)
			continue
		}
		m.settleChange(func(c *change) {
			c.setStateLocked(o.w, api.Gone)
			o.w.Worktree.Path = ""
			c.touchLocked(m.reg.runOf[o.w.ID])
		})
		res.Removed = append(res.Removed, o.name)
	}
	sort.Strings(res.Removed)
	return res, nil
}
