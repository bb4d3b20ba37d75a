package orch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/testutil/faketmux"
	"github.com/sophonz/st/internal/tmux"
)

// An adoption's write with no disk under the registry's lock (issue 36
// item 1): staged, written with the lock let go, undone when the disk
// cannot keep it.

// adoptShell has the coordinator adopt the agent in the shell's pane, in
// the background; its answer comes on the channel.
func (h *harness) adoptShell() <-chan error {
	h.claudeHook(shell, nil, "SessionStart", "source", "startup")
	done := make(chan error, 1)
	go func() {
		_, err := h.m.Adopt(context.Background(), api.IDRequest{Pane: coord, ID: shell})
		done <- err
	}()
	return done
}

// awaitFlying waits until a change is staged and waiting for the disk
// with the registry's lock let go (a write under the lock fails the
// test, rather than hang it).
func (h *harness) awaitFlying() {
	h.t.Helper()
	testutil.WaitFor(h.t, 10*time.Second, func() (bool, string) {
		if !h.m.reg.mu.TryLock() {
			return false, "the registry's lock is held (a write under it?), no change in flight"
		}
		n := len(h.m.reg.flying)
		h.m.reg.mu.Unlock()
		return n > 0, "no change in flight"
	})
}

// While an adoption's write is held up, st status and st worker list are
// answered, and the adoption answers only once its worker is on disk,
// with st's relations on its pane.
func TestAdoptionIsWrittenWithTheManagerFree(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	release := h.holdWrites()
	defer release()
	adopted := h.adoptShell()
	h.awaitFlying()
	runGuarded(t, "st status while an adoption is being written", func() { h.m.Status() })
	runGuarded(t, "st worker list while an adoption is being written", func() {
		if _, err := h.m.List(context.Background(), api.IDRequest{Pane: coord}); err != nil {
			t.Error(err)
		}
	})
	select {
	case err := <-adopted:
		t.Fatalf("st worker adopt answered (%v) before its worker was written", err)
	default:
	}
	release()
	if err := <-adopted; err != nil {
		t.Fatal(err)
	}
	found := false
	for _, w := range h.runOnDisk().Workers {
		found = found || w.ID == shell
	}
	if !found {
		t.Errorf("run.json has no worker %s once st worker adopt answered", shell)
	}
	if got := h.tm.Option(shell, "@st_run"); got != testRun {
		t.Errorf("the adopted pane's @st_run is %q, want %s", got, testRun)
	}
}

// An adoption the disk cannot keep is undone: refused with the cause, no
// worker in st worker list, no relations on the pane; once the disk
// works, the same adoption goes through.
func TestFailedAdoptionWriteIsUndone(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	h.breakSaves()
	err := <-h.adoptShell()
	wantKind(t, err, api.KindInternal)
	vs, lerr := h.m.List(context.Background(), api.IDRequest{Pane: coord})
	if lerr != nil {
		t.Fatal(lerr)
	}
	for _, v := range vs {
		if v.ID == shell {
			t.Errorf("st worker list shows %s after its adoption failed: %+v", shell, v)
		}
	}
	if got := h.tm.Option(shell, "@st_run"); got != "" {
		t.Errorf("the pane of a failed adoption carries @st_run=%q", got)
	}
	h.fixSaves()
	if err := <-h.adoptShell(); err != nil {
		t.Fatalf("the adoption once the disk works: %v", err)
	}
}

// A listing of the panes taken while an adoption's options were being put
// on its pane does not make the adopted worker gone; one taken after
// them judges it as any other.
func TestListingBeforeAdoptedPaneIsMarkedLeavesItAlone(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	releaseWrites := h.holdWrites()
	defer releaseWrites()
	adopted := h.adoptShell()
	h.awaitFlying()
	releaseTmux := h.holdTmux() // its options wait for the server
	defer releaseTmux()
	listed := h.m.cfg.Now().Add(time.Millisecond)
	releaseWrites()
	// The adoption is written and waits to set its pane's options: a
	// listing now finds the pane with none.
	panes := []tmux.Pane{{ID: coord, StRun: testRun}, {ID: workerID, StRun: testRun}, {ID: shell}}
	testutil.WaitFor(t, 10*time.Second, func() (bool, string) {
		h.m.reg.mu.Lock()
		n := len(h.m.reg.flying)
		h.m.reg.mu.Unlock()
		return n == 0, fmt.Sprintf("%d changes in flight", n)
	})
	h.m.reconcilePanes(panes, listed, h.m.rest.gen())
	releaseTmux()
	if err := <-adopted; err != nil {
		t.Fatal(err)
	}
	v, err := h.m.Read(context.Background(), api.IDRequest{ID: shell})
	if err != nil {
		t.Fatal(err)
	}
	if v.State == api.Gone {
		t.Fatalf("a listing taken before the adopted pane's options were set made it gone")
	}
	// A listing after them that does not find the pane judges it gone.
	h.m.reconcilePanes(panes[:2], h.m.cfg.Now().Add(time.Millisecond), h.m.rest.gen())
	if v, _ := h.m.Read(context.Background(), api.IDRequest{ID: shell}); v.State != api.Gone {
		t.Errorf("after a later listing without its pane, the adopted worker is %s, want gone", v.State)
	}
}

// heldGit puts a git first on PATH that waits, before it runs the real
// one, until the returned release is called; isHeld reports whether a
// git is waiting. (git runs as its own process: the wait is in the
// script, which looks for the release file.)
func heldGit(t *testing.T) (isHeld func() bool, release func()) {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("this test runs the real git: %v", err)
	}
	dir := t.TempDir()
	script := "#!/bin/sh\n: > \"" + dir + "/started\"\nwhile [ ! -e \"" + dir + "/go\" ]; do sleep 0.01; done\nexec \"" + real + "\" \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	isHeld = func() bool {
		_, err := os.Stat(filepath.Join(dir, "started"))
		return err == nil
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(release)
	return isHeld, release
}

// gitRepo makes a repository with one commit, of no file.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "first"},
	} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// st worker adopt --owns opens the agent's repository and lists its
// files with the registry's lock let go: while git runs, st status is
// answered; the adoption then has its scope, rooted at the repository.
// (The code before ran git under the lock.)
func TestAdoptionRunsGitWithTheRegistryFree(t *testing.T) {
	repo := gitRepo(t)
	h := newHarness(t, api.Working, func(s *faketmux.Server) {
		for _, p := range s.Panes {
			if p.ID == shell {
				p.Path = repo
			}
		}
	})
	isHeld, release := heldGit(t)
	h.claudeHook(shell, nil, "SessionStart", "source", "startup")
	done := make(chan error, 1)
	var v *api.WorkerView
	go func() {
		var err error
		v, err = h.m.Adopt(context.Background(), api.IDRequest{Pane: coord, ID: shell, Owns: []string{"src/**"}})
		done <- err
	}()
	testutil.WaitFor(t, 20*time.Second, func() (bool, string) {
		return isHeld(), "the adoption ran no git"
	})
	runGuarded(t, "st status while the adoption's git runs", func() { h.m.Status() })
	runGuarded(t, "st worker list while the adoption's git runs", func() {
		if _, err := h.m.List(context.Background(), api.IDRequest{Pane: coord}); err != nil {
			t.Error(err)
		}
	})
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.EvalSymlinks(repo)
	if v.Scope == nil || v.Scope.Root != root || len(v.Scope.Globs) != 1 || v.Scope.Globs[0] != "src/**" {
		t.Errorf("the adopted worker's scope is %+v, want src/** in %s", v.Scope, root)
	}
	if len(v.Notes) != 1 || !strings.Contains(v.Notes[0], `"src/**" matches no file yet`) {
		t.Errorf("the adoption's notes: %q", v.Notes)
	}
}

// --owns for an agent outside any repository is refused with the cause,
// after the checks of the adoption itself (it is already a worker).
func TestAdoptionOwnsOutsideARepository(t *testing.T) {
	h := newHarness(t, api.Working, func(s *faketmux.Server) {
		for _, p := range s.Panes {
			if p.ID == shell {
				p.Path = t.TempDir()
			}
		}
	})
	h.claudeHook(shell, nil, "SessionStart", "source", "startup")
	_, err := h.m.Adopt(context.Background(), api.IDRequest{Pane: coord, ID: shell, Owns: []string{"src/**"}})
	wantKind(t, err, api.KindUsage)
	if !strings.Contains(err.Error(), "--owns needs a git repository") {
		t.Errorf("the refusal: %v", err)
	}
	_, err = h.m.Adopt(context.Background(), api.IDRequest{Pane: coord, ID: workerID, Owns: []string{"src/**"}})
	wantKind(t, err, api.KindConflict)
}

// A rename that lands while an adoption is setting its pane's options
// (the adoption read the old name) leaves the pane with the new name:
// the rename's setting reaches tmux after the adoption's. (The code
// before read the name, let the lock go and set it, while the rename set
// its own at once: the old name came last.)
func TestRenameDuringAnAdoptionsOptionsKeepsTheNewName(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	ctx := context.Background()
	holding, release := make(chan struct{}), make(chan struct{})
	var held, let sync.Once
	defer let.Do(func() { close(release) })
	h.tm.Lock()
	h.tm.Hold = func(args []string) {
		// The adoption's @st_name (the fake runs a chain of set-options
		// one by one): held once.
		if slices.Contains(args, "@st_name") && slices.Contains(args, shell) && !slices.Contains(args, "renamed") {
			held.Do(func() { close(holding) })
			<-release
		}
	}
	h.tm.Unlock()
	adopted := h.adoptShell()
	select {
	case <-holding:
	case err := <-adopted:
		t.Fatalf("the adoption answered (%v) without setting its pane's options", err)
	}
	renamed := make(chan error, 1)
	go func() {
		_, err := h.m.Rename(ctx, api.IDRequest{Pane: coord, ID: shell, Text: "renamed"})
		renamed <- err
	}()
	// The rename is in the registry, and has set its options or waits to.
	testutil.WaitFor(t, 10*time.Second, func() (bool, string) {
		select {
		case err := <-renamed:
			renamed <- err
			return true, ""
		default:
		}
		buf := make([]byte, 1<<20)
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "(*Manager).Rename(") && strings.Contains(g, "(*Manager).tellPane(") {
				return true, ""
			}
		}
		return false, "the rename neither returned nor waits to set its pane's options"
	})
	let.Do(func() { close(release) })
	if err := <-adopted; err != nil {
		t.Fatal(err)
	}
	if err := <-renamed; err != nil {
		t.Fatal(err)
	}
	if got := h.tm.Option(shell, "@st_name"); got != "renamed" {
		t.Errorf("the pane's @st_name is %q after the rename, want renamed", got)
	}
	if v, err := h.m.Read(ctx, api.IDRequest{ID: shell}); err != nil || v.Name != "renamed" {
		t.Errorf("st worker read: %+v %v", v, err)
	}
}

// A worker released leaves its run, and its pane's options go (set and
// unset with the registry's lock let go, tellPane); its pane is told.
func TestReleaseUnsetsThePanesOptions(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	if err := <-h.adoptShell(); err != nil {
		t.Fatal(err)
	}
	if got := h.tm.Option(shell, "@st_name"); got == "" {
		t.Fatalf("the adopted pane has no @st_name")
	}
	// The pane's notice loop is held (as if one ran already), so that the
	// notice stays queued for the test to read (as in
	// TestBudgetGateStopsTheRunsWorkers).
	h.m.notices.mu.Lock()
	h.m.notices.kicks[shell] = make(chan struct{}, 1)
	h.m.notices.mu.Unlock()
	if _, err := h.m.Release(context.Background(), api.IDRequest{Pane: coord, ID: shell}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"@st_run", "@st_role", "@st_parent", "@st_name"} {
		if got := h.tm.Option(shell, k); got != "" {
			t.Errorf("the released pane's %s is %q, want none", k, got)
		}
	}
	if got := h.pendingNotices(shell); len(got) != 1 || !strings.Contains(got[0], "no one's worker now") {
		t.Errorf("the released pane's notices: %q", got)
	}
	vs, err := h.m.List(context.Background(), api.IDRequest{Pane: coord})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.ID == shell {
			t.Errorf("st worker list shows the released %s", shell)
		}
	}
}
