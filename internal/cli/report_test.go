package cli

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/testutil"
)

// The report of a worker (st worker done) must not be lost: while st is
// down it keeps trying (st down, then up: it lands once st is back), and
// inside a sandbox that refuses st's socket it is queued for the agent's
// next hook. These tests run the command in-process against a fake daemon.

const summary = "wrote the API tests; go test ./api passes"

// reported is the daemon's answer to a report of worker %3.
var reported = api.WorkerView{Worker: api.Worker{ID: "%3", Name: "api-tests", Agent: "claude", State: api.Done, Summary: summary}}

// TestWorkerDoneWaitsForSt: st is down when the worker reports; the
// command says it is retrying, and once st is back the report lands, once,
// and the worker is told it is recorded.
func TestWorkerDoneWaitsForSt(t *testing.T) {
	d := newFakeDaemon(t, map[string]any{api.RouteWorkerDone: reported})
	r := &stRun{d: d, vars: d.inPaneVars("%3")}
	code := make(chan int, 1)
	go func() { code <- r.run("worker", "done", "--summary", summary, "--retry", "1m") }()

	testutil.WaitFor(t, 30*time.Second, func() (bool, string) {
		return strings.Contains(r.stderr.String(), "st: st is not answering; retrying for up to 1m0s\n"),
			"st worker done did not say it retries; stderr:\n" + r.stderr.String()
	})
	if calls := d.taken(); len(calls) != 0 {
		t.Fatalf("the daemon was asked while it was down: %v", d.routes())
	}
	d.start() // st up

	var got int
	select {
	case got = <-code:
	case <-time.After(30 * time.Second):
		t.Fatalf("st worker done did not end within 30 s of st coming back; stderr:\n%s", r.stderr.String())
	}
	if got != 0 || r.stdout.String() != "reported: api-tests (%3) is done\n" {
		t.Errorf("st worker done: exit %d, stdout %q; want 0 and \"reported: api-tests (%%3) is done\"", got, r.stdout.String())
	}
	if want := "st: st is not answering; retrying for up to 1m0s\n"; r.stderr.String() != want {
		t.Errorf("stderr %q, want only %q (said once)", r.stderr.String(), want)
	}
	calls := d.taken()
	if len(calls) != 1 || calls[0].Route != api.RouteWorkerDone {
		t.Fatalf("the daemon was asked %v, want one %s", d.routes(), api.RouteWorkerDone)
	}
	if req := decodeAs(t, calls[0].Body, api.DoneRequest{}); req != (api.DoneRequest{Pane: "%3", Summary: summary}) {
		t.Errorf("the report sent: %s", js(req))
	}
	if calls[0].Tmux != "/tmp/tmux-test/default" {
		t.Errorf("the report named the tmux server %q, want the pane's (/tmp/tmux-test/default)", calls[0].Tmux)
	}
	if _, err := os.Stat(filepath.Join(d.home, "daemon.log")); err == nil {
		t.Error("st worker done tried to start st (daemon.log exists): a report never starts st")
	}
}

// TestWorkerDoneGivesUp: st stays down past --retry: the command fails,
// says the report was not recorded and how to start st.
func TestWorkerDoneGivesUp(t *testing.T) {
	d := newFakeDaemon(t, nil)
	r := &stRun{d: d, vars: d.inPaneVars("%3")}
	start := time.Now()
	code := r.run("worker", "done", "--summary", summary, "--retry", "500ms")
	if code != 1 || r.stdout.String() != "" {
		t.Errorf("exit %d, stdout %q; want 1 and nothing", code, r.stdout.String())
	}
	want := "st: st is not answering; retrying for up to 500ms\n" +
		"st: st is not running (nothing answers on " + api.SocketPath(d.home) + ")\nTry: st up\n" +
		"the report was not recorded after trying for 500ms\n"
	if r.stderr.String() != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", r.stderr.String(), want)
	}
	if took := time.Since(start); took < 500*time.Millisecond {
		t.Errorf("it gave up after %s, before its --retry of 500ms", took)
	}
}

// refusingSandbox is the HTTP client of a command in Codex's sandbox,
// which refuses connect() on unix sockets (EPERM).
func refusingSandbox(string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.EPERM)}
	}}}
}

// TestWorkerDoneQueuedInASandbox: a sandbox refuses st's socket, so the
// report is queued in the temp folder and the worker is told so; the
// agent's next hook (outside the sandbox) hands it to st before its own
// event, and the queue is empty after.
func TestWorkerDoneQueuedInASandbox(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	d := newFakeDaemon(t, map[string]any{api.RouteWorkerDone: reported, api.RouteHook: api.HookResponse{}})
	d.start()
	r := &stRun{d: d, vars: d.inPaneVars("%3"), http: refusingSandbox}
	code := r.run("worker", "done", "--summary", summary)
	m := regexp.MustCompile(`^queued: a sandbox keeps this command from reaching st, so the report waits in (\S+); ` +
		`your agent's next hook hands it to st\. Nothing more to do\.\n$`).FindStringSubmatch(r.stdout.String())
	if code != 0 || m == nil || r.stderr.String() != "" {
		t.Fatalf("st worker done in a sandbox: exit %d\nstdout: %s\nstderr: %s\nwant 0 and the queue's path", code, r.stdout.String(), r.stderr.String())
	}
	path := m[1]
	if !strings.HasPrefix(path, tmp+"/") {
		t.Errorf("queued in %s, outside the temp folder %s (the sandbox lets it write there)", path, tmp)
	}
	if q, err := os.ReadFile(path); err != nil || decodeAs(t, q, api.DoneRequest{}) != (api.DoneRequest{Pane: "%3", Summary: summary}) {
		t.Errorf("the queued report %s: %s %v", path, q, err)
	}
	if rs := d.routes(); len(rs) != 0 {
		t.Fatalf("the refused command reached the daemon: %v", rs)
	}

	// The agent's Stop hook runs outside the sandbox.
	hook := &stRun{d: d, vars: d.inPaneVars("%3"), stdin: `{"hook_event_name":"Stop"}`}
	if code := hook.run("hook", "codex", "Stop"); code != 0 || hook.stdout.String() != "" {
		t.Errorf("st hook codex Stop: exit %d, stdout %q", code, hook.stdout.String())
	}
	if rs := d.routes(); !reflect.DeepEqual(rs, []string{api.RouteWorkerDone, api.RouteHook}) {
		t.Fatalf("the hook asked %v, want the queued report first, then its event", rs)
	}
	if req := decodeAs(t, d.taken()[0].Body, api.DoneRequest{}); req != (api.DoneRequest{Pane: "%3", Summary: summary}) {
		t.Errorf("the hook handed over %s", js(req))
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the queued report is still there after st took it: %v", err)
	}
}
