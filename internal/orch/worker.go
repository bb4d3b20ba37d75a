package orch

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/plain"
	"github.com/sophonz/st/internal/syncs"
	"github.com/sophonz/st/internal/worktree"
)

// List returns the calling pane's workers, or with all every worker.
// It looks at tmux first, so a pane that just closed shows as such.
func (m *Manager) List(ctx context.Context, req api.IDRequest) ([]api.WorkerView, error) {
	m.reconcileIfChanged(ctx)
	out := m.listViews(req)
	// Workers here of coordinators on other machines: ask those machines
	// whether the coordinators are still where st thinks.
	if m.cfg.Remote != nil {
		m.cfg.Remote.ParentsNow(ctx, out)
	}
	return out, nil
}

func (m *Manager) listViews(req api.IDRequest) []api.WorkerView {
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	var ws []*Worker
	for _, w := range m.reg.workers {
		if req.All || w.Parent == req.Pane {
			if !req.All && !w.State.Live() && w.Told {
				// A pane's list keeps what it still has to look at.
				continue
			}
			ws = append(ws, w)
		}
	}
	// The workers sorted, not their views: a view is half a kilobyte,
	// and sorting a hundred of them moved each several times.
	slices.SortStableFunc(ws, func(a, b *Worker) int { return a.StartedAt.Compare(b.StartedAt) })
	if len(ws) == 0 {
		return nil // JSON null, as it always was
	}
	out := make([]api.WorkerView, len(ws))
	for i, w := range ws {
		out[i] = m.viewLocked(w)
	}
	return out
}

// Send types a line into a worker, under the same delivery rules as its task.
func (m *Manager) Send(ctx context.Context, req api.IDRequest) (*api.WorkerView, error) {
	if api.IsRemote(req.ID) {
		return m.remoteOp(ctx, "send", req)
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, errorf(api.KindUsage, `st worker send ID "TEXT"`, "nothing to send")
	}
	if err := CheckLine(req.Text); err != nil {
		return nil, err
	}
	m.reg.mu.Lock()
	w, err := m.reg.resolveLocked(req.Pane, req.ID)
	if err != nil {
		m.reg.mu.Unlock()
		return nil, err
	}
	if !w.State.Live() {
		m.reg.mu.Unlock()
		return nil, errorf(api.KindConflict, "st worker list shows which workers are alive", "worker %s (%s) is %s", w.ID, w.Name, w.State)
	}
	ad, _ := agent.Lookup(w.Agent)
	id := w.ID
	m.reg.mu.Unlock()
	d := delivery{pane: id, adapter: ad, text: req.Text, whileWorking: true, blockedTimeout: sendTimeout, hookTimeout: DefaultHookTimeout}
	if err := m.deliver(ctx, &d); err != nil {
		return nil, err
	}
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	v := m.viewLocked(w)
	return &v, nil
}

// checkText refuses, in text that st keeps and prints later (a summary,
// an objective, a gate's question), what would act on the terminal of
// whoever reads it: control characters other than line breaks and tabs,
// C1 controls included, and bytes that are not UTF-8 (plain.Text).
func checkText(what, s string) error {
	if err := plain.Text(s); err != nil {
		return errorf(api.KindUsage, "remove control characters and escape sequences from the "+what,
			"the %s has %s, which would act on the terminal of whoever reads it", what, err.(*plain.Error).What())
	}
	return nil
}

// CheckLine refuses text that an agent would not take as a plain line
// (a line st worker send types, here or on another machine):
// a line break would submit it early, a control character (C0 or C1) is
// a key or an escape sequence to the agent's terminal (plain.Line).
func CheckLine(s string) error {
	if err := plain.Line(s); err != nil {
		pe := err.(*plain.Error)
		if pe.Break {
			return errorf(api.KindUsage, "send one line; put longer text in a file and send its path", "the text has a line break, which would submit it early")
		}
		return errorf(api.KindUsage, "remove control characters from the text", "the text has %s, which an agent would take as a key", pe.What())
	}
	if strings.HasPrefix(s, "/") || strings.HasPrefix(s, "$") {
		return errorf(api.KindUsage, "start the line with a word", "a line starting with %q opens the agent's command menu", s[:1])
	}
	if len(s) >= 1000 {
		return errorf(api.KindUsage, "put longer text in a file and send its path", "the text is %d characters; agents take a line under 1000", len(s))
	}
	return nil
}

// Stop closes a worker's pane.
func (m *Manager) Stop(ctx context.Context, req api.IDRequest) (*api.WorkerView, error) {
	if api.IsRemote(req.ID) {
		return m.remoteOp(ctx, "stop", req)
	}
	m.reg.mu.Lock()
	w, err := m.reg.resolveLocked(req.Pane, req.ID)
	if err != nil {
		m.reg.mu.Unlock()
		return nil, err
	}
	id, kind, tree := w.ID, w.Agent, w.Worktree
	m.reg.mu.Unlock()
	if err := m.killPane(ctx, id, kind); err != nil {
		return nil, errorf(api.KindInternal, "", "%v", err)
	}
	var v api.WorkerView
	m.settleChange(func(c *change) {
		c.setStateLocked(w, api.Gone)
		c.touchLocked(m.reg.runOf[w.ID])
		v = m.viewLocked(w)
	})
	// Its worktree is removed (git) with the registry's lock let go.
	v.Notes = removeMerged(tree)
	return &v, nil
}

// removeMerged removes the worktree of a stopped worker when its work
// was merged, and says what became of it.
func removeMerged(wt *Worktree) []string {
	var notes []string
	if wt != nil && wt.Path != "" {
		if wt.Merged {
			// Its work is in the coordinator's checkout now.
			repo := &worktree.Repo{Root: wt.Root}
			tree := treeOf(wt)
			if err := repo.Remove(&tree, true); err != nil {
				notes = append(notes, "its worktree could not be removed: "+err.Error())
			} else {
				notes = append(notes, "removed its worktree "+wt.Path+" and branch "+wt.Branch)
				wt.Path = ""
			}
		} else {
			notes = append(notes, "its worktree "+wt.Path+" (branch "+wt.Branch+") is kept, since it was not merged")
		}
	}
	return notes
}

// Rename gives a worker a new name, in its run and on its window.
func (m *Manager) Rename(ctx context.Context, req api.IDRequest) (*api.WorkerView, error) {
	if api.IsRemote(req.ID) {
		return m.remoteOp(ctx, "rename", req)
	}
	if err := CheckName("the name", req.Text, "st worker rename w api-tests"); err != nil {
		return nil, err
	}
	var w *Worker
	err := m.keep(func(c *change) (func(), error) {
		var err error
		if w, err = m.reg.resolveLocked(req.Pane, req.ID); err != nil {
			return nil, err
		}
		r := m.reg.runOf[w.ID]
		if err := m.reg.nameFreeLocked(r, w, req.Text); err != nil {
			return nil, err
		}
		old := w.Name
		w.Name = req.Text
		c.touchLocked(r)
		return func() {
			if w.Name == req.Text {
				w.Name = old
			}
		}, nil
	})
	if err != nil {
		return nil, err
	}
	// The window and @st_name get the name as it is when tmux is told,
	// with the registry's lock let go (tellPane): a rename or an adoption
	// after this one sets its own after it.
	var v api.WorkerView
	var live bool
	var name string
	m.tellPane(func() {
		live, name, v = w.State.Live(), w.Name, m.viewLocked(w)
	}, func() {
		if live {
			m.cfg.Tmux.RenameWindow(ctx, w.ID, name)
			m.cfg.Tmux.SetOption(ctx, w.ID, "@st_name", name)
		}
	})
	return &v, nil
}

// Release lets a worker go: it leaves its run, and is told so in one line.
func (m *Manager) Release(ctx context.Context, req api.IDRequest) (*api.WorkerView, error) {
	if api.IsRemote(req.ID) {
		return m.remoteOp(ctx, "release", req)
	}
	var w *Worker
	var r *Run
	var v api.WorkerView
	err := m.keep(func(c *change) (func(), error) {
		var err error
		if w, err = m.reg.resolveLocked(req.Pane, req.ID); err != nil {
			return nil, err
		}
		r = m.reg.runOf[w.ID]
		v = m.viewLocked(w)
		m.reg.removeWorkerLocked(w)
		c.touchLocked(r)
		return func() { m.reg.addWorkerLocked(r, w) }, nil
	})
	if err != nil {
		return nil, err
	}
	// The chain above the released agent's own workers elsewhere is
	// shorter now: their machines are told (in the background: until then
	// they count it as it was, which only refuses more).
	m.bg.Go(m.tellDepths)
	// Its pane's options go with the registry's lock let go, in their
	// order with an adoption's (tellPane): a pane adopted again meanwhile
	// keeps the options its new adoption set.
	var unset bool
	m.tellPane(func() {
		unset = w.State.Live() && m.reg.workers[w.ID] == nil
	}, func() {
		if !unset {
			return
		}
		for _, k := range []string{"@st_run", "@st_role", "@st_parent", "@st_name", "@st_team"} {
			m.cfg.Tmux.UnsetOption(ctx, w.ID, k)
		}
	})
	if unset {
		m.notices.queue(w.ID, fmt.Sprintf("released %s %s %d", r.ID, w.ID, w.StartedAt.UnixNano()), "st: you are no one's worker now - you were released from run "+r.ID+", so there is no need to run st worker done.")
	}
	return &v, nil
}

// Status counts runs and workers.
func (m *Manager) Status() api.Status {
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	s := api.Status{Runs: len(m.reg.runs), Workers: len(m.reg.workers), Problems: append([]string(nil), m.reg.problems...), Waits: int(m.waits.Load()), Attention: m.attn.OpenCount(),
		Limits: m.Limits(), NearLimit: m.nearLimit(), Coordinators: m.pausedCoordsLocked()}
	if p := m.rest.problem(); p != "" {
		s.Problems = append(s.Problems, p)
	}
	for _, w := range m.reg.workers {
		if w.State.Live() {
			s.Live++
		}
	}
	return s
}

// AgentPanes returns the panes where an agent runs, as st knows it: its
// kind, with " teammate" after it for a teammate of a Claude agent team.
func (m *Manager) AgentPanes() map[string]string {
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	out := m.facts.kinds(m.reg.workerAtLocked)
	for id, w := range m.reg.workers {
		if w.State.Live() {
			out[id] = w.Agent
		}
	}
	m.facts.addTeammatePanes(out, m.reg.workerAtLocked)
	return out
}

func (m *Manager) viewLocked(w *Worker) api.WorkerView {
	syncs.AssertLocked(&m.reg.mu)
	v := api.WorkerView{Worker: w.wire(), For: roundDur(m.cfg.Now().Sub(w.Since))}
	if r := m.reg.runOf[w.ID]; r != nil {
		v.Run = r.ID
	}
	if w.TeamRun != "" {
		v.TeamOf = m.reg.teamSizeLocked(m.reg.runs[w.TeamRun], map[string]bool{})
		v.TeamDepth = m.reg.subtreeDepthLocked(w.ID, map[string]bool{})
	}
	if api.Retired(w.Parent) || (w.Parent != "" && !api.IsRemote(w.Parent) && m.rest.gone(w.Parent)) {
		v.ParentGone = true
	}
	if ad, err := agent.Lookup(w.Agent); err == nil && ad.ScreenStates() {
		v.ScreenStates = true
	}
	if w.Remote() {
		// Its machine says how it reads its states: the kind is that
		// machine's, and may be described only there.
		v.ScreenStates = w.ScreenThere
		v.TeamOf, v.TeamDepth = w.TeamSize, w.TeamDepth
	} else {
		v.Teammates, v.Subagents = m.facts.teammatesOf(w.ID, m.reg.workerAtLocked), m.facts.subagentsOf(w.ID)
	}
	return v
}
