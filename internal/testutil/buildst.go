package testutil

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// The st binary is 20 MB. Each test binary that runs it builds it once,
// into a folder of $TMPDIR named for the test process (st-bin-PID-*),
// and removes that folder when its tests end: Main, called from the
// package's TestMain. A test process killed before (a -timeout, kill -9)
// leaves its folder, which the next BuildST removes once that process is
// gone.

var (
	buildOnce sync.Once
	builtDir  string
	builtBin  string
	buildErr  error
	// mainRuns is set by Main: BuildST refuses to build without it, as
	// nothing would remove the binary.
	mainRuns atomic.Bool
)

// Main runs the tests of a package that builds st (call it from its
// TestMain: func TestMain(m *testing.M) { testutil.Main(m) }), then
// removes the binary BuildST built; cleanups run after the tests, first.
func Main(m *testing.M, cleanups ...func()) {
	mainRuns.Store(true)
	code := m.Run()
	for _, c := range cleanups {
		c()
	}
	if builtDir != "" {
		if err := os.RemoveAll(builtDir); err != nil {
			fmt.Fprintf(os.Stderr, "testutil: remove the st binary's folder: %v\n", err)
		}
	}
	os.Exit(code)
}

// BuildST builds the st binary once per test process and returns its path.
func BuildST(t testing.TB) string {
	t.Helper()
	if !mainRuns.Load() {
		t.Fatal("BuildST needs the package's TestMain to call testutil.Main, which removes the 20 MB binary when the tests end: " +
			"func TestMain(m *testing.M) { testutil.Main(m) }")
	}
	buildOnce.Do(func() {
		removeOrphanBuilds()
		dir, err := os.MkdirTemp("", fmt.Sprintf("st-bin-%d-", os.Getpid()))
		if err != nil {
			buildErr = err
			return
		}
		builtDir, builtBin = dir, filepath.Join(dir, "st")
		// st and, beside it, st-control-plane, which st control-plane runs.
		cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), "./cmd/st", "./cmd/st-control-plane")
		cmd.Dir = ModuleRoot()
		// Static, as scripts/install builds them.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// removeOrphanBuilds removes this user's st-bin-PID-* folders whose test
// process is gone.
func removeOrphanBuilds() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "st-bin-*-*"))
	for _, d := range dirs {
		pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(d), "st-bin-"), "-", 2)[0])
		if err != nil || pid <= 0 || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue // not such a folder, or its process still runs
		}
		if fi, err := os.Lstat(d); err == nil && fi.IsDir() && ownedByMe(fi) {
			os.RemoveAll(d)
		}
	}
}

func ownedByMe(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// BuildSTAt builds the st of an earlier commit into dir/st and returns
// its path: the commit's source is taken with `git archive` into
// dir/src (the repository and its work tree stay as they are), built,
// and removed. It needs a clone that has the commit.
func BuildSTAt(dir, commit string) (string, error) {
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o700); err != nil {
		return "", err
	}
	defer os.RemoveAll(src)
	archive := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", ModuleRoot(), commit, src)
	if out, err := archive.CombinedOutput(); err != nil {
		return "", fmt.Errorf("the source of %s (git archive; a clone with its history is needed): %v\n%s", commit, err, out)
	}
	bin := filepath.Join(dir, "st")
	build := exec.Command("go", "build", "-o", bin, "./cmd/st")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build st at %s: %v\n%s", commit, err, out)
	}
	return bin, nil
}
