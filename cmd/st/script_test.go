package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/testutil"
)

// TestScripts runs testdata/script/*.txtar: each drives the real st binary
// against a private tmux server and the sim agent.
//
// Each script gets ST_HOME and TMUX_TMPDIR in a short temporary folder,
// no TMUX or TMUX_PANE of the outside, and these commands:
//
//	tmux-start SESSION [DIR]   start the private server with a session; later
//	                           commands run "in" its first pane (TMUX_PANE)
//	tmux ARGS...               tmux on the private server
//	st-up                      st up, and kill the daemon by pid at the end
//	kill-daemon                kill -9 the daemon
//	wait-screen PANE REGEXP [TIMEOUT]   poll capture-pane until it matches
//	wait-state ID STATE [TIMEOUT]       poll st worker list --all --json
//	wait-file FILE [TIMEOUT]   poll until a file exists
//	wait-file-match FILE REGEXP [TIMEOUT]  poll until a file's text matches
//	capture PANE               print a pane's screen to stdout
//	in-pane PANE               later commands act for PANE ($TMUX_PANE); PANE
//	                           is a pane id (%3) or a tmux target (main:b)
//	bg NAME CMD [ARGS...]      start CMD in the background (a process group of
//	                           its own, the script's environment), its stdout
//	                           in NAME.out, its stderr in NAME.err and, once
//	                           it ends, "rc=N" in NAME.rc
//	hold-port NAME [PORT]      listen on a free port of 127.0.0.1 (or PORT)
//	                           until the script ends (another program on
//	                           it), its number in $NAME
//	release-port NAME          close hold-port NAME's listener
//	fetch FILE                 GET the URL on FILE's first line; print the
//	                           status code, then the body
//	run-try                    run each "Try: ..." line of the last command's
//	                           stdout, as a shell would (st doctor's fixes)
//	wait-bg NAME [TIMEOUT]     wait until NAME ends; its stdout and stderr
//	                           become the command's; it fails unless NAME
//	                           exited 0 (with !, unless it exited non-zero)
//	signal-bg NAME INT|TERM    send NAME's process SIGINT (Ctrl-C) or SIGTERM
//
// The condition [root] holds when the scripts run as root (CI does).
//
// With !, a wait-* command waits for the opposite (the screen or file no
// longer matches, the file is gone, the worker is in another state) and
// fails when the condition still holds at the deadline; ! st-up expects
// st up to fail. The other commands refuse !.
//
// A bg command still running at the end fails the script (its group is
// killed), and so does any process of the script's own (its folder in
// the command line or environment) left after the daemon and the tmux
// server are stopped.
func TestScripts(t *testing.T) {
	bin := testutil.BuildST(t)
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join(testutil.ModuleRoot(), "testdata", "script"),
		Setup: func(e *testscript.Env) error {
			dir, err := os.MkdirTemp("/tmp", "sts")
			if err != nil {
				return err
			}
			e.Defer(func() { os.RemoveAll(dir) })
			// Deferred before the rest, so it runs after them (after the
			// daemon and the tmux server are killed, before the folder
			// goes): no process of the script may be left.
			e.Defer(func() {
				if left := testutil.EndLeftovers(dir, 5*time.Second); len(left) > 0 {
					e.T().Fatal(fmt.Sprintf("the script left %d process(es) of its own running (ended now): %s", len(left), strings.Join(left, "; ")))
				}
			})
			e.Values["t"] = e.T()
			e.Values["bg"] = map[string]*bgProc{}
			e.Values["held"] = map[string]net.Listener{}
			home := filepath.Join(dir, "h")
			tdir := filepath.Join(dir, "t")
			os.MkdirAll(tdir, 0o700)
			e.Setenv("ST_HOME", home)
			e.Setenv("TMUX_TMPDIR", tdir)
			e.Setenv("TMUX", "")
			e.Setenv("TMUX_PANE", "")
			e.Setenv("ST_BIN", bin)
			e.Setenv("ST_WEB_PORT", "auto") // scripts run side by side
			// A deadline, not a figure: under the whole suite's load (real
			// agents and Chromium beside the scripts) a sim's first hook
			// has come 30 s after its window opened, which is st's own
			// limit for a start. Scripts that test that limit set theirs.
			e.Setenv("ST_HOOK_TIMEOUT", "2m")
			e.Setenv("PATH", filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
			e.Setenv("HOME", filepath.Join(dir, "home"))
			os.MkdirAll(filepath.Join(dir, "home"), 0o700)
			sock := filepath.Join(tdir, fmt.Sprintf("tmux-%d", os.Getuid()), "default")
			os.MkdirAll(filepath.Dir(sock), 0o700) // tmux -S does not make it
			e.Values["sock"] = sock
			e.Defer(func() { exec.Command("tmux", "-S", sock, "kill-server").Run() })
			e.Defer(func() { testutil.StopDaemon(home) })
			// Keep the daemon's log of every script, to read when one fails.
			name := filepath.Base(e.WorkDir)
			e.Defer(func() {
				if data, err := os.ReadFile(filepath.Join(home, "daemon.log")); err == nil {
					dir := filepath.Join(artifacts(), "scripts")
					os.MkdirAll(dir, 0o755)
					os.WriteFile(filepath.Join(dir, name+".log"), data, 0o644)
				}
			})
			return nil
		},
		// [root]: the script runs as root, which may act as another user
		// (chown a folder to one).
		Condition: func(cond string) (bool, error) {
			if cond == "root" {
				return os.Getuid() == 0, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"tmux-start":      cmdTmuxStart,
			"tmux":            cmdTmux,
			"st-up":           cmdStUp,
			"kill-daemon":     cmdKillDaemon,
			"wait-screen":     cmdWaitScreen,
			"wait-state":      cmdWaitState,
			"wait-file":       cmdWaitFile,
			"wait-file-match": cmdWaitFileMatch,
			"capture":         cmdCapture,
			"push-server":     cmdPushServer,
			"push-answer":     cmdPushAnswer,
			"free-port":       cmdFreePort,
			"hold-port":       cmdHoldPort,
			"release-port":    cmdReleasePort,
			"fetch":           cmdFetch,
			"in-pane":         cmdInPane,
			"bg":              cmdBg,
			"wait-bg":         cmdWaitBg,
			"signal-bg":       cmdSignalBg,
			"run-try":         cmdRunTry,
		},
	})
}

// cmdKillDaemon is kill-daemon (killDaemon).
func cmdKillDaemon(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "kill-daemon")
	killDaemon(ts.Getenv("ST_HOME"))
}

// artifacts is where tests leave files to look at: $ST_ARTIFACTS, or
// artifacts/ in the module.
func artifacts() string {
	if d := os.Getenv("ST_ARTIFACTS"); d != "" {
		return d
	}
	return filepath.Join(testutil.ModuleRoot(), "artifacts")
}

func sockOf(ts *testscript.TestScript) string { return ts.Value("sock").(string) }

func tmuxRun(ts *testscript.TestScript, args ...string) (string, error) {
	cmd := exec.Command("tmux", append([]string{"-S", sockOf(ts)}, args...)...)
	cmd.Env = testutil.Env(os.Environ(), "TMUX_TMPDIR="+ts.Getenv("TMUX_TMPDIR"), "ST_HOME="+ts.Getenv("ST_HOME"),
		"PATH="+ts.Getenv("PATH"), "HOME="+ts.Getenv("HOME"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// noNeg refuses ! for a command that has no opposite to check.
func noNeg(ts *testscript.TestScript, neg bool, name string) {
	if neg {
		ts.Fatalf("unsupported: ! %s (it has no failure to expect)", name)
	}
}

func cmdTmuxStart(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "tmux-start")
	if len(args) < 1 {
		ts.Fatalf("usage: tmux-start SESSION [DIR]")
	}
	dir := ts.Getenv("WORK")
	if len(args) > 1 {
		dir = ts.MkAbs(args[1])
	}
	// A plain shell stands for a person at a coordinator pane.
	_, err := tmuxRun(ts, "-f", "/dev/null", "new-session", "-d", "-s", args[0], "-x", "200", "-y", "50", "-c", dir,
		"-e", "ST_HOME="+ts.Getenv("ST_HOME"), "-e", "PATH="+ts.Getenv("PATH"), "sh")
	ts.Check(err)
	out, err := tmuxRun(ts, "display-message", "-p", "-t", args[0]+":", "#{pane_id} #{pid}")
	ts.Check(err)
	f := strings.Fields(out)
	ts.Setenv("TMUX_PANE", f[0])
	ts.Setenv("TMUX", sockOf(ts)+","+f[1]+",0")
}

func cmdTmux(ts *testscript.TestScript, neg bool, args []string) {
	out, err := tmuxRun(ts, args...)
	ts.Stdout().Write([]byte(out))
	if neg {
		if err == nil {
			ts.Fatalf("tmux %v succeeded unexpectedly", args)
		}
		return
	}
	ts.Check(err)
}

func cmdStUp(ts *testscript.TestScript, neg bool, args []string) {
	err := ts.Exec("st", "up")
	if neg {
		if err == nil {
			ts.Fatalf("st up succeeded unexpectedly")
		}
		return
	}
	ts.Check(err)
}

// cmdInPane makes later commands act for a pane: an id (%3) as it is, or
// a tmux target (main:b) as the id of the pane it names now.
func cmdInPane(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "in-pane")
	if len(args) != 1 {
		ts.Fatalf("usage: in-pane PANE")
	}
	pane := args[0]
	if !strings.HasPrefix(pane, "%") {
		out, err := tmuxRun(ts, "display-message", "-p", "-t", pane, "#{pane_id}")
		ts.Check(err)
		pane = strings.TrimSpace(out)
	}
	ts.Setenv("TMUX_PANE", pane)
}

// killDaemon kills the daemon of home with SIGKILL and waits until it is
// gone, so that the script's next step sees a dead daemon.
func killDaemon(home string) {
	if pid := testutil.DaemonPID(home); pid != 0 {
		syscall.Kill(pid, syscall.SIGKILL)
		testutil.WaitGone(pid, 2*time.Second)
	}
}

func parseTimeout(ts *testscript.TestScript, args []string, i int, def time.Duration) time.Duration {
	if len(args) > i {
		d, err := time.ParseDuration(args[i])
		ts.Check(err)
		return d
	}
	return def
}

func cmdWaitScreen(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: wait-screen PANE REGEXP [TIMEOUT]")
	}
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	deadline := time.Now().Add(parseTimeout(ts, args, 2, 20*time.Second))
	var last string
	for time.Now().Before(deadline) {
		out, err := tmuxRun(ts, "capture-pane", "-p", "-t", args[0])
		if err == nil {
			last = out
			if re.MatchString(out) != neg {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	ts.Fatalf("screen of %s never matched %q (neg=%v); last screen:\n%s", args[0], args[1], neg, last)
}

// cmdWaitState polls st worker list --all --json until worker ID (its id
// or name) is in STATE (with !, until it is listed in another state). The
// worker is the one workerNamed picks: a past worker of that name does
// not answer for the one that has it now.
func cmdWaitState(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: wait-state ID STATE [TIMEOUT]")
	}
	deadline := time.Now().Add(parseTimeout(ts, args, 2, 20*time.Second))
	var last string
	for time.Now().Before(deadline) {
		cmd := exec.Command(ts.Getenv("ST_BIN"), "worker", "list", "--all", "--json")
		cmd.Env = scriptEnv(ts)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		last = string(out) + stderr.String()
		var ws []api.WorkerView
		if err == nil && json.Unmarshal(out, &ws) == nil {
			if w, ok := workerNamed(ws, args[0]); ok && (string(w.State) == args[1]) != neg {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if neg {
		ts.Fatalf("worker %s never left %s (or was never listed); last list:\n%s", args[0], args[1], last)
	}
	ts.Fatalf("worker %s never reached %s; last list:\n%s", args[0], args[1], last)
}

// workerNamed is the worker of ws whose id or name is idOrName: the live
// one (State.Live) when there is one, else a past one; of several, the
// one started last.
func workerNamed(ws []api.WorkerView, idOrName string) (api.WorkerView, bool) {
	var best api.WorkerView
	found := false
	for _, w := range ws {
		if w.ID != idOrName && w.Name != idOrName {
			continue
		}
		live, bestLive := w.State.Live(), best.State.Live()
		if !found || live && !bestLive || live == bestLive && w.StartedAt.After(best.StartedAt) {
			best, found = w, true
		}
	}
	return best, found
}

func scriptEnv(ts *testscript.TestScript) []string {
	var env []string
	for _, k := range []string{"ST_HOME", "TMUX_TMPDIR", "PATH", "HOME", "TMUX", "TMUX_PANE", "ST_WEB_PORT"} {
		env = append(env, k+"="+ts.Getenv(k))
	}
	return env
}

// cmdWaitFile polls until FILE exists (with !, until it is gone).
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: wait-file FILE [TIMEOUT]")
	}
	path := ts.MkAbs(args[0])
	deadline := time.Now().Add(parseTimeout(ts, args, 1, 20*time.Second))
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); (err == nil) != neg {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	if neg {
		ts.Fatalf("%s is still there", path)
	}
	ts.Fatalf("%s never appeared", path)
}

func cmdWaitFileMatch(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: wait-file-match FILE REGEXP [TIMEOUT]")
	}
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	path := ts.MkAbs(args[0])
	deadline := time.Now().Add(parseTimeout(ts, args, 2, 20*time.Second))
	var last []byte
	for time.Now().Before(deadline) {
		last, _ = os.ReadFile(path)
		if re.Match(last) != neg {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	if neg {
		ts.Fatalf("%s still matches %q; it holds:\n%s", path, args[1], last)
	}
	ts.Fatalf("%s never matched %q; it holds:\n%s", path, args[1], last)
}

// cmdPushServer starts an ntfy-style push target on 127.0.0.1 that appends
// each request (headers and body) to a file, and sets ST_PUSH_URL for the
// daemon that st-up starts next.
func cmdPushServer(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "push-server")
	if len(args) != 1 {
		ts.Fatalf("usage: push-server LOGFILE")
	}
	path := ts.MkAbs(args[0])
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	var mu sync.Mutex
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			// Everything the push service got: every header, then the body.
			fmt.Fprintf(f, "%s %s\n", r.Method, r.URL)
			r.Header.Write(f)
			fmt.Fprintf(f, "\n%s\n---\n", body)
			f.Close()
		}
	})}
	go srv.Serve(ln)
	ts.Defer(func() { srv.Close() })
	ts.Setenv("ST_PUSH_URL", "http://"+ln.Addr().String()+"/st-gates")
}

// cmdPushAnswer replays what the push service received, as the push app
// would: it takes the last Actions header of LOGFILE, finds the action
// labelled OPTION ("http, <label>, <url>, method=POST, clear=true"), and
// makes exactly that request (no body, nothing added). It prints the
// status and the answer's body; with ! it expects the answer refused.
func cmdPushAnswer(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: push-answer LOGFILE OPTION")
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	var actions string
	for _, line := range strings.Split(string(data), "\n") {
		if a, ok := strings.CutPrefix(line, "Actions: "); ok {
			actions = a
		}
	}
	for _, a := range strings.Split(actions, "; ") {
		f := strings.Split(a, ", ")
		if len(f) < 3 || f[0] != "http" || f[1] != args[1] {
			continue
		}
		method := http.MethodPost
		for _, kv := range f[3:] {
			if m, ok := strings.CutPrefix(kv, "method="); ok {
				method = m
			}
		}
		req, err := http.NewRequest(method, f[2], nil)
		ts.Check(err)
		res, err := http.DefaultClient.Do(req)
		ts.Check(err)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		fmt.Fprintf(ts.Stdout(), "%d %s", res.StatusCode, body)
		if ok := res.StatusCode == http.StatusOK; ok == neg {
			ts.Fatalf("push answer %s: %d %s", args[1], res.StatusCode, body)
		}
		return
	}
	ts.Fatalf("no action labelled %q in the push: %q", args[1], actions)
}

// cmdFreePort sets NAME to a free port of 127.0.0.1.
func cmdFreePort(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "free-port")
	if len(args) != 1 {
		ts.Fatalf("usage: free-port NAME")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	ts.Setenv(args[0], port)
}

func cmdHoldPort(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "hold-port")
	if len(args) != 1 && len(args) != 2 {
		ts.Fatalf("usage: hold-port NAME [PORT]")
	}
	port := "0"
	if len(args) == 2 {
		port = args[1]
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	ts.Check(err)
	ts.Defer(func() { ln.Close() })
	ts.Value("held").(map[string]net.Listener)[args[0]] = ln
	_, port, _ = net.SplitHostPort(ln.Addr().String())
	ts.Setenv(args[0], port)
}

// cmdReleasePort closes the listener of hold-port NAME: the port is free.
func cmdReleasePort(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "release-port")
	if len(args) != 1 {
		ts.Fatalf("usage: release-port NAME")
	}
	ln, ok := ts.Value("held").(map[string]net.Listener)[args[0]]
	if !ok {
		ts.Fatalf("release-port: no hold-port %s", args[0])
	}
	ln.Close()
}

func cmdFetch(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "fetch")
	if len(args) != 1 {
		ts.Fatalf("usage: fetch FILE")
	}
	u, _, _ := strings.Cut(ts.ReadFile(args[0]), "\n")
	c := http.Client{Timeout: 10 * time.Second}
	res, err := c.Get(strings.TrimSpace(u))
	ts.Check(err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	ts.Check(err)
	fmt.Fprintf(ts.Stdout(), "%d\n%s", res.StatusCode, body)
}

func cmdCapture(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "capture")
	if len(args) != 1 {
		ts.Fatalf("usage: capture PANE")
	}
	out, err := tmuxRun(ts, "capture-pane", "-p", "-t", args[0])
	ts.Check(err)
	ts.Stdout().Write([]byte(out))
}

// cmdRunTry runs, in order and once each, the commands that the "Try: "
// lines of the last command's stdout name, with sh -c in the script's
// environment, as a person would type them; it fails when there is none
// or one fails.
func cmdRunTry(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "run-try")
	seen := map[string]bool{}
	for _, line := range strings.Split(ts.ReadFile("stdout"), "\n") {
		try, ok := strings.CutPrefix(strings.TrimSpace(line), "Try: ")
		if !ok || seen[try] {
			continue
		}
		seen[try] = true
		fmt.Fprintf(ts.Stdout(), "$ %s\n", try)
		ts.Check(ts.Exec("sh", "-c", try))
	}
	if len(seen) == 0 {
		ts.Fatalf("run-try: no Try: line in the last stdout")
	}
}
