package cli

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sophonz/st/internal/testutil"
)

// fuzzCommands are the commands FuzzArgs runs: those whose arguments are
// parsed and checked in this process before the daemon is asked. Left
// out: what starts processes or writes the user's files (up, daemon,
// setup, hooks, plugin, agent, login, control-plane, web, doctor) and the
// hook, which refuses nothing.
var fuzzCommands = map[string]bool{"worker": true, "gate": true, "task": true, "orch": true, "ls": true, "status": true, "version": true, "help": true}

// refusingDaemon is an HTTP client whose every call is refused as the
// daemon refuses, and counted: a command that asked the daemon was not
// refused by its parsing.
func refusingDaemon(calls *atomic.Int32) func(string) *http.Client {
	return func(string) *http.Client {
		return &http.Client{Transport: roundTrip(func(*http.Request) (*http.Response, error) {
			calls.Add(1)
			return &http.Response{StatusCode: http.StatusConflict, Header: http.Header{},
				Body: io.NopCloser(strings.NewReader(`{"kind":"conflict","error":"the daemon refused","hint":"nothing"}`))}, nil
		})}
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// FuzzArgs runs st's command line on any arguments (one a line of the
// input), in a pane, with a daemon that refuses every call. Whatever the
// command line refuses itself, before it asks the daemon, is refused as
// st refuses: with a Try line, and in no words of Go's (a type, a
// package, a parser's message).
func FuzzArgs(f *testing.F) {
	dir := f.TempDir()
	task := filepath.Join(dir, "t.md")
	os.WriteFile(task, []byte("summary: ok\n"), 0o600)
	for _, s := range []string{
		"gate ask\nok?\n--option\nyes\n--option\nno\n--timeout\n-1s",
		"gate ask\nok?\n--option\nyes\n--timeout\n99999999h",
		"gate ask\nok?\n--timeout\nsoon",
		"gate ask\nok?\n--timeout",
		"worker wait\nw\n--timeout\n-5m",
		"worker wait\nw\n--timeout\n0",
		"worker wait\nw\n--timeout\n9223372036854775807ns",
		"worker done\n--retry\n1e9h",
		"worker done\n--summary\n",
		"worker start\n--agent\nsim\n--task\n" + task + "\n--fan\nmany",
		"worker start\n--agent\nsim\n--task\n" + task + "\n--name\n-x",
		"worker start\n--agent\nsim\n--task\n" + task + "\n--nmae\nx",
		"worker start\n--agent\nsim\n--task\n" + task + "\n-n\nx",
		"worker start\n--agent\nsim",
		"worker start\n--agent\nsim\n--task\n" + dir,
		"worker start\n--agent\nsim\n--task\n/nonexistent/t.md",
		"worker start\n--worktree=maybe\n--agent\nsim\n--task\n" + task,
		"worker stop\nw",
		"worker read",
		"worker read\na\nb",
		"worker send\nw",
		"worker rename\nw",
		"task create\nx\n--task",
		"orch start\n--objective",
		"ls\n---x",
		"status\n--json=3",
		"worker\nnosuch",
		"version\nextra",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		args := strings.Split(in, "\n")
		if cmd, _, _ := strings.Cut(args[0], " "); !fuzzCommands[cmd] {
			return
		}
		args = append(strings.Fields(args[0]), args[1:]...)
		var calls atomic.Int32
		var out, errb bytes.Buffer
		env := map[string]string{"ST_HOME": filepath.Join(dir, "h"), "TMUX_PANE": "%1", "HOME": dir}
		code := Main(args, Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
			Getenv: func(k string) string { return env[k] }, HTTPClient: refusingDaemon(&calls)})
		if code == 0 || calls.Load() > 0 {
			return // it parsed, or the daemon refused it
		}
		msg := errb.String()
		if !strings.Contains("\n"+msg, "\nTry: ") {
			t.Fatalf("st %q refused without a Try line (exit %d):\n%s", args, code, msg)
		}
		if w := testutil.GoWord(msg); w != "" {
			t.Fatalf("st %q: the refusal carries %q:\n%s", args, w, msg)
		}
	})
}

// TestDurationFlagWords: a duration flag refuses a negative, a value
// beyond the largest it takes (saying that largest), and what is no
// duration, in st's words, before anything is asked of the daemon; and
// flags and arguments st does not take are refused with a Try line.
func TestDurationFlagWords(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"gate", "ask", "ok?", "--option", "a", "--option", "b", "--timeout", "-1s"},
			"st: --timeout -1s: a duration below zero waits for nothing\nTry: give --timeout a duration of 0 or more, such as 90s, 15m or 2h\n"},
		{[]string{"gate", "ask", "ok?", "--timeout", "99999999h"},
			"st: --timeout 99999999h: it is longer than st takes\nTry: give --timeout at most 8760h (a year)\n"},
		{[]string{"worker", "wait", "w", "--timeout", "9000h"},
			"st: --timeout 9000h: it is longer than st takes\nTry: give --timeout at most 8760h (a year)\n"},
		{[]string{"worker", "wait", "w", "--timeout", "-5m"},
			"st: --timeout -5m: a duration below zero waits for nothing\nTry: give --timeout a duration of 0 or more, such as 90s, 15m or 2h\n"},
		{[]string{"worker", "done", "--retry", "soon"},
			"st: --retry soon: it is not a duration\nTry: give --retry a number and a unit, such as 90s, 15m or 2h\n"},
		{[]string{"worker", "start", "--agent", "sim", "--fan", "many"},
			"st: --fan many: it is not a whole number, such as 3\nTry: st worker start --help lists its flags\n"},
		{[]string{"worker", "start", "--nmae", "x"},
			"st: st worker start has no flag --nmae\nTry: st worker start --help lists its flags\n"},
		{[]string{"version", "extra"},
			"st: unknown command \"extra\" for \"st version\"\nTry: st version --help says what it takes\n"},
	} {
		var calls atomic.Int32
		var out, errb bytes.Buffer
		env := map[string]string{"ST_HOME": t.TempDir(), "TMUX_PANE": "%1"}
		code := Main(tt.args, Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
			Getenv: func(k string) string { return env[k] }, HTTPClient: refusingDaemon(&calls)})
		if code != 1 || errb.String() != tt.want || calls.Load() != 0 {
			t.Errorf("st %q: exit %d, %d daemon calls, said:\n%s\nwant:\n%s", tt.args, code, calls.Load(), errb.String(), tt.want)
		}
	}
}
