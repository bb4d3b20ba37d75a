package worktree

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// MergeResult is a merge that was made, or found unnecessary.
type MergeResult struct {
	Branch string   `json:"branch"`
	Head   string   `json:"head"`             // the checkout's commit before the merge
	Commit string   `json:"commit,omitempty"` // the merge commit; empty when UpToDate
	Files  []string `json:"files,omitempty"`  // files the branch changed
	// UpToDate means the branch had nothing the checkout lacks (the worker
	// committed nothing, or it was merged before).
	UpToDate bool `json:"up_to_date,omitempty"`
}

// DirtyError is a merge refused because of uncommitted work in the
// checkout that the merge could overwrite or mix into its commit.
type DirtyError struct {
	Root, Branch string
	Files        []string
	// Staged means Files are staged changes, which git will not merge over
	// even in files the branch leaves alone (the merge commit would carry
	// them); otherwise Files are changed both in the checkout and on the
	// branch.
	Staged bool
}

func (e *DirtyError) Error() string {
	if e.Staged {
		return fmt.Sprintf("the checkout %s has staged changes (%s), and git does not merge over staged work: it would end up in the merge commit. Try: commit them (git commit), unstage them (git restore --staged -- %s) or stash them (git stash), then merge %s again",
			e.Root, strings.Join(e.Files, ", "), strings.Join(e.Files, " "), e.Branch)
	}
	return fmt.Sprintf("the checkout %s has uncommitted changes in files that %s also changes: %s. Try: commit them (git commit) or stash them (git stash), then merge again",
		e.Root, e.Branch, strings.Join(e.Files, ", "))
}

// ConflictError is a merge that stopped on conflicts and was undone.
type ConflictError struct {
	Root, Branch string
	Head         string // the checkout's commit, which is unchanged
	Files        []string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("merging %s into %s conflicts in %s; the merge was undone and the checkout is as it was. Try: merge it yourself (cd %s && git merge %s, then resolve the conflicts), or ask the worker to rebase onto %s (git rebase %s in its worktree) and merge again",
		e.Branch, e.Root, strings.Join(e.Files, ", "), e.Root, e.Branch, short(e.Head), short(e.Head))
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// Merge merges the worktree's branch into this checkout with a merge commit
// (--no-ff, so the worker's work stays one visible unit that can be
// reverted). Only committed work is merged: call CommitAll first.
//
// Nothing of the user's is put at risk: the merge is refused while the
// checkout is in the middle of another merge, rebase or cherry-pick, has
// uncommitted changes in a file the branch changes, or has staged changes.
// Uncommitted changes in other files stay as they are. When git stops on a
// conflict the merge is aborted, so the checkout is exactly as it was, and
// the error (a *ConflictError) names the files.
func (r *Repo) Merge(w *Worktree, msg string) (*MergeResult, error) {
	if w == nil || w.Branch == "" {
		return nil, errors.New("merge: no branch given")
	}
	mu := r.mutex()
	mu.Lock() // lockio: the repository's own lock: it orders git's commands on it (repoLocks), taken with no other lock held
	defer mu.Unlock()

	if op := r.inProgress(); op != "" {
		return nil, fmt.Errorf("the checkout %s is in the middle of %s. Try: finish or abort it first (git status says how), then merge %s again", r.Root, op, w.Branch)
	}
	head, err := r.Head()
	if err != nil {
		return nil, err
	}
	ref := "refs/heads/" + w.Branch
	if ok, err := refExists(r.Root, ref); err != nil {
		return nil, fmt.Errorf("look for branch %s: %w", w.Branch, err)
	} else if !ok {
		return nil, fmt.Errorf("branch %s does not exist in %s (removed already?), so there is nothing to merge", w.Branch, r.Root)
	}
	res := &MergeResult{Branch: w.Branch, Head: head}

	if _, err := git(r.Root, nil, "merge-base", "--is-ancestor", ref, "HEAD"); err == nil {
		res.UpToDate = true
		return res, nil
	} else if exitCode(err) != 1 {
		return nil, fmt.Errorf("compare %s with HEAD: %w", w.Branch, err)
	}
	var before []statusEntry
	if res.Files, before, err = r.mergeFiles(w.Branch, ref); err != nil {
		return nil, err
	}

	// Spelled out so that the user's config (merge.ff=only, merge.autoStash,
	// branch.<name>.mergeOptions=--squash) cannot change what happens.
	args := []string{"merge", "--no-ff", "--commit", "--no-squash", "--no-edit", "--no-autostash", "--no-stat"}
	if strings.TrimSpace(msg) != "" {
		args = append(args, "-m", msg)
	}
	args = append(args, w.Branch)
	if _, err := git(r.Root, nil, args...); err != nil {
		return nil, r.undoMerge(w.Branch, head, before, err)
	}
	commit, err := r.Head()
	if err != nil {
		return nil, err
	}
	res.Commit = commit
	return res, nil
}

// mergeFiles lists the files the branch changes since it left HEAD, and
// the checkout's status before the merge; it refuses a checkout whose
// uncommitted changes the merge would touch, or with staged changes.
func (r *Repo) mergeFiles(branch, ref string) ([]string, []statusEntry, error) {
	out, err := git(r.Root, nil, "merge-base", "HEAD", ref)
	if err != nil {
		if exitCode(err) == 1 {
			return nil, nil, fmt.Errorf("branch %s shares no history with HEAD of %s, so st will not merge it. Try: look at it with git log %s", branch, r.Root, branch)
		}
		return nil, nil, fmt.Errorf("find where %s started: %w", branch, err)
	}
	mb := strings.TrimSpace(out)
	// --no-renames: a rename touches both paths, and both must be clean.
	out, err = git(r.Root, nil, "diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", mb, ref, "--")
	if err != nil {
		return nil, nil, fmt.Errorf("list the files %s changes: %w", branch, err)
	}
	files := splitZ(out)
	before, err := status(r.Root)
	if err != nil {
		return nil, nil, err
	}
	touched := make(map[string]bool, len(files))
	for _, f := range files {
		touched[f] = true
	}
	var clash, staged []string
	for _, e := range before {
		if touched[e.path] || touchedDir(touched, e.path) {
			clash = append(clash, e.path)
		}
		if e.x != ' ' && e.x != '?' && e.x != '!' {
			staged = append(staged, e.path)
		}
	}
	if len(clash) > 0 {
		return nil, nil, &DirtyError{Root: r.Root, Branch: branch, Files: clash}
	}
	if len(staged) > 0 {
		return nil, nil, &DirtyError{Root: r.Root, Branch: branch, Files: staged, Staged: true}
	}
	return files, before, nil
}

// touchedDir reports whether a dirty path is a folder (untracked folders are
// listed file by file, but a nested repository shows as "dir/") under which
// the branch changes files.
func touchedDir(touched map[string]bool, p string) bool {
	if !strings.HasSuffix(p, "/") {
		return false
	}
	for f := range touched {
		if strings.HasPrefix(f, p) {
			return true
		}
	}
	return false
}

// undoMerge puts the checkout back after a failed merge and explains.
func (r *Repo) undoMerge(branch, head string, before []statusEntry, mergeErr error) error {
	out, _ := git(r.Root, nil, "diff", "--name-only", "-z", "--diff-filter=U")
	conflicts := splitZ(out)
	if p, err := gitPath(r.Root, "MERGE_HEAD"); err == nil {
		if _, err := os.Stat(p); err == nil {
			if _, err := git(r.Root, nil, "merge", "--abort"); err != nil {
				return fmt.Errorf("merging %s into %s failed (%v), and so did undoing it: %w. Try: cd %s && git merge --abort && git status", branch, r.Root, mergeErr, err, r.Root)
			}
		}
	}
	now, err := r.Head()
	if err != nil {
		return err
	}
	if now != head {
		return fmt.Errorf("merging %s into %s failed (%v), and HEAD moved from %s to %s. Try: git -C %s log -3 to see what happened", branch, r.Root, mergeErr, short(head), short(now), r.Root)
	}
	after, err := status(r.Root)
	if err == nil && !sameStatus(before, after) {
		return fmt.Errorf("merging %s into %s failed (%v), and the checkout's files did not all come back as they were. Try: git -C %s status", branch, r.Root, mergeErr, r.Root)
	}
	if len(conflicts) > 0 {
		return &ConflictError{Root: r.Root, Branch: branch, Head: head, Files: conflicts}
	}
	return fmt.Errorf("merging %s into %s failed, and the checkout is as it was: %w", branch, r.Root, mergeErr)
}

func sameStatus(a, b []statusEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// inProgress names an operation the checkout is in the middle of, if any.
// A merge on top of one would mix with it, and aborting our own merge
// (git merge --abort) would throw the user's away.
func (r *Repo) inProgress() string {
	for _, c := range []struct{ file, what string }{
		{"MERGE_HEAD", "a merge"},
		{"CHERRY_PICK_HEAD", "a cherry-pick"},
		{"REVERT_HEAD", "a revert"},
		{"rebase-merge", "a rebase"},
		{"rebase-apply", "a rebase or git am"},
	} {
		p, err := gitPath(r.Root, c.file)
		if err != nil {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return c.what
		}
	}
	return ""
}
