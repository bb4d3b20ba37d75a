package orch

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/syncs"
	"github.com/sophonz/st/internal/worktree"
)

// A worker's scope (--owns): globs, relative to the root of its
// repository, of what it may change. scopeLocked checks them when a
// worker starts or is adopted; checkScope judges each tool call of the
// worker, from its PreToolUse hook (hook.go), with the rules of
// internal/worktree (paths, shell commands read by internal/shell,
// patches).

// ownsTree is the repository a scope is relative to, read with no lock
// held (git runs outside the registry's lock): its root and its files,
// or why it could not be opened.
type ownsTree struct {
	root  string
	files []string
	err   error
}

// openOwnsTree opens the repository of dir for --owns, and lists its
// files (a scope that matches none of them is noted, not refused). It
// runs git: call it with no lock held.
func openOwnsTree(dir string) ownsTree {
	repo, err := worktree.Open(dir)
	if err != nil {
		return ownsTree{err: err}
	}
	return ownsTree{root: repo.Root, files: treeFiles(repo)}
}

// treeFiles are repo's files, or none when git cannot list them.
func treeFiles(repo *worktree.Repo) []string {
	files, _ := repo.Files()
	return files
}

// scopeLocked checks the globs of --owns and that they overlap no other
// scoped worker of run; tree is the repository they are relative to.
func (m *Manager) scopeLocked(owns []string, tree ownsTree, run *Run) (*Scope, []string, error) {
	syncs.AssertLocked(&m.reg.mu)
	for _, g := range owns {
		if err := worktree.ValidGlob(g); err != nil {
			return nil, nil, errorf(api.KindUsage, "write globs relative to the repository root, e.g. --owns 'src/**'", "--owns %q: %v", g, err)
		}
	}
	var notes []string
	scope := &Scope{Globs: owns, Root: tree.root}
	files := tree.files
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
	// Which tools run the shell and which write a file is the agent
	// kind's (its description); an unknown kind's are none of them.
	kind, _ := agent.Lookup(w.Agent)
	if kind == nil {
		kind = &agent.Kind{}
	}
	pathField, isFileTool := kind.Hear.FileTools[ev.Tool]
	switch {
	case isFileTool:
		bad = sc.PathsOutside(root, cwd, str(pathField))
	case slices.Contains(kind.Hear.ShellTools, ev.Tool):
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
