package orch

import (
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/history"
)

// shelve puts the runs that are over into the history and out of memory,
// at the start, once st has looked at tmux: a run none of whose workers
// lives, with no task left to start, whose coordinator is on this machine
// and whose pane is gone (internal/history). Its run.json stays as it is,
// and the next start does not read it; st reads it when asked for (the
// daemon's show, read and list --all). Without History every run stays.
// A run whose coordinator may still live stays: that pane's next worker
// joins it. Called once, before any request is served.
func (m *Manager) shelve() {
	if m.cfg.History == nil {
		return
	}
	// From now on only the disk has them: their records as they are.
	// Waited for with no lock held: the saver takes the registry's lock
	// for the snapshots it writes (registry.snapshot).
	if err := m.reg.saver.sync(); err != nil {
		m.logf("finished runs stay in memory: %v", err)
		return
	}
	m.reg.mu.Lock() // lockio: once, at the start, before any request is served: no one waits for this lock yet
	defer m.reg.mu.Unlock()
	var over []*Run
	var wires []*api.Run // as the history keeps them: the wire's form
	for _, r := range m.reg.runs {
		w := r.wire()
		// A run changed since the sync (its record not all on disk) stays
		// in memory: the next start shelves it.
		if !m.reg.frozen[r.ID] && history.Finished(&w) && (api.Retired(r.Coordinator) || m.rest.gone(r.Coordinator)) && m.reg.saver.onDisk(r.ID) {
			over, wires = append(over, r), append(wires, &w)
		}
	}
	if len(over) == 0 {
		return
	}
	if err := m.cfg.History.Add(wires); err != nil {
		m.logf("finished runs stay in memory: %v", err)
		return
	}
	for _, r := range over {
		delete(m.reg.runs, r.ID)
		for _, w := range r.Workers {
			if m.reg.runOf[w.ID] == r {
				delete(m.reg.workers, w.ID)
				delete(m.reg.runOf, w.ID)
			}
		}
		m.reg.saver.forget(r.ID)
	}
	m.logf("%d finished runs went to st's history (%d in all): read from disk when asked for", len(over), m.cfg.History.Len())
}
