package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sophonz/st/internal/testutil"
)

// scripts/install, as a new user runs it: a HOME of its own, a PATH with
// Go and git but not the folder it installs into. It builds st there,
// stamped with the checkout's commit, and says how to put the folder on
// PATH; with PREFIX, it installs under PREFIX/bin instead.
func TestInstallScript(t *testing.T) {
	t.Parallel()
	root := testutil.ModuleRoot()
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	commit := strings.TrimSpace(string(head))[:12]
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	// Go's caches of the tester, so the build is not a cold one; HOME is new.
	cache := func(name string) string {
		out, err := exec.Command("go", "env", name).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", name, err)
		}
		return strings.TrimSpace(string(out))
	}
	path := strings.Join([]string{filepath.Dir(goBin), filepath.Dir(gitBin), "/usr/bin", "/bin"}, string(os.PathListSeparator))
	run := func(home string, extra ...string) string {
		t.Helper()
		cmd := exec.Command("sh", filepath.Join(root, "scripts", "install"))
		cmd.Dir = t.TempDir() // not the checkout: the script finds it itself
		cmd.Env = append([]string{"HOME=" + home, "PATH=" + path, "GOCACHE=" + cache("GOCACHE"), "GOMODCACHE=" + cache("GOMODCACHE"),
			"GOPATH=" + cache("GOPATH"), "GOFLAGS=" + cache("GOFLAGS"), "GOTOOLCHAIN=local"}, extra...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("scripts/install: %v\n%s", err, out)
		}
		return string(out)
	}

	home := t.TempDir()
	out := run(home)
	bindir := filepath.Join(home, ".local", "bin")
	st := filepath.Join(bindir, "st")
	for _, want := range []string{
		bindir + " is not on your PATH",
		`echo 'export PATH="` + bindir + `:$PATH"' >> ~/.profile`,
		"installed st ",
		"next: st setup",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("scripts/install does not say %q:\n%s", want, out)
		}
	}
	ver, err := exec.Command(st, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", st, err)
	}
	if !strings.Contains(string(ver), "(commit "+commit) {
		t.Errorf("st version = %q, want the commit %s", ver, commit)
	}
	var names []string
	entries, _ := os.ReadDir(bindir)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "st st-control-plane" {
		t.Errorf("%s holds %q, want st and st-control-plane alone (no temporary file left)", bindir, names)
	}
	checkInstalledControlPlane(t, st, home, path)

	// PREFIX, already on PATH: no PATH advice.
	prefix := t.TempDir()
	path = filepath.Join(prefix, "bin") + string(os.PathListSeparator) + path
	out = run(t.TempDir(), "PREFIX="+prefix)
	if strings.Contains(out, "not on your PATH") || !strings.Contains(out, "at "+filepath.Join(prefix, "bin", "st")) {
		t.Errorf("scripts/install with PREFIX on PATH:\n%s", out)
	}
}

// checkInstalledControlPlane: st control-plane runs the st-control-plane
// installed beside st (not on PATH here), which keeps the control plane's
// database; an st without it beside it or on PATH says what to install,
// and makes nothing.
func checkInstalledControlPlane(t *testing.T, st, home, path string) {
	t.Helper()
	data := filepath.Join(t.TempDir(), "cp")
	// st tells it its own build, over whatever the environment said: the
	// pair installed together is one build, and says nothing of it.
	acct := exec.Command(st, "control-plane", "account", "add", "acme", "--data", data)
	acct.Env = []string{"HOME=" + home, "PATH=" + path, "ST_HOME=" + filepath.Join(t.TempDir(), "h"),
		"ST_CONTROL_PLANE_CALLER=st 0.0.1 (commit 0123456789ab)"}
	if out, err := acct.CombinedOutput(); err != nil || !strings.Contains(string(out), "st login --control-plane") || strings.Contains(string(out), "another build") {
		t.Errorf("st control-plane account add with the installed st: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(data, "state.db")); err != nil {
		t.Errorf("st control-plane account add made no database: %v", err)
	}
	// An st without st-control-plane beside it or on PATH says what to
	// install, and makes nothing.
	lone := filepath.Join(t.TempDir(), "st")
	if b, err := os.ReadFile(st); err != nil || os.WriteFile(lone, b, 0o755) != nil {
		t.Fatalf("copy st: %v", err)
	}
	data2 := filepath.Join(t.TempDir(), "cp")
	acct = exec.Command(lone, "control-plane", "account", "add", "acme", "--data", data2)
	acct.Env = []string{"HOME=" + home, "PATH=" + path, "ST_HOME=" + filepath.Join(t.TempDir(), "h")}
	if out, err := acct.CombinedOutput(); err == nil || !strings.Contains(string(out), "st control-plane runs st-control-plane") ||
		!strings.Contains(string(out), "Try: install both: scripts/install") {
		t.Errorf("st control-plane with no st-control-plane: %v\n%s", err, out)
	}
	if _, err := os.Stat(data2); err == nil {
		t.Errorf("st control-plane with no st-control-plane made %s", data2)
	}
}
