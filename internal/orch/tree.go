package orch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/syncs"
	"github.com/sophonz/st/internal/worktree"
)

// scopeLocked checks the globs of --owns and that they overlap no other
// scoped worker of run.
func (m *Manager) scopeLocked(owns []string, repo *worktree.Repo, run *Run) (*Scope, []string, error) {
	syncs.AssertLocked(&m.mu)
	for _, g := range owns {
		if err := worktree.ValidGlob(g); err != nil {
			return nil, nil, errorf(api.KindUsage, "write globs relative to the repository root, e.g. --owns 'src/**'", "--owns %q: %v", g, err)
		}
	}
	var notes []string
	scope := &Scope{Globs: owns, Root: repo.Root}
	files, _ := repo.Files()
	for _, g := range worktree.Scope(owns).Unmatched(files) {
		notes = append(notes, fmt.Sprintf("--owns %q matches no file yet (allowed: the worker may create them)", g))
	}
	for _, o := range run.Workers {
		if !o.State.Live() || o.Scope == nil || o.Scope.Root != scope.Root {
			continue
		}
		if ex, ok := worktree.Overlap(worktree.Scope(o.Scope.Globs), worktree.Scope(scope.Globs), files); ok {
			return nil, nil, errorf(api.KindConflict, "give each worker its own part of the tree, or wait for "+o.Name+" to finish",
				"refused: --owns %s overlaps what worker %s (%s) owns (%s), e.g. %s",
				strings.Join(owns, " "), o.Name, o.ID, strings.Join(o.Scope.Globs, " "), ex)
		}
	}
	return scope, notes, nil
}

// prepareTree checks --owns and makes the worktree for a new worker.
// It returns the worker's folder, its scope and worktree, notes for the
// person, and an undo for the worktree. It takes the registry's lock
// itself, for the scope only: git runs without it.
func (m *Manager) prepareTree(req api.StartRequest, run *Run, name, cwd string) (string, *Scope, *Worktree, []string, func(), error) {
	undo := func() {}
	if len(req.Owns) == 0 && !req.Worktree {
		return cwd, nil, nil, nil, undo, nil
	}
	repo, err := worktree.Open(cwd)
	if err != nil {
		flag := "--worktree"
		if !req.Worktree {
			flag = "--owns (scopes are relative to the repository root)"
		}
		return "", nil, nil, nil, undo, errorf(api.KindUsage, "run it in a git repository, or leave out "+strings.Fields(flag)[0],
			"%s needs a git repository: %v", flag, err)
	}
	var notes []string
	var scope *Scope
	if len(req.Owns) > 0 {
		m.mu.Lock()
		scope, notes, err = m.scopeLocked(req.Owns, repo, run)
		m.mu.Unlock()
		if err != nil {
			return "", nil, nil, nil, undo, err
		}
	}
	if !req.Worktree {
		return cwd, scope, nil, notes, undo, nil
	}
	head, err := repo.Head()
	if err != nil {
		return "", nil, nil, nil, undo, errorf(api.KindUsage, "commit something first: the worktree starts from the current commit", "%v", err)
	}
	if dirty, _ := repo.Dirty(); len(dirty) > 0 {
		notes = append(notes, fmt.Sprintf("the worktree starts from commit %s; your %d uncommitted change(s) in %s are not in it", short(head), len(dirty), repo.Root))
	}
	path := filepath.Join(m.cfg.Home, "worktrees", run.ID, name)
	wt, err := repo.Add(path, worktree.BranchName(run.ID, name), head)
	if err != nil {
		return "", nil, nil, nil, undo, errorf(api.KindConflict, "pick another --name, or remove the old branch with git branch -D", "%v", err)
	}
	info := &Worktree{Path: wt.Path, Branch: wt.Branch, Base: wt.Base, Root: repo.Root}
	undo = func() { repo.Remove(wt, true) }
	// The worker works in the same folder of its own tree.
	rel, _ := filepath.Rel(repo.Root, cwd)
	wcwd := filepath.Join(wt.Path, rel)
	if msg := agent.TrustWorktree(req.Agent, repo.Root, wcwd); msg != "" {
		notes = append(notes, msg)
	}
	return wcwd, scope, info, notes, undo, nil
}

func short(commit string) string {
	if len(commit) > 10 {
		return commit[:10]
	}
	return commit
}

// scopeRoot is the folder a worker's scope is relative to.
func scopeRoot(w *Worker) string {
	if w.Worktree != nil {
		return w.Worktree.Path
	}
	if w.Scope != nil {
		return w.Scope.Root
	}
	return ""
}

// checkScope returns why a tool call of w would change something outside
// its scope, or "". cwd is the agent's folder.
func checkScope(w *Worker, ev agent.Event) string {
	if w == nil || w.Scope == nil || !ev.Before {
		return ""
	}
	var in map[string]any
	json.Unmarshal(ev.ToolInput, &in)
	str := func(k string) string {
		s, _ := in[k].(string)
		return s
	}
	root := scopeRoot(w)
	cwd := ev.Cwd
	if cwd == "" {
		cwd = w.Cwd
	}
	sc := worktree.Scope(w.Scope.Globs)
	var bad []string
	switch ev.Tool {
	case "Edit", "Write", "MultiEdit":
		bad = sc.PathsOutside(root, cwd, str("file_path"))
	case "NotebookEdit":
		bad = sc.PathsOutside(root, cwd, str("notebook_path"))
	case "Bash", "exec_command", "shell":
		cmd := str("command")
		if cmd == "" {
			cmd = str("cmd")
		}
		out, err := sc.ShellOutside(root, cwd, cmd)
		if err != nil {
			return fmt.Sprintf("st: this worker may change only %s (its --owns scope, relative to %s), and st cannot read this command to check what it writes (%v). Write it plainly.",
				strings.Join(w.Scope.Globs, " "), root, err)
		}
		bad = out
	default:
		// Codex's edit tool (apply_patch) and anything that carries a patch.
		for _, k := range []string{"input", "patch", "command"} {
			if p := str(k); strings.Contains(p, "*** Begin Patch") || strings.Contains(p, "*** Update File:") || strings.Contains(p, "*** Add File:") {
				bad = append(bad, sc.PatchOutside(root, cwd, p)...)
			}
		}
	}
	if len(bad) == 0 {
		return ""
	}
	return fmt.Sprintf("st: this worker may change only %s (its --owns scope, relative to %s); %s is outside it. Leave it as it is, or ask your coordinator if it must change.",
		strings.Join(w.Scope.Globs, " "), root, strings.Join(bad, ", "))
}

func (m *Manager) treeWorkerLocked(req api.IDRequest, what string) (*Worker, error) {
	syncs.AssertLocked(&m.mu)
	w, err := m.resolveLocked(req.Pane, req.ID)
	if err != nil {
		return nil, err
	}
	if w.Worktree == nil {
		return nil, errorf(api.KindUsage, "start workers with --worktree to "+what+" them", "worker %s (%s) has no worktree of its own", w.Name, w.ID)
	}
	return w, nil
}

// Diff shows a worktree worker's changes against the commit it started from.
func (m *Manager) Diff(ctx context.Context, req api.IDRequest) (*api.DiffResult, error) {
	if api.IsRemote(req.ID) {
		return nil, notAcrossMachines("st worker diff")
	}
	m.mu.Lock()
	w, err := m.treeWorkerLocked(req, "diff")
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	wt := treeOf(w.Worktree)
	v := m.viewLocked(w)
	m.mu.Unlock()
	changes, err := wt.Changes()
	if err != nil {
		return nil, errorf(api.KindInternal, "", "%v", err)
	}
	diff, err := wt.Diff()
	if err != nil {
		return nil, errorf(api.KindInternal, "", "%v", err)
	}
	res := &api.DiffResult{Worker: v, Changes: apiChanges(changes), Diff: diff}
	if w.Scope != nil {
		res.Outside = worktree.Outside(worktree.Scope(w.Scope.Globs), changes)
	}
	return res, nil
}

// Merge brings a done worktree worker's branch into the checkout it came from.
func (m *Manager) Merge(ctx context.Context, req api.IDRequest) (*api.MergeResult, error) {
	if api.IsRemote(req.ID) {
		return nil, notAcrossMachines("st worker merge")
	}
	m.mu.Lock()
	w, err := m.treeWorkerLocked(req, "merge")
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	if w.State != api.Done {
		m.mu.Unlock()
		return nil, errorf(api.KindConflict, "st worker wait "+w.Name+", then merge it once it is done",
			"refused: worker %s (%s) is %s; merge a worker once it has reported done", w.Name, w.ID, w.State)
	}
	if w.Worktree.Merged {
		m.mu.Unlock()
		return nil, errorf(api.KindConflict, "", "worker %s (%s) is merged already", w.Name, w.ID)
	}
	info := *w.Worktree
	scope := w.Scope
	name, id := w.Name, w.ID
	m.mu.Unlock()

	wt := treeOf(&info)
	if _, err := wt.CommitAll(fmt.Sprintf("st: work of worker %s (%s)", name, id)); err != nil {
		return nil, errorf(api.KindInternal, "look at the worktree "+wt.Path, "commit what %s left in its worktree: %v", name, err)
	}
	changes, err := wt.Changes()
	if err != nil {
		return nil, errorf(api.KindInternal, "", "%v", err)
	}
	if scope != nil {
		if out := worktree.Outside(worktree.Scope(scope.Globs), changes); len(out) > 0 {
			return nil, errorf(api.KindConflict, "look with st worker diff "+name+"; merge by hand (git merge "+wt.Branch+") if you accept them",
				"refused: worker %s changed files outside its scope (%s): %s", name, strings.Join(scope.Globs, " "), strings.Join(out, ", "))
		}
	}
	repo := &worktree.Repo{Root: info.Root}
	mr, err := repo.Merge(&wt, fmt.Sprintf("st: merge worker %s (%s)", name, id))
	if err != nil {
		var de *worktree.DirtyError
		var ce *worktree.ConflictError
		switch {
		case errors.As(err, &de):
			return nil, errorf(api.KindConflict, "commit or stash those changes, then merge again", "refused: %v", err)
		case errors.As(err, &ce):
			return nil, errorf(api.KindConflict, fmt.Sprintf("merge it yourself (git merge %s), or ask the worker to rebase onto your commit", wt.Branch),
				"the merge of %s stopped at a conflict in %s; your checkout is as it was", name, strings.Join(ce.Files, ", "))
		}
		return nil, errorf(api.KindInternal, "", "%v", err)
	}
	var res *api.MergeResult
	m.settleChange(func(c *change) {
		w.Worktree.Merged = true
		c.touchLocked(m.runOf[w.ID])
		res = &api.MergeResult{Worker: m.viewLocked(w), Commit: mr.Commit, Files: mr.Files}
	})
	return res, nil
}

// Pick merges the chosen try of a fan and removes the others: their
// windows, worktrees and branches.
func (m *Manager) Pick(ctx context.Context, req api.IDRequest) (*api.MergeResult, error) {
	if api.IsRemote(req.ID) {
		return nil, notAcrossMachines("st worker pick")
	}
	others, err := m.otherTries(req)
	if err != nil {
		return nil, err
	}
	res, err := m.Merge(ctx, req)
	if err != nil {
		return nil, err
	}
	for _, o := range others {
		m.cfg.Tmux.KillPane(ctx, o.id)
		repo := &worktree.Repo{Root: o.tree.Root}
		wt := treeOf(&o.tree)
		if err := repo.Remove(&wt, true); err != nil {
			m.logf("pick: remove %s: %v", wt.Path, err)
			continue
		}
		m.settleChange(func(c *change) {
			c.setStateLocked(o.w, api.Gone)
			o.w.Worktree.Path = ""
			c.touchLocked(m.runOf[o.w.ID])
		})
		res.Removed = append(res.Removed, o.name)
	}
	sort.Strings(res.Removed)
	return res, nil
}

// try is another try of a fan that Pick removes: its record, and its
// pane, name and worktree as they were when picked.
type try struct {
	w        *Worker
	id, name string
	tree     Worktree
}

// otherTries finds the worker req names, one of a fan's tries, and the
// other tries of its fan not merged.
func (m *Manager) otherTries(req api.IDRequest) ([]try, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, err := m.resolveLocked(req.Pane, req.ID)
	if err != nil {
		return nil, err
	}
	if w.Fan == "" {
		return nil, errorf(api.KindUsage, "st worker merge "+w.Name+" merges a single worker", "worker %s (%s) is not one of several tries (--fan)", w.Name, w.ID)
	}
	var others []try
	for _, o := range m.runOf[w.ID].Workers {
		if o != w && o.Fan == w.Fan && o.Worktree != nil && !o.Worktree.Merged {
			others = append(others, try{w: o, id: o.ID, name: o.Name, tree: *o.Worktree})
		}
	}
	return others, nil
}

// Fan starts n tries of one task, NAME-1 to NAME-N, each in its own
// worktree, at once.
func (m *Manager) Fan(ctx context.Context, req api.StartRequest) ([]api.WorkerView, error) {
	if req.Fan < 2 || req.Fan > 10 {
		return nil, errorf(api.KindUsage, "--fan 2 to --fan 10", "--fan takes 2 to 10 tries, not %d", req.Fan)
	}
	base := req.Name
	if base == "" {
		base = NameFromTask(req.Task)
	}
	type res struct {
		i   int
		v   *api.WorkerView
		err error
	}
	ch := make(chan res, req.Fan)
	for i := 1; i <= req.Fan; i++ {
		r := startPlan{StartRequest: req, fanGroup: base}
		r.Name = fmt.Sprintf("%s-%d", base, i)
		r.Worktree, r.Fan = true, 0
		go func(i int) {
			v, err := m.startWorker(ctx, r)
			ch <- res{i, v, err}
		}(i)
	}
	out := make([]api.WorkerView, req.Fan)
	var errs []string
	for i := 0; i < req.Fan; i++ {
		x := <-ch
		if x.err != nil {
			errs = append(errs, fmt.Sprintf("%s-%d: %v", base, x.i, x.err))
			continue
		}
		out[x.i-1] = *x.v
	}
	if len(errs) > 0 {
		return out, errorf(api.KindInternal, "st worker list shows the tries that started", "%d of %d tries did not start:\n%s", len(errs), req.Fan, strings.Join(errs, "\n"))
	}
	return out, nil
}

// treeOf is the git worktree a worker's record names.
func treeOf(wi *Worktree) worktree.Worktree {
	return worktree.Worktree{Path: wi.Path, Branch: wi.Branch, Base: wi.Base}
}

func apiChanges(cs []worktree.Change) []api.Change {
	out := make([]api.Change, len(cs))
	for i, c := range cs {
		out[i] = api.Change{Path: c.Path, Status: c.Status, From: c.From}
	}
	return out
}
