package orch

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/history"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/tmux"
)

// TestShelve: at its start, a Manager with a History leaves out the runs
// that are over (every worker gone or failed, the coordinator's pane
// gone or retired) and keeps the rest: the run of a coordinator whose
// pane lives, and a run with a live worker. The next start does not read
// the runs it left out.
func TestShelve(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	now := time.Now()
	for _, r := range []Run{
		{ID: "run-over", Coordinator: "%50", Created: now, Workers: []*Worker{{ID: "%51", Name: "a", State: api.Gone, Since: now}, {ID: "%52", Name: "b", State: api.Failed, Since: now}}},
		{ID: "run-retired", Coordinator: "%7~k9x", Created: now, Workers: []*Worker{{ID: "%8~k9x", Name: "c", State: api.Gone, Since: now}}},
		{ID: "run-lead-lives", Coordinator: shell, Created: now, Workers: []*Worker{{ID: "%60", Name: "d", State: api.Gone, Since: now}}},
	} {
		if err := store.WriteJSON(filepath.Join(h.home, "orch", r.ID, "run.json"), &r, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	start := func() *Manager {
		b, err := history.Open(h.home)
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewManager(context.Background(), Config{Home: h.home, STBin: "/bin/st", Tmux: tmux.NewWithRunner("/tmp/fake.sock", h.tm), History: b})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := start()
	m.Close()
	for _, m := range []*Manager{m, start()} {
		m.reg.mu.Lock()
		_, over := m.reg.runs["run-over"]
		_, retired := m.reg.runs["run-retired"]
		_, lives := m.reg.runs["run-lead-lives"]
		_, live := m.reg.runs[testRun]
		_, w := m.reg.workers["%51"]
		m.reg.mu.Unlock()
		if over || retired || w || !lives || !live {
			t.Errorf("in memory: run-over %v (its worker %v), run-retired %v, run-lead-lives %v, %s %v; want only the last two",
				over, w, retired, lives, testRun, live)
		}
		if !m.cfg.History.Has("run-over") || !m.cfg.History.Has("run-retired") || m.cfg.History.Has("run-lead-lives") {
			t.Errorf("the history holds run-over %v, run-retired %v, run-lead-lives %v", m.cfg.History.Has("run-over"),
				m.cfg.History.Has("run-retired"), m.cfg.History.Has("run-lead-lives"))
		}
		if s := m.Status(); s.Runs != 2 {
			t.Errorf("st status counts %d runs in memory, want 2", s.Runs)
		}
		if _, err := m.Show(context.Background(), "", "run-over"); err == nil {
			t.Errorf("the manager shows run-over from memory")
		}
		m.Close()
	}
	r, err := history.Open(h.home)
	if err != nil {
		t.Fatal(err)
	}
	if run, err := r.Run("run-over"); err != nil || len(run.Workers) != 2 {
		t.Errorf("run-over from disk: %+v, %v", run, err)
	}
}
