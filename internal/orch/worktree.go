package orch

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/syncs"
	"github.com/sophonz/st/internal/worktree"
)

// A worker's own worktree (--worktree): made at its start (prepareTree,
// with its scope), its changes (st worker diff) and its merge back into
// the checkout it came from (st worker merge).

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
		tree := ownsTree{root: repo.Root, files: treeFiles(repo)} // git, before the lock
		m.reg.mu.Lock()
		scope, notes, err = m.scopeLocked(req.Owns, tree, run)
		m.reg.mu.Unlock()
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

func (m *Manager) treeWorkerLocked(req api.IDRequest, what string) (*Worker, error) {
	syncs.AssertLocked(&m.reg.mu)
	w, err := m.reg.resolveLocked(req.Pane, req.ID)
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
	m.reg.mu.Lock()
	w, err := m.treeWorkerLocked(req, "diff")
	if err != nil {
		m.reg.mu.Unlock()
		return nil, err
	}
	wt := treeOf(w.Worktree)
	v := m.viewLocked(w)
	m.reg.mu.Unlock()
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
	m.reg.mu.Lock()
	w, err := m.treeWorkerLocked(req, "merge")
	if err != nil {
		m.reg.mu.Unlock()
		return nil, err
	}
	if w.State != api.Done {
		m.reg.mu.Unlock()
		return nil, errorf(api.KindConflict, "st worker wait "+w.Name+", then merge it once it is done",
			"refused: worker %s (%s) is %s; merge a worker once it has reported done", w.Name, w.ID, w.State)
	}
	if w.Worktree.Merged {
		m.reg.mu.Unlock()
		return nil, errorf(api.KindConflict, "", "worker %s (%s) is merged already", w.Name, w.ID)
	}
	info := *w.Worktree
	scope := w.Scope
	name, id := w.Name, w.ID
	m.reg.mu.Unlock()

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
		c.touchLocked(m.reg.runOf[w.ID])
		res = &api.MergeResult{Worker: m.viewLocked(w), Commit: mr.Commit, Files: mr.Files}
	})
	return res, nil
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
