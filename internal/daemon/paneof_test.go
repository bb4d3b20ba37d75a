package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/tmux"
)

// TestPaneOfTakesNoClaimOnTrust: the pane a caller names ($TMUX_PANE) is
// asked about first, but it is the answer only when tmux says its first
// process is among the caller's parents and it is alive; a pane named
// falsely, a pane of no server, or a dead pane whose pid the chain holds
// is not, and the look at every pane finds the real one (or none), as it
// did before the name was asked about (issue 36 item 8). Real tmux.
func TestPaneOfTakesNoClaimOnTrust(t *testing.T) {
	tm := testutil.NewTmux(t, testutil.ShortTempDir(t))
	// tmux -S does not make the socket's folder.
	if err := os.MkdirAll(filepath.Dir(tm.Socket), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := tm.Run("-f", "/dev/null", "new-session", "-d", "-s", "p", "sleep 600"); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"split-window", "-t", "p:", "sleep 600"},
		{"set-option", "-g", "remain-on-exit", "on"},
		{"split-window", "-t", "p:", "true"},
	} {
		if _, err := tm.Run(args...); err != nil {
			t.Fatal(err)
		}
	}
	type pane struct {
		id   string
		pid  int
		dead bool
	}
	var a, b, dead pane
	testutil.WaitFor(t, 30*time.Second, func() (bool, string) {
		out, err := tm.Run("list-panes", "-a", "-F", "#{pane_id} #{pane_pid} #{pane_dead} #{pane_start_command}")
		if err != nil {
			return false, err.Error()
		}
		var ps []pane
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			if len(f) < 3 {
				return false, out
			}
			pid, _ := strconv.Atoi(f[1])
			ps = append(ps, pane{f[0], pid, f[2] == "1"})
		}
		if len(ps) != 3 || !ps[2].dead {
			return false, out
		}
		a, b, dead = ps[0], ps[1], ps[2]
		return !a.dead && !b.dead, out
	})
	s := &server{tmux: tmux.New(tm.Socket)}
	const caller, shell = 999990, 999991 // pids of no pane: the caller and its shell
	for _, c := range []struct {
		name  string
		chain []int
		hint  string
		want  string
	}{
		{"no name: every pane is looked at", []int{caller, shell, a.pid, 1}, "", a.id},
		{"its own pane named", []int{caller, shell, a.pid, 1}, a.id, a.id},
		{"another pane named", []int{caller, shell, a.pid, 1}, b.id, a.id},
		{"another pane named, from no pane", []int{caller, shell, 1}, b.id, ""},
		{"a pane of no server named", []int{caller, a.pid}, "%99999", a.id},
		{"not a pane id", []int{caller, a.pid}, "a.id", a.id},
		{"a dead pane named, its pid in the chain", []int{caller, dead.pid}, dead.id, ""},
		{"a dead pane's pid in the chain, no name", []int{caller, dead.pid}, "", ""},
	} {
		if got := s.paneOf(context.Background(), c.chain, c.hint); got != c.want {
			t.Errorf("%s: paneOf(%v, %q) = %q, want %q (panes: a %+v, b %+v, dead %+v)", c.name, c.chain, c.hint, got, c.want, a, b, dead)
		}
	}
}
