// Package testutil holds what st's tests share: a private tmux server per
// test (TMUX_TMPDIR in a temporary folder, TMUX and TMUX_PANE unset, only
// that server killed at the end), the st binary built once, and a
// WaitFor that polls with a deadline instead of sleeping and hoping.
package testutil

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// WaitFor polls cond until it returns true or timeout passes, and fails
// the test with what cond last said.
func WaitFor(t testing.TB, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ShortTempDir makes a temporary folder with a short path (unix socket
// paths must stay under 108 bytes) and removes it at the end of the test.
// A process that names the folder (a tmux server, a daemon, an agent with
// its ST_HOME or TMUX_TMPDIR there) and still runs after the test's other
// cleanups fails the test (CheckNoLeaks).
func ShortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "st")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	CheckNoLeaks(t, dir)
	return dir
}

// Tmux is a private tmux server for one test.
type Tmux struct {
	Dir    string // its TMUX_TMPDIR
	Socket string
}

// NewTmux returns a private server in a new folder; nothing runs until a
// session is made. The server is killed in cleanup; no other server is touched.
func NewTmux(t testing.TB, dir string) *Tmux {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed: scripts/test installs it")
	}
	tm := &Tmux{Dir: dir, Socket: filepath.Join(dir, fmt.Sprintf("tmux-%d", os.Getuid()), "default")}
	// After every other cleanup of the test: nothing of this server's
	// (its panes' programs, a daemon or client with its TMUX_TMPDIR) may
	// outlive it.
	CheckNoLeaks(t, dir)
	t.Cleanup(tm.Kill)
	return tm
}

// Kill ends the server and waits for its process to go: a server with
// many windows takes seconds to exit on a loaded machine, and the leak
// check after it should see only real leftovers.
func (tm *Tmux) Kill() { KillServer(tm.Run) }

// KillServer ends the tmux server that run talks to: kill-server, then
// a wait for its process to go. A server still there after 30 s (seen
// once in CI, its pane's agent long gone) is sent SIGTERM, then SIGKILL:
// its pid is the one this server itself gave.
//
// A pane's process group may outlive its terminal (Gemini CLI goes on
// running on a deleted one): each pane's group, led by the pane's first
// process, which this server started, is ended too.
func KillServer(run func(args ...string) (string, error)) {
	out, _ := run("display-message", "-p", "#{pid}")
	panes, _ := run("list-panes", "-a", "-F", "#{pane_pid}")
	run("kill-server")
	defer endPaneGroups(panes)
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil || pid <= 1 {
		return
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		if WaitGone(pid, 30*time.Second) {
			return
		}
		syscall.Kill(pid, sig)
	}
	WaitGone(pid, 5*time.Second)
}

// endPaneGroups ends the process groups of a list-panes of pane pids
// (SIGTERM, then SIGKILL after 5 s).
func endPaneGroups(list string) {
	var pids []int
	for _, f := range strings.Fields(list) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
			pids = append(pids, pid)
		}
	}
	for _, pid := range pids {
		syscall.Kill(-pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for syscall.Kill(-pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		syscall.Kill(-pid, syscall.SIGKILL)
	}
}

// StopDaemon ends the st daemon whose pid is in home's st.pid (SIGTERM,
// then SIGKILL if it is still there after 10 s) and waits for it to go.
// A test stops its daemon before its tmux server, never after: a daemon
// that sees its server die brings it back (the reboot row of
// tests/faults), and a server it starts while the test is cleaning up
// outlives the test (seen in CI: TestClaudeAgentTeam's cleanup killed
// the server first, and the daemon restored the coordinator's shell and
// the lead's placeholder pane in a new server before its SIGTERM came).
func StopDaemon(home string) {
	pid := DaemonPID(home)
	if pid == 0 {
		return
	}
	syscall.Kill(pid, syscall.SIGTERM)
	if !WaitGone(pid, 10*time.Second) {
		syscall.Kill(pid, syscall.SIGKILL)
		WaitGone(pid, 5*time.Second)
	}
}

// DaemonPID is the pid in home's st.pid, 0 when there is none.
func DaemonPID(home string) int {
	data, err := os.ReadFile(filepath.Join(home, "st.pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 {
		return 0
	}
	return pid
}

// WaitGone waits up to d for process pid to end, and says whether it did.
func WaitGone(pid int, d time.Duration) bool {
	for deadline := time.Now().Add(d); syscall.Kill(pid, 0) == nil; {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// Run runs tmux on this server only.
func (tm *Tmux) Run(args ...string) (string, error) {
	cmd := exec.Command("tmux", append([]string{"-S", tm.Socket}, args...)...)
	cmd.Env = Env(os.Environ(), "TMUX_TMPDIR="+tm.Dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("tmux %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

// Env returns env with TMUX and TMUX_PANE removed and the given
// KEY=VALUE pairs set.
func Env(env []string, set ...string) []string {
	drop := map[string]bool{"TMUX": true, "TMUX_PANE": true}
	for _, kv := range set {
		k, _, _ := strings.Cut(kv, "=")
		drop[k] = true
	}
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			out = append(out, kv)
		}
	}
	return append(out, set...)
}

// ModuleRoot finds the folder of go.mod above this file.
func ModuleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

// Within runs fn and fails the test when it panics or has not returned
// in d: a fuzzed input that makes a parser loop fails instead of hanging
// the fuzzer.
func Within(t testing.TB, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	var panicked any
	go func() {
		defer close(done)
		defer func() { panicked = recover() }()
		fn()
	}()
	select {
	case <-done:
		if panicked != nil {
			t.Fatalf("%s panicked: %v", what, panicked)
		}
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// SyncBuffer is a buffer that one goroutine (a server's log, a command)
// writes while the test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
