package orch

import (
	"context"
	"maps"
	"sort"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/syncs"
	"github.com/sophonz/st/internal/tmux"
)

// Work across machines, as this machine's records hold it. Talking to the
// other machines is internal/peer's (its Hub): it starts, watches and
// acts on workers there, and answers what they ask here. The manager
// keeps the records either way: its workers on other machines (ID
// machine/%N, Machine set) in its runs, the runs here of coordinators on
// other machines (Coordinator machine/%N), and the moves of coordinators
// those machines are still to be told. The two sides meet at Remote
// (what the manager asks of the hub) and at the methods of this file
// (what the hub asks of the manager). Neither holds a lock of its own
// while it calls the other.

// Remote is the account's other machines, as the manager needs them
// (internal/peer's Hub; nil: this st reaches no other machine).
type Remote interface {
	// Start starts a worker on another machine (s.Machine) for the
	// calling pane.
	Start(ctx context.Context, s RemoteStart) (*api.WorkerView, error)
	// Op runs read, send, stop, rename or release on a worker of another
	// machine (req.ID is machine/%N or machine/name).
	Op(ctx context.Context, op string, req api.IDRequest) (*api.WorkerView, error)
	// Adopt makes an agent on another machine (req.ID) a worker of the
	// calling pane.
	Adopt(ctx context.Context, req api.IDRequest) (*api.WorkerView, error)
	// Resolve says what a machine/... id names for a wait: the id here
	// when it names this machine (local), else the id of this machine's
	// record of a worker there (record).
	Resolve(ctx context.Context, id string) (local, record string, err error)
	// Kick wakes the watch of machine slug: there is work for it (moves
	// of coordinators to tell).
	Kick(slug string)
	// TellDepths tells the machines with workers of this machine's runs
	// how deep those runs' coordinators are now in their whole chain.
	TellDepths(ctx context.Context)
	// ParentsNow asks the coordinators' machines whether the parents of
	// the live workers here in vs are still where this machine thinks,
	// and sets ParentGone and ParentNow.
	ParentsNow(ctx context.Context, vs []api.WorkerView)
	// PanesListed says which panes lived when tmux listed them at listed
	// (with the pids of their first processes), so that what goes with a
	// pane (an offer) goes.
	PanesListed(pids map[string]int, listed time.Time)
}

// RemoteStart is a start on another machine as the manager checked it:
// the request, the worker's name, its task's text, and the fan of tries
// it belongs to.
type RemoteStart struct {
	api.StartRequest
	Name string
	Text []byte
	Fan  string
}

// notSignedIn is the refusal of a remote id by a manager that reaches no
// other machine (internal/peer says the same when this machine is not
// signed in).
func notSignedIn() *api.Error {
	return errorf(api.KindRemote, "st login --control-plane URL --account NAME --key KEY",
		"refused: this machine is not signed in to an account, so it cannot reach other machines")
}

// Go runs f in the manager's background work (group.go), which Close
// ends and waits for: the hub's watches of other machines run there.
func (m *Manager) Go(f func(ctx context.Context)) { m.bg.Go(f) }

// Changes returns a channel that the next change closes, and how many
// changes there were before it (other machines' watches count them).
func (m *Manager) Changes() (<-chan struct{}, uint64) { return m.reg.sig.now() }

// Placement is where a worker on another machine goes in this machine's
// runs: its run and level, held (its name too) until Release.
type Placement struct {
	m  *Manager
	pl *placed
	// Run, Coordinator and Parent name the run, its coordinator and the
	// pane the worker works for; Level is the worker's level in the run,
	// BaseDepth how deep the run's coordinator is in its whole chain.
	Run, Coordinator, Parent string
	Level, BaseDepth         int
	// ParentName is how people call the agent in Parent.
	ParentName string
}

// Place places a worker of the calling pane that is to run on
// another machine: a start (name held in the run) or, with name "", an
// adoption.
func (r *Remotes) Place(ctx context.Context, pane, name string) (*Placement, error) {
	m := r.m
	p, err := m.callerPane(ctx, pane)
	if err != nil {
		return nil, err
	}
	var pl *placed
	if name != "" {
		pl, err = m.reserve(ctx, p, nil, nil, name)
	} else {
		pl, err = m.place(ctx, p, nil)
	}
	if err != nil {
		return nil, err
	}
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	base, _ := m.reg.chainDepthLocked(pl.run.Coordinator)
	return &Placement{m: m, pl: pl, Run: pl.run.ID, Coordinator: pl.run.Coordinator, Parent: p.ID, Level: pl.level,
		BaseDepth: base, ParentName: m.nameOfLocked(p)}, nil
}

// Release lets the name the placement held go.
func (p *Placement) Release() { p.pl.release() }

// Drop forgets a run made for the placement, while it is empty: the
// start or adoption failed.
func (p *Placement) Drop() { p.pl.drop() }

// Keep records the worker that machine mr showed (v, checked) in the
// placement's run. The worker runs there whatever this disk says, so the
// record stands even when it cannot be written (the saver tries again).
func (p *Placement) Keep(v *api.WorkerView, mr api.MachineRef, ref string, adopted bool, task, fan string) *api.WorkerView {
	m := p.m
	w := workerRecord(v.Worker)
	w.ID = mr.Slug + "/" + v.ID
	w.Machine, w.MachineName = mr.Slug, mr.Name
	w.Parent, w.Level, w.Ref = p.Parent, p.Level, ref
	w.TeamSize, w.TeamDepth, w.TeamRun = v.TeamOf, v.TeamDepth, ""
	w.ScreenThere = v.ScreenStates
	w.Told, w.Adopted, w.Task, w.Fan = false, adopted || w.Adopted, task, fan
	var out api.WorkerView
	m.settleChange(func(c *change) {
		r := p.pl.run
		m.reg.addWorkerLocked(r, w)
		c.touchLocked(r)
		out = m.viewLocked(w)
	})
	return &out
}

// RemoteRecord is this machine's record of a worker on another machine.
type RemoteRecord struct {
	ID, Parent string
	Live       bool
}

// Record finds this machine's record of the worker that rest (its pane
// id there, or its name) names on machine slug; a live one first.
func (r *Remotes) Record(slug, rest string) (RemoteRecord, bool) {
	m := r.m
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	w := m.reg.workers[slug+"/"+rest]
	if w == nil {
		for _, o := range m.reg.workers {
			if o.Machine == slug && o.Name == rest && (w == nil || o.State.Live()) {
				w = o
			}
		}
	}
	if w == nil {
		return RemoteRecord{}, false
	}
	return RemoteRecord{ID: w.ID, Parent: w.Parent, Live: w.State.Live()}, true
}

// CheckRename refuses name for the record id when another live worker of
// its run has it (two live workers of one name would break the run).
func (r *Remotes) CheckRename(id, name string) error {
	m := r.m
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	w := m.reg.workers[id]
	if w == nil {
		return nil
	}
	return m.reg.nameFreeLocked(m.reg.runOf[w.ID], w, name)
}

// ApplyOp brings the record id in step with what its machine answered to
// op (v, checked) for caller: a read marks its report seen, a stop makes
// it gone, a release takes it out of its run. It returns the record's
// view, with the notes of v.
func (r *Remotes) ApplyOp(id, op, caller string, v *api.WorkerView) *api.WorkerView {
	m := r.m
	out := v
	m.settleIfChanged(func(c *change) {
		w := m.reg.workers[id]
		if w == nil {
			return // gone from the records meanwhile: the answer as it came
		}
		m.applyRemoteLocked(c, w, v)
		c.touchLocked(m.reg.runOf[w.ID])
		switch op {
		case api.PeerRouteRead:
			c.markToldLocked(w, caller)
		case api.PeerRouteStop:
			c.setStateLocked(w, api.Gone)
		}
		view := m.viewLocked(w)
		if op == api.PeerRouteRelease {
			c.remoteGoneAttnLocked(w)
			m.reg.removeWorkerLocked(w)
		} else {
			view.Notes = v.Notes
		}
		out = &view
	})
	return out
}

// applyRemoteLocked copies what the machine there says of a worker into this
// machine's record.
func (m *Manager) applyRemoteLocked(c *change, w *Worker, v *api.WorkerView) {
	syncs.AssertLocked(&m.reg.mu)
	if v.State != w.State {
		c.setStateLocked(w, v.State)
		w.Since = v.Since
	}
	w.Name, w.Agent = v.Name, v.Agent
	w.Summary, w.ReportedAt, w.LastAnswer, w.Error = v.Summary, v.ReportedAt, v.LastAnswer, v.Error
	w.ReportAnswer = v.ReportAnswer
	w.AgentSession, w.Reported = v.AgentSession, v.Reported
	w.TeamSize, w.TeamDepth = v.TeamOf, v.TeamDepth
	w.ScreenThere = v.ScreenStates
	if v.Tokens != nil && !sameTokens(v.Tokens, w.Tokens) {
		// What it spent, as its machine reads it (internal/peer checked
		// the counts): it counts against its run's budget here.
		t := *v.Tokens
		w.Tokens = &t
		c.touchLocked(m.reg.runOf[w.ID])
		m.checkBudgetLocked(c, m.reg.runOf[w.ID])
	}
	if nid := w.Machine + "/" + v.ID; v.ID != "" && nid != w.ID {
		// Its pane there changed (that machine's tmux server restarted).
		r := m.reg.runOf[w.ID]
		delete(m.reg.workers, w.ID)
		delete(m.reg.runOf, w.ID)
		w.ID = nid
		m.reg.workers[nid] = w
		m.reg.runOf[nid] = r
		c.touchLocked(r)
	}
}

// ApplyWatch brings this machine's records of workers on slug in step
// with what that machine says (vs, checked). A worker it no longer lists
// (released there, or its record lost) stays as it was last seen, unless
// it was unreachable: then it is back to what it was; the workers whose
// views were refused (by their refs) stay as they were.
func (r *Remotes) ApplyWatch(slug string, vs []api.WorkerView, refused []string) {
	m := r.m
	m.settleIfChanged(func(c *change) { m.applyWatchLocked(c, slug, vs, refused) })
}

func (m *Manager) applyWatchLocked(c *change, slug string, vs []api.WorkerView, refused []string) {
	syncs.AssertLocked(&m.reg.mu)
	byRef := map[string]*Worker{}
	for _, w := range m.reg.workers {
		if w.Machine == slug && w.Ref != "" {
			byRef[w.Ref] = w
		}
	}
	for _, ref := range refused {
		delete(byRef, ref) // as it was last seen
	}
	for i := range vs {
		v := &vs[i]
		w := byRef[v.Ref]
		if w == nil {
			continue
		}
		before := *w
		m.applyRemoteLocked(c, w, v)
		if before.State != w.State || before.Summary != w.Summary || before.Name != w.Name || before.ID != w.ID || before.LastAnswer != w.LastAnswer ||
			before.TeamSize != w.TeamSize || before.TeamDepth != w.TeamDepth || before.ScreenThere != w.ScreenThere {
			c.touchLocked(m.reg.runOf[w.ID])
		}
		delete(byRef, v.Ref)
	}
	for _, w := range byRef {
		if w.State == api.Unreachable {
			w.Error = ""
			c.setStateLocked(w, api.Idle)
		}
	}
}

// MarkUnreachable marks the live workers on slug unreachable: wait
// counts them as still working.
func (r *Remotes) MarkUnreachable(slug string, err error) {
	m := r.m
	m.settleIfChanged(func(c *change) {
		for _, w := range m.reg.workers {
			// A worker that reported keeps its report: a wait has what it
			// waited for, whatever its machine does now.
			if w.Machine == slug && w.State.Live() && w.State != api.Unreachable && w.State != api.Done {
				m.logf("worker %s: its machine cannot be reached: %v", w.ID, err)
				w.Error = "its machine cannot be reached: " + err.Error()
				c.setStateLocked(w, api.Unreachable)
			}
		}
	})
}

// Machines lists the machines this machine has live workers on.
func (r *Remotes) Machines() []string {
	m := r.m
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, w := range m.reg.workers {
		if w.Remote() && w.State.Live() && !seen[w.Machine] {
			seen[w.Machine] = true
			out = append(out, w.Machine)
		}
	}
	sort.Strings(out)
	return out
}

// HasWorkOn reports whether machine slug has live workers of this
// machine's runs, or moves of coordinators to be told.
func (r *Remotes) HasWorkOn(slug string) bool {
	m := r.m
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	for _, mv := range m.reg.untold[slug] {
		if mv.New != "" {
			return true
		}
	}
	for _, w := range m.reg.workers {
		if w.Machine == slug && w.State.Live() {
			return true
		}
	}
	return false
}

// DepthsOn is how deep in its whole chain the coordinator of each run with
// live workers on machine slug is now, by run.
func (r *Remotes) DepthsOn(slug string) map[string]int {
	m := r.m
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	return m.reg.depthsForLocked(slug)
}

// depthsForLocked is Depths.
func (reg *registry) depthsForLocked(slug string) map[string]int {
	syncs.AssertLocked(&reg.mu)
	out := map[string]int{}
	for _, w := range reg.workers {
		if r := reg.runOf[w.ID]; w.Machine == slug && w.State.Live() && r != nil {
			if _, ok := out[r.ID]; !ok {
				out[r.ID], _ = reg.chainDepthLocked(r.Coordinator)
			}
		}
	}
	return out
}

// UntoldDepths is Depths of every machine with live workers of this
// machine's runs, where it is not told (what told holds of it).
func (r *Remotes) UntoldDepths(told map[string]map[string]int) map[string]map[string]int {
	m := r.m
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	due := map[string]map[string]int{}
	for _, w := range m.reg.workers {
		if _, seen := due[w.Machine]; !w.Remote() || !w.State.Live() || seen {
			continue
		}
		if d := m.reg.depthsForLocked(w.Machine); !maps.Equal(d, told[w.Machine]) {
			due[w.Machine] = d
		}
	}
	return due
}

// Moves are the moves of coordinators that machine slug is still to
// be told (each Old as that machine knows it once PaneOf'd).
func (r *Remotes) Moves(slug string) []api.PeerReparent {
	m := r.m
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	var out []api.PeerReparent
	for _, mv := range m.reg.untold[slug] {
		if mv.New != "" {
			out = append(out, mv)
		}
	}
	return out
}

// MoveTold records that machine slug was told mv.
func (r *Remotes) MoveTold(slug string, mv api.PeerReparent) {
	m := r.m
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	mvs := m.reg.untold[slug]
	for i, o := range mvs {
		if o == mv {
			m.reg.untold[slug] = append(mvs[:i:i], mvs[i+1:]...)
			break
		}
	}
}

// queueMovesLocked records coordinators that moved to new panes (moved, old id
// -> new) for each machine that has workers of theirs, and returns those
// machines. After a restart of the whole server (restarted), an old id
// is known by its retired form (retire), and the moves not yet told of
// an earlier life follow this one: to the coordinator's new pane, or to
// nothing when it did not come back., after the
// relations moved.
func (reg *registry) queueMovesLocked(moved map[string]string, retire func(string) string, restarted bool) []string {
	syncs.AssertLocked(&reg.mu)
	for _, mvs := range reg.untold {
		for i := range mvs {
			mv := &mvs[i]
			if n, ok := moved[mv.New]; ok {
				mv.New = n
			} else if restarted {
				mv.New = ""
			}
		}
	}
	tell := map[string]map[api.PeerReparent]bool{}
	add := func(slug string, mv api.PeerReparent) {
		if tell[slug] == nil {
			tell[slug] = map[api.PeerReparent]bool{}
		}
		tell[slug][mv] = true
	}
	for _, w := range reg.workers {
		if !w.Remote() || !w.State.Live() {
			continue
		}
		for o, n := range moved {
			if w.Parent == n && o != n {
				add(w.Machine, api.PeerReparent{Old: retire(o), New: n})
			}
		}
		if restarted && api.Retired(w.Parent) {
			// Its coordinator did not come back: that machine keeps its
			// old id, which a new pane here may have now. It is told the
			// retired one, which names only the gone pane (and answered
			// so meanwhile).
			add(w.Machine, api.PeerReparent{Old: w.Parent, New: w.Parent})
		}
	}
	var slugs []string
	for slug, mvs := range tell {
		for mv := range mvs {
			reg.untold[slug] = append(without(reg.untold[slug], mv.Old), mv)
		}
		sort.Slice(reg.untold[slug], func(i, j int) bool { return reg.untold[slug][i].Old < reg.untold[slug][j].Old })
		slugs = append(slugs, slug)
	}
	sort.Strings(slugs)
	return slugs
}

// without is mvs without the move of old.
func without(mvs []api.PeerReparent, old string) []api.PeerReparent {
	out := mvs[:0:0]
	for _, mv := range mvs {
		if mv.Old != old {
			out = append(out, mv)
		}
	}
	return out
}

// nameOfLocked is how people call the agent in pane p: its worker name, or its
// window's name.
func (m *Manager) nameOfLocked(p tmux.Pane) string {
	syncs.AssertLocked(&m.reg.mu)
	if w := m.reg.workers[p.ID]; w != nil && w.Name != "" {
		return w.Name
	}
	if p.WindowName != "" {
		return p.WindowName
	}
	return p.ID
}

// remote is the hub, or the refusal of a manager that reaches no other
// machine.
func (m *Manager) remote() (Remote, error) {
	if m.cfg.Remote == nil {
		return nil, notSignedIn()
	}
	return m.cfg.Remote, nil
}

// remoteOp runs op on a worker of another machine.
func (m *Manager) remoteOp(ctx context.Context, op string, req api.IDRequest) (*api.WorkerView, error) {
	rm, err := m.remote()
	if err != nil {
		return nil, err
	}
	return rm.Op(ctx, op, req)
}

// notAcrossMachines refuses an operation that works on this machine only.
func notAcrossMachines(what string) error {
	return errorf(api.KindRemote, "have the worker fetch and push its code through a shared git remote, and say so in its task",
		"refused: %s is for workers on this machine only; code does not move between machines", what)
}

// LocalOp runs an operation on a worker of this machine: an id of
// another machine's form that named this one (machine/%N here).
func (m *Manager) LocalOp(ctx context.Context, op string, req api.IDRequest) (*api.WorkerView, error) {
	switch op {
	case api.PeerRouteRead:
		return m.Read(ctx, req)
	case api.PeerRouteSend:
		return m.Send(ctx, req)
	case api.PeerRouteStop:
		return m.Stop(ctx, req)
	case api.PeerRouteRename:
		return m.Rename(ctx, req)
	case api.PeerRouteRelease:
		return m.Release(ctx, req)
	case api.PeerRouteAdopt:
		return m.Adopt(ctx, req)
	}
	return nil, errorf(api.KindUsage, "", "unknown operation %s", op)
}

// tellDepths tells the machines with workers of this machine's runs how
// deep their coordinators are now (after an adoption or a release).
func (m *Manager) tellDepths(ctx context.Context) {
	if m.cfg.Remote != nil {
		m.cfg.Remote.TellDepths(ctx)
	}
}

// kick wakes the watches of machines after a change they are to hear of.
// Called with no lock held.
func (m *Manager) kick(slugs []string) {
	if m.cfg.Remote == nil {
		return
	}
	for _, s := range slugs {
		m.cfg.Remote.Kick(s)
	}
}

// Remotes is the manager's records of its own workers on other machines
// (ID machine/%N) and of the moves those machines are still to be told:
// what internal/peer's hub asks of them (peer.RemoteWork). It is an owner
// apart from the Manager, so that the Manager's methods are what its own
// commands need; it works on the manager's registry under its lock.
type Remotes struct{ m *Manager }

// Remotes is the owner of the manager's records of its workers on other
// machines.
func (m *Manager) Remotes() *Remotes { return &Remotes{m} }
