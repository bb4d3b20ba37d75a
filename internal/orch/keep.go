package orch

import (
	"github.com/sophonz/st/internal/syncs"
)

// Changes that are undone when the disk cannot keep them (a report, a
// new task, a cancel), with no disk under the registry's lock.
//
// keep stages such a change under the lock, lets the lock go while the
// saver writes it, and takes the lock again only to undo it when the
// write failed. Changes that arrive while a write is under way are
// staged meanwhile and go to disk together in the next write (the saver's
// group commit), each waiter told when the write holding its change is
// durable. Until then the change is in flight:
//
//   - nothing acts on it: its effects (the coordinator's notice, the
//     starts of the tasks it made ready) run only once it is on disk; a
//     wait does not count a worker whose report is in flight as settled
//     (unsureLocked), and no one marks that report seen;
//   - a change staged after it, of the same run, carries it in its
//     snapshot: that change counts as kept only if this one is (so a
//     failed write undoes every change in it, and each caller gets the
//     error), and a change that stands whatever the disk says (settle)
//     runs its effects only once the changes in flight before it are
//     kept or undone;
//   - undos run last staged first, so that each puts back what was there
//     before it.

// flight is a change of keep between its staging and its end (kept or
// undone). Its fields are set under m.mu, but written, werr and resolved,
// which go from the flight's own goroutine to those that wait on it.
type flight struct {
	runs    []string  // the ids of the runs it touched
	workers []*Worker // workers whose report it holds (unsure until it ends)
	// deps are the flights of the same runs staged before it and not
	// ended then: its snapshot carries their changes.
	deps []*flight
	// written is closed once its own write's outcome is known, in werr.
	written chan struct{}
	werr    error
	// resolved is closed once it is kept, or undone.
	resolved chan struct{}
	// The change, staged, and how to undo it (finish).
	c    *change
	cm   *commit
	undo func()
}

// holdLocked marks w's report as part of the change: unsure until the
// change is kept (keep).
func (c *change) holdLocked(w *Worker) {
	syncs.AssertLocked(&c.m.mu)
	c.held = append(c.held, w)
}

// unsureLocked reports whether w's report is still in flight: it could be
// undone, so no one may act on it yet.
func (reg *registry) unsureLocked(w *Worker) bool {
	syncs.AssertLocked(&reg.mu)
	return reg.unsure[w] > 0
}

// takeOffLocked records the staged change c as in flight.
func (reg *registry) takeOffLocked(c *change) *flight {
	syncs.AssertLocked(&reg.mu)
	if reg.flying == nil {
		reg.flying, reg.unsure = map[string][]*flight{}, map[*Worker]int{}
	}
	fl := &flight{workers: c.held, written: make(chan struct{}), resolved: make(chan struct{})}
	seen := map[*flight]bool{}
	for r := range c.runs {
		fl.runs = append(fl.runs, r.ID)
		for _, d := range reg.flying[r.ID] {
			if !seen[d] {
				seen[d] = true
				fl.deps = append(fl.deps, d)
			}
		}
		reg.flying[r.ID] = append(reg.flying[r.ID], fl)
	}
	for _, w := range fl.workers {
		reg.unsure[w]++
	}
	return fl
}

// flyingLocked are the flights that touch any of c's runs now: what a
// settled change carries in its snapshot and waits for.
func (reg *registry) flyingLocked(c *change) []*flight {
	syncs.AssertLocked(&reg.mu)
	var out []*flight
	seen := map[*flight]bool{}
	for r := range c.runs {
		for _, d := range reg.flying[r.ID] {
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
		}
	}
	return out
}

// laterLocked are the flights staged after fl that carry it.
func (reg *registry) laterLocked(fl *flight) []*flight {
	syncs.AssertLocked(&reg.mu)
	var out []*flight
	seen := map[*flight]bool{}
	for _, id := range fl.runs {
		after := false
		for _, l := range reg.flying[id] {
			if l == fl {
				after = true
			} else if after && !seen[l] {
				seen[l] = true
				out = append(out, l)
			}
		}
	}
	return out
}

// landLocked ends fl: it is no longer in flight.
func (reg *registry) landLocked(fl *flight) {
	syncs.AssertLocked(&reg.mu)
	for _, id := range fl.runs {
		fs := reg.flying[id]
		for i, x := range fs {
			if x == fl {
				fs = append(fs[:i:i], fs[i+1:]...)
				break
			}
		}
		if len(fs) == 0 {
			delete(reg.flying, id)
		} else {
			reg.flying[id] = fs
		}
	}
	for _, w := range fl.workers {
		if reg.unsure[w]--; reg.unsure[w] <= 0 {
			delete(reg.unsure, w)
		}
	}
}

// keep makes a change that is undone when the disk cannot keep it. Under
// the registry's lock, f changes the registry, records it in c and
// returns how to undo it (called under the lock, after the undos of the
// changes staged after it), or an error for a change it refused (then
// nothing was changed, and keep returns that error). keep stages the
// change, lets the lock go while the disk works, and takes it again only
// to end the flight (finish).
func (m *Manager) keep(f func(c *change) (undo func(), err error)) error {
	m.mu.Lock()
	c := m.newChange()
	undo, err := f(c)
	if err != nil {
		m.mu.Unlock()
		return err
	}
	fl := m.flyLocked(c, undo)
	m.mu.Unlock()
	return m.finish(fl)
}

// flyLocked stages c, undone by undo when it cannot be kept, and puts it
// in flight; the caller lets the lock go and calls finish. (keep is the
// two in one; a caller that holds the lock for more than the change, as
// a start's placement, calls them itself.)
func (m *Manager) flyLocked(c *change, undo func()) *flight {
	syncs.AssertLocked(&m.mu)
	fl := m.takeOffLocked(c)
	fl.c, fl.cm, fl.undo = c, m.stageLocked(c), undo
	return fl
}

// finish waits, with no lock held, until the flight's change is on disk,
// then ends it: once kept, it sets its effects going; on a failed write
// (its own, or that of a change it carries) it undoes the change under
// the registry's lock, stages the runs again as they are then, and
// returns the error.
func (m *Manager) finish(fl *flight) error {
	fl.werr = fl.cm.wait()
	close(fl.written)
	err := fl.werr
	for _, d := range fl.deps {
		<-d.written
		if err == nil && d.werr != nil {
			err = d.werr
		}
	}
	if err == nil {
		m.mu.Lock()
		m.landLocked(fl)
		m.mu.Unlock()
		close(fl.resolved)
		fl.cm.effects()
		return nil
	}
	// The changes staged after this one carry it: they fail too, and
	// undo first.
	m.mu.Lock()
	later := m.laterLocked(fl)
	m.mu.Unlock()
	for _, l := range later {
		<-l.resolved
	}
	m.mu.Lock()
	if fl.undo != nil {
		fl.undo()
	}
	// The saver must not go on trying to write the undone snapshot.
	redo := m.newChange()
	for r := range fl.c.runs {
		redo.touchLocked(r)
	}
	m.stageLocked(redo)
	m.landLocked(fl)
	m.mu.Unlock()
	close(fl.resolved)
	m.notify() // a wait that saw the report in flight looks again
	return err
}
