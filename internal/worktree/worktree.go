package worktree

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Worktree is a worker's own checkout: a linked git worktree at Path with
// its own Branch, made from the commit Base. Base is a full commit id, not a
// name, so that "what the worker changed" stays the same when the
// coordinator's branch moves on.
type Worktree struct {
	Path   string `json:"path"`
	Branch string `json:"branch"`
	Base   string `json:"base"`
}

// Change is one file a worker changed against its base.
type Change struct {
	Path   string `json:"path"`
	Status string `json:"status"`         // added, modified, deleted or renamed
	From   string `json:"from,omitempty"` // the old path of a rename
}

// Change statuses.
const (
	Added    = "added"
	Modified = "modified"
	Deleted  = "deleted"
	Renamed  = "renamed"
)

// BranchName is the branch st gives a worker: st/<run>/<worker>. Both parts
// are reduced to letters, digits, '.', '_' and '-' (anything else becomes
// '-'), so that the name is always a valid git branch whatever the user
// called the run or the worker; a pane id such as %7 becomes "7".
func BranchName(run, worker string) string {
	return "st/" + refPart(run, "run") + "/" + refPart(worker, "worker")
}

// refPart makes s one valid component of a ref name (git check-ref-format):
// no control characters, spaces or ~^:?*[\, no "..", not starting with '.'
// or ending with ".lock" or '.'.
func refPart(s, fallback string) string {
	var b strings.Builder
	dash := false
	for _, c := range s {
		ok := c < 0x80 && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-')
		if !ok {
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = true
			continue
		}
		dash = false
		b.WriteRune(c)
	}
	out := b.String()
	for strings.Contains(out, "..") {
		out = strings.ReplaceAll(out, "..", ".")
	}
	for {
		before := out
		out = strings.Trim(out, ".-")
		out = strings.TrimSuffix(out, ".lock")
		if out == before {
			break
		}
	}
	if out == "" {
		return fallback
	}
	return out
}

// Add makes a worktree at path with a new branch starting at base (a commit
// or a name of one; empty means the checkout's HEAD). A relative path is
// taken from the checkout's root. It refuses, without making anything, a
// branch name that is taken, a path that exists, and a path inside the
// checkout that git does not ignore (the coordinator's git would see the
// worker's whole tree as a new untracked folder). If git fails half way,
// what it made is removed, so that a failed start leaves no stray worktree,
// branch or folder behind.
func (r *Repo) Add(path, branch, base string) (*Worktree, error) {
	if path == "" {
		return nil, errors.New("add worktree: no path given")
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(r.Root, path)
	}
	path = filepath.Clean(path)

	mu := r.mutex()
	mu.Lock() // lockio: the repository's own lock: it orders git's commands on it (repoLocks), taken with no other lock held
	defer mu.Unlock()

	if _, err := git(r.Root, nil, "check-ref-format", "--branch", branch); err != nil || branch == "" || strings.HasPrefix(branch, "-") {
		return nil, fmt.Errorf("%q is not a valid git branch name. Try: a name such as %s", branch, BranchName("run", "worker"))
	}
	if base == "" {
		head, err := r.Head()
		if err != nil {
			return nil, err
		}
		base = head
	}
	out, err := git(r.Root, nil, "rev-parse", "-q", "--verify", "--end-of-options", base+"^{commit}")
	if err != nil {
		return nil, fmt.Errorf("%q is not a commit of the repository at %s: %w", base, r.Root, err)
	}
	commit := strings.TrimSpace(out)

	ref := "refs/heads/" + branch
	taken, err := refExists(r.Root, ref)
	if err != nil {
		return nil, fmt.Errorf("look for branch %s: %w", branch, err)
	}
	if taken {
		msg := fmt.Sprintf("branch %s already exists in %s", branch, r.Root)
		if wt := worktreeOf(r.Root, ref); wt != "" {
			return nil, fmt.Errorf("%s, checked out in the worktree %s. Try: git worktree remove %s && git branch -D %s (after checking nothing in it is needed), or give the worker another name", msg, wt, wt, branch)
		}
		return nil, fmt.Errorf("%s. Try: git branch -D %s (after checking nothing on it is needed), or give the worker another name", msg, branch)
	}
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("%s already exists, and a worktree needs a new folder. Try: remove it (rm -r %s) if nothing in it is needed, or give the worker another name", path, path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("add worktree at %s: %w", path, err)
	}
	if inside(r.Root, path) {
		rel, _ := filepath.Rel(r.Root, path)
		// The trailing slash says "a folder", which "dir/" patterns need
		// to match a path that does not exist yet.
		if _, err := git(r.Root, nil, "check-ignore", "-q", "--no-index", "--", filepath.ToSlash(rel)+"/"); err != nil {
			return nil, fmt.Errorf("%s is inside the checkout %s and not ignored by git, so the worker's tree would show up there as untracked files. Try: a folder outside %s, or add %s to .gitignore", path, r.Root, r.Root, filepath.ToSlash(rel))
		}
	}

	made := missingDirs(filepath.Dir(path))
	if _, err := git(r.Root, nil, "worktree", "add", "-b", branch, "--", path, commit); err != nil {
		if cerr := r.undoAdd(path, branch, made); cerr != nil {
			return nil, fmt.Errorf("add worktree %s on branch %s: %w (and cleaning up failed: %v)", path, branch, err, cerr)
		}
		return nil, fmt.Errorf("add worktree %s on branch %s (nothing was left behind): %w", path, branch, err)
	}
	return &Worktree{Path: path, Branch: branch, Base: commit}, nil
}

// undoAdd removes what a failed "git worktree add" left: the folder, its
// registration, the branch (which git creates before checking out) and the
// parent folders made for it. The caller checked beforehand that none of
// them existed, and holds the repository lock, so all of it is ours.
func (r *Repo) undoAdd(path, branch string, made []string) error {
	var errs []error
	if _, err := os.Lstat(path); err == nil {
		if _, err := git(r.Root, nil, "worktree", "remove", "--force", "--force", path); err != nil {
			if err := os.RemoveAll(path); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if _, err := git(r.Root, nil, "worktree", "prune"); err != nil {
		errs = append(errs, err)
	}
	if ok, _ := refExists(r.Root, "refs/heads/"+branch); ok {
		if _, err := git(r.Root, nil, "branch", "-D", "--", branch); err != nil {
			errs = append(errs, err)
		}
	}
	for i := len(made) - 1; i >= 0; i-- {
		_ = os.Remove(made[i]) // only if empty: never more than we made
	}
	return errors.Join(errs...)
}

// missingDirs lists dir and those of its parents that do not exist yet,
// outermost first.
func missingDirs(dir string) []string {
	var out []string
	for {
		if _, err := os.Lstat(dir); err == nil {
			break
		}
		out = append([]string{dir}, out...)
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return out
}

// worktreeOf is the path of the worktree that has ref checked out, if any.
func worktreeOf(root, ref string) string {
	out, err := git(root, nil, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return ""
	}
	var path string
	for _, line := range strings.Split(out, "\x00") {
		switch {
		case strings.HasPrefix(line, "worktree "):
			path = strings.TrimPrefix(line, "worktree ")
		case line == "branch "+ref:
			return path
		}
	}
	return ""
}

// Remove removes the worktree's folder (with whatever is in it: the worker's
// uncommitted files too, so merge or keep them first) and, if asked, its
// branch. A worktree or branch that is already gone is not an error, so
// that stopping a worker twice, or after the user cleaned up by hand, works.
func (r *Repo) Remove(w *Worktree, deleteBranch bool) error {
	if w == nil {
		return nil
	}
	mu := r.mutex()
	mu.Lock() // lockio: the repository's own lock: it orders git's commands on it (repoLocks), taken with no other lock held
	defer mu.Unlock()

	if w.Path != "" {
		if samePath(w.Path, r.Root) {
			return fmt.Errorf("refusing to remove %s: it is the checkout itself, not a worker's worktree", w.Path)
		}
		if _, err := os.Lstat(w.Path); err == nil {
			if _, err := git(r.Root, nil, "worktree", "remove", "--force", w.Path); err != nil {
				var ge *GitError
				if errors.As(err, &ge) && strings.Contains(ge.Stderr, "is not a working tree") {
					// Git forgot it (pruned, or made by someone else): the
					// folder is not provably ours, so leave it to the user.
					return fmt.Errorf("%s is not a worktree of %s any more, so st leaves the folder alone. Try: rm -r %s if nothing in it is needed", w.Path, r.Root, w.Path)
				}
				return fmt.Errorf("remove worktree %s: %w", w.Path, err)
			}
		} else if errors.Is(err, os.ErrNotExist) {
			// The folder was deleted by hand: drop git's record of it, or
			// the branch stays "checked out" there and cannot be deleted.
			if _, err := git(r.Root, nil, "worktree", "prune"); err != nil {
				return fmt.Errorf("forget the removed worktree %s: %w", w.Path, err)
			}
		} else {
			return fmt.Errorf("remove worktree %s: %w", w.Path, err)
		}
	}
	if deleteBranch && w.Branch != "" {
		ok, err := refExists(r.Root, "refs/heads/"+w.Branch)
		if err != nil {
			return fmt.Errorf("look for branch %s: %w", w.Branch, err)
		}
		if ok {
			if _, err := git(r.Root, nil, "branch", "-D", "--", w.Branch); err != nil {
				return fmt.Errorf("delete branch %s: %w", w.Branch, err)
			}
		}
	}
	return nil
}

// Changes lists the files changed against Base: committed on the branch,
// changed in the work tree but not committed, and new files git does not
// ignore. Renames are found as git finds them (-M).
func (w *Worktree) Changes() ([]Change, error) {
	if err := w.exists(); err != nil {
		return nil, err
	}
	var out string
	err := w.withFullIndex(func(env []string) error {
		var err error
		out, err = git(w.Path, env, "diff", "--cached", "--name-status", "-z", "-M", "--no-ext-diff", "--ignore-submodules=none", w.Base, "--")
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list changes of %s: %w", w.Path, err)
	}
	return parseNameStatus(out), nil
}

func parseNameStatus(out string) []Change {
	f := strings.Split(out, "\x00")
	var changes []Change
	for i := 0; i < len(f); i++ {
		code := f[i]
		if code == "" {
			continue
		}
		switch code[0] {
		case 'R', 'C':
			if i+2 >= len(f) {
				return changes
			}
			c := Change{Path: f[i+2], Status: Renamed, From: f[i+1]}
			if code[0] == 'C' {
				c = Change{Path: f[i+2], Status: Added} // a copy adds a file
			}
			changes = append(changes, c)
			i += 2
		default:
			if i+1 >= len(f) {
				return changes
			}
			st := Modified // M, T (type change) and anything unusual
			switch code[0] {
			case 'A':
				st = Added
			case 'D':
				st = Deleted
			}
			changes = append(changes, Change{Path: f[i+1], Status: st})
			i++
		}
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	return changes
}

// Diff is a unified diff of the same changes as Changes, new files included.
func (w *Worktree) Diff() (string, error) {
	if err := w.exists(); err != nil {
		return "", err
	}
	var out string
	err := w.withFullIndex(func(env []string) error {
		var err error
		out, err = git(w.Path, env, "diff", "--cached", "-M", "--no-color", "--no-ext-diff",
			"--src-prefix=a/", "--dst-prefix=b/", "--submodule=short", w.Base, "--")
		return err
	})
	if err != nil {
		return "", fmt.Errorf("diff %s: %w", w.Path, err)
	}
	return out, nil
}

// withFullIndex runs fn with GIT_INDEX_FILE set to a throwaway index that
// holds the whole work tree (git add -A). Diffing that index against Base
// shows committed, uncommitted and untracked changes in one go, and the
// worker's own index (what it staged) is left exactly as it was. The only
// trace is loose objects for new contents, which git's gc drops.
func (w *Worktree) withFullIndex(fn func(env []string) error) error {
	tmp, err := os.MkdirTemp("", "st-index-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	idx := filepath.Join(tmp, "index")
	env := []string{"GIT_INDEX_FILE=" + idx}

	// Starting from a copy of the real index lets git skip hashing files
	// whose stat data did not change; if the copy is unusable (a split
	// index, say), start from an empty one.
	if real, err := gitPath(w.Path, "index"); err == nil {
		if err := copyFile(real, idx); err != nil {
			os.Remove(idx)
		}
	}
	if _, err := git(w.Path, env, "add", "-A", "--", ":/"); err != nil {
		os.Remove(idx)
		if _, err2 := git(w.Path, env, "add", "-A", "--", ":/"); err2 != nil {
			return err2
		}
	}
	return fn(env)
}

func (w *Worktree) exists() error {
	if w.Path == "" || w.Base == "" {
		return errors.New("worktree has no path or base")
	}
	if _, err := os.Stat(w.Path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("the worktree %s is gone (removed already?)", w.Path)
		}
		return fmt.Errorf("the worktree %s cannot be read: %w", w.Path, err)
	}
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// CommitAll commits everything the worker left uncommitted in its worktree,
// new files included, on its branch, so that a merge carries all of it. It
// reports false when there was nothing to commit. Hooks are skipped
// (--no-verify): this commit only carries the worker's files to the merge,
// and a pre-commit check that fails or asks something would block that
// merge for reasons the coordinator judges when it reviews the diff.
func (w *Worktree) CommitAll(msg string) (bool, error) {
	if err := w.exists(); err != nil {
		return false, err
	}
	if strings.TrimSpace(msg) == "" {
		msg = "st: work of " + w.Branch
	}
	out, err := git(w.Path, nil, "symbolic-ref", "-q", "HEAD")
	if cur := strings.TrimSpace(out); err != nil || cur != "refs/heads/"+w.Branch {
		if cur == "" {
			cur = "a detached HEAD"
		}
		return false, fmt.Errorf("the worktree %s is on %s, not on its branch %s, so its work would not be merged. Try: git -C %s switch %s", w.Path, strings.TrimPrefix(cur, "refs/heads/"), w.Branch, w.Path, w.Branch)
	}
	st, err := status(w.Path)
	if err != nil {
		return false, err
	}
	var unmerged []string
	for _, e := range st {
		if e.x == 'U' || e.y == 'U' || (e.x == 'A' && e.y == 'A') || (e.x == 'D' && e.y == 'D') {
			unmerged = append(unmerged, e.path)
		}
	}
	if len(unmerged) > 0 {
		return false, fmt.Errorf("the worktree %s has unresolved conflicts in %s. Try: resolve them (or git -C %s merge --abort / rebase --abort) first", w.Path, strings.Join(unmerged, ", "), w.Path)
	}
	if len(st) == 0 {
		return false, nil
	}
	if _, err := git(w.Path, nil, "add", "-A", "--", ":/"); err != nil {
		return false, fmt.Errorf("stage the work in %s: %w", w.Path, err)
	}
	if _, err := git(w.Path, nil, "diff", "--cached", "--quiet"); err == nil {
		return false, nil // only changes git does not record (modes with core.filemode off, say)
	} else if exitCode(err) != 1 {
		return false, err
	}
	if _, err := git(w.Path, nil, "commit", "-q", "--no-verify", "-m", msg); err != nil {
		return false, fmt.Errorf("commit the work in %s: %w", w.Path, identityHint(err))
	}
	return true, nil
}

// inside reports whether p is root or below it, by path (no symlinks).
func inside(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func samePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}
