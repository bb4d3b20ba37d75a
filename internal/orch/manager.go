package orch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/tmux"
)

// Config is what a Manager needs from the daemon.
type Config struct {
	Home  string       // ST_HOME
	STBin string       // absolute path of st, for the windows st opens
	Tmux  *tmux.Client // the one server this daemon drives
	Log   io.Writer
	// Now is the clock; tests may fix it.
	Now func() time.Time
	// ReadWait is how long a read waits for a reporting worker's turn to
	// end (DefaultReadWait when 0).
	ReadWait time.Duration
	// OnGate is called (in its own goroutine) when a gate opens: the
	// daemon sends it to the user's push target.
	OnGate func(Gate)
	// Peers reaches the account's other machines (nil: not available).
	Peers Peers
	// Events are the tmux server's events (tmux.Client.Start); nil: the
	// watcher looks at the server once a second instead.
	Events <-chan tmux.Event
	// PeerRetry is how often st tries again to tell an unreachable
	// machine that a coordinator moved (DefaultPeerRetry when 0).
	PeerRetry time.Duration
}

// paneInfo is what the hooks told st about the agent in a pane.
type paneInfo struct {
	agent   string
	session string
	inTurn  bool
	// waiting is set by a permission request or question, until the
	// next tool event or turn event: the hook fires before the dialog is
	// drawn, so the screen alone could look open for typing.
	waiting   bool
	seq       int // events seen from this pane
	turnSeq   int // seq of the last turn start
	lastEvent time.Time
	// subagents are Claude's subagents in this pane, by id.
	subagents map[string]*Subagent
	// notice is the last line st typed into the pane as a notice: a turn
	// it starts is not new work (a report made before it stands).
	notice string
	// screenChecked and quietReady serve checkQuietTurns.
	screenChecked time.Time
	quietReady    int
}

// Manager holds every run and worker of this machine.
type Manager struct {
	cfg Config

	mu      sync.Mutex
	runs    map[string]*Run
	workers map[string]*Worker // by pane id, live and past
	runOf   map[string]*Run    // worker pane -> run
	panes   map[string]*paneInfo
	// reserved names of starts in flight, by run id + "/" + name
	reserved map[string]bool
	// changed is closed and replaced on every change that a waiter may care about.
	changed     chan struct{}
	notices     *noticer
	gates       map[string]*Gate
	lastRestore RestoreStats
	// watchKick wakes the watcher early (an agent's SessionEnd).
	watchKick chan struct{}
	// layout is the last picture of the tmux server (restore.go).
	layout tmux.Layout
	// livePanes is the set of panes seen by the last reconcile (nil
	// before the first), for telling that a coordinator is gone.
	livePanes map[string]bool

	// seq counts changes, for other machines' watches (peerserve.go);
	// boot names this life of st, since seq starts again with it.
	seq  uint64
	boot string
	// peerLoops are the watches of other machines, by slug (peers.go).
	peerLoops map[string]*peerLoop
	// movedTo maps coordinator panes to where a tmux restart moved them,
	// for other machines that ask.
	movedTo map[string]string
	// acceptRemote: this machine takes workers from the account's other
	// machines (st orch accept-remote).
	acceptRemote bool
	// problems are what the user should know about st's state files
	// (a run.json st could not read), shown by st up and st status.
	problems []string
	// restoring is set while st brings a tmux server back; restoreSeq
	// counts restores begun and ended, so that a reconcile that listed
	// panes around one does not judge the half-made server.
	restoring  bool
	restoreSeq int
	// restoredPanes are the panes the last restore brought back;
	// serverDown is since when the server has been gone (zero while up).
	restoredPanes map[string]bool
	serverDown    time.Time
	afterRestore  bool
	// teams are the Claude agent teams st has heard of, by name
	// (teammates.go).
	teams map[string]*team
	// bg lives as long as the manager, for its background loops.
	bg     context.Context
	stopBg context.CancelFunc
}

// NewManager loads the runs kept under cfg.Home and reconciles them with
// the panes that exist now.
func NewManager(ctx context.Context, cfg Config) (*Manager, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.ReadWait == 0 {
		cfg.ReadWait = DefaultReadWait
	}
	m := &Manager{
		cfg: cfg, runs: map[string]*Run{}, workers: map[string]*Worker{}, runOf: map[string]*Run{},
		panes: map[string]*paneInfo{}, reserved: map[string]bool{}, changed: make(chan struct{}), watchKick: make(chan struct{}, 1),
	}
	m.notices = newNoticer(m)
	m.bg, m.stopBg = context.WithCancel(context.Background())
	m.boot = newRef()
	m.acceptRemote = m.loadAcceptRemote()
	if err := m.load(); err != nil {
		return nil, err
	}
	m.loadLayout()
	if err := m.loadGates(); err != nil {
		return nil, err
	}
	m.reconcile(ctx)
	m.mu.Lock()
	for _, r := range m.runs {
		for _, t := range r.Tasks {
			// A start cut short by a crash of st: try it again.
			if t.State == TaskRunning && t.Worker == "" {
				t.State = TaskWaiting
			}
		}
	}
	m.schedule()
	m.mu.Unlock()
	m.resumePeerWatches()
	return m, nil
}

func (m *Manager) logf(format string, args ...any) {
	fmt.Fprintf(m.cfg.Log, "%s %s\n", m.cfg.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func (m *Manager) runDir(id string) string { return filepath.Join(m.cfg.Home, "orch", id) }

// load reads every run.json. A file that does not decode is reported,
// copied aside and skipped, never overwritten.
func (m *Manager) load() error {
	dirs, err := os.ReadDir(filepath.Join(m.cfg.Home, "orch"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read runs: %w", err)
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		path := filepath.Join(m.runDir(d.Name()), "run.json")
		var r Run
		if err := store.ReadJSON(path, &r); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			cp, _ := store.KeepCopy(path)
			m.logf("skipping run %s: %v (a copy is kept at %s; fix or remove the file and restart st)", d.Name(), err, cp)
			m.problems = append(m.problems, fmt.Sprintf("st could not read %s, so its run and workers are left out (the file is not touched; a copy is kept at %s): %v. Fix or remove the file, then st down; st up", path, cp, errors.Unwrap(err)))
			continue
		}
		m.runs[r.ID] = &r
		for _, w := range r.Workers {
			m.workers[w.ID] = w
			m.runOf[w.ID] = &r
		}
	}
	return nil
}

// save writes a run's record atomically. Called with m.mu held.
func (m *Manager) save(r *Run) error {
	if err := store.WriteJSON(filepath.Join(m.runDir(r.ID), "run.json"), r, 0o600); err != nil {
		m.logf("%v", err)
		return errorf(KindInternal, "free some disk space and try again", "st could not keep run %s: %v", r.ID, err)
	}
	return nil
}

// notify wakes every waiter. Called with m.mu held.
func (m *Manager) notify() {
	m.seq++
	close(m.changed)
	m.changed = make(chan struct{})
}

// setState moves a worker to s. Called with m.mu held; the caller saves.
func (m *Manager) setState(w *Worker, s State) bool {
	if w.State == s {
		return false
	}
	m.logf("worker %s (%s): %s -> %s", w.ID, w.Name, w.State, s)
	w.State = s
	w.Since = m.cfg.Now()
	if s == Done && w.Parent != "" && !w.Told && !isRemotePane(w.Parent) {
		// (A coordinator on another machine is told by its own st.)
		m.notices.queueDone(w)
	}
	m.followTask(w)
	return true
}

// reconcile marks workers whose panes are gone. A pane id that exists
// but carries another run (a restarted tmux server reuses ids) counts
// as gone too. A server that is down is left to observe, which brings
// it back.
func (m *Manager) reconcile(ctx context.Context) {
	m.mu.Lock()
	busy, seq := m.restoring, m.restoreSeq
	m.mu.Unlock()
	if busy {
		return // the restore relinks everything when it is done
	}
	listed := m.cfg.Now()
	panes, err := m.cfg.Tmux.ListPanes(ctx)
	if err != nil {
		m.logf("reconcile: %v", err)
		return
	}
	if len(panes) == 0 && !m.cfg.Tmux.Running(ctx) {
		return
	}
	m.reconcilePanes(panes, listed, seq)
}

// reconcilePanes is reconcile for panes listed at the time listed.
// Workers that joined after that are left alone: the list cannot know
// their panes (or their new options) yet.
func (m *Manager) reconcilePanes(panes []tmux.Pane, listed time.Time, seq int) {
	have := map[string]tmux.Pane{}
	live := map[string]bool{}
	for _, p := range panes {
		have[p.ID] = p
		live[p.ID] = true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.restoring || m.restoreSeq != seq {
		// Listed while st was bringing the server back: the panes there
		// had no relations yet, and saying their workers are gone would
		// be a lie (and would lose their reports).
		return
	}
	m.livePanes = live
	dirty := map[*Run]bool{}
	for id, w := range m.workers {
		if !w.State.Live() || w.StartedAt.After(listed) || w.Remote() {
			continue
		}
		r := m.runOf[id]
		p, ok := have[id]
		if !ok || p.StRun != r.ID || p.Dead {
			if m.setState(w, Gone) {
				dirty[r] = true
			}
		}
	}
	for _, p := range panes {
		if p.StAgent != "" && m.panes[p.ID] == nil {
			m.panes[p.ID] = &paneInfo{agent: p.StAgent, session: p.StAgentSession}
		}
	}
	m.dropClosedMates(live, listed)
	for r := range dirty {
		m.save(r)
	}
	if len(dirty) > 0 {
		m.notify()
	}
}

// hasLive reports whether any worker's pane is expected to exist.
func (m *Manager) hasLive() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range m.workers {
		if w.State.Live() {
			return true
		}
	}
	return false
}

// kickWatch makes the watcher look at tmux now rather than at its next tick.
func (m *Manager) kickWatch() {
	select {
	case m.watchKick <- struct{}{}:
	default:
	}
}

// Close stops background work.
func (m *Manager) Close() {
	m.stopBg()
	m.notices.stop()
}

func newID(prefix string) string {
	b := make([]byte, 3)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// callerPane checks that a request came from a pane of this server.
func (m *Manager) callerPane(ctx context.Context, pane string) (tmux.Pane, error) {
	if pane == "" {
		return tmux.Pane{}, errorf(KindUsage, "run it in a pane of the tmux server st drives", "this command acts for a tmux pane, and none was given ($TMUX_PANE is empty)")
	}
	p, err := m.cfg.Tmux.Pane(ctx, pane)
	if err != nil {
		return tmux.Pane{}, errorf(KindNotFound, "run it from a pane of the tmux server on "+m.cfg.Tmux.Socket(),
			"pane %s is not on st's tmux server (%s): %v", pane, m.cfg.Tmux.Socket(), err)
	}
	return p, nil
}

// currentRun is the newest run that pane coordinates. Called with m.mu held.
func (m *Manager) currentRun(pane string) *Run {
	var best *Run
	for _, r := range m.runs {
		if r.Coordinator == pane && (best == nil || r.Created.After(best.Created)) {
			best = r
		}
	}
	return best
}

// StartRun makes a run whose coordinator is the calling pane.
func (m *Manager) StartRun(ctx context.Context, req StartRunRequest) (*Run, error) {
	if err := checkText("objective", req.Objective); err != nil {
		return nil, err
	}
	p, err := m.callerPane(ctx, req.Pane)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if w := m.workers[p.ID]; w != nil && w.State.Live() {
		return nil, errorf(KindConflict, "start workers from this pane with st worker start; they join run "+m.runOf[p.ID].ID,
			"this pane is worker %s of run %s, so it cannot start a run of its own", w.Name, m.runOf[p.ID].ID)
	}
	r := m.newRun(p, req.Objective)
	if err := m.save(r); err != nil {
		delete(m.runs, r.ID)
		return nil, err
	}
	m.cfg.Tmux.SetOption(ctx, p.ID, "@st_run", r.ID)
	m.cfg.Tmux.SetOption(ctx, p.ID, "@st_role", "coordinator")
	m.notify()
	return r, nil
}

// newRun makes a run in memory. Called with m.mu held.
func (m *Manager) newRun(p tmux.Pane, objective string) *Run {
	r := &Run{ID: newID("run-"), Objective: objective, Coordinator: p.ID, Session: p.SessionID, Created: m.cfg.Now()}
	for m.runs[r.ID] != nil {
		r.ID = newID("run-")
	}
	m.runs[r.ID] = r
	return r
}

// Show returns a run: by id, or the one the calling pane coordinates or works in.
func (m *Manager) Show(ctx context.Context, pane, id string) (*RunView, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var r *Run
	if id != "" {
		r = m.runs[id]
		if r == nil {
			return nil, errorf(KindNotFound, "st orch show with no id shows this pane's run; st status lists the runs", "there is no run %q", id)
		}
	} else {
		r = m.currentRun(pane)
		if r == nil {
			r = m.runOf[pane]
		}
		if r == nil {
			return nil, errorf(KindNotFound, "st orch start --objective TEXT makes one", "this pane has no run")
		}
	}
	v := &RunView{Run: *r, Teammates: m.teammatesOf(r.Coordinator), Subagents: m.subagentsOf(r.Coordinator)}
	for _, w := range r.Workers {
		v.Views = append(v.Views, m.view(w))
	}
	v.Workers = nil
	return v, nil
}

func (m *Manager) view(w *Worker) WorkerView {
	v := WorkerView{Worker: *w, For: roundDur(m.cfg.Now().Sub(w.Since))}
	if r := m.runOf[w.ID]; r != nil {
		v.Run = r.ID
	}
	if w.TeamRun != "" {
		v.TeamOf = m.teamSize(m.runs[w.TeamRun], map[string]bool{})
	}
	if retired(w.Parent) || (m.livePanes != nil && w.Parent != "" && !isRemotePane(w.Parent) && !m.livePanes[w.Parent]) {
		v.ParentGone = true
	}
	if w.Remote() {
		v.TeamOf = w.TeamSize
	} else {
		v.Teammates, v.Subagents = m.teammatesOf(w.ID), m.subagentsOf(w.ID)
	}
	return v
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

// resolve finds a worker by pane id or name for the calling pane: first
// among its own workers, then in its run, then anywhere.
func (m *Manager) resolve(caller, id string) (*Worker, error) {
	if id == "" {
		return nil, errorf(KindUsage, "st worker list shows the ids", "no worker id given")
	}
	if tmux.ValidPaneID(id) || retired(id) {
		// A pane id names one pane: a worker of a server that went keeps
		// its old id retired (restore.go), and is named by that or its name.
		if w := m.workers[id]; w != nil {
			return w, nil
		}
		return nil, errorf(KindNotFound, "st worker list shows this pane's workers", "%s is not a worker", id)
	}
	var scopes [][]*Worker
	var own, run, all []*Worker
	cr := m.currentRun(caller)
	if cr == nil {
		cr = m.runOf[caller]
	}
	for _, w := range m.workers {
		if w.Name != id {
			continue
		}
		all = append(all, w)
		if w.Parent == caller {
			own = append(own, w)
		}
		if cr != nil && m.runOf[w.ID] == cr {
			run = append(run, w)
		}
	}
	scopes = [][]*Worker{own, run, all}
	for _, s := range scopes {
		live := liveFirst(s)
		if len(live) == 1 {
			return live[0], nil
		}
		if len(live) > 1 {
			var ids []string
			for _, w := range live {
				ids = append(ids, w.ID+" (run "+m.runOf[w.ID].ID+")")
			}
			sort.Strings(ids)
			return nil, errorf(KindConflict, "name the worker by its pane id", "%q names several workers: %s", id, strings.Join(ids, ", "))
		}
	}
	return nil, errorf(KindNotFound, "st worker list shows this pane's workers", "there is no worker named %q", id)
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
