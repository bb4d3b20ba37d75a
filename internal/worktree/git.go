package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sophonz/st/internal/runerr"
)

// GitError is a git command that failed, with what git said, so that the
// message a user sees is git's own and callers can look at the exit code.
type GitError struct {
	Args     []string
	ExitCode int
	Stderr   string
}

func (e *GitError) Error() string {
	return runerr.Message("git", e.Args, e.Stderr, e.ExitCode)
}

// gitTimeout bounds one git command. It is long because hooks of the user's
// (post-checkout, pre-merge-commit) run inside some of them, but a daemon
// must not wait forever on a git that waits for a lock or a terminal.
const gitTimeout = 10 * time.Minute

// gitEnvDrop are variables that would point git at another repository, index
// or work tree than the folder we run it in: set when st itself is started
// from a git hook or by a tool that exports them.
var gitEnvDrop = []string{
	"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE",
	"GIT_PREFIX",
}

// git runs git in dir with extra environment entries (KEY=VALUE) and returns
// its standard output.
func git(dir string, env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	base := make([]string, 0, len(os.Environ())+8)
next:
	for _, kv := range os.Environ() {
		for _, k := range gitEnvDrop {
			if strings.HasPrefix(kv, k+"=") {
				continue next
			}
		}
		base = append(base, kv)
	}
	base = append(base,
		// English messages: they reach the user inside st's own English
		// sentences, and a few are recognised below.
		"LC_ALL=C",
		// Nobody can answer a prompt from inside the daemon.
		"GIT_TERMINAL_PROMPT=0",
		"GIT_MERGE_AUTOEDIT=no",
		"GIT_EDITOR=true",
	)
	cmd.Env = append(base, env...)
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err == nil {
		return out.String(), nil
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return out.String(), &GitError{Args: args, ExitCode: ee.ExitCode(), Stderr: errb.String()}
	case ctx.Err() != nil:
		return "", fmt.Errorf("git %s in %s: gave up after %s: %w", args[0], dir, gitTimeout, ctx.Err())
	default:
		return "", fmt.Errorf("git %s: %w (is git installed?)", args[0], err)
	}
}

// exitCode is the exit code of a GitError, or -1.
func exitCode(err error) int {
	var ge *GitError
	if errors.As(err, &ge) {
		return ge.ExitCode
	}
	return -1
}

// repoLocks serialises st's own changes to one repository. Several workers
// of a fan are made, merged and removed at about the same moment, and git
// answers concurrent ref and index updates with "cannot lock ref" or
// index.lock errors; worse, Add's clean-up must know that a branch it finds
// after a failure is its own.
var repoLocks sync.Map // cleaned root -> *sync.Mutex

// mutex is the lock of r's repository, which its callers take and let
// go themselves (mu := r.mutex(); mu.Lock(); defer mu.Unlock()): a lock
// taken in one function and let go in another is what st's lockpair check
// refuses.
func (r *Repo) mutex() *sync.Mutex {
	m, _ := repoLocks.LoadOrStore(filepath.Clean(r.Root), new(sync.Mutex))
	return m.(*sync.Mutex)
}

// Repo is a checkout: the top level of the main working tree or of a linked
// worktree. For st it is the coordinator's checkout.
type Repo struct {
	Root string `json:"root"`
}

// Open finds the checkout that dir is in.
func Open(dir string) (*Repo, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("open repository: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("open repository: %s is not a folder", abs)
	}
	out, err := git(abs, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		var ge *GitError
		if errors.As(err, &ge) {
			if strings.Contains(ge.Stderr, "must be run in a work tree") {
				return nil, fmt.Errorf("%s is in a bare git repository or inside a .git folder, with no checkout to start a worktree from; --worktree needs one. Try: run st from the checkout's own folder, or leave out --worktree", abs)
			}
			if strings.Contains(ge.Stderr, "dubious ownership") {
				return nil, fmt.Errorf("git refuses %s: it belongs to another user (%s). Try: git config --global --add safe.directory %s", abs, strings.TrimSpace(ge.Stderr), abs)
			}
			return nil, fmt.Errorf("%s is not in a git repository; --worktree needs one. Try: git init, or leave out --worktree", abs)
		}
		return nil, err
	}
	root := strings.TrimSpace(out)
	if root == "" {
		return nil, fmt.Errorf("%s is not in a git checkout; --worktree needs one. Try: git init, or leave out --worktree", abs)
	}
	return &Repo{Root: filepath.Clean(root)}, nil
}

// Head is the commit the checkout is on, as a full id.
func (r *Repo) Head() (string, error) {
	out, err := git(r.Root, nil, "rev-parse", "-q", "--verify", "HEAD^{commit}")
	if err != nil {
		if exitCode(err) == 1 {
			return "", fmt.Errorf("the repository at %s has no commit yet, and a worktree starts from the current commit. Try: git add -A && git commit -m 'first commit', then start the worker again", r.Root)
		}
		return "", fmt.Errorf("read HEAD of %s: %w", r.Root, err)
	}
	return strings.TrimSpace(out), nil
}

// Files are the files git tracks in the checkout, relative to its root.
// Scopes are checked against them: for overlaps, and to tell the user that a
// glob matches nothing (probably a typo).
func (r *Repo) Files() ([]string, error) {
	out, err := git(r.Root, nil, "ls-files", "-z", "--full-name")
	if err != nil {
		return nil, fmt.Errorf("list files of %s: %w", r.Root, err)
	}
	return splitZ(out), nil
}

// Dirty lists the files of the checkout that differ from HEAD, staged or
// not, and the untracked ones (not the ignored ones), relative to the root.
func (r *Repo) Dirty() ([]string, error) {
	st, err := status(r.Root)
	if err != nil {
		return nil, err
	}
	files := make([]string, 0, len(st))
	for _, e := range st {
		files = append(files, e.path)
	}
	return files, nil
}

type statusEntry struct {
	x, y byte // index and work tree columns of git status --porcelain
	path string
}

func status(dir string) ([]statusEntry, error) {
	// --no-renames so that a rename shows as its two paths, both of which
	// count as touched; -z so that odd names are not quoted.
	out, err := git(dir, nil, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--ignore-submodules=none")
	if err != nil {
		return nil, fmt.Errorf("read the status of %s: %w", dir, err)
	}
	var entries []statusEntry
	for _, rec := range splitZ(out) {
		if len(rec) < 4 {
			continue
		}
		entries = append(entries, statusEntry{x: rec[0], y: rec[1], path: rec[3:]})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].path < entries[j].path })
	return entries, nil
}

func splitZ(s string) []string {
	var out []string
	for _, f := range strings.Split(s, "\x00") {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

// gitPath is the absolute path of a file in the git folder of the checkout
// at dir (for a linked worktree, its own folder under .git/worktrees).
func gitPath(dir, name string) (string, error) {
	out, err := git(dir, nil, "rev-parse", "--git-path", name)
	if err != nil {
		return "", err
	}
	p := strings.TrimSpace(out)
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return p, nil
}

// refExists reports whether a full ref name (refs/heads/x) exists.
func refExists(dir, ref string) (bool, error) {
	_, err := git(dir, nil, "show-ref", "--verify", "--quiet", ref)
	if err == nil {
		return true, nil
	}
	if exitCode(err) == 1 {
		return false, nil
	}
	return false, err
}

// identityHint turns git's refusal to commit without a name into advice.
func identityHint(err error) error {
	var ge *GitError
	if errors.As(err, &ge) && (strings.Contains(ge.Stderr, "Please tell me who you are") ||
		strings.Contains(ge.Stderr, "empty ident name")) {
		return fmt.Errorf("%w\nTry: git config --global user.name 'Your Name' && git config --global user.email you@example.com", err)
	}
	return err
}
