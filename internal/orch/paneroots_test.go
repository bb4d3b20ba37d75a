package orch

import (
	"testing"

	"github.com/sophonz/st/internal/tmux"
)

// The panes' first processes are kept from each reading of the layout,
// with when that reading began; a pane it does not hold has none, and a
// reading that found no server (or failed) leaves none at all.
func TestPaneRootsFromTheLayout(t *testing.T) {
	m := &Manager{}
	if _, _, ok := m.PaneRoot("%1"); ok {
		t.Fatal("a pane root before any listing")
	}
	l := tmux.Layout{Sessions: []tmux.LayoutSession{{Name: "main", Windows: []tmux.LayoutWindow{
		{Index: 0, Panes: []tmux.LayoutPane{{ID: "%1", PID: 101}, {ID: "%2", PID: 102}}},
		{Index: 1, Panes: []tmux.LayoutPane{{ID: "%3"}}}, // no pid told
	}}}}
	m.roots.Store(rootsOf(l, 12345))
	if pid, listed, ok := m.PaneRoot("%2"); !ok || pid != 102 || listed != 12345 {
		t.Errorf("PaneRoot(%%2) = %d, %d, %v; want 102, 12345, true", pid, listed, ok)
	}
	for _, p := range []string{"%3", "%4"} {
		if pid, _, ok := m.PaneRoot(p); ok {
			t.Errorf("PaneRoot(%s) = %d, want none", p, pid)
		}
	}
	m.roots.Store(nil)
	if _, _, ok := m.PaneRoot("%1"); ok {
		t.Error("a pane root after the roots were dropped")
	}
}
