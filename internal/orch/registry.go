package orch

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/history"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/syncs"
	"github.com/sophonz/st/internal/tmux"
	"github.com/sophonz/st/internal/tokens"
	"github.com/sophonz/st/internal/version"
)

// registry is the record of runs and workers: which runs exist, which
// workers each has, the names that starts in flight hold, the moves of
// coordinators other machines are still to hear of, and the writing of
// each run's record (run.json) through the saver. Its lock (mu, the
// manager's m.reg.mu) comes first in the manager's lock order (manager.go):
// paneFacts', gateBook's (its mu, never its write lock) and restorer's
// locks may be taken while it is held, then the saver's and the
// signal's, never the other way. Its
// methods that read or change what mu guards are …Locked.
type registry struct {
	home string
	now  func() time.Time
	logf func(format string, args ...any)
	// defaultBudget is config.toml's budget for a new run (nil: none).
	defaultBudget *tokens.Budget

	mu      sync.Mutex
	runs    map[string]*Run
	workers map[string]*Worker // by pane id, live and past
	runOf   map[string]*Run    // worker pane -> run
	// reserved names of starts in flight, by run id + "/" + name
	reserved map[string]bool
	// problems are what the user should know about st's state files
	// (a run.json st could not read), shown by st up and st status.
	problems []string
	// frozen are runs whose run.json a newer st wrote: left out, and
	// never written.
	frozen map[string]bool
	// untold are the moves of coordinators here (api.PeerReparent: Old
	// is the id a machine knows, retired when a restart of the tmux
	// server ended its life; New where the coordinator is now, "" when it
	// did not come back) that a machine with their workers is still to be
	// told, by its slug (remote.go).
	untold map[string][]api.PeerReparent
	// history holds the runs that are over (internal/history): never
	// loaded, and their ids never taken again (nil: none).
	history *history.Book
	saver   *saver
	// noticed holds, per worker, the key (reportKey) of the report a
	// done notice was typed for into its coordinator's pane: that report
	// is never announced again, however often the worker's state passes
	// through done with it (issue 32, item 9). In memory only: a restart
	// of st types no notice of an old report.
	noticed map[*Worker]string
	// flying are the changes in flight (keep.go) by run id, in the order
	// they were staged; unsure counts, per worker, the flights that hold
	// its report. Both made at the first flight.
	flying map[string][]*flight
	unsure map[*Worker]int
	// marking holds the adopted workers' panes whose st options are not
	// known to be there for the watcher's listings (adopt.go: enrol sets
	// them after the write): zero while they are being set, then when
	// they were. The watcher judges such a worker only on a listing
	// taken after that (judgePanesLocked).
	marking map[string]time.Time
	// sig wakes waiters at every change (it has its own lock, so that a
	// change wakes them after it is on disk, with mu let go).
	sig signal
}

// signal is closed and replaced at every change that a waiter may care
// about; seq counts the changes, for other machines' watches.
type signal struct {
	mu  sync.Mutex
	ch  chan struct{}
	seq uint64
}

// now is the channel that the next change closes, and the count so far.
func (s *signal) now() (<-chan struct{}, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch, s.seq
}

// notify wakes every waiter.
func (s *signal) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	if s.ch != nil {
		close(s.ch)
	}
	s.ch = make(chan struct{})
}

func newRegistry(home string, now func() time.Time, logf func(string, ...any)) registry {
	return registry{home: home, now: now, logf: logf, runs: map[string]*Run{}, workers: map[string]*Worker{}, runOf: map[string]*Run{},
		reserved: map[string]bool{}, frozen: map[string]bool{}, untold: map[string][]api.PeerReparent{},
		noticed: map[*Worker]string{}}
}

func (reg *registry) runDir(id string) string { return filepath.Join(reg.home, "orch", id) }

func (reg *registry) runPath(id string) string { return filepath.Join(reg.runDir(id), "run.json") }

// load reads every run.json but those of the runs in the history
// (shelve.go), which stay on disk; before the manager serves anything (so
// without the lock: no one else runs yet). A file that does not decode is
// reported, copied aside and skipped, never overwritten.
func (reg *registry) load() error {
	dirs, err := os.ReadDir(filepath.Join(reg.home, "orch"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read runs: %w", err)
	}
	for _, d := range dirs {
		if !d.IsDir() || reg.history.Has(d.Name()) {
			continue
		}
		path := reg.runPath(d.Name())
		var r Run
		found, cp, err := store.ReadJSONOrSetAside(path, &r)
		if !found {
			continue
		}
		if err != nil {
			reg.logf("skipping run %s: %v (a copy is kept at %s; fix or remove the file and restart st)", d.Name(), err, cp)
			reg.problems = append(reg.problems, fmt.Sprintf("st could not read %s, so its run and workers are left out (the file is not touched; a copy is kept at %s): %v. Fix or remove the file, then st down; st up", path, cp, errors.Unwrap(err)))
			continue
		}
		if r.Format > api.RunFormat {
			reg.frozen[d.Name()] = true
			reg.logf("skipping run %s: its run.json is of a newer st (format %d; this st reads up to %d)", d.Name(), r.Format, api.RunFormat)
			reg.problems = append(reg.problems, fmt.Sprintf("%s was written by a newer st (run.json format %d; this st %s reads formats up to %d), so its run and workers are left out, and the file is never written by this st. Try: install the newer st again (it was replaced by an older one), then st down; st up",
				path, r.Format, version.Version, api.RunFormat))
			continue
		}
		reg.runs[r.ID] = &r
		for _, w := range r.Workers {
			reg.workers[w.ID] = w
			reg.runOf[w.ID] = &r
		}
	}
	return nil
}

// notify wakes every waiter. It needs no lock.
func (reg *registry) notify() { reg.sig.notify() }

// Changed returns a channel that is closed at the next change of state.
func (reg *registry) Changed() <-chan struct{} {
	ch, _ := reg.sig.now()
	return ch
}

func newID(prefix string) string {
	b := make([]byte, 3)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// currentRunLocked is the newest run that pane coordinates.
func (reg *registry) currentRunLocked(pane string) *Run {
	syncs.AssertLocked(&reg.mu)
	var best *Run
	for _, r := range reg.runs {
		if r.Coordinator == pane && (best == nil || r.Created.After(best.Created)) {
			best = r
		}
	}
	return best
}

// newRunLocked makes a run in memory.
func (reg *registry) newRunLocked(p tmux.Pane, objective string) *Run {
	syncs.AssertLocked(&reg.mu)
	r := &Run{ID: newID("run-"), Objective: objective, Coordinator: p.ID, Session: p.SessionID, Created: reg.now()}
	if reg.defaultBudget != nil {
		b := *reg.defaultBudget
		r.Budget = &b
	}
	for reg.runs[r.ID] != nil || reg.history.Has(r.ID) {
		r.ID = newID("run-")
	}
	reg.runs[r.ID] = r
	return r
}

// dropRunLocked forgets a run made for something that failed, while it has no
// workers and no tasks.
func (reg *registry) dropRunLocked(r *Run) {
	syncs.AssertLocked(&reg.mu)
	if len(r.Workers) == 0 && len(r.Tasks) == 0 {
		delete(reg.runs, r.ID)
		reg.saver.forget(r.ID)
	}
}

// paneRunLocked is the run a pane coordinates or works in, or the run by id.
func (reg *registry) paneRunLocked(pane, id string) *Run {
	syncs.AssertLocked(&reg.mu)
	if id != "" {
		return reg.runs[id]
	}
	if r := reg.currentRunLocked(pane); r != nil {
		return r
	}
	return reg.runOf[pane]
}

// markingLocked records that st's options are being put on pane.
func (reg *registry) markingLocked(pane string) {
	syncs.AssertLocked(&reg.mu)
	if reg.marking == nil {
		reg.marking = map[string]time.Time{}
	}
	reg.marking[pane] = time.Time{}
}

// markedLocked records that st's options were on pane at time at.
func (reg *registry) markedLocked(pane string, at time.Time) {
	syncs.AssertLocked(&reg.mu)
	if _, ok := reg.marking[pane]; ok {
		reg.marking[pane] = at
	}
}

// unmarkedLocked reports whether a listing of the panes taken at listed
// may have missed st's options on pane; once a listing is newer than
// them, pane is forgotten.
func (reg *registry) unmarkedLocked(pane string, listed time.Time) bool {
	syncs.AssertLocked(&reg.mu)
	at, ok := reg.marking[pane]
	if !ok {
		return false
	}
	if at.IsZero() || !listed.After(at) {
		return true
	}
	delete(reg.marking, pane)
	return false
}

// addWorkerLocked puts w in run r.
func (reg *registry) addWorkerLocked(r *Run, w *Worker) {
	syncs.AssertLocked(&reg.mu)
	r.Workers = append(r.Workers, w)
	reg.workers[w.ID] = w
	reg.runOf[w.ID] = r
}

// removeWorkerLocked takes w out of its run.
func (reg *registry) removeWorkerLocked(w *Worker) {
	syncs.AssertLocked(&reg.mu)
	if r := reg.runOf[w.ID]; r != nil {
		for i, o := range r.Workers {
			if o == w {
				r.Workers = append(r.Workers[:i:i], r.Workers[i+1:]...)
				break
			}
		}
	}
	delete(reg.workers, w.ID)
	delete(reg.runOf, w.ID)
	delete(reg.noticed, w)
	delete(reg.marking, w.ID)
}

// workerAtLocked says whether pane is a worker's, and whether that worker
// lives, for paneFacts.
func (reg *registry) workerAtLocked(pane string) (known, live bool) {
	syncs.AssertLocked(&reg.mu)
	w := reg.workers[pane]
	return w != nil, w != nil && w.State.Live()
}

// resolveLocked finds a worker by pane id or name for the calling pane: first
// among its own workers, then in its run, then anywhere.
func (reg *registry) resolveLocked(caller, id string) (*Worker, error) {
	syncs.AssertLocked(&reg.mu)
	if id == "" {
		return nil, errorf(api.KindUsage, "st worker list shows the ids", "no worker id given")
	}
	if tmux.ValidPaneID(id) || api.Retired(id) {
		// A pane id names one pane: a worker of a server that went keeps
		// its old id retired (restore.go), and is named by that or its name.
		if w := reg.workers[id]; w != nil {
			return w, nil
		}
		return nil, errorf(api.KindNotFound, "st worker list shows this pane's workers", "%s is not a worker", id)
	}
	var own, run, all []*Worker
	cr := reg.paneRunLocked(caller, "")
	for _, w := range reg.workers {
		if w.Name != id {
			continue
		}
		all = append(all, w)
		if w.Parent == caller {
			own = append(own, w)
		}
		if cr != nil && reg.runOf[w.ID] == cr {
			run = append(run, w)
		}
	}
	for _, s := range [][]*Worker{own, run, all} {
		live := liveFirst(s)
		if len(live) == 1 {
			return live[0], nil
		}
		if len(live) > 1 {
			var ids []string
			for _, w := range live {
				ids = append(ids, w.ID+" (run "+reg.runOf[w.ID].ID+")")
			}
			sort.Strings(ids)
			return nil, errorf(api.KindConflict, "name the worker by its pane id", "%q names several workers: %s", id, strings.Join(ids, ", "))
		}
	}
	if cr != nil {
		if t := runTask(cr, id); t != nil && reg.workers[t.Worker] == nil {
			// A task named before its worker started: say so, rather than
			// "no worker", which reads as if the task were lost.
			why := string(t.State)
			if t.Reason != "" {
				why += ": " + t.Reason
			}
			return nil, errorf(api.KindNotFound, "st worker wait "+id+" waits for it to start and report; st task list shows it",
				"task %q has no worker yet (%s)", id, why)
		}
	}
	return nil, errorf(api.KindNotFound, "st worker list shows this pane's workers", "there is no worker named %q", id)
}

// liveFirst returns the live workers of ws, or all of them when none lives.
func liveFirst(ws []*Worker) []*Worker {
	var live []*Worker
	for _, w := range ws {
		if w.State.Live() {
			live = append(live, w)
		}
	}
	if len(live) > 0 {
		return live
	}
	if len(ws) > 1 {
		// Several past workers with one name: the newest stands for it.
		sort.Slice(ws, func(i, j int) bool { return ws[i].StartedAt.After(ws[j].StartedAt) })
		return ws[:1]
	}
	return ws
}

// chainLocked spells the line of panes from a run's coordinator to w.
func (reg *registry) chainLocked(w *Worker) string {
	syncs.AssertLocked(&reg.mu)
	parts := []string{w.ID}
	cur := w
	for i := 0; i < 8 && cur != nil; i++ {
		parts = append([]string{cur.Parent}, parts...)
		cur = reg.workers[cur.Parent]
		if cur != nil && reg.runOf[cur.ID] != reg.runOf[w.ID] {
			break
		}
	}
	return strings.Join(parts, " → ")
}

func roundDur(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}
