package main

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// build builds hookstamp to run the program st and note on sock.
func build(t *testing.T, dir, st, sock string) string {
	t.Helper()
	bin := filepath.Join(dir, "st")
	cmd := exec.Command("go", "build", "-o", bin, "-ldflags", "-X main.stBin="+st+" -X main.stampSock="+sock, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// fakeST writes a program that stands for st: it copies its stdin to the
// file got, prints its arguments and exits 3.
func fakeST(t *testing.T, dir string) (prog, got string) {
	t.Helper()
	prog, got = filepath.Join(dir, "fake-st"), filepath.Join(dir, "got")
	script := "#!/bin/sh\ncat > '" + got + "'\necho \"args: $*\"\nexit 3\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return prog, got
}

// shortDir is a temporary folder whose path fits a unix socket's.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TestNotesAndHandsOn: hookstamp hands its arguments, its stdin and st's
// exit status through, and notes start, stdin and end, in that order,
// with its pid and st's status, CPU time and wait for a core.
func TestNotesAndHandsOn(t *testing.T) {
	dir := shortDir(t)
	prog, got := fakeST(t, dir)
	sock := filepath.Join(dir, "s")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	bin := build(t, dir, prog, sock)
	cmd := exec.Command(bin, "hook", "claude", "Stop")
	cmd.Stdin = strings.NewReader(`{"hook_event_name":"Stop"}`)
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("exit: %v, want st's status 3", err)
	}
	if string(out) != "args: hook claude Stop\n" {
		t.Errorf("st's output: %q", out)
	}
	if data, _ := os.ReadFile(got); string(data) != `{"hook_event_name":"Stop"}` {
		t.Errorf("st's stdin: %q", data)
	}
	var notes [][]string
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	for len(notes) < 3 {
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("after %d notes %q: %v", len(notes), notes, err)
		}
		notes = append(notes, strings.Fields(string(buf[:n])))
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	var last int64
	for i, want := range []string{"start", "stdin", "end"} {
		f := notes[i]
		if len(f) != 10 || f[0] != want || f[1] != pid || strings.Join(f[7:], " ") != "hook claude Stop" {
			t.Fatalf("note %d: %q, want %s from pid %s with 7 numbers and the arguments", i, f, want, pid)
		}
		at, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || at < last {
			t.Errorf("note %d: time %s before the one before (%d)", i, f[2], last)
		}
		last = at
	}
	end := notes[2]
	if end[3] != "3" {
		t.Errorf("end note's status %s, want 3", end[3])
	}
	if cpu, err := strconv.Atoi(end[4]); err != nil || cpu < 0 {
		t.Errorf("end note's CPU time %q", end[4])
	}
	waited, err := strconv.Atoi(end[6])
	if _, serr := os.Stat("/proc/self/schedstat"); serr == nil && (err != nil || waited < 0) {
		t.Errorf("end note's wait for a core %q, with /proc/PID/schedstat there", end[6])
	}
}

// TestNoListener: with no benchmark listening, st still runs and its
// status comes back.
func TestNoListener(t *testing.T) {
	dir := shortDir(t)
	prog, got := fakeST(t, dir)
	bin := build(t, dir, prog, filepath.Join(dir, "nobody"))
	cmd := exec.Command(bin, "version")
	cmd.Stdin = strings.NewReader("x")
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("exit: %v, want st's status 3", err)
	}
	if data, _ := os.ReadFile(got); string(data) != "x" {
		t.Errorf("st's stdin: %q", data)
	}
}
