package orch

import (
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/syncs"
	"github.com/sophonz/st/internal/tmux"
	"github.com/sophonz/st/internal/version"
)

// restorer is st's picture of the tmux server and of bringing it back:
// the last layout (kept in tmux-layout.json), which panes lived at the
// last look, whether a restore is under way, and the last restore's
// figures. It has its own lock (mu); the registry's may be held when it
// is taken, never the other way. mu is never held through a write of
// tmux-layout.json: wmu is (record), taken with no other lock held, so
// that no one who holds the registry's lock waits for that disk.
type restorer struct {
	path string
	// frozen says why the picture on disk is not st's to read or write
	// (a newer st's); "" when it is.
	frozen string

	wmu    sync.Mutex // one write of the picture at a time, in the order of the changes
	mu     sync.Mutex
	layout tmux.Layout
	// livePanes is the set of panes seen by the last reconcile (nil
	// before the first), for telling that a coordinator is gone.
	livePanes map[string]bool
	// phase is where the restore is (restore.go's diagram); seq counts
	// restores begun and ended, so that a reconcile that listed panes
	// around one does not judge the half-made server.
	phase restorePhase
	seq   int
	// resuming are the panes whose agents are starting again, with the
	// generation (seq) of the restore that started them.
	resuming map[string]int
	// restored are the panes the last restore brought back; afterRestore
	// says the next look finds st's own new server.
	restored     map[string]bool
	afterRestore bool
	// serverDown is since when the server has been gone (zero while up).
	serverDown time.Time
	last       api.RestoreStats
}

func newRestorer(home string) *restorer {
	rs := &restorer{path: filepath.Join(home, "tmux-layout.json")}
	var l tmux.Layout
	if err := store.ReadJSON(rs.path, &l); err == nil {
		if l.Format > tmux.LayoutFormat {
			// A newer st's picture: not read (its form may mean other
			// things), and never overwritten.
			rs.frozen = fmt.Sprintf("%s was written by a newer st (format %d; this st %s reads formats up to %d), so st keeps no picture of the tmux server and cannot restore it, and the file is never written by this st. Try: install the newer st again (it was replaced by an older one), then st down; st up",
				rs.path, l.Format, version.Version, tmux.LayoutFormat)
			return rs
		}
		rs.layout = l
	}
	return rs
}

// problem is what the user should know of the picture ("" for nothing).
func (rs *restorer) problem() string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.frozen
}

// picture is the last layout st recorded.
func (rs *restorer) picture() tmux.Layout {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.layout
}

// record keeps layout l as the picture, on disk when it changed.
// The picture changes in memory under mu, and is written with only wmu
// held (taken first, so that writes land in the order of the changes).
func (rs *restorer) record(l tmux.Layout) error {
	rs.wmu.Lock() // lockio: the picture's write lock, held through its write alone
	defer rs.wmu.Unlock()
	rs.mu.Lock()
	l.Format = tmux.LayoutFormat
	if rs.frozen != "" || reflect.DeepEqual(l, rs.layout) {
		rs.mu.Unlock()
		return nil
	}
	rs.layout = l
	rs.mu.Unlock()
	return store.WriteJSON(rs.path, l, 0o600)
}

// gen is the count of restores begun and ended so far.
func (rs *restorer) gen() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.seq
}

// judge says whether a list of panes made at generation seq may judge
// the workers (no restore began or ended since), and if so records its
// live panes.
func (rs *restorer) judge(seq int, live map[string]bool) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.restoringLocked() || rs.seq != seq {
		return false
	}
	rs.livePanes = live
	return true
}

// restoringLocked: the sessions or the relations are being made again;
// a look at the server now sees a half-made one.
func (rs *restorer) restoringLocked() bool {
	syncs.AssertLocked(&rs.mu)
	return rs.phase == phaseReopening || rs.phase == phaseRelinking
}

// busy reports whether a restore is making sessions or relations now.
func (rs *restorer) busy() bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.restoringLocked()
}

// begin starts a restore, unless one is making sessions or relations
// already (then false). Agents of an earlier restore still starting are
// left to find their panes gone: their generation is over.
func (rs *restorer) begin() bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if !rs.toLocked(phaseReopening) {
		return false
	}
	rs.seq++
	rs.resuming = nil
	return true
}

// end ends the making of sessions and relations: the restore resumes
// agents now, or is over when there are none.
func (rs *restorer) end() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.phase == phaseReopening {
		rs.toLocked(phaseRelinking)
	}
	if len(rs.resuming) > 0 {
		rs.toLocked(phaseResuming)
	} else {
		rs.toLocked(phaseWatching)
	}
	rs.seq++
}

// to moves the restore to phase p when the diagram allows it.
func (rs *restorer) to(p restorePhase) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.toLocked(p)
}

func (rs *restorer) toLocked(p restorePhase) bool {
	syncs.AssertLocked(&rs.mu)
	if !phaseAllowed(rs.phase, p) {
		return false
	}
	rs.phase = p
	return true
}

// resume records that the agent of pane starts again, for the restore
// of generation gen (the current one).
func (rs *restorer) resume(pane string) (gen int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.resuming == nil {
		rs.resuming = map[string]int{}
	}
	rs.resuming[pane] = rs.seq
	return rs.seq
}

// settle records that the agent of pane came back or is gone. It says
// false when a later restore began meanwhile (the pane is another's
// then). The last agent to settle ends the restore.
func (rs *restorer) settle(pane string, gen int) (current, last bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if g, ok := rs.resuming[pane]; !ok || g != gen {
		return false, false
	}
	delete(rs.resuming, pane)
	if len(rs.resuming) == 0 && rs.phase == phaseResuming {
		rs.toLocked(phaseWatching)
		return true, true
	}
	return true, false
}

// isResuming reports whether the agent of pane is starting again: its
// pane, kept when the agent exits, is not yet judged by reconcile.
func (rs *restorer) isResuming(pane string) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	_, ok := rs.resuming[pane]
	return ok
}

// resumingCount is how many agents are starting again.
func (rs *restorer) resumingCount() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return len(rs.resuming)
}

// restoredSince reports whether a restore brought sessions back after at.
func (rs *restorer) restoredSince(at time.Time) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.last.Panes > 0 && !rs.last.At.Before(at)
}

// serverBack records that a server runs again (st's restore made it).
func (rs *restorer) serverBack() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.serverDown = time.Time{}
}

// up records that the server runs, and says what st knew of it: its
// identity, whether a restore is under way, and whether st's own restore
// made it (which is then taken as known).
func (rs *restorer) up() (known string, busy, restored bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.serverDown = time.Time{}
	known, busy, restored = rs.layout.Server, rs.restoringLocked(), rs.afterRestore
	if !busy {
		rs.afterRestore = false
	}
	return
}

// otherLife reports whether server (a Layout.Server) is another life of
// the tmux server than the one st's picture is of, which st did not make
// itself: its pane ids mean other panes.
func (rs *restorer) otherLife(server string) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	known := rs.layout.Server
	return known != "" && server != "" && server != known && !rs.afterRestore && !rs.restoringLocked()
}

// down records that the server went at at.
func (rs *restorer) down(at time.Time) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.serverDown = at
}

// broughtBack records the panes a restore brought back.
func (rs *restorer) broughtBack(panes []string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.restored = map[string]bool{}
	for _, p := range panes {
		rs.restored[p] = true
	}
	rs.afterRestore = true
}

// wasRestored reports whether the last restore brought pane back.
func (rs *restorer) wasRestored(pane string) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.restored[pane]
}

// live says whether pane lived at the last look; known is false before
// the first look (or right after a relink).
func (rs *restorer) live(pane string) (alive, known bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.livePanes == nil {
		return false, false
	}
	return rs.livePanes[pane], true
}

// forget drops the last look's panes (their ids changed).
func (rs *restorer) forget() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.livePanes = nil
}

// gone reports whether pane is known not to live.
func (rs *restorer) gone(pane string) bool {
	alive, known := rs.live(pane)
	return known && !alive
}

// done records the figures of a restore whose sessions and relations
// are back.
func (rs *restorer) done(st api.RestoreStats) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.last = st
}

// agentsBack records when the last agent of the restore settled.
func (rs *restorer) agentsBack(d time.Duration) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.last.AgentsBack = d
}

// stats are the figures of the last restore, and since when the server
// has been down (zero while it runs).
func (rs *restorer) stats() (api.RestoreStats, time.Time) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.last, rs.serverDown
}

// LastRestore returns the figures of the last restore.
func (m *Manager) LastRestore() api.RestoreStats {
	st, _ := m.rest.stats()
	return st
}

// ServerDown says since when the tmux server has been down (zero while
// it runs), for st status.
func (m *Manager) ServerDown() time.Time {
	_, down := m.rest.stats()
	return down
}

// Restoring reports whether st is bringing the tmux server back now.
func (m *Manager) Restoring() bool { return m.rest.busy() }

// Resuming is how many agents st is starting again after a restore.
func (m *Manager) Resuming() int { return m.rest.resumingCount() }
