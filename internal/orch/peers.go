package orch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/tmux"
)

// This file is the coordinator's side of workers on other machines: the
// worker runs there as an ordinary worker of that machine's st, and this
// machine keeps a record of it (ID machine/%N, Machine set) that a watch
// loop per machine keeps true. peerserve.go is the other side.

// Peers reaches st on the account's other machines. The daemon provides
// it (mutual TLS through internal/remote); a Manager without it refuses
// every remote id.
type Peers interface {
	// Self is this machine's slug, or an *Error saying it is not signed in.
	Self() (string, error)
	// Machine finds a machine of the account by name, host name or slug,
	// in any case.
	Machine(ctx context.Context, name string) (api.MachineRef, error)
	// Call runs op on machine slug's st and decodes its answer into resp.
	// A refusal there comes back as an *Error; a machine that cannot be
	// reached as an *Error of KindUnreachable.
	Call(ctx context.Context, slug, op string, req, resp any) error
}

// Defaults of the remote side; tests shorten them.
const (
	// RemoteStartLimit is how long a start on another machine is checked for.
	RemoteStartLimit = 150 * time.Second
	// DefaultPeerRetry is how often st tries again to tell an unreachable
	// machine that a coordinator moved.
	DefaultPeerRetry = time.Minute
	// peerWatchWait is how long one watch call waits for a change there.
	peerWatchWait = 20 * time.Second
	// peerPollAgain is how soon a watch loop tries an unreachable machine again.
	peerPollAgain = 3 * time.Second
)

// remotePlace is where a worker started by another machine goes.
type remotePlace struct {
	run   *Run
	level int
	pane  tmux.Pane // stands for the caller: ID is machine/%N, the session is st-remote
	ref   string
	// parentName and parentMachine say who the worker works for.
	parentName, parentMachine string
}

func newRef() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// peers returns the Peers, or the refusal of a machine that is not
// signed in.
func (m *Manager) peers() (Peers, string, error) {
	if m.cfg.Peers == nil {
		return nil, "", notSignedIn()
	}
	self, err := m.cfg.Peers.Self()
	if err != nil {
		return nil, "", err
	}
	return m.cfg.Peers, self, nil
}

func notSignedIn() *api.Error {
	return errorf(api.KindRemote, "st login --control-plane URL --account NAME --key KEY",
		"refused: this machine is not signed in to an account, so it cannot reach other machines")
}

// machine resolves a machine name for a remote request; naming this
// machine is refused.
func (m *Manager) machine(ctx context.Context, name string) (Peers, api.MachineRef, error) {
	ps, self, err := m.peers()
	if err != nil {
		return nil, api.MachineRef{}, err
	}
	mr, err := ps.Machine(ctx, name)
	if err != nil {
		return nil, api.MachineRef{}, err
	}
	if mr.Slug == self {
		return nil, mr, errorf(api.KindUsage, "leave --machine out to start the worker on this machine",
			"refused: %s is this machine", name)
	}
	return ps, mr, nil
}

// remoteTarget is what an id of another machine (machine/%N or
// machine/name) names.
type remoteTarget struct {
	peers   Peers
	machine api.MachineRef
	there   string  // its id on that machine
	worker  *Worker // this machine's record of it, if any
	// local is set when the machine named is this one: the id here.
	local string
}

// target resolves an id of another machine.
func (m *Manager) target(ctx context.Context, id string) (remoteTarget, error) {
	mach, rest, _ := api.SplitRemote(id)
	ps, self, err := m.peers()
	if err != nil {
		return remoteTarget{}, err
	}
	mr, err := ps.Machine(ctx, mach)
	if err != nil {
		return remoteTarget{}, err
	}
	if mr.Slug == self {
		return remoteTarget{machine: mr, local: rest}, nil
	}
	t := remoteTarget{peers: ps, machine: mr, there: rest}
	m.mu.Lock()
	defer m.mu.Unlock()
	if t.worker = m.workers[mr.Slug+"/"+rest]; t.worker == nil {
		for _, o := range m.workers {
			if o.Machine == mr.Slug && o.Name == rest && (t.worker == nil || o.State.Live()) {
				t.worker = o
			}
		}
	}
	if t.worker != nil {
		_, t.there, _ = api.SplitRemote(t.worker.ID)
	}
	return t, nil
}

// startRemote starts a worker on another machine: this machine places it
// in the caller's run and counts its depth, the machine there opens the
// window, types the task and reports once the turn started.
func (m *Manager) startRemote(ctx context.Context, req startPlan, task []byte, name string) (*api.WorkerView, error) {
	if req.Split {
		return nil, errorf(api.KindRemote, "leave --split out: the worker opens as a window of that machine's st-remote session", "refused: --split is for workers on this machine only")
	}
	if req.run != nil {
		return nil, errorf(api.KindRemote, "start the worker with st worker start --machine, and order it yourself", "refused: ordered tasks cannot run on other machines")
	}
	ps, mr, err := m.machine(ctx, req.Machine)
	if err != nil {
		return nil, err
	}
	p, err := m.callerPane(ctx, req.Pane)
	if err != nil {
		return nil, err
	}
	pl, err := m.reserve(ctx, p, nil, nil, name)
	if err != nil {
		return nil, err
	}
	defer pl.release()
	r, level := pl.run, pl.level
	m.mu.Lock()
	base, _ := m.chainDepth(r.Coordinator)
	parentName := m.nameOf(p)
	m.mu.Unlock()
	ps2 := api.PeerStart{ParentName: parentName,
		Run: r.ID, Coordinator: r.Coordinator, Parent: p.ID, Level: level, BaseDepth: base, Ref: newRef(),
		Agent: req.Agent, TaskName: baseName(req.Task), TaskText: string(task), Name: name, Cwd: req.Cwd,
		Worktree: req.Worktree, Owns: req.Owns, Env: simEnv(req.Env), BlockedTimeout: req.BlockedTimeout, HookTimeout: req.HookTimeout,
	}
	cctx, cancel := context.WithTimeout(ctx, RemoteStartLimit)
	defer cancel()
	var v api.WorkerView
	err = ps.Call(cctx, mr.Slug, api.PeerRouteStart, ps2, &v)
	if err == nil {
		err = checkPeerView(&v)
	}
	if err != nil {
		if errors.Is(cctx.Err(), context.DeadlineExceeded) {
			err = errorf(api.KindTimeout, "look at the st-remote session on "+mr.Name+", where the window may still be",
				"the worker on %s did not start its turn within %s", mr.Name, RemoteStartLimit)
		}
		pl.drop()
		return nil, err
	}
	w := m.remoteRecord(mr, &v, p.ID, level, ps2.Ref)
	w.Task, w.Fan = req.Task, req.fanGroup
	out := m.keepRemote(r, w, mr)
	out.Notes = v.Notes
	m.logf("worker %s (%s) of run %s started on %s for %s", w.ID, w.Name, r.ID, mr.Name, p.ID)
	return out, nil
}

// simEnv is what of a start's environment travels to another machine:
// only the simulated agent's knobs. The agent there runs with that
// machine's own settings (DESIGN.md, Machines).
func simEnv(in map[string]string) map[string]string {
	env := map[string]string{}
	for k, v := range in {
		if strings.HasPrefix(k, "ST_SIM_") {
			env[k] = v
		}
	}
	return env
}

// keepRemote adds this machine's record of a worker on machine mr to run
// r, and watches that machine. The worker runs there whatever this disk
// says, so the record stands even when it cannot be written (the saver
// tries again).
func (m *Manager) keepRemote(r *Run, w *Worker, mr api.MachineRef) *api.WorkerView {
	m.mu.Lock()
	m.addWorker(r, w)
	c := m.newChange()
	c.touch(r)
	m.ensurePeerWatch(mr.Slug)
	out := m.view(w)
	m.settleUnlock(c)
	return &out
}

func baseName(p string) string {
	if i := strings.LastIndex(p, "/"); i >= 0 {
		return p[i+1:]
	}
	return p
}

// remoteRecord makes this machine's record of a worker there.
func (m *Manager) remoteRecord(mr api.MachineRef, v *api.WorkerView, parent string, level int, ref string) *Worker {
	w := workerRecord(v.Worker)
	w.ID = mr.Slug + "/" + v.ID
	w.Machine, w.MachineName = mr.Slug, mr.Name
	w.Parent, w.Level, w.Ref = parent, level, ref
	w.TeamSize, w.TeamDepth, w.TeamRun = v.TeamOf, v.TeamDepth, ""
	w.Told = false
	return w
}

// remoteOp runs read, send, stop, rename or release on a worker of
// another machine, and keeps this machine's record in step.
func (m *Manager) remoteOp(ctx context.Context, op string, req api.IDRequest) (*api.WorkerView, error) {
	t, err := m.target(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	if t.local != "" {
		req.ID = t.local
		return m.localOp(ctx, op, req)
	}
	if err := m.checkRemoteOp(op, req, t.worker); err != nil {
		return nil, err
	}
	var v api.WorkerView
	if err := t.peers.Call(ctx, t.machine.Slug, op, api.PeerOp{ID: t.there, Text: req.Text}, &v); err != nil {
		if t.worker != nil && isUnreachable(err) {
			m.markUnreachable(t.machine.Slug, err)
		}
		return nil, err
	}
	if err := checkPeerView(&v); err != nil {
		return nil, err
	}
	if t.worker == nil {
		// Not a worker of this machine's runs (the machine there may still
		// have answered, e.g. a read of a worker of another machine).
		v.ID = t.machine.Slug + "/" + v.ID
		v.Machine, v.MachineName = t.machine.Slug, t.machine.Name
		return &v, nil
	}
	w := t.worker
	m.mu.Lock()
	c := m.newChange()
	m.applyRemote(c, w, &v)
	c.touch(m.runOf[w.ID])
	switch op {
	case "read":
		c.markTold(w, req.Pane)
	case "stop":
		c.setState(w, api.Gone)
	case "release":
		out := m.view(w)
		m.removeWorker(w)
		m.settleUnlock(c)
		return &out, nil
	}
	out := m.view(w)
	out.Notes = v.Notes
	m.settleUnlock(c)
	return &out, nil
}

// checkRemoteOp refuses here what the machine there would refuse, or
// what would break this machine's run (two live workers of one name).
func (m *Manager) checkRemoteOp(op string, req api.IDRequest, w *Worker) error {
	switch op {
	case "rename":
		if !ValidName(req.Text) {
			return errorf(api.KindUsage, "use letters, digits, '.', '_' and '-' (at most 40)", "the name %q has characters that tmux or a shell would misread", req.Text)
		}
		if w == nil {
			return nil
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.nameFree(m.runOf[w.ID], w, req.Text)
	case "send":
		return checkLine(req.Text)
	}
	return nil
}

// localOp runs an operation on a worker of this machine (an id that
// named this machine).
func (m *Manager) localOp(ctx context.Context, op string, req api.IDRequest) (*api.WorkerView, error) {
	switch op {
	case "read":
		return m.Read(ctx, req)
	case "send":
		return m.Send(ctx, req)
	case "stop":
		return m.Stop(ctx, req)
	case "rename":
		return m.Rename(ctx, req)
	case "release":
		return m.Release(ctx, req)
	case "adopt":
		return m.Adopt(ctx, req)
	}
	return nil, errorf(api.KindUsage, "", "unknown operation %s", op)
}

// applyRemote copies what the machine there says of a worker into this
// machine's record. Called with m.mu held.
func (m *Manager) applyRemote(c *change, w *Worker, v *api.WorkerView) {
	if v.State != w.State {
		c.setState(w, v.State)
		w.Since = v.Since
	}
	w.Name, w.Agent = v.Name, v.Agent
	w.Summary, w.ReportedAt, w.LastAnswer, w.Error = v.Summary, v.ReportedAt, v.LastAnswer, v.Error
	w.ReportAnswer = v.ReportAnswer
	w.AgentSession, w.Reported = v.AgentSession, v.Reported
	w.TeamSize, w.TeamDepth = v.TeamOf, v.TeamDepth
	if nid := w.Machine + "/" + v.ID; v.ID != "" && nid != w.ID {
		// Its pane there changed (that machine's tmux server restarted).
		r := m.runOf[w.ID]
		delete(m.workers, w.ID)
		delete(m.runOf, w.ID)
		w.ID = nid
		m.workers[nid] = w
		m.runOf[nid] = r
		c.touch(r)
	}
}

func isUnreachable(err error) bool {
	var e *api.Error
	return errors.As(err, &e) && e.Kind == api.KindUnreachable
}

// remoteAdopt adopts an agent that runs on another machine. Nothing is
// typed into it; a team lead keeps its run there and shows here as one
// worker.
func (m *Manager) remoteAdopt(ctx context.Context, req api.IDRequest) (*api.WorkerView, error) {
	t, err := m.target(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	if t.local != "" {
		req.ID = t.local
		return m.Adopt(ctx, req)
	}
	if w := t.worker; w != nil && w.State.Live() {
		return nil, errorf(api.KindConflict, fmt.Sprintf("release it first: st worker release %s (run from %s)", w.ID, w.Parent),
			"refused: %s is already a worker of %s", w.ID, w.Parent)
	}
	p, err := m.callerPane(ctx, req.Pane)
	if err != nil {
		return nil, err
	}
	pl, err := m.place(ctx, p, nil)
	if err != nil {
		return nil, err
	}
	r, level := pl.run, pl.level
	m.mu.Lock()
	base, _ := m.chainDepth(r.Coordinator)
	parentName := m.nameOf(p)
	m.mu.Unlock()
	op := api.PeerOp{ID: t.there, Run: r.ID, Coordinator: r.Coordinator, Parent: p.ID, Level: level, BaseDepth: base, Ref: newRef(), ParentName: parentName}
	var v api.WorkerView
	err = t.peers.Call(ctx, t.machine.Slug, api.PeerRouteAdopt, op, &v)
	if err == nil {
		err = checkPeerView(&v)
	}
	if err != nil {
		pl.drop()
		return nil, err
	}
	nw := m.remoteRecord(t.machine, &v, p.ID, level, op.Ref)
	nw.Adopted = true
	out := m.keepRemote(r, nw, t.machine)
	m.logf("adopted %s (%s) on %s into run %s under %s", nw.ID, nw.Name, t.machine.Name, r.ID, p.ID)
	return out, nil
}

// notAcrossMachines refuses an operation that works on this machine only.
func notAcrossMachines(what string) error {
	return errorf(api.KindRemote, "have the worker fetch and push its code through a shared git remote, and say so in its task",
		"refused: %s is for workers on this machine only; code does not move between machines", what)
}

// nameOf is how people call the agent in pane p: its worker name, or its
// window's name. Called with m.mu held.
func (m *Manager) nameOf(p tmux.Pane) string {
	if w := m.workers[p.ID]; w != nil && w.Name != "" {
		return w.Name
	}
	if p.WindowName != "" {
		return p.WindowName
	}
	return p.ID
}
