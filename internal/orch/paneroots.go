package orch

import (
	"context"

	"github.com/sophonz/st/internal/tmux"
	"golang.org/x/sys/unix"
)

// paneRoots is each pane's first process as the last reading of tmux's
// layout listed it (observe), for the daemon's look at which pane a
// caller runs in (daemon.listedPaneOf): a caller whose parents hold the
// process tmux listed for the pane it names, started before the listing,
// runs in that pane, with no question to tmux.
type paneRoots struct {
	pids map[string]int // by pane id
	// listed is when the reading began, on CLOCK_MONOTONIC (ns): a
	// process that started before it, and lives, is the one listed.
	listed int64
}

// monotonicNow is CLOCK_MONOTONIC now, in ns (0 when it cannot be read:
// then no process counts as started before it).
func monotonicNow() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return ts.Nano()
}

// readLayoutRoots reads tmux's layout (observe's reading) and keeps each
// pane's first process from it; a reading that failed drops them, so a
// caller's pane is asked of tmux again.
func (m *Manager) readLayoutRoots(ctx context.Context) (l tmux.Layout, err error) {
	listed := monotonicNow()
	l, err = m.cfg.Tmux.ReadLayout(ctx)
	if err != nil || len(l.Sessions) == 0 {
		m.roots.Store(nil)
		return l, err
	}
	m.roots.Store(rootsOf(l, listed))
	return l, nil
}

// rootsOf is the first process of each pane of l, a layout whose reading
// began at listed.
func rootsOf(l tmux.Layout, listed int64) *paneRoots {
	r := &paneRoots{pids: map[string]int{}, listed: listed}
	for _, s := range l.Sessions {
		for _, w := range s.Windows {
			for _, p := range w.Panes {
				if p.PID > 0 {
					r.pids[p.ID] = p.PID
				}
			}
		}
	}
	return r
}

// PaneRoot is the first process of pane as tmux last listed it, and when
// that listing began (CLOCK_MONOTONIC, ns); ok is false for a pane the
// last listing did not hold (a new pane, a closed one, no listing yet).
func (m *Manager) PaneRoot(pane string) (pid int, listed int64, ok bool) {
	r := m.roots.Load()
	if r == nil {
		return 0, 0, false
	}
	pid, ok = r.pids[pane]
	return pid, r.listed, ok
}
