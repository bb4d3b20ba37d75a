package orch

import (
	"context"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/syncs"
	"github.com/sophonz/st/internal/tmux"
)

// placed is where a new worker (or adopted agent, or task) goes: its run
// and level, and whether the run was made for it. A start holds its name
// in the run until release.
type placed struct {
	m       *Manager
	run     *Run
	level   int
	created bool
	key     string // the name held, by run id + "/" + name
}

// release lets the name go (the worker, if any, holds it now).
func (pl *placed) release() {
	if pl.key == "" {
		return
	}
	pl.m.mu.Lock()
	delete(pl.m.reserved, pl.key)
	pl.m.mu.Unlock()
}

// drop forgets a run made for something that failed, while it is empty.
func (pl *placed) drop() {
	if !pl.created {
		return
	}
	pl.m.mu.Lock()
	pl.m.dropRunLocked(pl.run)
	pl.m.mu.Unlock()
}

// place finds the run and level of a new worker of pane p (in run fixed
// when given), making and writing a run when the pane has none; the
// pane is then marked as its coordinator.
func (m *Manager) place(ctx context.Context, p tmux.Pane, fixed *Run) (*placed, error) {
	m.mu.Lock()
	pl, err := m.placeLocked(p, fixed)
	var fl *flight
	if err == nil && pl.created {
		fl = m.flyNewRunLocked(pl, "")
	}
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if fl != nil {
		if err := m.finish(fl); err != nil {
			return nil, err
		}
		m.markCoordinator(ctx, p.ID, pl.run.ID)
	}
	return pl, nil
}

// placeLocked is place without the write of a run it made (see
// flyNewRunLocked) and the pane's marks.
func (m *Manager) placeLocked(p tmux.Pane, fixed *Run) (*placed, error) {
	syncs.AssertLocked(&m.mu)
	r, level, created, err := m.placementLocked(p, fixed)
	if err != nil {
		return nil, err
	}
	return &placed{m: m, run: r, level: level, created: created}, nil
}

// flyNewRunLocked stages the run placeLocked made for pl, undone (with
// the name held under key, if any) when it cannot be written; the caller
// lets the lock go and finishes it (keep.go).
func (m *Manager) flyNewRunLocked(pl *placed, key string) *flight {
	syncs.AssertLocked(&m.mu)
	c := m.newChange()
	c.touchLocked(pl.run)
	return m.flyLocked(c, func() {
		if key != "" {
			delete(m.reserved, key)
		}
		m.dropRunLocked(pl.run)
	})
}

// markCoordinator puts the coordinator's relations on its pane, so that
// st knows it after a restart of st.
func (m *Manager) markCoordinator(ctx context.Context, pane, run string) {
	if err := m.cfg.Tmux.SetOptions(ctx, map[string]map[string]string{pane: {"@st_run": run, "@st_role": "coordinator"}}); err != nil {
		m.logf("coordinator %s of run %s: keep its relations on the pane: %v", pane, run, err)
	}
}

// placementIn finds the run and level of a new worker started by pane p,
// making a run in memory when the pane has none; with fixed (a task's
// run) that run.
func (reg *registry) placementLocked(p tmux.Pane, fixed *Run) (r *Run, level int, created bool, err error) {
	syncs.AssertLocked(&reg.mu)
	if fixed != nil && fixed.Coordinator == p.ID {
		return fixed, 1, false, nil
	}
	if err := reg.checkChainLocked(p.ID, 0, "a new worker"); err != nil {
		return nil, 0, false, err
	}
	if w := reg.workers[p.ID]; w != nil && w.State.Live() {
		if tr := reg.runs[w.TeamRun]; tr != nil && tr.Coordinator == p.ID {
			// A team lead keeps its own run: its new workers join it, and
			// depth inside the team counts from the lead again (the whole
			// chain was checked above).
			return tr, 1, false, nil
		}
		r = reg.runOf[p.ID]
		if w.Level+1 > MaxLevel {
			return nil, 0, false, errorf(api.KindDepth, "do this part yourself, or hand it back to "+w.Parent+" to start",
				"refused: a worker may start workers at most %d levels below its run's coordinator, and this pane is already %d levels down (%s)",
				MaxLevel, w.Level, reg.chainLocked(w))
		}
		return r, w.Level + 1, false, nil
	}
	if r = reg.currentRunLocked(p.ID); r != nil {
		return r, 1, false, nil
	}
	return reg.newRunLocked(p, ""), 1, true, nil
}

// reserve places a new worker called name for pane p (in run fixed when
// given, or where a start for another machine puts it) and holds its name until
// release, so that two starts cannot take one name.
func (m *Manager) reserve(ctx context.Context, p tmux.Pane, fixed *Run, hosted *hostedPlace, name string) (*placed, error) {
	m.mu.Lock()
	var pl *placed
	var err error
	if hosted != nil {
		pl = &placed{m: m, run: hosted.run, level: hosted.f.Level}
	} else if pl, err = m.placeLocked(p, fixed); err != nil {
		m.mu.Unlock()
		return nil, err
	}
	key := pl.run.ID + "/" + name
	if err := m.nameFreeLocked(pl.run, nil, name); err != nil || m.reserved[key] {
		if pl.created {
			m.dropRunLocked(pl.run)
		}
		m.mu.Unlock()
		return nil, errorf(api.KindConflict, "pick another --name", "run %s already has a worker named %q", pl.run.ID, name)
	}
	m.reserved[key] = true
	pl.key = key
	var fl *flight
	if pl.created {
		fl = m.flyNewRunLocked(pl, key)
	}
	m.mu.Unlock()
	if fl != nil {
		if err := m.finish(fl); err != nil {
			return nil, err
		}
		m.markCoordinator(ctx, p.ID, pl.run.ID)
	}
	return pl, nil
}

// nameFreeLocked refuses name in run r when a live worker other than w has it.
func (reg *registry) nameFreeLocked(r *Run, w *Worker, name string) error {
	syncs.AssertLocked(&reg.mu)
	for _, o := range r.Workers {
		if o != w && o.Name == name && o.State.Live() {
			return errorf(api.KindConflict, "pick another name", "run %s already has a worker named %q", r.ID, name)
		}
	}
	return nil
}
