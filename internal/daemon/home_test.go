package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/testutil"
)

// The daemon refuses an ST_HOME of another (named) local user, and one
// that others may write, before it writes anything there; the refusal
// names the owner and says what to do.
func TestDaemonRefusesAHomeNotItsOwn(t *testing.T) {
	other := testutil.NewOtherUser(t)
	home := filepath.Join(shortTemp(t), "h")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	// A daemon that took the home would serve until its context ends: a
	// deadline, after which Run's nil says it did.
	run := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		env := map[string]string{"ST_TMUX_SOCKET": filepath.Join(home, "no-tmux-server"), "ST_WEB_PORT": "auto"}
		return Run(ctx, Options{Home: home, STBin: "/nonexistent/st", Getenv: func(k string) string { return env[k] }})
	}
	if err := os.Chown(home, other.UID, other.GID); err != nil {
		t.Fatal(err)
	}
	err := run()
	if err == nil || !strings.Contains(err.Error(), "belongs to another user (uid ") || !strings.Contains(err.Error(), other.Name) ||
		!strings.Contains(err.Error(), "Try: use a folder of your own") {
		t.Errorf("another user's ST_HOME: %v", err)
	}
	os.Chown(home, os.Getuid(), os.Getgid())
	os.Chmod(home, 0o707)
	if err := run(); err == nil || !strings.Contains(err.Error(), "can be written by other users (its mode is 0707)") {
		t.Errorf("an ST_HOME others may write: %v", err)
	}
	if left, _ := os.ReadDir(home); len(left) != 0 {
		t.Errorf("the daemon wrote into an ST_HOME it refused: %v", left)
	}
}
