package orch

import (
	"context"
	"fmt"
	"strings"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/syncs"
	"github.com/sophonz/st/internal/tmux"
)

// Adoption: an agent already running in a pane becomes a worker (st
// worker adopt, a card dropped in the web UI), nothing typed into it; a
// lead of workers of its own comes in as a team (its run stays).

// agentKind says which agent runs in a pane, as far as st can tell: its
// hooks, its pane options, or the program it runs.
func (m *Manager) agentKind(p tmux.Pane) string {
	if kind, _ := m.facts.agentIn(p.ID); kind != "" {
		return kind
	}
	if p.StAgent != "" {
		return p.StAgent
	}
	// The pane's command as tmux names it: a kind's program (claude,
	// codex), as its description tells its processes.
	return agent.ByProcess([]string{p.Command}, nil)
}

// adoptedNameLocked is the name an adopted agent gets in run r: the name st
// gave its pane, else its own name as a teammate of a Claude agent team
// (mate: its pane is split off its lead's window, whose name is the
// lead's), else its window's; made unique in the run with -2, -3...
func (reg *registry) adoptedNameLocked(r *Run, tp tmux.Pane, mate string) string {
	syncs.AssertLocked(&reg.mu)
	name := tp.StName
	if name == "" || !ValidName(name) {
		name = mate
	}
	if name == "" || !ValidName(name) {
		name = NameFromTask(tp.WindowName)
	}
	base := name
	for i := 2; ; i++ {
		taken := false
		for _, o := range r.Workers {
			if o.Name == name && o.State.Live() {
				taken = true
			}
		}
		if !taken {
			return name
		}
		name = fmt.Sprintf("%s-%d", base, i)
	}
}

// adoptedWorkerLocked is the record of the agent in pane tp as the worker of
// parent at level, as it is now: working if its turn runs.
func (m *Manager) adoptedWorkerLocked(tp tmux.Pane, name, kind, parent string, level int, team *Run) *Worker {
	syncs.AssertLocked(&m.reg.mu)
	now := m.cfg.Now()
	st := api.Idle
	if _, inTurn := m.facts.agentIn(tp.ID); inTurn {
		st = api.Working
	}
	w := &Worker{ID: tp.ID, Name: name, Agent: kind, Parent: parent, Level: level, State: st, Since: now,
		Cwd: tp.Path, Window: tp.WindowID, Session: tp.SessionID, StartedAt: now, Adopted: true}
	if team != nil {
		w.TeamRun = team.ID
	}
	return w
}

// enrolLocked adds the adopted worker w to run r and puts the change in
// flight (keep.go): the caller lets the lock go and calls enrol, which
// waits for the write with no lock held. When the disk cannot keep it,
// the worker is taken out again, and the run with it when the adoption
// made it (created). Until enrol has put st's options on w's pane, the
// watcher leaves w alone (marking): a listing of the panes taken before
// then would find a pane of no run and call the worker gone.
func (m *Manager) enrolLocked(r *Run, w *Worker, created bool) *flight {
	syncs.AssertLocked(&m.reg.mu)
	m.reg.addWorkerLocked(r, w)
	m.reg.markingLocked(w.ID)
	c := m.newChange()
	c.touchLocked(r)
	return m.flyLocked(c, func() {
		m.reg.removeWorkerLocked(w)
		if created {
			m.reg.dropRunLocked(r)
		}
	})
}

// enrol ends the adoption enrolLocked began: it waits for its write (with
// no lock held, so that other requests go on meanwhile and adoptions side
// by side share a write), then puts st's relations on w's pane (with the
// options in also on other panes, such as a new run's coordinator) and
// returns w's view. A write that failed was undone; its error is
// returned.
func (m *Manager) enrol(ctx context.Context, fl *flight, r *Run, w *Worker, also map[string]map[string]string) (api.WorkerView, error) {
	if err := m.finish(fl); err != nil {
		return api.WorkerView{}, err
	}
	// w is the registry's now: a rename may change its name, and its
	// options are read as they are when tmux is told (tellPane).
	set := map[string]map[string]string{}
	m.tellPane(func() {
		opts := map[string]string{"@st_run": r.ID, "@st_role": "worker", "@st_parent": w.Parent, "@st_name": w.Name}
		if w.TeamRun != "" {
			opts["@st_team"] = w.TeamRun
		}
		set[w.ID] = opts
		for p, o := range also {
			set[p] = o
		}
	}, func() {
		if err := m.cfg.Tmux.SetOptions(ctx, set); err != nil {
			m.logf("adopt: %v", err)
		}
	})
	m.reg.mu.Lock()
	m.reg.markedLocked(w.ID, m.cfg.Now())
	v := m.viewLocked(w)
	m.reg.mu.Unlock()
	m.logf("adopted %s (%s, %s) into run %s under %s", v.ID, v.Name, v.Agent, r.ID, v.Parent)
	return v, nil
}

// tellPane sets options of panes that come from the registry (a
// worker's name, its run) with the registry's lock let go: read takes
// them under that lock, apply gives them to tmux with it let go. The pane
// options' lock (optsMu) is held from the read until tmux has them, so
// that settings of the same pane (an adoption's, a rename's) reach tmux
// in the order they read the registry, and the last one tmux has is the
// newest: an adoption that read the old name cannot set it after a
// rename set the new one.
func (m *Manager) tellPane(read, apply func()) {
	m.optsMu.Lock() // lockio: the pane options' lock, held through their tmux commands, and taken with no other lock held
	defer m.optsMu.Unlock()
	m.reg.mu.Lock()
	read()
	m.reg.mu.Unlock()
	apply()
}

// Adopt makes an agent that is already running in a pane the calling
// pane's worker. Nothing is typed into it; its conversation stays as it
// is. An agent that leads workers of its own comes in as a team: it keeps
// its own run, and counts as one worker here.
func (m *Manager) Adopt(ctx context.Context, req api.IDRequest) (*api.WorkerView, error) {
	return m.adopt(ctx, req, false)
}

// adopt is Adopt; byPerson marks a person's drop in the web UI (which may
// adopt a teammate). The machines with workers below the adopted agent
// are told how deep the chain above them is now, before it returns.
func (m *Manager) adopt(ctx context.Context, req api.IDRequest, byPerson bool) (*api.WorkerView, error) {
	v, err := m.adoptHere(ctx, req, byPerson)
	if err == nil {
		m.tellDepths(ctx)
	}
	return v, err
}

func (m *Manager) adoptHere(ctx context.Context, req api.IDRequest, byPerson bool) (*api.WorkerView, error) {
	if api.IsRemote(req.ID) {
		if len(req.Owns) > 0 {
			return nil, errorf(api.KindRemote, "leave --owns out: the worker on that machine keeps that machine's rules",
				"refused: --owns is only for workers on this machine, and %s is on another machine", req.ID)
		}
		rm, err := m.remote()
		if err != nil {
			return nil, err
		}
		return rm.Adopt(ctx, req)
	}
	p, err := m.callerPane(ctx, req.Pane)
	if err != nil {
		return nil, err
	}
	tp, err := m.cfg.Tmux.Find(ctx, req.ID)
	if err != nil {
		return nil, errorf(api.KindNotFound, "st ls shows the panes and their agents", "there is no pane %q: %v", req.ID, err)
	}
	if tp.ID == p.ID {
		return nil, errorf(api.KindUsage, "", "a pane cannot adopt itself")
	}
	// The repository of --owns is opened, and its files listed, before
	// the registry's lock is taken: git is not run under it. An error is
	// given where the lock's checks would have given it, after them.
	var tree ownsTree
	if len(req.Owns) > 0 {
		tree = openOwnsTree(tp.Path)
	}
	m.reg.mu.Lock()
	r, w, fl, notes, also, err := m.adoptStageLocked(p, tp, req.Owns, tree, byPerson)
	m.reg.mu.Unlock()
	if err != nil {
		return nil, err
	}
	v, err := m.enrol(ctx, fl, r, w, also)
	if err != nil {
		return nil, err
	}
	v.Notes = notes
	return &v, nil
}

// adoptStageLocked checks the adoption of the agent in tp by p, places it
// and puts it in flight (enrolLocked); also are the options of p's pane
// when the adoption made p a run.
func (m *Manager) adoptStageLocked(p, tp tmux.Pane, owns []string, tree ownsTree, byPerson bool) (
	r *Run, w *Worker, fl *flight, notes []string, also map[string]map[string]string, err error) {
	syncs.AssertLocked(&m.reg.mu)
	if err := m.checkAdoptLocked(p, tp, byPerson); err != nil {
		return nil, nil, nil, nil, nil, err
	}
	r, level, created, err := m.reg.placementLocked(p, nil)
	if err != nil {
		return nil, nil, nil, nil, nil, err
	}
	w, notes, err = m.adoptIntoLocked(r, level, p, tp, owns, tree)
	if err != nil {
		if created {
			m.reg.dropRunLocked(r)
		}
		return nil, nil, nil, nil, nil, err
	}
	if created {
		also = map[string]map[string]string{p.ID: {"@st_run": r.ID, "@st_role": "coordinator"}}
	}
	return r, w, m.enrolLocked(r, w, created), notes, also, nil
}

// checkAdoptLocked refuses what cannot be adopted: a worker already, a
// teammate (unless a person dropped it), no agent, or an agent above the
// adopter in its chain.
func (m *Manager) checkAdoptLocked(p, tp tmux.Pane, byPerson bool) error {
	syncs.AssertLocked(&m.reg.mu)
	if w := m.reg.workers[tp.ID]; w != nil && w.State.Live() {
		return errorf(api.KindConflict, fmt.Sprintf("release it first: st worker release %s (run from %s)", tp.ID, w.Parent),
			"refused: %s is already a worker of %s (run %s)", tp.ID, w.Parent, m.reg.runOf[tp.ID].ID)
	}
	if err := m.facts.refuseTeammate(tp.ID, byPerson, m.reg.workerAtLocked); err != nil {
		return err
	}
	if m.agentKind(tp) == "" {
		return errorf(api.KindNotFound, "start an agent there first, and check st hooks status",
			"st has seen no agent in %s (no hook came from it, and it runs %q)", tp.ID, tp.Command)
	}
	// Adopting one of your own ancestors would make a loop.
	_, path := m.reg.chainDepthLocked(p.ID)
	for _, a := range path {
		if a == tp.ID {
			return errorf(api.KindUsage, "", "refused: %s is above this pane in its chain (%s), so adopting it would make a loop", tp.ID, strings.Join(path, " → "))
		}
	}
	return nil
}

// adoptIntoLocked makes the record of the agent in tp as a worker of p in run
// r: its team, its depth checked, its scope (in tree, the repository
// adoptHere opened before it took the lock).
func (m *Manager) adoptIntoLocked(r *Run, level int, p, tp tmux.Pane, owns []string, tree ownsTree) (*Worker, []string, error) {
	syncs.AssertLocked(&m.reg.mu)
	team := m.reg.teamOfLocked(tp.ID)
	sub := m.reg.subtreeDepthLocked(tp.ID, map[string]bool{})
	what := tp.ID
	if team != nil {
		what = fmt.Sprintf("%s (team of %d, %d levels)", tp.ID, m.reg.teamSizeLocked(team, map[string]bool{}), sub)
	}
	if err := m.reg.checkChainLocked(p.ID, sub, what); err != nil {
		return nil, nil, err
	}
	var scope *Scope
	var notes []string
	if len(owns) > 0 {
		if tree.err != nil {
			return nil, nil, errorf(api.KindUsage, "leave --owns out, or adopt an agent that works in a git repository",
				"--owns needs a git repository (scopes are relative to its root): %v", tree.err)
		}
		var err error
		if scope, notes, err = m.scopeLocked(owns, tree, r); err != nil {
			return nil, nil, err
		}
	}
	w := m.adoptedWorkerLocked(tp, m.reg.adoptedNameLocked(r, tp, m.facts.mateName(tp.ID)), m.agentKind(tp), p.ID, level, team)
	w.Scope = scope
	return w, notes, nil
}

// AdoptDropped is Adopt for a person who dropped an agent's card on a
// coordinator's in the web UI: a teammate may be adopted that way.
func (m *Manager) AdoptDropped(ctx context.Context, req api.IDRequest) (*api.WorkerView, error) {
	return m.adopt(ctx, req, true)
}
