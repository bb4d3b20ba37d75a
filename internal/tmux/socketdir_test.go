package tmux

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/testutil"
)

// TestNewSessionMakesTheSocketFolder: a fresh machine (a reboot emptied
// /tmp) has no $TMUX_TMPDIR/tmux-UID, which tmux makes only for its
// default path. st gives -S, so it makes the folder itself, mode 0700.
func TestNewSessionMakesTheSocketFolder(t *testing.T) {
	tm := testutil.NewTmux(t, testutil.ShortTempDir(t))
	if _, err := os.Stat(filepath.Dir(tm.Socket)); !os.IsNotExist(err) {
		t.Fatalf("the socket's folder is there already: %v", err)
	}
	c := New(tm.Socket)
	p, err := c.NewSession(context.Background(), "fresh", "w", "", nil, []string{"sh"})
	if err != nil {
		t.Fatalf("a session on a fresh machine: %v", err)
	}
	if !ValidPaneID(p.ID) {
		t.Errorf("pane %+v", p)
	}
	fi, err := os.Stat(filepath.Dir(tm.Socket))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("socket folder: %v %v, want mode 0700", fi.Mode(), err)
	}
}

// TestExitZeroWithAnErrorIsAFailure: tmux given -S in a folder that does
// not exist exits 0, prints nothing and says "error creating ..." on
// stderr; that is the failure it is (it was read as a pane line "").
func TestExitZeroWithAnErrorIsAFailure(t *testing.T) {
	dir := testutil.ShortTempDir(t)
	r := execRunner{bin: "tmux", socket: filepath.Join(dir, "missing", "default")}
	out, err := r.Run(context.Background(), "-f", "/dev/null", "new-session", "-d", "-P", "-F", "#{pane_id}", "sh")
	var te *Error
	if !errors.As(err, &te) || !errors.Is(err, ErrNoServer) || !strings.Contains(te.Stderr, "error creating") {
		t.Fatalf("tmux's exit 0 with an error: out %q, err %v", out, err)
	}
}

// TestSocketFolderRefusals: a folder of another user, or one others may
// write into, or one in a folder others may write (issue 31, item 3), is
// refused before any tmux runs (a BOUNDARY: another local
// user who could put a server of their own there would get st's
// commands). Without the check tmux started a server in each.
func TestSocketFolderRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(dir string) error
		want string
	}{
		{"another user's", func(d string) error {
			if err := os.Mkdir(d, 0o700); err != nil {
				return err
			}
			return os.Chown(d, 65534, 65534)
		}, "belongs to user 65534"},
		{"open to others", func(d string) error {
			if err := os.Mkdir(d, 0o700); err != nil {
				return err
			}
			return os.Chmod(d, 0o777)
		}, "open to other users (mode 0777)"},
		{"group-writable", func(d string) error {
			if err := os.Mkdir(d, 0o700); err != nil {
				return err
			}
			return os.Chmod(d, 0o770)
		}, "open to other users (mode 0770)"},
		{"a file", func(d string) error { return os.WriteFile(d, []byte("x"), 0o600) }, "is not a folder"},
		{"in a folder others may write", func(d string) error {
			if err := os.Chmod(filepath.Dir(d), 0o777); err != nil {
				return err
			}
			return os.Mkdir(d, 0o700)
		}, "which other users may write (its mode is 0777, without the sticky bit)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tm := testutil.NewTmux(t, testutil.ShortTempDir(t))
			if err := tc.make(filepath.Dir(tm.Socket)); err != nil {
				t.Fatal(err)
			}
			if tc.name == "another user's" && os.Getuid() != 0 {
				t.Fatal("making a folder of another user needs root, as scripts/test runs")
			}
			c := New(tm.Socket)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := c.NewSession(ctx, "s", "", "", nil, []string{"sh"})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrNoServer) {
				t.Errorf("NewSession in %s folder: %v, want a refusal saying %q", tc.name, err, tc.want)
			}
			if c.Running(ctx) {
				t.Errorf("a tmux server runs in %s folder", tc.name)
			}
		})
	}
}

// TestControlStaysInStepAfterAFailedChain: tmux stops a chain of commands
// at its first failure and sends no block for the rest. The control
// client once waited for them, took the next commands' answers for theirs,
// and every command after timed out ("relink: set st's options on 3
// panes: context deadline exceeded", then "tmux list-panes: context
// deadline exceeded" every 10 s).
func TestControlStaysInStepAfterAFailedChain(t *testing.T) {
	_, c, _ := channelServer(t)
	ctx := context.Background()
	panes, err := c.ListPanes(ctx)
	if err != nil || len(panes) != 2 {
		t.Fatalf("%v %v", panes, err)
	}
	p := panes[0].ID
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	_, err = c.Run(cctx, "set-option", "-p", "-t", p, "@a", "1", ";", "set-option", "-p", "-t", "%999", "@a", "2", ";", "set-option", "-p", "-t", p, "@b", "3")
	cancel()
	if !errors.Is(err, ErrNoPane) {
		t.Fatalf("a chain with a missing pane: %v, want ErrNoPane", err)
	}
	for i := 0; i < 20; i++ {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		got, err := c.Pane(cctx, p)
		ps, err2 := c.ListPanes(cctx)
		cancel()
		if err != nil || got.ID != p || err2 != nil || len(ps) != 2 {
			t.Fatalf("after the failed chain, answer %d: %+v %v; %d panes %v", i, got, err, len(ps), err2)
		}
	}
	if v, _ := c.Option(ctx, p, "@a"); v != "1" {
		t.Errorf("@a = %q: the command before the failure ran", v)
	}
	if !c.Connected() {
		t.Error("the control client ended")
	}
}

// TestSetOptionsAPaneGone: the options of every pane but a gone one are
// set, and the error names the gone one.
func TestSetOptionsAPaneGone(t *testing.T) {
	tm, c, _ := channelServer(t)
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if _, err := tm.Run("new-window", "-d", "-t", "a:", "sh"); err != nil {
			t.Fatal(err)
		}
	}
	panes, err := c.ListPanes(ctx)
	if err != nil || len(panes) != 4 {
		t.Fatalf("%v %v", panes, err)
	}
	opts := map[string]map[string]string{"%900": {"@st_run": "r", "@st_name": "gone"}}
	for _, p := range panes {
		opts[p.ID] = map[string]string{"@st_run": "r", "@st_name": "n" + p.ID[1:], "@st_role": "worker"}
	}
	err = c.SetOptions(ctx, opts)
	if !errors.Is(err, ErrNoPane) || !strings.Contains(err.Error(), "%900 gone") {
		t.Errorf("SetOptions with a gone pane: %v", err)
	}
	for _, p := range panes {
		if v, _ := c.Option(ctx, p.ID, "@st_name"); v != "n"+p.ID[1:] {
			t.Errorf("%s: @st_name = %q", p.ID, v)
		}
	}
}
