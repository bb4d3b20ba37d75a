package cli

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
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

// queueInSandbox runs st worker done in pane where a sandbox refuses st's
// socket, checks that it says the report is queued, and answers the
// file and its whole output (what Codex hands the agent's PostToolUse
// hook as the call's tool_response).
func queueInSandbox(t *testing.T, d *fakeDaemon, pane, sum string) (path, output string) {
	t.Helper()
	r := &stRun{d: d, vars: d.inPaneVars(pane), http: refusingSandbox}
	code := r.run("worker", "done", "--summary", sum)
	m := regexp.MustCompile(`^queued: a sandbox keeps this command from reaching st, so the report waits in (\S+) \(report sha256:[0-9a-f]{64}\); ` +
		`your agent's hook hands it to st as this command ends, finding it by this line\. Nothing more to do\.\n$`).FindStringSubmatch(r.stdout.String())
	if code != 0 || m == nil || r.stderr.String() != "" {
		t.Fatalf("st worker done in a sandbox: exit %d\nstdout: %s\nstderr: %s\nwant 0 and the queue's path", code, r.stdout.String(), r.stderr.String())
	}
	return m[1], r.stdout.String()
}

// hookIn runs the agent's hook for event in pane, with payload.
func hookIn(t *testing.T, d *fakeDaemon, pane, event string, payload any) *stRun {
	t.Helper()
	b, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	h := &stRun{d: d, vars: d.inPaneVars(pane), stdin: string(b)}
	if code := h.run("hook", "codex", event); code != 0 || h.stdout.String() != "" {
		t.Errorf("st hook codex %s: exit %d, stdout %q", event, code, h.stdout.String())
	}
	return h
}

// postToolUse is Codex's PostToolUse payload of a shell call (measured,
// 0.130.0 to 0.171.0: tool_input.command, and the output as tool_response).
func postToolUse(command, output string) map[string]any {
	return map[string]any{"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "call_1",
		"tool_input": map[string]any{"command": command}, "tool_response": output}
}

const doneCmd = `/usr/local/bin/st worker done --summary "wrote the API tests; go test ./api passes"`

// TestWorkerDoneQueuedInASandbox: a sandbox refuses st's socket, so the
// report is queued in the temp folder and the worker is told so; the
// PostToolUse hook of that call (outside the sandbox) hands it to st
// before its own event, and the queue is empty after.
func TestWorkerDoneQueuedInASandbox(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	d := newFakeDaemon(t, map[string]any{api.RouteWorkerDone: reported, api.RouteHook: api.HookResponse{}})
	d.start()
	path, output := queueInSandbox(t, d, "%3", summary)
	if !strings.HasPrefix(path, tmp+"/") {
		t.Errorf("queued in %s, outside the temp folder %s (the sandbox lets it write there)", path, tmp)
	}
	if q, err := os.ReadFile(path); err != nil || decodeAs(t, q, api.DoneRequest{}) != (api.DoneRequest{Pane: "%3", Summary: summary}) {
		t.Errorf("the queued report %s: %s %v", path, q, err)
	}
	if rs := d.routes(); len(rs) != 0 {
		t.Fatalf("the refused command reached the daemon: %v", rs)
	}

	hookIn(t, d, "%3", "PostToolUse", postToolUse(doneCmd, output))
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

// TestHookTakesOnlyWhatItsCallQueued (issue 23, item 6): every sandbox
// may write the queue's folder, so a report queued for pane %3 by
// another agent's sandbox (st worker done with TMUX_PANE=%3), or %3's own
// earlier report written back, must not be handed in by %3's hooks: only
// the PostToolUse of the call that queued it, whose output names its
// digest, hands a report in.
func TestHookTakesOnlyWhatItsCallQueued(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	d := newFakeDaemon(t, map[string]any{api.RouteWorkerDone: reported, api.RouteHook: api.HookResponse{}})
	d.start()
	forged, forgedOut := queueInSandbox(t, d, "%3", "forged by another sandbox")
	forgedCmd := `TMUX_PANE=%3 st worker done --summary "forged by another sandbox"`
	for _, h := range []struct {
		name, event string
		payload     any
	}{
		{"its Stop", "Stop", map[string]any{"hook_event_name": "Stop", "last_assistant_message": forgedOut}},
		{"its prompt", "UserPromptSubmit", map[string]any{"hook_event_name": "UserPromptSubmit", "prompt": forgedOut}},
		{"a call that printed the line", "PostToolUse", postToolUse("cat /tmp/notes.txt", forgedOut)},
		{"a call that named it", "PostToolUse", postToolUse("echo "+forgedOut, "done")},
	} {
		hookIn(t, d, "%3", h.event, h.payload)
		if rs := d.routes(); slices.Contains(rs, api.RouteWorkerDone) {
			t.Fatalf("%s: %%3's hook handed in a report another sandbox queued for it: %v", h.name, rs)
		}
	}
	// %3's own call queues and reports; another sandbox's report is
	// still not handed in, nor is %3's own one when it is written again.
	own, ownOut := queueInSandbox(t, d, "%3", summary)
	ownBytes, _ := os.ReadFile(own)
	both := ownOut + forgedOut
	hookIn(t, d, "%3", "PostToolUse", postToolUse(doneCmd+"; cat /tmp/notes.txt", both))
	if rs := d.routes(); slices.Contains(rs, api.RouteWorkerDone) {
		t.Fatalf("an output naming two reports handed one in: %v", rs)
	}
	hookIn(t, d, "%3", "PostToolUse", postToolUse(doneCmd, ownOut))
	calls := d.taken()
	var handed []api.DoneRequest
	for _, c := range calls {
		if c.Route == api.RouteWorkerDone {
			handed = append(handed, decodeAs(t, c.Body, api.DoneRequest{}).(api.DoneRequest))
		}
	}
	if len(handed) != 1 || handed[0].Summary != summary {
		t.Fatalf("%%3's hooks handed in %v; want its own report only", handed)
	}
	os.WriteFile(own, ownBytes, 0o600) // kept by another sandbox, written back
	hookIn(t, d, "%3", "PostToolUse", postToolUse(forgedCmd, "later call"))
	hookIn(t, d, "%3", "Stop", map[string]any{"hook_event_name": "Stop"})
	if n := strings.Count(strings.Join(d.routes(), " "), api.RouteWorkerDone); n != 1 {
		t.Errorf("%%3's own report was handed in %d times; a copy written back must not be taken again", n)
	}
	if _, err := os.Stat(forged); err != nil {
		t.Errorf("the forged report: %v (the hook need not touch it)", err)
	}
}

// TestHookKeepsAReportWhileStIsDown: st is down when the call's
// PostToolUse hook takes the queued report: it waits in $ST_HOME/reports
// (where no sandbox writes) and the pane's next hook, any event, hands it
// in once st is back.
func TestHookKeepsAReportWhileStIsDown(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	d := newFakeDaemon(t, map[string]any{api.RouteWorkerDone: reported, api.RouteHook: api.HookResponse{}})
	path, output := queueInSandbox(t, d, "%3", summary)
	hookIn(t, d, "%3", "PostToolUse", postToolUse(doneCmd, output))
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the queued report is still in the temp folder: %v", err)
	}
	kept, _ := filepath.Glob(filepath.Join(d.home, "reports", "*-3.json"))
	if len(kept) != 1 {
		t.Fatalf("kept reports under ST_HOME: %v; want one for %%3", kept)
	}
	d.start()
	hookIn(t, d, "%3", "Stop", map[string]any{"hook_event_name": "Stop"})
	if rs := d.routes(); !reflect.DeepEqual(rs, []string{api.RouteWorkerDone, api.RouteHook}) {
		t.Fatalf("the hook asked %v, want the kept report first, then its event", rs)
	}
	if req := decodeAs(t, d.taken()[0].Body, api.DoneRequest{}); req != (api.DoneRequest{Pane: "%3", Summary: summary}) {
		t.Errorf("the hook handed over %s", js(req))
	}
	if _, err := os.Stat(kept[0]); !os.IsNotExist(err) {
		t.Errorf("the kept report is still there after st took it: %v", err)
	}
}

// TestHookSaysWhenItsReportWasChanged: another sandbox overwrites the
// report a call queued before that call's hook reads it. It is not handed
// in (a lost report, not a forged one), and the hook says so and what to
// do.
func TestHookSaysWhenItsReportWasChanged(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	d := newFakeDaemon(t, map[string]any{api.RouteWorkerDone: reported, api.RouteHook: api.HookResponse{}})
	d.start()
	path, output := queueInSandbox(t, d, "%3", summary)
	if err := os.WriteFile(path, []byte(`{"pane":"%3","summary":"forged over it"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	h := hookIn(t, d, "%3", "PostToolUse", postToolUse(doneCmd, output))
	if rs := d.routes(); !reflect.DeepEqual(rs, []string{api.RouteHook}) {
		t.Errorf("the hook asked %v, want its event only", rs)
	}
	if want := "is not in the queue as it was written"; !strings.Contains(h.stderr.String(), want) ||
		!strings.Contains(h.stderr.String(), "Try: st worker list shows whether it arrived") {
		t.Errorf("the hook's stderr:\n%s\nwant it to say the report %s, and what to do", h.stderr.String(), want)
	}
}
