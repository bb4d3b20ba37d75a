package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// CheckNoLeaks fails t when, after its other cleanups, a process of its
// own still runs: an st daemon or client, an agent, a tmux server, any
// process whose command line or environment names dir (the test's own
// folder: its ST_HOME, TMUX_TMPDIR or HOME live there). It waits a little
// for processes that are on their way out (a pane's program after its
// server was killed), then ends the rest, by pid, so that one leak does
// not spoil the next test. Call it before anything else registers a
// cleanup: cleanups run last-in first-out, so it runs after them all.
func CheckNoLeaks(t testing.TB, dir string) {
	t.Helper()
	if dir == "" || dir == "/" {
		t.Fatalf("CheckNoLeaks needs the test's own folder, not %q", dir)
	}
	t.Cleanup(func() {
		var left []int
		deadline := time.Now().Add(5 * time.Second)
		for {
			left = ProcessesOf(dir)
			if len(left) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if len(left) == 0 {
			return
		}
		var desc []string
		for _, pid := range left {
			desc = append(desc, fmt.Sprintf("%d %s", pid, cmdline(pid)))
			syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Errorf("the test left %d process(es) of its own running (ended now): %s", len(left), strings.Join(desc, "; "))
	})
}

// ProcessesOf lists the pids of processes (other than this one) whose
// command line or environment names dir.
func ProcessesOf(dir string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		base := filepath.Join("/proc", e.Name())
		if st, err := os.ReadFile(filepath.Join(base, "stat")); err == nil {
			if i := strings.LastIndexByte(string(st), ')'); i >= 0 && strings.HasPrefix(string(st[i+1:]), " Z") {
				continue // a zombie: it has ended, only its parent must reap it
			}
		}
		cmd, _ := os.ReadFile(filepath.Join(base, "cmdline"))
		env, _ := os.ReadFile(filepath.Join(base, "environ"))
		if strings.Contains(string(cmd), dir) || strings.Contains(string(env), dir) {
			out = append(out, pid)
		}
	}
	return out
}

func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	s := strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}
