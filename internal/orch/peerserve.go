package orch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/plain"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/tmux"
)

// This file is the worker's side of workers on other machines: what this
// machine's st does when another machine of the account (from, its slug,
// proven by its certificate) asks. A worker started or adopted this way
// is an ordinary worker here, in a run whose coordinator is on the other
// machine (Coordinator from/%N), so its window, hooks, questions and
// report stay here.

// RemoteSession is the session that workers of other machines open in.
const RemoteSession = "st-remote"

// remoteRunFree refuses a run id here that is not machine from's: a run
// of this machine, or of another machine. Called with m.mu held.
func (m *Manager) remoteRunFree(from, run string) error {
	if r := m.runs[run]; r != nil && r.CoordinatorMachine != from {
		return errorf(api.KindConflict, "start the worker again (a new run id is picked)", "run %s here is not %s's", run, from)
	}
	return nil
}

// remoteRun finds or makes the run here that stands for a run of machine
// from. Called with m.mu held.
func (m *Manager) remoteRun(from, run, coordinator string, baseDepth int) (*Run, error) {
	if err := m.remoteRunFree(from, run); err != nil {
		return nil, err
	}
	if r := m.runs[run]; r != nil {
		r.BaseDepth = baseDepth
		return r, nil
	}
	r := &Run{ID: run, Coordinator: from + "/" + coordinator, CoordinatorMachine: from, BaseDepth: baseDepth, Created: m.cfg.Now()}
	m.runs[run] = r
	if err := m.save(r); err != nil {
		m.dropRun(r)
		return nil, err
	}
	return r, nil
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

// checkDepth refuses a worker at level of a run whose coordinator is
// baseDepth deep, counting sub levels below the worker.
func checkRemoteDepth(level, baseDepth, sub int, from string) error {
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

// PeerStart starts a worker for a coordinator on machine from: a new
// window of the st-remote session, in this machine's home folder or the
// folder asked for, with this machine's own agent settings. Whether from
// may start workers here at all is internal/authz's to say (the peer
// route asks it first); every check of what it sent comes before the task
// is written, and a start that fails leaves no task file behind.
func (m *Manager) PeerStart(ctx context.Context, from string, req api.PeerStart) (*api.WorkerView, error) {
	if err := checkPeerStart(from, &req); err != nil {
		return nil, err
	}
	if err := checkRemoteDepth(req.Level, req.BaseDepth, 0, from); err != nil {
		return nil, err
	}
	m.mu.Lock()
	err := m.remoteRunFree(from, req.Run)
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	home, _ := os.UserHomeDir()
	cwd := req.Cwd
	if cwd == "" {
		cwd = home
	}
	// The task travels as text and is kept here, where the agent reads it.
	name := req.Name
	if name == "" {
		name = NameFromTask(req.TaskName)
	}
	task := filepath.Join(m.cfg.Home, "remote-tasks", req.Run, name+"-"+newRef()[:6]+".md")
	if err := store.WriteFile(task, []byte(req.TaskText), 0o600); err != nil {
		return nil, errorf(api.KindInternal, "free some disk space on "+from, "could not keep the task: %v", err)
	}
	v, err := m.peerStartIn(ctx, from, req, task, name, cwd, home)
	if err != nil {
		os.Remove(task)
		os.Remove(filepath.Dir(task)) // only when empty
	}
	return v, err
}

// peerStartIn opens the window of a peer start whose task is kept in
// task: PeerStart's second half.
func (m *Manager) peerStartIn(ctx context.Context, from string, req api.PeerStart, task, name, cwd, home string) (*api.WorkerView, error) {
	sp, err := m.remoteSession(ctx, home)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	r, err := m.remoteRun(from, req.Run, req.Coordinator, req.BaseDepth)
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for k, v := range req.Env {
		if strings.HasPrefix(k, "ST_SIM_") {
			env[k] = v
		}
	}
	sreq := startPlan{StartRequest: api.StartRequest{
		Agent: req.Agent, Task: task, Name: name, Cwd: cwd, Env: env, Owns: req.Owns, Worktree: req.Worktree,
		BlockedTimeout: req.BlockedTimeout, HookTimeout: req.HookTimeout,
	}, remote: &remotePlace{run: r, level: req.Level, ref: req.Ref, parentName: req.ParentName, parentMachine: m.machineNameOf(ctx, from),
		pane: tmux.Pane{ID: from + "/" + req.Parent, SessionID: sp.SessionID, Path: home}},
	}
	m.logf("start for %s (run %s, parent %s/%s)", from, req.Run, from, req.Parent)
	return m.startWorker(ctx, sreq)
}

// PeerOp runs read, send, stop, rename or release for machine from on
// one of its workers here (internal/authz said it is from's, and, but for
// a read, that this machine takes workers).
func (m *Manager) PeerOp(ctx context.Context, from, op string, req api.PeerOp) (*api.WorkerView, error) {
	if err := checkPeerID(from, req.ID); err != nil {
		return nil, err
	}
	m.mu.Lock()
	w, err := m.resolve("", req.ID)
	var id, parent string
	if w != nil {
		id, parent = w.ID, w.Parent
	}
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var v *api.WorkerView
	ireq := api.IDRequest{Pane: parent, ID: id, Text: req.Text}
	switch op {
	case "read":
		v, err = m.Read(ctx, ireq)
	case "send":
		v, err = m.Send(ctx, ireq)
	case "stop":
		v, err = m.Stop(ctx, ireq)
	case "rename":
		v, err = m.Rename(ctx, ireq)
	case "release":
		v, err = m.Release(ctx, ireq)
	default:
		return nil, errorf(api.KindUsage, "", "unknown operation %q", op)
	}
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	if w := m.workers[v.ID]; w != nil {
		v.Ref = w.Ref
	}
	m.mu.Unlock()
	return v, nil
}

// PeerAdopt makes an agent here the worker of a coordinator on machine
// from, using up the offer a person here made (internal/authz said there
// is one). Nothing is typed into it. A lead of workers of its own keeps
// its run here and is one worker there.
func (m *Manager) PeerAdopt(ctx context.Context, from string, req api.PeerOp) (*api.WorkerView, error) {
	if err := checkPlacement(from, req.Run, req.Coordinator, req.Parent, req.Ref, req.Level, req.BaseDepth); err != nil {
		return nil, err
	}
	if plain.Line(req.ParentName) != nil || len(req.ParentName) > 80 {
		return nil, peerRefused(from, "a coordinator name with control characters")
	}
	if !tmux.ValidPaneID(req.ID) {
		return nil, errorf(api.KindUsage, "name the agent there by its pane id, e.g. "+from+"/%7", "refused: %q is not a pane id of this machine", plain.Clean(req.ID))
	}
	tp, err := m.cfg.Tmux.Pane(ctx, req.ID)
	if err != nil {
		return nil, errorf(api.KindNotFound, "st ls on that machine shows its panes and agents", "there is no pane %s on this machine", req.ID)
	}
	machineName := m.machineNameOf(ctx, from)
	m.mu.Lock()
	defer m.mu.Unlock()
	if w := m.workers[tp.ID]; w != nil && w.State.Live() {
		return nil, errorf(api.KindConflict, fmt.Sprintf("release it first: st worker release %s (run from %s)", tp.ID, w.Parent),
			"refused: %s is already a worker of %s (run %s)", tp.ID, w.Parent, m.runOf[tp.ID].ID)
	}
	kind := m.agentKind(tp)
	if kind == "" {
		return nil, errorf(api.KindNotFound, "start an agent there first, and check st hooks status on that machine",
			"st has seen no agent in %s (no hook came from it, and it runs %q)", tp.ID, tp.Command)
	}
	team := m.teamOf(tp.ID)
	sub := m.subtreeDepth(tp.ID, map[string]bool{})
	if err := checkRemoteDepth(req.Level, req.BaseDepth, sub, from); err != nil {
		return nil, err
	}
	r, err := m.remoteRun(from, req.Run, req.Coordinator, req.BaseDepth)
	if err != nil {
		return nil, err
	}
	// The offer is used up, under the lock: one adoption per offer.
	if !m.offers.take(tp.ID, tp.PID, from) {
		return nil, errorf(api.KindRemote, "a person on that machine offers it again: st worker offer "+tp.ID+" --machine "+from,
			"refused: the offer of %s to %s was withdrawn or used", tp.ID, from)
	}
	w := m.adoptedWorker(tp, adoptedName(r, tp, m.facts.mateName(tp.ID)), kind, from+"/"+req.Parent, req.Level, team)
	w.Ref = req.Ref
	w.ParentName, w.ParentMachineName = req.ParentName, machineName
	if err := m.enrol(ctx, r, w, nil); err != nil {
		return nil, err
	}
	v := m.view(w)
	return &v, nil
}

// PeerWatch answers machine from with its workers here once anything
// changed after since, or when wait passes.
func (m *Manager) PeerWatch(ctx context.Context, from string, req api.PeerWatchRequest) (*api.PeerWatchResult, error) {
	if len(req.Depths) > 0 {
		m.takeDepths(from, req.Depths)
	}
	wait := req.Wait
	if wait <= 0 || wait > time.Minute {
		wait = peerWatchWait
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	// A watcher that saw an earlier life of this st (another boot) is
	// answered at once: its count means nothing here.
	ch, seq := m.sig.now()
	for waiting := req.Boot == m.hub.boot && req.Since != 0; waiting && seq <= req.Since; ch, seq = m.sig.now() {
		select {
		case <-ch:
		case <-t.C:
			waiting = false
		case <-ctx.Done():
			waiting = false
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	res := &api.PeerWatchResult{Seq: seq, Boot: m.hub.boot}
	for _, w := range m.workers {
		if owner, _, ok := api.SplitRemote(w.Parent); ok && owner == from && w.Ref != "" {
			v := m.view(w)
			res.Workers = append(res.Workers, v)
		}
	}
	return res, nil
}

// PeerReparent moves the workers of machine from's coordinator pane old
// to its new pane. Nothing is typed to their agents.
func (m *Manager) PeerReparent(ctx context.Context, from string, req api.PeerReparent) (*struct{}, error) {
	// New may be a retired id: the coordinator did not come back after a
	// tmux restart there, and its old id may be another pane's now.
	if !tmux.ValidPaneID(req.Old) || !validPaneRef(req.New) {
		return nil, peerRefused(from, "a move that does not name two pane ids")
	}
	old, nw := from+"/"+req.Old, from+"/"+req.New
	m.mu.Lock()
	c := m.newChange()
	set := map[string]map[string]string{}
	for _, r := range m.runs {
		if r.Coordinator == old {
			r.Coordinator = nw
			c.touch(r)
		}
	}
	for _, w := range m.workers {
		if w.Parent == old {
			w.Parent = nw
			c.touch(m.runOf[w.ID])
			if w.State.Live() {
				set[w.ID] = map[string]string{"@st_parent": nw}
			}
		}
	}
	m.logf("%s told that coordinator %s is %s now (%d runs moved)", from, old, nw, len(c.runs))
	m.settleUnlock(c)
	if len(set) > 0 {
		m.cfg.Tmux.SetOptions(ctx, set)
	}
	return &struct{}{}, nil
}

// PeerPane says whether a pane here lives, or where its agent went after
// a tmux restart, for a machine whose workers have it as coordinator
// (internal/authz said so: CoordinatesFor).
func (m *Manager) PeerPane(ctx context.Context, from string, req api.IDRequest) (*api.PeerPaneResult, error) {
	if !tmux.ValidPaneID(req.ID) {
		return nil, peerRefused(from, "a pane id that is not one")
	}
	// That from may ask about req.ID at all, authz said (CoordinatesFor:
	// the coordinators of its workers here, or where they went).
	m.mu.Lock()
	_, mv := m.paneFor(from, req.ID)
	m.mu.Unlock()
	switch {
	case mv != nil && (mv.New == "" || api.Retired(mv.New)):
		// It did not come back after a tmux restart here: named by its
		// retired id (req.ID may be another pane's now).
		return &api.PeerPaneResult{Retired: mv.Old}, nil
	case mv != nil:
		return &api.PeerPaneResult{Now: mv.New}, nil
	}
	p, err := m.cfg.Tmux.Pane(ctx, req.ID)
	return &api.PeerPaneResult{Live: err == nil && !p.Dead}, nil
}

// remoteParentsNow asks the coordinators' machines whether the remote
// parents of live workers here are still where this machine thinks. It
// sets ParentGone and ParentNow on the views.
func (m *Manager) remoteParentsNow(ctx context.Context, vs []api.WorkerView) {
	if m.cfg.Peers == nil {
		return
	}
	asked := map[string]*api.PeerPaneResult{}
	for i := range vs {
		v := &vs[i]
		mach, pane, ok := api.SplitRemote(v.Parent)
		if !ok || !v.State.Live() || v.Remote() || api.Retired(pane) {
			continue // (a retired parent is gone, and named so: see view)
		}
		res, seen := asked[v.Parent]
		if !seen {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			var r api.PeerPaneResult
			if err := m.cfg.Peers.Call(cctx, mach, api.PeerRoutePane, api.IDRequest{ID: pane}, &r); err == nil {
				res = &r
			}
			cancel()
			asked[v.Parent] = res
		}
		if res != nil && ((res.Now != "" && !tmux.ValidPaneID(res.Now)) || (res.Retired != "" && !validPaneRef(res.Retired))) {
			res = nil // not what a pane id looks like: not taken
		}
		if res != nil && res.Retired != "" {
			// Gone in a tmux restart there: named by its retired id.
			v.ParentGone, v.Parent = true, mach+"/"+res.Retired
			continue
		}
		if res != nil && !res.Live {
			v.ParentGone = true
			if res.Now != "" {
				v.ParentNow = mach + "/" + res.Now
			}
		}
	}
}

// PeerGraph is what machine from sees of this machine's agents, for its
// web UI's All machines view (internal/authz lets it see them only while
// this machine takes workers): each agent's pane, name, kind, role, state
// and since, its parent and run (to draw the lines), and its team size.
// Summaries only of from's own workers here (it may read those anyway),
// and no subagents.
func (m *Manager) PeerGraph(from string) []api.GraphAgent {
	g := m.Graph()
	out := make([]api.GraphAgent, 0, len(g))
	for _, a := range g {
		if owner, _, ok := api.SplitRemote(a.Parent); !ok || owner != from {
			a.Summary = ""
		}
		a.Subagents = nil
		out = append(out, a)
	}
	return out
}

// machineNameOf is the name of machine slug as st machines shows it (the
// slug when it cannot be asked).
func (m *Manager) machineNameOf(ctx context.Context, slug string) string {
	if m.cfg.Peers == nil {
		return slug
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if mr, err := m.cfg.Peers.Machine(cctx, slug); err == nil && mr.Name != "" && plain.Line(mr.Name) == nil {
		return mr.Name
	}
	return slug
}
