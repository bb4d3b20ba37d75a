package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// bgProc is a command a script started with bg: tracked until it ends,
// so that none outlives its script unnoticed.
type bgProc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed once it has ended and NAME.rc is written
	rc   int
	seen bool // wait-bg has reported how it ended
}

// cmdBg starts a command in the background, in a process group of its own
// (so that it and whatever it starts can be ended together), with the
// script's environment and folder. Its stdout and stderr go to NAME.out
// and NAME.err as it runs (a step can wait for a line with
// wait-file-match); when it ends, NAME.rc holds "rc=N". A bg command
// still running when the script ends fails the script.
func cmdBg(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! bg (say what it should end with in wait-bg)")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: bg NAME CMD [ARGS...]")
	}
	name := args[0]
	procs := ts.Value("bg").(map[string]*bgProc)
	if procs[name] != nil {
		ts.Fatalf("bg %s: a command of that name was already started", name)
	}
	path := lookPath(ts, args[1])
	out, err := os.Create(ts.MkAbs(name + ".out"))
	ts.Check(err)
	defer out.Close()
	errf, err := os.Create(ts.MkAbs(name + ".err"))
	ts.Check(err)
	defer errf.Close()
	cmd := exec.Command(path, args[2:]...)
	cmd.Dir = ts.MkAbs(".")
	cmd.Env = scriptEnviron(ts)
	cmd.Stdout, cmd.Stderr = out, errf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	ts.Check(cmd.Start())
	p := &bgProc{name: name, cmd: cmd, done: make(chan struct{})}
	procs[name] = p
	rcFile := ts.MkAbs(name + ".rc")
	go func() {
		err := cmd.Wait()
		p.rc = 0
		if err != nil {
			p.rc = -1
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				p.rc = ee.ExitCode()
			}
		}
		os.WriteFile(rcFile, fmt.Appendf(nil, "rc=%d\n", p.rc), 0o644)
		close(p.done)
	}()
	t := ts.Value("t").(testscript.T)
	ts.Defer(func() {
		select {
		case <-p.done:
			return
		default:
		}
		p.stop()
		if !p.seen {
			t.Fatal(fmt.Sprintf("bg %s (%s) was still running at the end of the script (its process group is killed now): "+
				"a script waits for what it starts (wait-bg %s) or ends it", name, strings.Join(args[1:], " "), name))
		}
	})
}

// stop kills p's process group and waits (a little) for p to be reaped.
func (p *bgProc) stop() {
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
}

// cmdWaitBg waits until a bg command ends, makes its stdout and stderr
// the step's, and checks how it ended: exit 0, or with ! anything else
// (NAME.rc says which).
func cmdWaitBg(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: wait-bg NAME [TIMEOUT]")
	}
	name := args[0]
	p := ts.Value("bg").(map[string]*bgProc)[name]
	if p == nil {
		ts.Fatalf("wait-bg %s: no bg command of that name", name)
	}
	timeout := parseTimeout(ts, args, 1, 30*time.Second)
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.seen = true
		p.stop()
		ts.Fatalf("bg %s still ran after %s (killed now); stdout:\n%s\nstderr:\n%s", name, timeout,
			ts.ReadFile(name+".out"), ts.ReadFile(name+".err"))
	}
	p.seen = true
	ts.Stdout().Write([]byte(ts.ReadFile(name + ".out")))
	ts.Stderr().Write([]byte(ts.ReadFile(name + ".err")))
	if (p.rc == 0) == neg {
		ts.Fatalf("bg %s ended with rc=%d", name, p.rc)
	}
}

// cmdSignalBg sends a signal (INT or TERM) to a bg command, as Ctrl-C or
// a kill(1) would: to st's own process, not its group.
func cmdSignalBg(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "signal-bg")
	if len(args) != 2 {
		ts.Fatalf("usage: signal-bg NAME INT|TERM")
	}
	p := ts.Value("bg").(map[string]*bgProc)[args[0]]
	if p == nil {
		ts.Fatalf("signal-bg %s: no bg command of that name", args[0])
	}
	sig, ok := map[string]syscall.Signal{"INT": syscall.SIGINT, "TERM": syscall.SIGTERM}[args[1]]
	if !ok {
		ts.Fatalf("signal-bg: %s is not a signal it sends (INT or TERM)", args[1])
	}
	ts.Check(p.cmd.Process.Signal(sig))
}

// lookPath finds a command as the script's exec would: a name without a
// slash on the script's $PATH.
func lookPath(ts *testscript.TestScript, name string) string {
	if strings.Contains(name, "/") {
		return ts.MkAbs(name)
	}
	for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	ts.Fatalf("%s is not on the script's PATH", name)
	return ""
}

// scriptEnviron is the script's whole environment, as its exec gives a
// command (testscript keeps it to itself): env -0 prints it into a file.
func scriptEnviron(ts *testscript.TestScript) []string {
	f, err := os.CreateTemp("", "st-script-env")
	ts.Check(err)
	f.Close()
	defer os.Remove(f.Name())
	ts.Check(ts.Exec("sh", "-c", `exec env -0 > "$0"`, f.Name()))
	data, err := os.ReadFile(f.Name())
	ts.Check(err)
	var env []string
	for _, kv := range bytes.Split(data, []byte{0}) {
		if len(kv) > 0 {
			env = append(env, string(kv))
		}
	}
	return env
}
