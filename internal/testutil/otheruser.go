package testutil

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// OtherUser is a local user made for one test: another person on the
// machine, whose programs st must not trust.
type OtherUser struct {
	Name     string
	UID, GID int
}

// NewOtherUser makes a local user of its own for the test (useradd, no
// home, no login shell) and removes it at the end (userdel, which fails
// while a process of that user still runs: the test ends its own first).
// Making a user needs root: without it the test is skipped, saying why;
// CI runs as root, so there it always runs.
func NewOtherUser(t testing.TB) OtherUser {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skipf("this test runs a server as another local user, and making one (useradd) needs root (uid %d here); "+
			"CI runs it as root. Try: sudo go test -run '%s' ./...", os.Getuid(), t.Name())
	}
	b := make([]byte, 4)
	rand.Read(b)
	name := "st-other-" + hex.EncodeToString(b)
	var out []byte
	var err error
	// useradd waits for no lock: another test making a user at the same
	// moment makes it fail with "cannot lock /etc/passwd".
	for try := 0; try < 20; try++ {
		out, err = exec.Command("useradd", "--system", "--no-create-home", "--user-group",
			"--shell", "/usr/sbin/nologin", "--home-dir", "/nonexistent", name).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "lock") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("useradd %s: %v\n%s", name, err, out)
	}
	t.Cleanup(func() {
		for try := 0; try < 20; try++ {
			out, err := exec.Command("userdel", name).CombinedOutput()
			if err == nil {
				return
			}
			if !strings.Contains(string(out), "lock") || try == 19 {
				t.Errorf("userdel %s: %v\n%s", name, err, out)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return OtherUser{Name: name, UID: uid, GID: gid}
}

// Command runs name as this user, in /, with only env for environment.
func (u OtherUser) Command(env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = "/"
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID), Groups: []uint32{}}}
	return cmd
}

// CopySelf copies this test binary into a folder of its own that every
// user may read and run (the one go test built sits in a folder only its
// owner may enter), and returns its path: to run it as another user.
func CopySelf(t testing.TB) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	dir := ShortTempDir(t)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, filepath.Base(self))
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}
