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
		if left := EndLeftovers(dir, 5*time.Second); len(left) > 0 {
			t.Errorf("the test left %d process(es) of its own running (ended now): %s", len(left), strings.Join(left, "; "))
		}
	})
}

// EndLeftovers waits up to wait for the processes that name dir to end
// (a pane's program after its server was killed is on its way out), then
// kills the rest with SIGKILL, by pid, and describes each one it killed.
func EndLeftovers(dir string, wait time.Duration) []string {
	var left []int
	deadline := time.Now().Add(wait)
	for {
		left = ProcessesOf(dir)
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	var desc []string
	for _, pid := range left {
		desc = append(desc, fmt.Sprintf("%d %s", pid, cmdline(pid)))
		syscall.Kill(pid, syscall.SIGKILL)
	}
	return desc
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
		if names(cmd, dir) || names(env, dir) {
			out = append(out, pid)
		}
	}
	return out
}

// names reports whether text names the folder dir itself or a path
// under it: dir not followed by more of a file name, so that a test's
// /tmp/st123 does not claim another test's /tmp/st1234 (MkdirTemp's
// names differ only in their digits).
func names(text []byte, dir string) bool {
	s := string(text)
	for {
		i := strings.Index(s, dir)
		if i < 0 {
			return false
		}
		s = s[i+len(dir):]
		if s == "" || !isNameByte(s[0]) {
			return true
		}
	}
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	s := strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}
