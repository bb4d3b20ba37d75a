package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
)

// These tests run command lines in-process against a fake daemon, a test
// per command group: what the flags and arguments become on the wire (the
// route and request the daemon is asked), and what the user sees of the
// answer (stdout, stderr, the exit status), a refusal of the daemon
// (api.Error: its message, then "Try: " and its hint) among them.

// runCase is one command line: where it runs, what the daemon answers,
// what it must be asked, and what the user must see.
type runCase struct {
	name string
	args []string
	// pane is $TMUX_PANE: "" runs it outside tmux.
	pane  string
	stdin string
	// down leaves the daemon down (st down).
	down bool
	// vars are more of st's environment (KEY: VALUE).
	vars    map[string]string
	answers map[string]any
	// asked are the requests the daemon must get, in order.
	asked []asked
	code  int
	// stdout and stderr are what is printed, exactly ({home} is ST_HOME);
	// stdoutRE, when set, is matched instead of stdout.
	stdout, stderr string
	stdoutRE       string
}

// asked is a request the daemon must get: on route, req decoded as its
// own type and compared whole, or check run on the raw body.
type asked struct {
	route string
	req   any
	check func(t *testing.T, body []byte)
}

// checkRuns runs each case against a fake daemon of its own.
func checkRuns(t *testing.T, cases []runCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newFakeDaemon(t, c.answers)
			if !c.down {
				d.start()
			}
			vars := d.inPaneVars(c.pane)
			if c.pane == "" {
				delete(vars, "TMUX")
			}
			for k, v := range c.vars {
				vars[k] = v
			}
			r := &stRun{d: d, vars: vars, stdin: c.stdin}
			code := r.run(c.args...)
			checkAsked(t, d, c.asked)
			home := func(s string) string { return strings.ReplaceAll(s, "{home}", d.home) }
			if code != c.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.code, r.stdout.String(), r.stderr.String())
			}
			switch out := r.stdout.String(); {
			case c.stdoutRE != "":
				if !regexp.MustCompile(`^(?s)` + home(c.stdoutRE) + `$`).MatchString(out) {
					t.Errorf("stdout:\n%s\nwant it to match:\n%s", out, c.stdoutRE)
				}
			case out != home(c.stdout):
				t.Errorf("stdout:\n%s\nwant:\n%s", out, home(c.stdout))
			}
			if errs := r.stderr.String(); errs != home(c.stderr) {
				t.Errorf("stderr:\n%s\nwant:\n%s", errs, home(c.stderr))
			}
		})
	}
}

// checkAsked compares what the daemon was asked with what it must be.
func checkAsked(t *testing.T, d *fakeDaemon, want []asked) {
	t.Helper()
	calls := d.taken()
	var wantRoutes []string
	for _, w := range want {
		wantRoutes = append(wantRoutes, w.route)
	}
	if got := d.routes(); !reflect.DeepEqual(got, wantRoutes) {
		t.Errorf("the daemon was asked %v, want %v", got, wantRoutes)
		return
	}
	for i, w := range want {
		if w.check != nil {
			w.check(t, calls[i].Body)
			continue
		}
		got := decodeAs(t, calls[i].Body, w.req)
		if env, ok := envOf(got); ok {
			// passEnv names the keys of the test process's own
			// environment (ST_SIM_*, CODEX_HOME...) with their values in
			// the command's: none here.
			for k, v := range env {
				if v == "" {
					delete(env, k)
				}
			}
		}
		if !reflect.DeepEqual(got, w.req) {
			t.Errorf("%s was asked\n%s\nwant\n%s", w.route, js(got), js(w.req))
		}
	}
}

// envOf is the environment a start or task request carries.
func envOf(req any) (map[string]string, bool) {
	switch r := req.(type) {
	case api.StartRequest:
		return r.Env, r.Env != nil
	case api.TaskRequest:
		return r.Env, r.Env != nil
	}
	return nil, false
}

// refusal is an answer of the daemon that refuses, as api.Error crosses
// the socket.
func refusal(kind, msg, hint string) *api.Error {
	return &api.Error{Kind: kind, Message: msg, Hint: hint}
}

// notInTmux is what a command that acts for its pane says outside tmux.
func notInTmux(cmd string) string {
	return "st: " + cmd + " acts for the tmux pane it runs in, and this shell is not in tmux ($TMUX_PANE is empty)\n" +
		"Try: run it inside a pane of the tmux session where the agents are\n"
}

// stDown is what a command says when st is not running.
const stDown = "st: st is not running (nothing answers on {home}/st.sock)\nTry: st up\n"

func TestRunDaemon(t *testing.T) {
	status := api.StatusInfo{PID: 42, Version: "1.4.0", Home: "/h", Socket: "/h/st.sock", TmuxSocket: "/tmp/tmux-0/st",
		Started: time.Now(), Web: "http://127.0.0.1:7766/st/", Orch: api.Status{Runs: 1, Workers: 3, Live: 2}}
	broken := status
	broken.Orch.Problems = []string{"run.json could not be read; it was kept aside as run.json.corrupt-1"}
	broken.Web, broken.WebError = "", refusal(api.KindConflict, "port 7800 (web_port) is taken", "set another web_port in config.toml")
	stopped := answerFunc(func(d *fakeDaemon, _ []byte) any {
		// The daemon removes its socket as it stops; st down waits for that.
		os.Remove(api.SocketPath(d.home))
		return map[string]int{"pid": 42}
	})
	checkRuns(t, []runCase{{
		name: "status", args: []string{"status"},
		answers: map[string]any{api.RouteStatus: status}, asked: []asked{{api.RouteStatus, struct{}{}, nil}},
		stdoutRE: `st 1\.4\.0 is running \(pid 42, up [0-9]+s\)\n  home:   /h\n  socket: /h/st\.sock\n  tmux:   /tmp/tmux-0/st\n` +
			`  web:    http://127\.0\.0\.1:7766/st/ \(st web prints it with its token\)\n  runs: 1, workers: 3 \(2 alive\)\n`,
	}, {
		name: "status says what to fix", args: []string{"status"},
		answers: map[string]any{api.RouteStatus: broken}, asked: []asked{{api.RouteStatus, struct{}{}, nil}},
		stdoutRE: `st 1\.4\.0 is running .*  web:    off: port 7800 \(web_port\) is taken\n  Try: set another web_port in config\.toml\n  runs: 1, workers: 3 \(2 alive\)\n`,
		stderr: "st: warning: run.json could not be read; it was kept aside as run.json.corrupt-1\n" +
			"st: warning: the web UI is off: port 7800 (web_port) is taken\nTry: set another web_port in config.toml\n",
	}, {
		name: "status while st is down", args: []string{"status"}, down: true,
		code: 1, stderr: stDown,
	}, {
		name: "up when st runs", args: []string{"up"},
		answers: map[string]any{api.RouteStatus: status}, asked: []asked{{api.RouteStatus, struct{}{}, nil}},
		stdout: "st is running (pid 42, /h/st.sock)\n",
	}, {
		name: "ls", args: []string{"ls"},
		answers: map[string]any{api.RouteLs: []api.LsSession{{Name: "work", Agents: 2, Windows: []api.LsWindow{
			{Index: "0", Name: "coord", Panes: []string{"%1"}, Agents: []string{"%1 claude coordinator"}},
			{Index: "1", Name: "api", Panes: []string{"%3", "%4"}, Agents: []string{"%3 sim worker"}}}}},
			api.RouteStatus: api.StatusInfo{}},
		asked:  []asked{{api.RouteLs, struct{}{}, nil}, {api.RouteStatus, struct{}{}, nil}},
		stdout: "SESSION     WINDOWS  AGENTS\nwork        2        2\n  0: coord  %1       %1 claude coordinator\n  1: api    %3 %4    %3 sim worker\n",
	}, {
		// Near a limit, in st ls's summary as in st status: one line per
		// account near one (the 7-day window at 40 % is not), after the
		// attention line.
		name: "ls near a limit", args: []string{"ls"},
		answers: map[string]any{api.RouteLs: []api.LsSession{{Name: "work", Agents: 1, Attention: 1, Windows: []api.LsWindow{
			{Index: "0", Name: "coord", Panes: []string{"%1"}, Agents: []string{"%1 claude coordinator (needs you: gate)"}}}}},
			api.RouteStatus: api.StatusInfo{Orch: api.Status{Limits: []api.AgentLimit{
				{Agent: "claude", Account: "ann@example.com", Window: "5-hour", UsedPercent: 92, Near: true},
				{Agent: "claude", Account: "ann@example.com", Window: "7-day", UsedPercent: 40},
				{Agent: "claude", Account: "/home/u/.claude-work", Window: "5-hour", UsedPercent: 81.4, Near: true},
				{Agent: "codex", Window: "5-hour", UsedPercent: 85, Near: true}}}}},
		asked: []asked{{api.RouteLs, struct{}{}, nil}, {api.RouteStatus, struct{}{}, nil}},
		stdout: "SESSION     WINDOWS  AGENTS\nwork        1        1\n  0: coord  %1       %1 claude coordinator (needs you: gate)\n" +
			"1 agents need you (st attention lists them)\n" +
			"near a limit: claude (ann@example.com): 5-hour limit 92 % used\n" +
			"near a limit: claude (/home/u/.claude-work): 5-hour limit 81 % used\n" +
			"near a limit: codex: 5-hour limit 85 % used\n",
	}, {
		name: "ls --json", args: []string{"ls", "--json"},
		answers: map[string]any{api.RouteLs: []api.LsSession{{Name: "work", Agents: 0, Windows: []api.LsWindow{}}}},
		asked:   []asked{{api.RouteLs, struct{}{}, nil}},
		stdout:  "[\n  {\n    \"id\": \"\",\n    \"name\": \"work\",\n    \"agents\": 0,\n    \"windows\": []\n  }\n]\n",
	}, {
		name: "ls refused", args: []string{"ls"},
		answers: map[string]any{api.RouteLs: refusal(api.KindInternal, "tmux list-panes: exit status 1: lost server", "st doctor")},
		asked:   []asked{{api.RouteLs, struct{}{}, nil}},
		code:    1, stderr: "st: tmux list-panes: exit status 1: lost server\nTry: st doctor\n",
	}, {
		name: "web", args: []string{"web"},
		answers: map[string]any{api.RouteWeb: api.WebURL{URL: "http://127.0.0.1:7801/st/?token=abc"},
			api.RouteStatus: api.StatusInfo{WebNote: "port 7801, since 7766 is taken"}},
		asked:  []asked{{api.RouteWeb, struct{}{}, nil}, {api.RouteStatus, struct{}{}, nil}},
		stdout: "http://127.0.0.1:7801/st/?token=abc\n", stderr: "st: note: the web UI is on port 7801, since 7766 is taken\n",
	}, {
		name: "down", args: []string{"down"},
		answers: map[string]any{api.RouteShutdown: stopped}, asked: []asked{{api.RouteShutdown, struct{}{}, nil}},
		stdout: "st stopped (pid 42)\n",
	}, {
		name: "down while st is down", args: []string{"down"}, down: true,
		stdout: "st is not running\n",
	}})
}

// TestRunDaemonForeground: st daemon runs the daemon cmd/st gave it, in
// ST_HOME, logging to stderr, and ends with the exit status it answers
// (another st holding ST_HOME: 4, which a login service does not retry).
func TestRunDaemonForeground(t *testing.T) {
	home := t.TempDir()
	var out, errb strings.Builder
	var gotHome string
	env := Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return map[string]string{"ST_HOME": home}[k] },
		Daemon: func(_ context.Context, h, stBin string, log io.Writer, getenv func(string) string) (int, error) {
			gotHome = h
			if !filepath.IsAbs(stBin) || log != &errb || getenv("ST_HOME") != home {
				t.Errorf("the daemon got st %q, log %v, ST_HOME %q", stBin, log, getenv("ST_HOME"))
			}
			return 4, errors.New("st is already running for " + h + "\nTry: st status, or st down to stop it")
		}}
	if code := Main([]string{"daemon"}, env); code != 4 || gotHome != home {
		t.Errorf("st daemon: exit %d in %q, want 4 in %s", code, gotHome, home)
	}
	if want := "st: st is already running for " + home + "\nTry: st status, or st down to stop it\n"; errb.String() != want || out.Len() != 0 {
		t.Errorf("stderr %q, stdout %q; want %q and nothing", errb.String(), out.String(), want)
	}

	env.Daemon = nil // a program that is not st: a test's Main
	errb.Reset()
	if code := Main([]string{"daemon"}, env); code != 1 || errb.String() != "st: st daemon runs in the st program only; this one has no daemon in it\n" {
		t.Errorf("st daemon with no daemon linked: exit %d, %q", code, errb.String())
	}
}
