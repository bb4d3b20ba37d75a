package orch

import (
	"context"
	"fmt"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/syncs"
	"github.com/sophonz/st/internal/tmux"
)

// Runs hosted here for coordinators on other machines: a worker that
// another machine of the account started or adopted here is an ordinary
// worker of this machine, in a run whose coordinator is on that machine
// (Coordinator from/%N, CoordinatorMachine from), so its window, hooks,
// questions and report stay here. internal/peer checks what the other
// machine sent (and asks internal/authz whether it may) before it calls
// these.

// RemoteSession is the session that workers of other machines open in.
const RemoteSession = "st-remote"

// ForMachine is a start or adoption here that a coordinator on another
// machine asked for, as internal/peer checked it: who asked, and where
// the worker goes.
type ForMachine struct {
	// From is the asking machine's slug, FromName its name as st
	// machines shows it; Self is this machine's slug ("" when not known),
	// which the asking machine names this machine's panes by.
	From, FromName, Self string
	// Run is the run there (and its id here), Coordinator its coordinator
	// and Parent the pane that asks, both as that machine names them.
	Run, Coordinator, Parent string
	// Level is the worker's level in the run; BaseDepth how deep the
	// run's coordinator is in its whole chain.
	Level, BaseDepth int
	// Ref ties the two machines' records of the worker together;
	// ParentName is how people there call the asking pane.
	Ref, ParentName string
}

// CheckDepthFor refuses a worker at level of a run whose coordinator is
// baseDepth deep, with sub levels below it, asked for by machine from.
func CheckDepthFor(level, baseDepth, sub int, from string) error {
	if level > MaxLevel {
		return errorf(api.KindDepth, "do this part on "+from+", or hand it to a coordinator higher up",
			"refused: a worker may start workers at most %d levels below its run's coordinator", MaxLevel)
	}
	if d := baseDepth + level + sub; d > MaxChain {
		return errorf(api.KindDepth, "hand this part to a coordinator higher up, or do it on "+from,
			"refused: the whole chain would be %d levels deep from the top coordinator, counted across machines; the limit is %d", d, MaxChain)
	}
	return nil
}

// CheckRunID refuses a run id here that is not machine from's: a run of
// this machine, or of another machine.
func (h *Hosted) CheckRunID(from, run string) error {
	m := h.m
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	return m.reg.runFreeLocked(from, run)
}

func (reg *registry) runFreeLocked(from, run string) error {
	syncs.AssertLocked(&reg.mu)
	if r := reg.runs[run]; (r != nil && r.CoordinatorMachine != from) || reg.history.Has(run) {
		return errorf(api.KindConflict, "start the worker again (a new run id is picked)", "run %s here is not %s's", run, from)
	}
	return nil
}

// hostedRunLocked finds or makes the run here that stands for the run of
// f; created says it made it, not written yet: the caller writes it with
// what it adds (hostedRunFlyLocked, or the adoption's own write) and
// drops it when that write fails.
func (m *Manager) hostedRunLocked(f ForMachine) (r *Run, created bool, err error) {
	syncs.AssertLocked(&m.reg.mu)
	if err := m.reg.runFreeLocked(f.From, f.Run); err != nil {
		return nil, false, err
	}
	if r := m.reg.runs[f.Run]; r != nil {
		r.BaseDepth = f.BaseDepth
		return r, false, nil
	}
	r = &Run{ID: f.Run, Coordinator: f.From + "/" + f.Coordinator, CoordinatorMachine: f.From, BaseDepth: f.BaseDepth, Created: m.cfg.Now()}
	m.reg.runs[f.Run] = r
	return r, true, nil
}

// hostedRunFlyLocked is hostedRunLocked with the run it made in flight
// (fl): the caller lets the lock go and finishes it (keep.go).
func (m *Manager) hostedRunFlyLocked(f ForMachine) (r *Run, fl *flight, err error) {
	syncs.AssertLocked(&m.reg.mu)
	r, created, err := m.hostedRunLocked(f)
	if err != nil || !created {
		return r, nil, err
	}
	c := m.newChange()
	c.touchLocked(r)
	return r, m.flyLocked(c, func() { m.reg.dropRunLocked(r) }), nil
}

// remoteSession returns the st-remote session's pane, making the
// session when there is none.
func (m *Manager) remoteSession(ctx context.Context, cwd string) (tmux.Pane, error) {
	if p, err := m.cfg.Tmux.Find(ctx, RemoteSession+":"); err == nil {
		return p, nil
	}
	p, err := m.cfg.Tmux.NewSession(ctx, RemoteSession, "st-remote", cwd, nil, nil)
	if err != nil {
		if p2, err2 := m.cfg.Tmux.Find(ctx, RemoteSession+":"); err2 == nil {
			return p2, nil // made by a start at the same moment
		}
		return tmux.Pane{}, errorf(api.KindInternal, "check that tmux runs on this machine", "could not make the %s session: %v", RemoteSession, err)
	}
	return p, nil
}

// hostedPlace is where a worker started for another machine goes.
type hostedPlace struct {
	f    ForMachine
	run  *Run
	pane tmux.Pane // stands for the caller: ID is machine/%N, the session is st-remote
}

// Start starts a worker for f: a new window of the st-remote session,
// in home (or req.Cwd), with this machine's own agent settings. The task
// is req.Task, a file here.
func (h *Hosted) Start(ctx context.Context, f ForMachine, req api.StartRequest, home string) (*api.WorkerView, error) {
	m := h.m
	sp, err := m.remoteSession(ctx, home)
	if err != nil {
		return nil, err
	}
	m.reg.mu.Lock()
	r, fl, err := m.hostedRunFlyLocked(f)
	m.reg.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if fl != nil {
		if err := m.finish(fl); err != nil {
			return nil, err
		}
	}
	m.logf("start for %s (run %s, parent %s/%s)", f.From, f.Run, f.From, f.Parent)
	return m.startWorker(ctx, startPlan{StartRequest: req,
		hosted: &hostedPlace{f: f, run: r, pane: tmux.Pane{ID: f.From + "/" + f.Parent, SessionID: sp.SessionID, Path: home}}})
}

// Adopt makes the agent in pane here the worker of f, nothing typed
// into it; take uses up what let f have it (a person's offer), under
// the registry's lock, so that one offer makes one adoption. A lead of
// workers of its own keeps its run here and is one worker there.
func (h *Hosted) Adopt(ctx context.Context, f ForMachine, pane string, take func(tmux.Pane) bool) (*api.WorkerView, error) {
	m := h.m
	tp, err := m.cfg.Tmux.Pane(ctx, pane)
	if err != nil {
		return nil, errorf(api.KindNotFound, "st ls on that machine shows its panes and agents", "there is no pane %s on this machine", pane)
	}
	m.reg.mu.Lock()
	r, w, fl, err := m.hostedAdoptLocked(f, tp, take)
	m.reg.mu.Unlock()
	if err != nil {
		return nil, err
	}
	v, err := m.enrol(ctx, fl, r, w, nil)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// hostedAdoptLocked checks the adoption of the agent in tp for f, uses up
// what let f have it (take), and puts the new worker in flight
// (enrolLocked); the caller lets the lock go and calls enrol.
func (m *Manager) hostedAdoptLocked(f ForMachine, tp tmux.Pane, take func(tmux.Pane) bool) (*Run, *Worker, *flight, error) {
	syncs.AssertLocked(&m.reg.mu)
	if w := m.reg.workers[tp.ID]; w != nil && w.State.Live() {
		return nil, nil, nil, errorf(api.KindConflict, fmt.Sprintf("release it first: st worker release %s (run from %s)", tp.ID, w.Parent),
			"refused: %s is already a worker of %s (run %s)", tp.ID, w.Parent, m.reg.runOf[tp.ID].ID)
	}
	kind := m.agentKind(tp)
	if kind == "" {
		return nil, nil, nil, errorf(api.KindNotFound, "start an agent there first, and check st hooks status on that machine",
			"st has seen no agent in %s (no hook came from it, and it runs %q)", tp.ID, tp.Command)
	}
	team := m.reg.teamOfLocked(tp.ID)
	sub := m.reg.subtreeDepthLocked(tp.ID, map[string]bool{})
	if err := CheckDepthFor(f.Level, f.BaseDepth, sub, f.From); err != nil {
		return nil, nil, nil, err
	}
	r, created, err := m.hostedRunLocked(f)
	if err != nil {
		return nil, nil, nil, err
	}
	if !take(tp) {
		if created {
			m.reg.dropRunLocked(r)
		}
		return nil, nil, nil, errorf(api.KindRemote, "a person on that machine offers it again: st worker offer "+tp.ID+" --machine "+f.From,
			"refused: the offer of %s to %s was withdrawn or used", tp.ID, f.From)
	}
	w := m.adoptedWorkerLocked(tp, m.reg.adoptedNameLocked(r, tp, m.facts.mateName(tp.ID)), kind, f.From+"/"+f.Parent, f.Level, team)
	w.Ref = f.Ref
	w.ParentName, w.ParentMachineName = f.ParentName, f.FromName
	return r, w, m.enrolLocked(r, w, created), nil
}

// Worker finds the worker id here names (a pane id or a name) for
// another machine's op: its pane and parent.
func (h *Hosted) Worker(id string) (pane, parent string, err error) {
	m := h.m
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	w, err := m.reg.resolveLocked("", id)
	if err != nil {
		return "", "", err
	}
	return w.ID, w.Parent, nil
}

// Ref is the reference of the worker in pane ("" for none).
func (h *Hosted) Ref(pane string) string {
	m := h.m
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	if w := m.reg.workers[pane]; w != nil {
		return w.Ref
	}
	return ""
}

// Workers is the views of machine from's workers here.
func (h *Hosted) Workers(from string) []api.WorkerView {
	m := h.m
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	var out []api.WorkerView
	for _, w := range m.reg.workers {
		if owner, _, ok := api.SplitRemote(w.Parent); ok && owner == from && w.Ref != "" {
			out = append(out, m.viewLocked(w))
		}
	}
	return out
}

// SetDepths takes what machine from says of how deep the coordinators
// of its runs here are now. Only its own runs, and only depths within
// the limit (a chain deeper than four has nothing more to start anyway).
func (h *Hosted) SetDepths(from string, depths map[string]int) {
	m := h.m
	m.settleIfChanged(func(c *change) {
		for id, d := range depths {
			r := m.reg.runs[id]
			if d < 0 || d > MaxChain || r == nil || r.CoordinatorMachine != from || r.BaseDepth == d {
				continue
			}
			m.logf("%s: the coordinator of run %s is %d level(s) deep in its chain now (was %d)", from, id, d, r.BaseDepth)
			r.BaseDepth = d
			c.touchLocked(r)
		}
	})
}

// Reparent moves the workers of machine from's coordinator pane old
// to its new pane nw (a retired id when it did not come back after a
// tmux restart there). Nothing is typed to their agents.
func (h *Hosted) Reparent(ctx context.Context, from, old, nw string) {
	m := h.m
	old, nw = from+"/"+old, from+"/"+nw
	set := map[string]map[string]string{}
	m.settleChange(func(c *change) {
		for _, r := range m.reg.runs {
			if r.Coordinator == old {
				r.Coordinator = nw
				c.touchLocked(r)
			}
		}
		for _, w := range m.reg.workers {
			if w.Parent == old {
				w.Parent = nw
				c.touchLocked(m.reg.runOf[w.ID])
				if w.State.Live() {
					set[w.ID] = map[string]string{"@st_parent": nw}
				}
			}
		}
		m.logf("%s told that coordinator %s is %s now (%d runs moved)", from, old, nw, len(c.runs))
	})
	if len(set) > 0 {
		m.cfg.Tmux.SetOptions(ctx, set)
	}
}

// Coordinator says whether pane here lives, or where its agent went
// after a tmux restart, for machine from, whose workers have it as
// coordinator (internal/authz said so: CoordinatesFor).
func (h *Hosted) Coordinator(ctx context.Context, from, pane string) *api.PeerPaneResult {
	m := h.m
	m.reg.mu.Lock()
	_, mv := m.reg.paneForLocked(from, pane)
	m.reg.mu.Unlock()
	switch {
	case mv != nil && (mv.New == "" || api.Retired(mv.New)):
		// It did not come back after a tmux restart here: named by its
		// retired id (pane may be another pane's now).
		return &api.PeerPaneResult{Retired: mv.Old}
	case mv != nil:
		return &api.PeerPaneResult{Now: mv.New}
	}
	p, err := m.cfg.Tmux.Pane(ctx, pane)
	return &api.PeerPaneResult{Live: err == nil && !p.Dead}
}

// paneForLocked answers machine from about its workers' coordinator pane id,
// as from knows it: whether from has workers of it (handed), and when a
// move of it is not told to from yet (mv), where the coordinator is now
// (mv.New; "" when it did not come back, or its retired id when that is
// to be told). A move is found by its retired id only, and only when no
// live worker of from has pane as its parent in the server's current
// life: a bare id means a pane of the current life first (a coordinator
// started since, in a pane that got an old id, is not taken for the one
// that went). A coordinator that did not come back, told already or from
// before a restart of st, is found by its workers' retired parent.
func (reg *registry) paneForLocked(from, pane string) (handed bool, mv *api.PeerReparent) {
	syncs.AssertLocked(&reg.mu)
	for _, w := range reg.workers {
		if w.Machine == from && w.State.Live() && w.Parent == pane {
			return true, nil
		}
	}
	mvs := reg.untold[from]
	for i := len(mvs) - 1; i >= 0; i-- {
		if r := mvs[i]; api.PaneOf(r.Old) == pane {
			return true, &r
		}
	}
	for _, w := range reg.workers {
		if w.Machine == from && api.Retired(w.Parent) && api.PaneOf(w.Parent) == pane {
			return true, &api.PeerReparent{Old: w.Parent, New: w.Parent}
		}
	}
	return false, nil
}

// Serves reports whether id (a pane or worker name here) is a worker
// here, of any state, of a coordinator on machine.
func (h *Hosted) Serves(machine, id string) bool {
	m := h.m
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	w, err := m.reg.resolveLocked("", id)
	if err != nil {
		return false
	}
	owner, _, ok := api.SplitRemote(w.Parent)
	return ok && owner == machine && !w.Remote()
}

// AgentIn says which agent runs in pane tp as far as st can tell (""
// for none), and the parent of its worker when it is a live worker.
func (h *Hosted) AgentIn(tp tmux.Pane) (kind, workerOf string) {
	m := h.m
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	if w := m.reg.workers[tp.ID]; w != nil && w.State.Live() {
		workerOf = w.Parent
	}
	return m.agentKind(tp), workerOf
}

// Graph is what machine from sees of this machine's agents, for its
// web UI's All machines view (internal/authz lets it see them only while
// this machine takes workers): each agent's pane, name, kind, role, state
// and since, its parent and run (to draw the lines), and its team size.
// No subagents; summaries only of from's own workers here, as the peer
// API leaves them of every answer (ShowTo, with authz's MayRead).
func (h *Hosted) Graph(from string) []api.GraphAgent {
	m := h.m
	g := m.Graph()
	out := make([]api.GraphAgent, 0, len(g))
	for _, a := range g {
		// A worker's summary is shown as the peer API shows every answer
		// (ShowTo, with authz's decision for that machine).
		a.Subagents = nil
		out = append(out, a)
	}
	return out
}

// Hosted is the runs here of coordinators on other machines, and their
// workers: what internal/peer's hub asks of them when another machine
// starts, adopts, reads or moves a worker here (peer.HostedRuns). It is
// an owner apart from the Manager, working on its registry under its
// lock.
type Hosted struct{ m *Manager }

// Hosted is the owner of the runs here of coordinators on other machines.
func (m *Manager) Hosted() *Hosted { return &Hosted{m} }
