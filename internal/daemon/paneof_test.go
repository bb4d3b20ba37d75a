package daemon

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/tmux"
	"golang.org/x/sys/unix"
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

// TestListedPaneOfNeedsTheListedProcess: the pane a caller names is taken
// from the last listing of tmux's layout, with no question to tmux, only
// when the process tmux listed as its first is among the caller's
// parents and started before the listing began; a pid the listing holds
// but whose process came after it (a pid used again), another pane's
// process, a pane the listing does not hold, or a chain whose start
// times /proc did not tell, leaves it to paneOf. Real tmux, real
// processes and their start times from /proc.
func TestListedPaneOfNeedsTheListedProcess(t *testing.T) {
	ids, pids := twoPanes(t)
	startOf := func(pid int) uint64 {
		pi, err := realProc.info(pid)
		if err != nil || pi.start == 0 {
			t.Fatalf("/proc/%d: %v (start %d)", pid, err, pi.start)
		}
		return pi.start
	}
	// The listing begins once both panes' processes started, each in a
	// tick of /proc's clock (10 ms) that has passed.
	after := int64(max(startOf(pids[0]), startOf(pids[1]))+1) * int64(10*time.Millisecond)
	testutil.WaitFor(t, 10*time.Second, func() (bool, string) { return monotonic(t) >= after, "the clock past the panes' starts" })
	listed := monotonic(t)
	root := func(pane string) (int, int64, bool) {
		for i, id := range ids {
			if id == pane {
				return pids[i], listed, true
			}
		}
		return 0, 0, false
	}
	a, b := pids[0], pids[1]
	const caller, shell = 999990, 999991
	// A process that started after the listing, standing for one that
	// took a listed pane's pid once that pane's process had ended.
	late := exec.Command("sleep", "600")
	if err := late.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { late.Process.Kill(); late.Wait() })
	lateStart := startOf(late.Process.Pid)
	lateRoot := func(pane string) (int, int64, bool) {
		if pane == ids[0] {
			return late.Process.Pid, listed, true
		}
		return root(pane)
	}
	for _, c := range []struct {
		name   string
		root   func(string) (int, int64, bool)
		chain  []int
		starts []uint64
		hint   string
		want   string
	}{
		{"its own pane named", root, []int{caller, shell, a, 1}, []uint64{1, 1, startOf(a), 1}, ids[0], ids[0]},
		{"another pane named", root, []int{caller, shell, a, 1}, []uint64{1, 1, startOf(a), 1}, ids[1], ""},
		{"no name", root, []int{caller, a}, []uint64{1, startOf(a)}, "", ""},
		{"a pane the listing does not hold", root, []int{caller, a}, []uint64{1, startOf(a)}, "%999", ""},
		{"the listed pid, its process started after the listing", lateRoot, []int{caller, late.Process.Pid}, []uint64{1, lateStart}, ids[0], ""},
		{"start times not told", root, []int{caller, a}, nil, ids[0], ""},
		{"a start time of 0", root, []int{caller, a}, []uint64{1, 0}, ids[0], ""},
		{"the other pane's own", root, []int{caller, b}, []uint64{1, startOf(b)}, ids[1], ids[1]},
	} {
		if got := listedPaneOf(c.root, c.chain, c.starts, c.hint); got != c.want {
			t.Errorf("%s: listedPaneOf(%v, %v, %q) = %q, want %q (panes %v, pids %v)", c.name, c.chain, c.starts, c.hint, got, c.want, ids, pids)
		}
	}
}

// twoPanes starts a tmux server of two panes, each running sleep, and
// returns their ids and first processes.
func twoPanes(t *testing.T) (ids []string, pids []int) {
	t.Helper()
	tm := testutil.NewTmux(t, testutil.ShortTempDir(t))
	if err := os.MkdirAll(filepath.Dir(tm.Socket), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := tm.Run("-f", "/dev/null", "new-session", "-d", "-s", "p", "sleep 600"); err != nil {
		t.Fatal(err)
	}
	if _, err := tm.Run("split-window", "-t", "p:", "sleep 600"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, func() (bool, string) {
		out, err := tm.Run("list-panes", "-a", "-F", "#{pane_id} #{pane_pid}")
		if err != nil {
			return false, err.Error()
		}
		ids, pids = nil, nil
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			if len(f) != 2 {
				return false, out
			}
			pid, _ := strconv.Atoi(f[1])
			ids, pids = append(ids, f[0]), append(pids, pid)
		}
		return len(ids) == 2, out
	})
	return ids, pids
}

// monotonic is CLOCK_MONOTONIC now, in ns.
func monotonic(t *testing.T) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return ts.Nano()
}
