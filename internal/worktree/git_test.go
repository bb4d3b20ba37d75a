package worktree

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
)

// TestMain gives git an identity and settings of the test's own, so that
// the tests neither depend on nor touch the machine's ~/.gitconfig.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "st-worktree-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cfg := filepath.Join(dir, "gitconfig")
	err = os.WriteFile(cfg, []byte("[user]\n\tname = st test\n\temail = st@example.invalid\n[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"), 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("GIT_CONFIG_GLOBAL", cfg)
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	for _, k := range gitEnvDrop {
		os.Unsetenv(k)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// gitT runs git for a test's own setup and checks.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

const longText = "line one of a file long enough\nfor git to see a rename\nwhen it moves\nwith a few more\nlines in it\n"

// newRepo makes a repository with one commit and returns it opened.
func newRepo(t *testing.T) *Repo {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "repo")
	gitT(t, dir, "init", "-q", root)
	write(t, filepath.Join(root, "a.txt"), "a\n")
	write(t, filepath.Join(root, "b.txt"), "b\n")
	write(t, filepath.Join(root, "del.txt"), "to delete\n")
	write(t, filepath.Join(root, "ren.txt"), longText)
	write(t, filepath.Join(root, "other.txt"), "other\n")
	write(t, filepath.Join(root, "src", "main.go"), "package main\n")
	write(t, filepath.Join(root, ".gitignore"), "*.log\n/wt/\n")
	gitT(t, root, "add", "-A")
	gitT(t, root, "commit", "-q", "-m", "first")
	r, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *Repo) head(t *testing.T) string {
	t.Helper()
	return strings.TrimSpace(gitT(t, r.Root, "rev-parse", "HEAD"))
}

func statusOf(t *testing.T, dir string) string {
	t.Helper()
	return gitT(t, dir, "status", "--porcelain=v1", "--untracked-files=all")
}

func branches(t *testing.T, dir string) string {
	t.Helper()
	return gitT(t, dir, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads")
}

func worktrees(t *testing.T, dir string) string {
	t.Helper()
	return gitT(t, dir, "worktree", "list", "--porcelain")
}

// addWT makes a worker's worktree beside the repository.
func addWT(t *testing.T, r *Repo, name string) *Worktree {
	t.Helper()
	w, err := r.Add(filepath.Join(filepath.Dir(r.Root), "worktrees", name), BranchName("run1", name), "")
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := Open(dir)
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Open outside a repository: %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), "is not in a git repository; --worktree needs one. Try: git init, or leave out --worktree") {
		t.Fatalf("Open outside a repository: %v", err)
	}
	if _, err := Open(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("Open of a missing folder worked")
	}

	r := newRepo(t)
	sub, err := Open(filepath.Join(r.Root, "src"))
	if err != nil {
		t.Fatal(err)
	}
	if sub.Root != r.Root {
		t.Fatalf("Open(src).Root = %s, want %s", sub.Root, r.Root)
	}
	h, err := r.Head()
	if err != nil || h != r.head(t) {
		t.Fatalf("Head = %q, %v; want %s", h, err, r.head(t))
	}
}

func TestHeadWithoutCommit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gitT(t, dir, "init", "-q")
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Head(); err == nil || !strings.Contains(err.Error(), "no commit yet") || !strings.Contains(err.Error(), "git commit") {
		t.Fatalf("Head of an empty repository: %v", err)
	}
	wt := filepath.Join(t.TempDir(), "wt")
	if _, err := r.Add(wt, "st/r/w", ""); err == nil || !strings.Contains(err.Error(), "no commit yet") {
		t.Fatalf("Add in an empty repository: %v", err)
	}
	if exists(wt) {
		t.Fatal("a failed Add left its folder")
	}
}

func TestBranchName(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	cases := []struct{ run, worker, want string }{
		{"r1", "fix-login", "st/r1/fix-login"},
		{"r1", "%7", "st/r1/7"},
		{"2024-06-01T10:00", "a b", "st/2024-06-01T10-00/a-b"},
		{"run", "..", "st/run/worker"},
		{"run", "x.lock", "st/run/x"},
		{"run", ".hidden", "st/run/hidden"},
		{"run", "a..b", "st/run/a.b"},
		{"run", "-dash", "st/run/dash"},
		{"", "", "st/run/worker"},
		{"run", "ünï~^:?*[\\", "st/run/n"},
		{"run", "~^:?*[", "st/run/worker"},
		{"run", "try-1", "st/run/try-1"},
		{"run", "a/b", "st/run/a-b"},
		{"run", "x.lock.lock", "st/run/x"},
		{"run", "x@{1}", "st/run/x-1"},
	}
	for _, c := range cases {
		got := BranchName(c.run, c.worker)
		if got != c.want {
			t.Errorf("BranchName(%q, %q) = %q, want %q", c.run, c.worker, got, c.want)
		}
		if _, err := git(r.Root, nil, "check-ref-format", "--branch", got); err != nil {
			t.Errorf("BranchName(%q, %q) = %q is not a valid branch: %v", c.run, c.worker, got, err)
		}
	}
}

func TestWorktreeLifecycle(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	base := r.head(t)
	path := filepath.Join(filepath.Dir(r.Root), "deep", "worktrees", "w1") // parents do not exist
	w, err := r.Add(path, BranchName("run1", "w1"), "")
	if err != nil {
		t.Fatal(err)
	}
	if w.Path != path || w.Branch != "st/run1/w1" || w.Base != base {
		t.Fatalf("Add = %+v", w)
	}
	if got := read(t, filepath.Join(path, "a.txt")); got != "a\n" {
		t.Fatalf("a.txt in the worktree = %q", got)
	}

	// Work in every state: committed, staged, changed, new, deleted,
	// renamed, and an ignored file that must not count.
	write(t, filepath.Join(path, "a.txt"), "a changed and committed\n")
	gitT(t, path, "commit", "-q", "-am", "worker commit")
	write(t, filepath.Join(path, "b.txt"), "b staged\n")
	gitT(t, path, "add", "b.txt")
	write(t, filepath.Join(path, "src", "main.go"), "package main\n\nfunc main() {}\n")
	write(t, filepath.Join(path, "src", "new.go"), "package main // new\n")
	os.Remove(filepath.Join(path, "del.txt"))
	os.Rename(filepath.Join(path, "ren.txt"), filepath.Join(path, "moved.txt"))
	write(t, filepath.Join(path, "build.log"), "ignored\n")
	statusBefore := statusOf(t, path)
	stagedBefore := gitT(t, path, "diff", "--cached", "--name-only")

	changes, err := w.Changes()
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{
		{Path: "a.txt", Status: Modified},
		{Path: "b.txt", Status: Modified},
		{Path: "del.txt", Status: Deleted},
		{Path: "moved.txt", Status: Renamed, From: "ren.txt"},
		{Path: "src/main.go", Status: Modified},
		{Path: "src/new.go", Status: Added},
	}
	if !reflect.DeepEqual(changes, want) {
		t.Fatalf("Changes =\n%+v\nwant\n%+v", changes, want)
	}
	diff, err := w.Diff()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"+++ b/src/new.go", "+package main // new", "--- a/del.txt", "rename from ren.txt", "rename to moved.txt", "+a changed and committed", "+b staged"} {
		if !strings.Contains(diff, s) {
			t.Errorf("Diff lacks %q:\n%s", s, diff)
		}
	}
	if strings.Contains(diff, "build.log") {
		t.Errorf("Diff shows an ignored file:\n%s", diff)
	}
	// Reading the changes must not have touched the worker's index.
	if got := statusOf(t, path); got != statusBefore {
		t.Fatalf("status changed by Changes/Diff:\n%s\nwas\n%s", got, statusBefore)
	}
	if got := gitT(t, path, "diff", "--cached", "--name-only"); got != stagedBefore {
		t.Fatalf("staged files changed by Changes/Diff: %q, was %q", got, stagedBefore)
	}

	ok, err := w.CommitAll("worker w1 done")
	if err != nil || !ok {
		t.Fatalf("CommitAll = %v, %v", ok, err)
	}
	if got := statusOf(t, path); got != "" {
		t.Fatalf("worktree not clean after CommitAll:\n%s", got)
	}
	if ok, err := w.CommitAll("again"); err != nil || ok {
		t.Fatalf("second CommitAll = %v, %v; want false", ok, err)
	}
	if again, err := w.Changes(); err != nil || !reflect.DeepEqual(again, want) {
		t.Fatalf("Changes after CommitAll = %+v, %v", again, err)
	}

	// The coordinator has work of its own in unrelated files: the merge
	// goes ahead and keeps it.
	write(t, filepath.Join(r.Root, "other.txt"), "coordinator's own edit\n")
	write(t, filepath.Join(r.Root, "notes.md"), "untracked notes\n")
	res, err := r.Merge(w, "merge w1")
	if err != nil {
		t.Fatal(err)
	}
	if res.UpToDate || res.Head != base || res.Commit == "" || res.Commit == base {
		t.Fatalf("Merge = %+v", res)
	}
	wantFiles := []string{"a.txt", "b.txt", "del.txt", "moved.txt", "ren.txt", "src/main.go", "src/new.go"}
	if !reflect.DeepEqual(res.Files, wantFiles) {
		t.Fatalf("Merge files = %v, want %v", res.Files, wantFiles)
	}
	if parents := strings.Fields(gitT(t, r.Root, "log", "-1", "--format=%P")); len(parents) != 2 {
		t.Fatalf("merge commit has parents %v, want two (--no-ff)", parents)
	}
	if got := strings.TrimSpace(gitT(t, r.Root, "log", "-1", "--format=%s")); got != "merge w1" {
		t.Fatalf("merge message = %q", got)
	}
	if got := read(t, filepath.Join(r.Root, "src", "new.go")); got != "package main // new\n" {
		t.Fatalf("merged new.go = %q", got)
	}
	if exists(filepath.Join(r.Root, "del.txt")) || !exists(filepath.Join(r.Root, "moved.txt")) {
		t.Fatal("delete or rename not merged")
	}
	if got := read(t, filepath.Join(r.Root, "other.txt")); got != "coordinator's own edit\n" {
		t.Fatalf("the coordinator's edit was lost: %q", got)
	}
	if got := statusOf(t, r.Root); got != " M other.txt\n?? notes.md\n" {
		t.Fatalf("checkout status after merge:\n%s", got)
	}

	res, err = r.Merge(w, "merge w1 again")
	if err != nil || !res.UpToDate || res.Commit != "" {
		t.Fatalf("second Merge = %+v, %v; want UpToDate", res, err)
	}

	if err := r.Remove(w, true); err != nil {
		t.Fatal(err)
	}
	if exists(path) {
		t.Fatal("Remove left the folder")
	}
	if strings.Contains(branches(t, r.Root), w.Branch) {
		t.Fatal("Remove left the branch")
	}
	if strings.Contains(worktrees(t, r.Root), path) {
		t.Fatal("Remove left the worktree registered")
	}
	if err := r.Remove(w, true); err != nil {
		t.Fatalf("Remove of a removed worktree: %v", err)
	}
}

func TestMergeRefusesDirtySameFile(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	w := addWT(t, r, "w")
	write(t, filepath.Join(w.Path, "a.txt"), "worker\n")
	write(t, filepath.Join(w.Path, "added.txt"), "worker adds\n")
	if _, err := w.CommitAll("work"); err != nil {
		t.Fatal(err)
	}
	head := r.head(t)

	write(t, filepath.Join(r.Root, "a.txt"), "coordinator, uncommitted\n")
	write(t, filepath.Join(r.Root, "added.txt"), "coordinator's untracked file\n")
	write(t, filepath.Join(r.Root, "other.txt"), "unrelated\n")
	before := statusOf(t, r.Root)
	_, err := r.Merge(w, "")
	var de *DirtyError
	if !errors.As(err, &de) || de.Staged || !reflect.DeepEqual(de.Files, []string{"a.txt", "added.txt"}) {
		t.Fatalf("Merge = %v; want a DirtyError naming a.txt and added.txt", err)
	}
	for _, s := range []string{"a.txt, added.txt", "git commit", "git stash"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("message lacks %q: %v", s, err)
		}
	}
	if r.head(t) != head || statusOf(t, r.Root) != before || read(t, filepath.Join(r.Root, "a.txt")) != "coordinator, uncommitted\n" {
		t.Fatal("a refused merge changed the checkout")
	}

	// Commit the clash away; an unrelated staged file still stops git.
	os.Remove(filepath.Join(r.Root, "added.txt"))
	gitT(t, r.Root, "checkout", "--", "a.txt")
	gitT(t, r.Root, "add", "other.txt")
	_, err = r.Merge(w, "")
	if !errors.As(err, &de) || !de.Staged || !reflect.DeepEqual(de.Files, []string{"other.txt"}) || !strings.Contains(err.Error(), "git restore --staged") {
		t.Fatalf("Merge with a staged file = %v; want a staged DirtyError", err)
	}

	// Unstaged and unrelated: fine.
	gitT(t, r.Root, "restore", "--staged", "other.txt")
	if _, err := r.Merge(w, ""); err != nil {
		t.Fatalf("Merge with an unrelated dirty file: %v", err)
	}
	if read(t, filepath.Join(r.Root, "other.txt")) != "unrelated\n" || read(t, filepath.Join(r.Root, "a.txt")) != "worker\n" {
		t.Fatal("merge result wrong")
	}
}

func TestMergeConflictLeavesCheckoutAsItWas(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	w := addWT(t, r, "w")
	write(t, filepath.Join(w.Path, "a.txt"), "the worker's a\n")
	write(t, filepath.Join(w.Path, "b.txt"), "the worker's b\n")
	if ok, err := w.CommitAll("work"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	write(t, filepath.Join(r.Root, "a.txt"), "the coordinator's a\n")
	gitT(t, r.Root, "commit", "-q", "-am", "coordinator changes a")
	write(t, filepath.Join(r.Root, "other.txt"), "unrelated, uncommitted\n")
	write(t, filepath.Join(r.Root, "notes.md"), "untracked\n")
	head := r.head(t)
	before := statusOf(t, r.Root)

	_, err := r.Merge(w, "merge w")
	var ce *ConflictError
	if !errors.As(err, &ce) || !reflect.DeepEqual(ce.Files, []string{"a.txt"}) || ce.Head != head {
		t.Fatalf("Merge = %v; want a ConflictError on a.txt", err)
	}
	for _, s := range []string{"a.txt", "git merge " + w.Branch, "rebase onto " + head[:12], "as it was"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("message lacks %q: %v", s, err)
		}
	}
	if r.head(t) != head {
		t.Fatal("HEAD moved")
	}
	if got := statusOf(t, r.Root); got != before {
		t.Fatalf("status after the conflict:\n%s\nwant\n%s", got, before)
	}
	if read(t, filepath.Join(r.Root, "a.txt")) != "the coordinator's a\n" || read(t, filepath.Join(r.Root, "b.txt")) != "b\n" ||
		read(t, filepath.Join(r.Root, "other.txt")) != "unrelated, uncommitted\n" {
		t.Fatal("files changed by a conflicting merge")
	}
	if p, _ := gitPath(r.Root, "MERGE_HEAD"); exists(p) {
		t.Fatal("the merge was left in progress")
	}

	// A merge left in progress by the user is not touched.
	gitT(t, r.Root, "checkout", "--", "other.txt")
	cmd := exec.Command("git", "merge", w.Branch)
	cmd.Dir = r.Root
	cmd.Run() // conflicts on purpose
	_, err = r.Merge(w, "")
	if err == nil || !strings.Contains(err.Error(), "in the middle of a merge") {
		t.Fatalf("Merge during the user's merge: %v", err)
	}
	if p, _ := gitPath(r.Root, "MERGE_HEAD"); !exists(p) {
		t.Fatal("the user's merge was aborted")
	}
}

func TestAddRefusesTakenBranch(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	gitT(t, r.Root, "branch", "st/run1/w")
	beforeB, beforeW := branches(t, r.Root), worktrees(t, r.Root)
	path := filepath.Join(filepath.Dir(r.Root), "new-parent", "w")

	_, err := r.Add(path, "st/run1/w", "")
	if err == nil || !strings.Contains(err.Error(), "branch st/run1/w already exists") || !strings.Contains(err.Error(), "git branch -D st/run1/w") {
		t.Fatalf("Add with a taken branch: %v", err)
	}
	if exists(path) || exists(filepath.Dir(path)) {
		t.Fatal("a refused Add left a folder")
	}
	if branches(t, r.Root) != beforeB || worktrees(t, r.Root) != beforeW {
		t.Fatal("a refused Add changed branches or worktrees")
	}

	// Taken by a worktree: say which.
	w := addWT(t, r, "busy")
	_, err = r.Add(path, w.Branch, "")
	if err == nil || !strings.Contains(err.Error(), "checked out in the worktree "+w.Path) || !strings.Contains(err.Error(), "git worktree remove") {
		t.Fatalf("Add with a branch of a worktree: %v", err)
	}
	if exists(filepath.Dir(path)) {
		t.Fatal("a refused Add left a folder")
	}
}

func TestAddRefusesExistingPath(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	path := filepath.Join(filepath.Dir(r.Root), "taken")
	write(t, filepath.Join(path, "keep.txt"), "mine\n")
	beforeB := branches(t, r.Root)
	_, err := r.Add(path, "st/run1/x", "")
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("Add onto an existing folder: %v", err)
	}
	if branches(t, r.Root) != beforeB || read(t, filepath.Join(path, "keep.txt")) != "mine\n" {
		t.Fatal("a refused Add changed something")
	}
	if _, err := r.Add(filepath.Join(filepath.Dir(r.Root), "y"), "bad..name", ""); err == nil || !strings.Contains(err.Error(), "not a valid git branch name") {
		t.Fatalf("Add with a bad branch name: %v", err)
	}
	if _, err := r.Add(filepath.Join(filepath.Dir(r.Root), "y"), "st/x", "no-such-commit"); err == nil || !strings.Contains(err.Error(), "not a commit") {
		t.Fatalf("Add from a bad base: %v", err)
	}
}

func TestAddInsideCheckout(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	if _, err := r.Add(filepath.Join(r.Root, "src", "wt"), "st/r/in", ""); err == nil || !strings.Contains(err.Error(), "inside the checkout") {
		t.Fatalf("Add inside the checkout: %v", err)
	}
	// .gitignore has /wt/: a relative path is taken from the root.
	w, err := r.Add("wt/one", "st/r/one", "")
	if err != nil {
		t.Fatal(err)
	}
	if w.Path != filepath.Join(r.Root, "wt", "one") {
		t.Fatalf("path = %s", w.Path)
	}
	if got := statusOf(t, r.Root); got != "" {
		t.Fatalf("an ignored worktree shows in the checkout:\n%s", got)
	}
}

func TestAddCleansUpAfterGitFails(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	// A post-checkout hook that fails makes "git worktree add" fail after
	// it made the branch, the folder and the registration.
	write(t, filepath.Join(r.Root, ".git", "hooks", "post-checkout"), "#!/bin/sh\necho hook says no >&2\nexit 3\n")
	os.Chmod(filepath.Join(r.Root, ".git", "hooks", "post-checkout"), 0o755)
	beforeB, beforeW := branches(t, r.Root), worktrees(t, r.Root)
	path := filepath.Join(filepath.Dir(r.Root), "made", "for", "it")

	_, err := r.Add(path, "st/run1/hooked", "")
	if err == nil || !strings.Contains(err.Error(), "hook says no") || !strings.Contains(err.Error(), "nothing was left behind") {
		t.Fatalf("Add with a failing hook: %v", err)
	}
	if exists(path) || exists(filepath.Join(filepath.Dir(r.Root), "made")) {
		t.Fatal("folders left behind")
	}
	if branches(t, r.Root) != beforeB {
		t.Fatalf("branch left behind:\n%s", branches(t, r.Root))
	}
	if worktrees(t, r.Root) != beforeW {
		t.Fatalf("worktree left registered:\n%s", worktrees(t, r.Root))
	}
}

func TestRemoveTolerates(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	w := addWT(t, r, "gone")
	write(t, filepath.Join(w.Path, "uncommitted.txt"), "x\n")
	if err := os.RemoveAll(w.Path); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Changes(); err == nil || !strings.Contains(err.Error(), "is gone") {
		t.Fatalf("Changes of a deleted worktree: %v", err)
	}
	if _, err := w.CommitAll("x"); err == nil || !strings.Contains(err.Error(), "is gone") {
		t.Fatalf("CommitAll of a deleted worktree: %v", err)
	}
	if err := r.Remove(w, true); err != nil {
		t.Fatalf("Remove after the folder was deleted by hand: %v", err)
	}
	if strings.Contains(branches(t, r.Root), w.Branch) || strings.Contains(worktrees(t, r.Root), w.Path) {
		t.Fatal("branch or registration left")
	}

	// Dirty worktree, keep the branch.
	w2 := addWT(t, r, "dirty")
	write(t, filepath.Join(w2.Path, "a.txt"), "changed\n")
	write(t, filepath.Join(w2.Path, "new.txt"), "new\n")
	if err := r.Remove(w2, false); err != nil {
		t.Fatal(err)
	}
	if exists(w2.Path) || !strings.Contains(branches(t, r.Root), w2.Branch) {
		t.Fatal("Remove(keep branch) wrong")
	}
	if err := r.Remove(&Worktree{Path: r.Root, Branch: "main"}, true); err == nil {
		t.Fatal("Remove of the checkout itself worked")
	}
	if !exists(filepath.Join(r.Root, "a.txt")) {
		t.Fatal("the checkout was damaged")
	}
}

func TestCommitAllOffBranch(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	w := addWT(t, r, "w")
	gitT(t, w.Path, "switch", "-q", "-c", "elsewhere")
	write(t, filepath.Join(w.Path, "a.txt"), "x\n")
	if _, err := w.CommitAll("x"); err == nil || !strings.Contains(err.Error(), "not on its branch") || !strings.Contains(err.Error(), "switch "+w.Branch) {
		t.Fatalf("CommitAll off the branch: %v", err)
	}
}

func TestFilesAndDirty(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	files, err := r.Files()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".gitignore", "a.txt", "b.txt", "del.txt", "other.txt", "ren.txt", "src/main.go"}
	if !reflect.DeepEqual(files, want) {
		t.Fatalf("Files = %v", files)
	}
	if d, err := r.Dirty(); err != nil || len(d) != 0 {
		t.Fatalf("Dirty of a clean checkout = %v, %v", d, err)
	}
	write(t, filepath.Join(r.Root, "a.txt"), "changed\n")
	write(t, filepath.Join(r.Root, "new dir", "n.txt"), "new\n")
	write(t, filepath.Join(r.Root, "x.log"), "ignored\n")
	gitT(t, r.Root, "mv", "b.txt", "b2.txt")
	d, err := r.Dirty()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a.txt", "b.txt", "b2.txt", "new dir/n.txt"}; !reflect.DeepEqual(d, want) {
		t.Fatalf("Dirty = %q, want %q", d, want)
	}
}

// TestFanConcurrently makes, merges and removes several tries at once, as
// --fan and pick do; the repository lock keeps git from tripping on its own
// lock files.
func TestFanConcurrently(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	const n = 4
	ws := make([]*Worktree, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("try-%d", i+1)
			w, err := r.Add(filepath.Join(filepath.Dir(r.Root), "fan", name), BranchName("run1", name), "")
			if err != nil {
				errs[i] = err
				return
			}
			ws[i] = w
			write(t, filepath.Join(w.Path, "src", name+".go"), "package main\n")
			_, errs[i] = w.CommitAll(name)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Pick try-2: merge it, remove all.
	if _, err := r.Merge(ws[1], "pick try-2"); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.Remove(ws[i], true)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if !exists(filepath.Join(r.Root, "src", "try-2.go")) || exists(filepath.Join(r.Root, "src", "try-1.go")) {
		t.Fatal("pick merged the wrong try")
	}
	if got := strings.TrimSpace(branches(t, r.Root)); strings.Count(got, "\n") != 0 || !strings.HasPrefix(got, "refs/heads/main ") {
		t.Fatalf("branches left: %s", got)
	}
	list := strings.Count(worktrees(t, r.Root), "worktree ")
	if list != 1 {
		t.Fatalf("%d worktrees left", list)
	}
}

func TestGitErrorKeepsStderr(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	_, err := git(r.Root, nil, "rev-parse", "--verify", "no-such-ref")
	var ge *GitError
	if !errors.As(err, &ge) || ge.ExitCode != 128 || !strings.Contains(ge.Stderr, "Needed a single revision") || ge.Args[0] != "rev-parse" {
		t.Fatalf("err = %#v", err)
	}
	if !strings.HasPrefix(err.Error(), "git rev-parse: fatal:") {
		t.Fatalf("Error() = %q", err.Error())
	}
}

func TestChangesSortedAndParsed(t *testing.T) {
	t.Parallel()
	got := parseNameStatus("M\x00z.go\x00R087\x00old.go\x00new.go\x00A\x00a.go\x00D\x00d.go\x00T\x00t.go\x00C100\x00src.go\x00copy.go\x00")
	want := []Change{
		{Path: "a.go", Status: Added},
		{Path: "copy.go", Status: Added},
		{Path: "d.go", Status: Deleted},
		{Path: "new.go", Status: Renamed, From: "old.go"},
		{Path: "t.go", Status: Modified},
		{Path: "z.go", Status: Modified},
	}
	sort.Slice(want, func(i, j int) bool { return want[i].Path < want[j].Path })
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseNameStatus = %+v", got)
	}
}
