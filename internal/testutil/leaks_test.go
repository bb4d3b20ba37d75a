package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// recorder is a testing.TB that keeps its cleanups and errors, to run
// CheckNoLeaks's cleanup by hand and see what it reports.
type recorder struct {
	testing.TB
	cleanups []func()
	errs     []string
}

func (r *recorder) Helper()          {}
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) runCleanups() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// sleeper starts `sleep 60` with KEY=VALUE in its environment and ends it
// at the end of the test if it is still there.
func sleeper(t *testing.T, kv string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.Env = append(os.Environ(), kv)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	return cmd
}

func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !strings.Contains(string(data), ") Z ")
}

// A process of the test's folder that outlives the test fails it and is
// ended; a process of another folder whose name only starts the same
// (another test's /tmp/st1234 beside this /tmp/st123) is not touched.
func TestCheckNoLeaksFailsAndEndsOnlyItsOwn(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "stleak")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	own := sleeper(t, "ST_HOME="+dir+"/h")
	other := sleeper(t, "ST_HOME="+dir+"9/h")
	r := &recorder{TB: t}
	CheckNoLeaks(r, dir)
	r.runCleanups()
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], fmt.Sprint(own.Process.Pid)) || !strings.Contains(r.errs[0], "left 1 process") {
		t.Errorf("CheckNoLeaks reported %q, want one leak naming pid %d", r.errs, own.Process.Pid)
	}
	WaitFor(t, 10*time.Second, func() (bool, string) {
		return !alive(own.Process.Pid), fmt.Sprintf("the leaked sleep %d still runs", own.Process.Pid)
	})
	if !alive(other.Process.Pid) || syscall.Kill(other.Process.Pid, 0) != nil {
		t.Errorf("CheckNoLeaks ended %d, a process of another folder (%s9)", other.Process.Pid, dir)
	}
}

// With nothing left, it reports nothing.
func TestCheckNoLeaksQuietWhenClean(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "stleak")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command("sh", "-c", "exit 0")
	cmd.Env = append(os.Environ(), "ST_HOME="+dir)
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	r := &recorder{TB: t}
	CheckNoLeaks(r, dir)
	r.runCleanups()
	if len(r.errs) != 0 {
		t.Errorf("CheckNoLeaks reported %q for a test that left nothing", r.errs)
	}
}

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"ST_HOME=/tmp/st12/h\x00", true},
		{"/tmp/st12\x00", true},
		{"PATH=/tmp/st12:/usr/bin", true},
		{"/tmp/st12", true},
		{"ST_HOME=/tmp/st123/h", false},
		{"/tmp/st12x /tmp/st12.b", false},
		{"/tmp/st123 /tmp/st12/x", true},
	} {
		if got := names([]byte(tc.text), "/tmp/st12"); got != tc.want {
			t.Errorf("names(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

func blockHere(ch chan struct{}) { <-ch }

// WaitBlocked finds a goroutine parked in the named function, and only
// once it is parked there.
func TestBlocked(t *testing.T) {
	if Blocked("testutil.blockHere") {
		t.Fatal("Blocked found a goroutine in blockHere before one started")
	}
	ch := make(chan struct{})
	done := make(chan struct{})
	go func() { blockHere(ch); close(done) }()
	WaitBlocked(t, 10*time.Second, "testutil.blockHere")
	close(ch)
	<-done
	if Blocked("testutil.blockHere") {
		t.Error("Blocked still finds blockHere after it returned")
	}
}
