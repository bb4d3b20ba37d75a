package daemon

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sophonz/st/internal/atlogin"
	"github.com/sophonz/st/internal/store"
)

// TestServeWhileAnotherRuns: st daemon on a home another daemon holds ends
// with atlogin.ExitRunning (so that the login service does not start it
// again) and says what to do; it starts nothing.
func TestServeWhileAnotherRuns(t *testing.T) {
	home := t.TempDir()
	lock, ok, err := store.TryLock(filepath.Join(home, "daemon.lock")) // the other daemon
	if err != nil || !ok {
		t.Fatalf("lock: %v %v", ok, err)
	}
	defer lock.Unlock()
	getenv := func(string) string { return "" }
	code, err := Serve(context.Background(), home, "/usr/bin/st", nil, getenv)
	if code != atlogin.ExitRunning || err == nil {
		t.Fatalf("Serve on a held home = %d, %v; want exit %d and an error", code, err, atlogin.ExitRunning)
	}
	if msg := err.Error(); !strings.Contains(msg, "st is already running for "+home) || !strings.Contains(msg, "\nTry: st status, or st down to stop it") {
		t.Errorf("Serve said %q; want that st is already running for %s, and what to try", msg, home)
	}
}
