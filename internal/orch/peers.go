package orch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
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
	Machine(ctx context.Context, name string) (MachineRef, error)
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

// splitRemote splits machine/rest; ok is false for a local id.
func splitRemote(id string) (machine, rest string, ok bool) {
	i := strings.Index(id, "/")
	if i <= 0 || i == len(id)-1 {
		return "", "", false
	}
	return id[:i], id[i+1:], true
}

// isRemotePane reports whether a pane id names a pane on another machine.
func isRemotePane(id string) bool {
	_, _, ok := splitRemote(id)
	return ok
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

func notSignedIn() *Error {
	return errorf(KindRemote, "st login --control-plane URL --account NAME --key KEY",
		"refused: this machine is not signed in to an account, so it cannot reach other machines")
}

// machine resolves a machine name for a remote request; naming this
// machine is refused.
func (m *Manager) machine(ctx context.Context, name string) (Peers, MachineRef, error) {
	ps, self, err := m.peers()
	if err != nil {
		return nil, MachineRef{}, err
	}
	mr, err := ps.Machine(ctx, name)
	if err != nil {
		return nil, MachineRef{}, err
	}
	if mr.Slug == self {
		return nil, mr, errorf(KindUsage, "leave --machine out to start the worker on this machine",
			"refused: %s is this machine", name)
	}
	return ps, mr, nil
}

// remoteTarget resolves an id of another machine (machine/%N or
// machine/name) to this machine's record of it, if any, and the id
// there. local is set when the machine named is this one.
func (m *Manager) remoteTarget(ctx context.Context, id string) (ps Peers, mr MachineRef, there string, w *Worker, local string, err error) {
	mach, rest, _ := splitRemote(id)
	ps, self, err := m.peers()
	if err != nil {
		return nil, mr, "", nil, "", err
	}
	mr, err = ps.Machine(ctx, mach)
	if err != nil {
		return nil, mr, "", nil, "", err
	}
	if mr.Slug == self {
		return nil, mr, "", nil, rest, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if w = m.workers[mr.Slug+"/"+rest]; w == nil {
		for _, o := range m.workers {
			if o.Machine == mr.Slug && o.Name == rest && (w == nil || o.State.Live()) {
				w = o
			}
		}
	}
	there = rest
	if w != nil {
		_, there, _ = splitRemote(w.ID)
	}
	return ps, mr, there, w, "", nil
}

// startRemote starts a worker on another machine: this machine places it
// in the caller's run and counts its depth, the machine there opens the
// window, types the task and reports once the turn started.
func (m *Manager) startRemote(ctx context.Context, req startPlan, task []byte, name string) (*WorkerView, error) {
	if req.Split {
		return nil, errorf(KindRemote, "leave --split out: the worker opens as a window of that machine's st-remote session", "refused: --split is for workers on this machine only")
	}
	if req.run != nil {
		return nil, errorf(KindRemote, "start the worker with st worker start --machine, and order it yourself", "refused: ordered tasks cannot run on other machines")
	}
	ps, mr, err := m.machine(ctx, req.Machine)
	if err != nil {
		return nil, err
	}
	p, err := m.callerPane(ctx, req.Pane)
	if err != nil {
		return nil, err
	}
	r, level, created, release, err := m.reserve(p, nil, nil, name)
	if err != nil {
		return nil, err
	}
	defer release()
	m.mu.Lock()
	base, _ := m.chainDepth(r.Coordinator)
	m.mu.Unlock()
	if created {
		m.cfg.Tmux.SetOptions(ctx, map[string]map[string]string{p.ID: {"@st_run": r.ID, "@st_role": "coordinator"}})
	}
	env := map[string]string{}
	for k, v := range req.Env {
		// Only the simulated agent's knobs travel: the agent there runs
		// with that machine's own settings (DESIGN.md, Machines).
		if strings.HasPrefix(k, "ST_SIM_") {
			env[k] = v
		}
	}
	m.mu.Lock()
	parentName := m.nameOf(p)
	m.mu.Unlock()
	ps2 := PeerStart{ParentName: parentName,
		Run: r.ID, Coordinator: r.Coordinator, Parent: p.ID, Level: level, BaseDepth: base, Ref: newRef(),
		Agent: req.Agent, TaskName: baseName(req.Task), TaskText: string(task), Name: name, Cwd: req.Cwd,
		Worktree: req.Worktree, Owns: req.Owns, Env: env, BlockedTimeout: req.BlockedTimeout, HookTimeout: req.HookTimeout,
	}
	cctx, cancel := context.WithTimeout(ctx, RemoteStartLimit)
	defer cancel()
	var v WorkerView
	err = ps.Call(cctx, mr.Slug, api.PeerRouteStart, ps2, &v)
	if err == nil {
		err = checkPeerView(&v)
	}
	if err != nil {
		if errors.Is(cctx.Err(), context.DeadlineExceeded) {
			err = errorf(KindTimeout, "look at the st-remote session on "+mr.Name+", where the window may still be",
				"the worker on %s did not start its turn within %s", mr.Name, RemoteStartLimit)
		}
		m.dropIfEmpty(r, created)
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.remoteRecord(mr, &v, p.ID, level, ps2.Ref)
	w.Task, w.Fan = req.Task, req.fanGroup
	r.Workers = append(r.Workers, w)
	m.workers[w.ID] = w
	m.runOf[w.ID] = r
	if err := m.save(r); err != nil {
		return nil, err
	}
	m.ensurePeerWatch(mr.Slug)
	m.notify()
	m.logf("worker %s (%s) of run %s started on %s for %s", w.ID, w.Name, r.ID, mr.Name, p.ID)
	out := m.view(w)
	out.Notes = v.Notes
	return &out, nil
}

// dropIfEmpty forgets a run made for a start that failed.
func (m *Manager) dropIfEmpty(r *Run, created bool) {
	if !created {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(r.Workers) == 0 && len(r.Tasks) == 0 {
		delete(m.runs, r.ID)
	}
}

func baseName(p string) string {
	if i := strings.LastIndex(p, "/"); i >= 0 {
		return p[i+1:]
	}
	return p
}

// remoteRecord makes this machine's record of a worker there.
func (m *Manager) remoteRecord(mr MachineRef, v *WorkerView, parent string, level int, ref string) *Worker {
	w := v.Worker
	w.ID = mr.Slug + "/" + v.ID
	w.Machine, w.MachineName = mr.Slug, mr.Name
	w.Parent, w.Level, w.Ref = parent, level, ref
	w.TeamSize, w.TeamRun = v.TeamOf, ""
	w.Scope, w.Worktree = v.Scope, v.Worktree
	w.Told = false
	return &w
}

// remoteOp runs read, send, stop, rename or release on a worker of
// another machine, and keeps this machine's record in step.
func (m *Manager) remoteOp(ctx context.Context, op string, req IDRequest) (*WorkerView, error) {
	ps, mr, there, w, local, err := m.remoteTarget(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	if local != "" {
		req.ID = local
		return m.localOp(ctx, op, req)
	}
	if op == "rename" && !ValidName(req.Text) {
		return nil, errorf(KindUsage, "use letters, digits, '.', '_' and '-' (at most 40)", "the name %q has characters that tmux or a shell would misread", req.Text)
	}
	if op == "send" {
		if err := checkLine(req.Text); err != nil {
			return nil, err
		}
	}
	if op == "rename" && w != nil {
		m.mu.Lock()
		r := m.runOf[w.ID]
		for _, o := range r.Workers {
			if o != w && o.Name == req.Text && o.State.Live() {
				m.mu.Unlock()
				return nil, errorf(KindConflict, "pick another name", "run %s already has a worker named %q", r.ID, req.Text)
			}
		}
		m.mu.Unlock()
	}
	var v WorkerView
	if err := ps.Call(ctx, mr.Slug, op, PeerOp{ID: there, Text: req.Text}, &v); err != nil {
		if w != nil && isUnreachable(err) {
			m.markUnreachable(mr.Slug, err)
		}
		return nil, err
	}
	if err := checkPeerView(&v); err != nil {
		return nil, err
	}
	if w == nil {
		// Not a worker of this machine's runs (the machine there may still
		// have answered, e.g. a read of a worker of another machine).
		v.ID = mr.Slug + "/" + v.ID
		v.Machine, v.MachineName = mr.Slug, mr.Name
		return &v, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.applyRemote(w, &v)
	r := m.runOf[w.ID]
	switch op {
	case "read":
		if w.Parent == req.Pane && w.State == Done && !w.Told {
			w.Told = true
		}
	case "stop":
		m.setState(w, Gone)
	case "release":
		for i, o := range r.Workers {
			if o == w {
				r.Workers = append(r.Workers[:i:i], r.Workers[i+1:]...)
				break
			}
		}
		out := m.view2(w, r)
		delete(m.workers, w.ID)
		delete(m.runOf, w.ID)
		m.save(r)
		m.notify()
		return &out, nil
	}
	m.save(r)
	m.notify()
	out := m.view(w)
	out.Notes = v.Notes
	return &out, nil
}

// localOp runs an operation on a worker of this machine (an id that
// named this machine).
func (m *Manager) localOp(ctx context.Context, op string, req IDRequest) (*WorkerView, error) {
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
	return nil, errorf(KindUsage, "", "unknown operation %s", op)
}

// applyRemote copies what the machine there says of a worker into this
// machine's record. Called with m.mu held.
func (m *Manager) applyRemote(w *Worker, v *WorkerView) {
	if v.State != w.State {
		m.setState(w, v.State)
		w.Since = v.Since
	}
	w.Name, w.Agent = v.Name, v.Agent
	w.Summary, w.ReportedAt, w.LastAnswer, w.Error = v.Summary, v.ReportedAt, v.LastAnswer, v.Error
	w.ReportAnswer = v.ReportAnswer
	w.AgentSession, w.Reported = v.AgentSession, v.Reported
	w.TeamSize = v.TeamOf
	if nid := w.Machine + "/" + v.ID; v.ID != "" && nid != w.ID {
		// Its pane there changed (that machine's tmux server restarted).
		r := m.runOf[w.ID]
		delete(m.workers, w.ID)
		delete(m.runOf, w.ID)
		w.ID = nid
		m.workers[nid] = w
		m.runOf[nid] = r
	}
}

func isUnreachable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == KindUnreachable
}

// remoteAdopt adopts an agent that runs on another machine. Nothing is
// typed into it; a team lead keeps its run there and shows here as one
// worker.
func (m *Manager) remoteAdopt(ctx context.Context, req IDRequest) (*WorkerView, error) {
	ps, mr, there, w, local, err := m.remoteTarget(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	if local != "" {
		req.ID = local
		return m.Adopt(ctx, req)
	}
	if w != nil && w.State.Live() {
		return nil, errorf(KindConflict, fmt.Sprintf("release it first: st worker release %s (run from %s)", w.ID, w.Parent),
			"refused: %s is already a worker of %s (run %s)", w.ID, w.Parent, m.runOf[w.ID].ID)
	}
	p, err := m.callerPane(ctx, req.Pane)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	r, level, created, err := m.placement(p)
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	if created {
		if err := m.save(r); err != nil {
			delete(m.runs, r.ID)
			m.mu.Unlock()
			return nil, err
		}
	}
	base, _ := m.chainDepth(r.Coordinator)
	m.mu.Unlock()
	m.mu.Lock()
	parentName := m.nameOf(p)
	m.mu.Unlock()
	op := PeerOp{ID: there, Run: r.ID, Coordinator: r.Coordinator, Parent: p.ID, Level: level, BaseDepth: base, Ref: newRef(), ParentName: parentName}
	var v WorkerView
	err = ps.Call(ctx, mr.Slug, api.PeerRouteAdopt, op, &v)
	if err == nil {
		err = checkPeerView(&v)
	}
	if err != nil {
		m.dropIfEmpty(r, created)
		return nil, err
	}
	if created {
		m.cfg.Tmux.SetOptions(ctx, map[string]map[string]string{p.ID: {"@st_run": r.ID, "@st_role": "coordinator"}})
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	nw := m.remoteRecord(mr, &v, p.ID, level, op.Ref)
	nw.Adopted = true
	r.Workers = append(r.Workers, nw)
	m.workers[nw.ID] = nw
	m.runOf[nw.ID] = r
	if err := m.save(r); err != nil {
		return nil, err
	}
	m.ensurePeerWatch(mr.Slug)
	m.notify()
	m.logf("adopted %s (%s) on %s into run %s under %s", nw.ID, nw.Name, mr.Name, r.ID, p.ID)
	out := m.view(nw)
	return &out, nil
}

// notAcrossMachines refuses an operation that works on this machine only.
func notAcrossMachines(what string) error {
	return errorf(KindRemote, "have the worker fetch and push its code through a shared git remote, and say so in its task",
		"refused: %s is for workers on this machine only; code does not move between machines", what)
}

// peerLoop is the watch of one machine: it long-polls that machine's st
// for this machine's workers there, marks them unreachable while it cannot
// be reached, and tells it of coordinators that moved. It runs while this
// machine has live workers there or something to tell it.
type peerLoop struct {
	kick        chan struct{}
	reparents   []PeerReparent
	lastAttempt time.Time
}

// ensurePeerWatch starts the watch of machine slug. Called with m.mu held.
func (m *Manager) ensurePeerWatch(slug string) {
	if m.peerLoops == nil {
		m.peerLoops = map[string]*peerLoop{}
	}
	if pl := m.peerLoops[slug]; pl != nil {
		select {
		case pl.kick <- struct{}{}:
		default:
		}
		return
	}
	pl := &peerLoop{kick: make(chan struct{}, 1)}
	m.peerLoops[slug] = pl
	go m.runPeerLoop(slug, pl)
}

// needsPeer says whether the loop of slug has work. Called with m.mu held.
func (m *Manager) needsPeer(slug string, pl *peerLoop) bool {
	if len(pl.reparents) > 0 {
		return true
	}
	for _, w := range m.workers {
		if w.Machine == slug && w.State.Live() {
			return true
		}
	}
	return false
}

func (m *Manager) runPeerLoop(slug string, pl *peerLoop) {
	var since uint64
	var boot string
	ctx := m.bg
	for {
		m.mu.Lock()
		if ctx.Err() != nil || m.cfg.Peers == nil || !m.needsPeer(slug, pl) {
			delete(m.peerLoops, slug)
			m.mu.Unlock()
			return
		}
		reparents := append([]PeerReparent(nil), pl.reparents...)
		due := len(reparents) > 0 && m.cfg.Now().Sub(pl.lastAttempt) >= m.peerRetry()
		if due {
			pl.lastAttempt = m.cfg.Now()
		}
		m.mu.Unlock()
		if due {
			m.tellMoves(ctx, slug, pl, reparents)
		}
		wctx, cancel := context.WithTimeout(ctx, peerWatchWait+10*time.Second)
		stopKick := make(chan struct{})
		go func() {
			select {
			case <-pl.kick:
				cancel()
			case <-stopKick:
			}
		}()
		var res PeerWatchResult
		err := m.cfg.Peers.Call(wctx, slug, api.PeerRouteWatch, PeerWatchRequest{Boot: boot, Since: since, Wait: peerWatchWait}, &res)
		kicked := wctx.Err() == context.Canceled && ctx.Err() == nil
		close(stopKick)
		cancel()
		switch {
		case kicked:
		case err != nil:
			m.markUnreachable(slug, err)
			wait := peerPollAgain
			if len(reparents) > 0 && m.peerRetry() < wait {
				wait = m.peerRetry()
			}
			select {
			case <-ctx.Done():
			case <-pl.kick:
			case <-time.After(wait):
			}
		default:
			since, boot = res.Seq, res.Boot
			m.applyWatch(slug, res.Workers)
		}
	}
}

func (m *Manager) peerRetry() time.Duration {
	if m.cfg.PeerRetry > 0 {
		return m.cfg.PeerRetry
	}
	return DefaultPeerRetry
}

// tellMoves tells machine slug the coordinators' new panes. Nothing is
// typed to the workers' agents there.
func (m *Manager) tellMoves(ctx context.Context, slug string, pl *peerLoop, moves []PeerReparent) {
	for _, mv := range moves {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := m.cfg.Peers.Call(cctx, slug, api.PeerRouteReparent, mv, &struct{}{})
		cancel()
		if err != nil {
			m.logf("could not tell %s that coordinator %s is %s now (trying again in %s): %v", slug, mv.Old, mv.New, m.peerRetry(), err)
			return
		}
		m.logf("told %s that coordinator %s is %s now", slug, mv.Old, mv.New)
		m.mu.Lock()
		for i, o := range pl.reparents {
			if o == mv {
				pl.reparents = append(pl.reparents[:i:i], pl.reparents[i+1:]...)
				break
			}
		}
		m.mu.Unlock()
	}
}

// applyWatch brings this machine's records of workers on slug in step
// with what that machine says.
func (m *Manager) applyWatch(slug string, vs []WorkerView) {
	m.mu.Lock()
	defer m.mu.Unlock()
	byRef := map[string]*Worker{}
	for _, w := range m.workers {
		if w.Machine == slug && w.Ref != "" {
			byRef[w.Ref] = w
		}
	}
	dirty := map[*Run]bool{}
	for i := range vs {
		v := &vs[i]
		w := byRef[v.Ref]
		if w == nil {
			continue
		}
		if err := checkPeerView(v); err != nil {
			m.logf("%s: not taken: %v", slug, err)
			delete(byRef, v.Ref) // as it was last seen
			continue
		}
		before := *w
		m.applyRemote(w, v)
		if before.State != w.State || before.Summary != w.Summary || before.Name != w.Name || before.ID != w.ID || before.LastAnswer != w.LastAnswer || before.TeamSize != w.TeamSize {
			dirty[m.runOf[w.ID]] = true
		}
		delete(byRef, v.Ref)
	}
	// A worker that machine no longer has (released there, or its record
	// lost) stays in the run as it was last seen, unless it was
	// unreachable: then it is back to what it was.
	for _, w := range byRef {
		if w.State == Unreachable {
			m.setState(w, Idle)
			dirty[m.runOf[w.ID]] = true
		}
	}
	for r := range dirty {
		if r != nil {
			m.save(r)
		}
	}
	if len(dirty) > 0 {
		m.notify()
	}
}

// markUnreachable marks the live workers on slug unreachable: wait
// counts them as still working.
func (m *Manager) markUnreachable(slug string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dirty := map[*Run]bool{}
	for _, w := range m.workers {
		if w.Machine == slug && w.State.Live() && w.State != Unreachable {
			m.logf("worker %s: its machine cannot be reached: %v", w.ID, err)
			w.Error = "its machine cannot be reached: " + err.Error()
			m.setState(w, Unreachable)
			dirty[m.runOf[w.ID]] = true
		}
	}
	for r := range dirty {
		m.save(r)
	}
	if len(dirty) > 0 {
		m.notify()
	}
}

// queueMoves records coordinators that moved to new panes and queues
// telling each machine that has workers of theirs. Called with m.mu held.
func (m *Manager) queueMoves(moved map[string]string) {
	if m.movedTo == nil {
		m.movedTo = map[string]string{}
	}
	for o, n := range moved {
		if o != n {
			m.movedTo[o] = n
		}
	}
	tell := map[string]map[PeerReparent]bool{}
	for _, w := range m.workers {
		if !w.Remote() || !w.State.Live() {
			continue
		}
		for o, n := range moved {
			if w.Parent == n && o != n {
				if tell[w.Machine] == nil {
					tell[w.Machine] = map[PeerReparent]bool{}
				}
				tell[w.Machine][PeerReparent{Old: o, New: n}] = true
			}
		}
	}
	for slug, mvs := range tell {
		m.ensurePeerWatch(slug)
		pl := m.peerLoops[slug]
		for mv := range mvs {
			pl.reparents = append(pl.reparents, mv)
		}
		sort.Slice(pl.reparents, func(i, j int) bool { return pl.reparents[i].Old < pl.reparents[j].Old })
		pl.lastAttempt = time.Time{}
	}
}

// resumePeerWatches starts the watch of every machine this machine has
// live workers on (after a restart of st).
func (m *Manager) resumePeerWatches() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cfg.Peers == nil {
		return
	}
	for _, w := range m.workers {
		if w.Remote() && w.State.Live() {
			m.ensurePeerWatch(w.Machine)
		}
	}
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
