package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoDaemonFromATestBinary: Main run in-process (a test) is not the
// st program, so a command that finds st down says so and starts nothing.
// Before SelfIsST, it ran "<test binary> daemon", which ran the package's
// tests again, each starting more: CI's load went past 100 and real
// Claude Code commands hung.
func TestNoDaemonFromATestBinary(t *testing.T) {
	home := filepath.Join(t.TempDir(), "st")
	vars := map[string]string{"ST_HOME": home, "HOME": t.TempDir(), "PATH": "/usr/bin:/bin"}
	code, out, errb := runST(t, vars, "worker", "list", "--all")
	if code == 0 || !strings.Contains(errb, "st is not running") {
		t.Errorf("st worker list with st down: exit %d\n%s%s\nwant a failure saying st is not running", code, out, errb)
	}
	if strings.Contains(errb, "so it was started") {
		t.Errorf("an in-process st started a daemon:\n%s", errb)
	}
	for _, f := range []string{"daemon.log", "up.lock"} {
		if _, err := os.Stat(filepath.Join(home, f)); err == nil {
			t.Errorf("%s exists: a daemon start was tried", f)
		}
	}
}
