package orch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/testutil/faketmux"
)

// enterHelperEnv names the folder that enterHelper checks, in a copy of
// this test binary run as another user.
const enterHelperEnv = "ST_TEST_ENTERABLE"

// enterHelper prints what enterableDir says of dir, and exits.
func enterHelper(dir string) {
	if err := enterableDir(dir); err != nil {
		var ae *api.Error
		if errors.As(err, &ae) {
			fmt.Printf("refused: %s\nTry: %s\n", ae.Message, ae.Hint)
		} else {
			fmt.Printf("refused: %v\n", err)
		}
		os.Exit(0)
	}
	fmt.Println("enterable")
	os.Exit(0)
}

// TestRefusesAFolderTheUserCannotEnter: a --cwd that the user may not
// enter is refused before a window opens (tmux would open it in the
// coordinator's folder, and the agent work there with no word). Root
// enters every folder, so the check runs as another local user, in a copy
// of this test binary, against a folder of root's with mode 0700; a folder
// open to all is entered, and one that is not there is refused too.
func TestRefusesAFolderTheUserCannotEnter(t *testing.T) {
	u := testutil.NewOtherUser(t)
	base, err := os.MkdirTemp("", "st-enter-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	shut, open := filepath.Join(base, "shut"), filepath.Join(base, "open")
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{base, 0o755}, {shut, 0o700}, {open, 0o755}} {
		if err := os.MkdirAll(d.path, d.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d.path, d.mode); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(base, "orch.test")
	copyFile(t, self, bin)
	check := func(dir string) string {
		out, err := u.Command([]string{enterHelperEnv + "=" + dir}, bin).CombinedOutput()
		if err != nil {
			t.Fatalf("the check as %s: %v\n%s", u.Name, err, out)
		}
		return string(out)
	}
	if got := check(shut); !strings.Contains(got, "refused: you cannot enter the worker's folder "+shut) || !strings.Contains(got, "Try: pass a folder you can enter") {
		t.Errorf("a folder of root's, mode 0700, as %s: got %q, want it refused as one they cannot enter", u.Name, got)
	}
	if got := check(open); got != "enterable\n" {
		t.Errorf("a folder open to all, as %s: got %q, want it entered", u.Name, got)
	}
	if got := check(filepath.Join(base, "missing")); !strings.Contains(got, "does not exist") {
		t.Errorf("a folder that is not there: got %q, want it refused", got)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRecordsWhereThePaneIs: when tmux opened the worker's window in
// another folder than the one asked for (it could not enter it), the
// worker's record, on disk and as commands show it, names the folder its
// agent works in, and the start says so; a pane in the folder asked for
// changes nothing.
func TestRecordsWhereThePaneIs(t *testing.T) {
	h := newHarness(t, api.Working, func(s *faketmux.Server) { s.Find(workerID).Path = "/" })
	view := func() (*Worker, api.WorkerView) {
		h.m.reg.mu.Lock()
		defer h.m.reg.mu.Unlock()
		w := h.m.reg.workers[workerID]
		return w, h.m.viewLocked(w)
	}
	w, v := view()
	note := h.m.notePanePath(context.Background(), w, &v)
	if want := "tmux opened the window in /, not in /tmp as asked, and the agent works there"; !strings.Contains(note, want) {
		t.Errorf("the start's note is %q, want it to say %q", note, want)
	}
	if v.Cwd != "/" || h.worker().Cwd != "/" || h.onDisk().Cwd != "/" {
		t.Errorf("the worker's folder: shown %q, read %q, on disk %q; want / (where its pane is) in each", v.Cwd, h.worker().Cwd, h.onDisk().Cwd)
	}

	h.tm.Edit(func(s *faketmux.Server) { s.Find(workerID).Path = "/" + "." })
	w, v = view()
	if note := h.m.notePanePath(context.Background(), w, &v); note != "" {
		t.Errorf("a pane in the folder asked for got the note %q", note)
	}
}
