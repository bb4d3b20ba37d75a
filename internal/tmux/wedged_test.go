package tmux

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sophonz/st/internal/testutil"
)

// TestEndWedgedServer: st finds the server of its own socket by its
// process (a server takes no client while it is wedged, so nothing can be
// asked of it through the socket), and only that one: a server on
// another socket is left running.
func TestEndWedgedServer(t *testing.T) {
	mine := testutil.NewTmux(t, testutil.ShortTempDir(t))
	other := testutil.NewTmux(t, testutil.ShortTempDir(t))
	for _, tm := range []*testutil.Tmux{mine, other} {
		os.MkdirAll(filepath.Dir(tm.Socket), 0o700)
		if _, err := tm.Run("-f", "/dev/null", "new-session", "-d", "-s", "a", "sh"); err != nil {
			t.Fatal(err)
		}
	}
	pidOf := func(tm *testutil.Tmux) int {
		out, err := tm.Run("display-message", "-p", "#{pid}")
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(out))
		return pid
	}
	mp, op := pidOf(mine), pidOf(other)
	if got := serverProcess(mine.Socket); got != mp {
		t.Fatalf("serverProcess = %d, want the server's pid %d", got, mp)
	}
	if !New(mine.Socket).EndWedgedServer() {
		t.Fatal("EndWedgedServer found no server")
	}
	testutil.WaitFor(t, 5*time.Second, func() (bool, string) {
		return syscall.Kill(mp, 0) != nil, "the server of st's socket still runs"
	})
	if syscall.Kill(op, 0) != nil {
		t.Error("the server of another socket was ended")
	}
	if New(filepath.Join(testutil.ShortTempDir(t), "none")).EndWedgedServer() {
		t.Error("a socket with no server found one")
	}
}
