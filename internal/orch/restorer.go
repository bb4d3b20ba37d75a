package orch

import (
	"path/filepath"
	"reflect"
	"sync"
	"time"

	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/tmux"
)

// restorer is st's picture of the tmux server and of bringing it back:
// the last layout (kept in tmux-layout.json), which panes lived at the
// last look, whether a restore is under way, and the last restore's
// figures. It has its own lock; the registry's may be held when it is
// taken, never the other way.
type restorer struct {
	path string

	mu     sync.Mutex
	layout tmux.Layout
	// livePanes is the set of panes seen by the last reconcile (nil
	// before the first), for telling that a coordinator is gone.
	livePanes map[string]bool
	// restoring is set while st brings a tmux server back; seq counts
	// restores begun and ended, so that a reconcile that listed panes
	// around one does not judge the half-made server.
	restoring bool
	seq       int
	// restored are the panes the last restore brought back; afterRestore
	// says the next look finds st's own new server.
	restored     map[string]bool
	afterRestore bool
	// serverDown is since when the server has been gone (zero while up).
	serverDown time.Time
	last       RestoreStats
}

func newRestorer(home string) *restorer {
	rs := &restorer{path: filepath.Join(home, "tmux-layout.json")}
	var l tmux.Layout
	if err := store.ReadJSON(rs.path, &l); err == nil {
		rs.layout = l
	}
	return rs
}

// picture is the last layout st recorded.
func (rs *restorer) picture() tmux.Layout {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.layout
}

// record keeps layout l as the picture, on disk when it changed.
func (rs *restorer) record(l tmux.Layout) error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if reflect.DeepEqual(l, rs.layout) {
		return nil
	}
	rs.layout = l
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
	if rs.restoring || rs.seq != seq {
		return false
	}
	rs.livePanes = live
	return true
}

// busy reports whether a restore is under way.
func (rs *restorer) busy() bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.restoring
}

// begin and end bracket a restore.
func (rs *restorer) begin() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.restoring = true
	rs.seq++
}

func (rs *restorer) end() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.restoring = false
	rs.seq++
}

// up records that the server runs, and says what st knew of it: its
// identity, whether a restore is under way, and whether st's own restore
// made it (which is then taken as known).
func (rs *restorer) up() (known string, busy, restored bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.serverDown = time.Time{}
	known, busy, restored = rs.layout.Server, rs.restoring, rs.afterRestore
	if !busy {
		rs.afterRestore = false
	}
	return
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

// LastRestore returns the figures of the last restore.
func (m *Manager) LastRestore() RestoreStats {
	m.rest.mu.Lock()
	defer m.rest.mu.Unlock()
	return m.rest.last
}

// ServerDown says since when the tmux server has been down (zero while
// it runs), for st status.
func (m *Manager) ServerDown() time.Time {
	m.rest.mu.Lock()
	defer m.rest.mu.Unlock()
	return m.rest.serverDown
}

// Restoring reports whether st is bringing the tmux server back now.
func (m *Manager) Restoring() bool { return m.rest.busy() }
