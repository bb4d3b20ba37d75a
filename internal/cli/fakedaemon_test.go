package cli

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/testutil"
)

// fakeDaemon is st's daemon as the command line sees it: the API on the
// unix socket of a temporary ST_HOME, each route it was given answered
// with a canned answer, and every request kept. A route it was not given
// fails the test: the command asked what it should not have.
type fakeDaemon struct {
	t    *testing.T
	home string

	mu sync.Mutex
	// answers are per route: a value (sent as JSON), an *api.Error (sent
	// as the daemon sends a refusal), or an answerFunc that returns either.
	answers map[string]any
	calls   []daemonCall
	srv     *http.Server
}

// answerFunc answers a request from its body.
type answerFunc func(d *fakeDaemon, body []byte) any

// daemonCall is one request the fake daemon took.
type daemonCall struct {
	Route string
	Body  []byte
	Tmux  string // the caller's tmux server, as the client sends it
}

// tmuxVar is $TMUX of the panes these tests run "in".
const tmuxVar = "/tmp/tmux-test/default,4242,0"

func newFakeDaemon(t *testing.T, answers map[string]any) *fakeDaemon {
	d := &fakeDaemon{t: t, home: testutil.ShortTempDir(t), answers: answers}
	t.Cleanup(d.stop)
	return d
}

// start serves on the socket (st up).
func (d *fakeDaemon) start() {
	d.t.Helper()
	ln, err := net.Listen("unix", api.SocketPath(d.home))
	if err != nil {
		d.t.Fatal(err)
	}
	srv := &http.Server{Handler: d}
	d.mu.Lock()
	d.srv = srv
	d.mu.Unlock()
	go srv.Serve(ln)
}

// stop closes the socket and removes it, as st down does.
func (d *fakeDaemon) stop() {
	d.mu.Lock()
	srv := d.srv
	d.srv = nil
	d.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
	os.Remove(api.SocketPath(d.home))
}

func (d *fakeDaemon) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	d.mu.Lock()
	d.calls = append(d.calls, daemonCall{Route: r.URL.Path, Body: body, Tmux: r.Header.Get(api.TmuxHeader)})
	a, ok := d.answers[r.URL.Path]
	d.mu.Unlock()
	if !ok {
		d.t.Errorf("the command asked %s %s, which this test gave no answer for", r.URL.Path, body)
		a = &api.Error{Kind: api.KindInternal, Message: "the fake daemon has no answer for " + r.URL.Path}
	}
	if f, ok := a.(answerFunc); ok {
		a = f(d, body)
	}
	w.Header().Set("Content-Type", "application/json")
	var oe *api.Error
	if e, ok := a.(error); ok && errors.As(e, &oe) {
		w.WriteHeader(http.StatusUnprocessableEntity) // as the daemon answers orch's refusals
		a = oe
	}
	json.NewEncoder(w).Encode(a)
}

// taken is what the daemon was asked, in order.
func (d *fakeDaemon) taken() []daemonCall {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]daemonCall(nil), d.calls...)
}

// routes are the routes asked, in order.
func (d *fakeDaemon) routes() []string {
	var rs []string
	for _, c := range d.taken() {
		rs = append(rs, c.Route)
	}
	return rs
}

// (testutil.SyncBuffer, a stream the test reads while the command writes it, is
// in remote_test.go.)

// stRun is one st command line run in-process against the fake daemon.
type stRun struct {
	d      *fakeDaemon
	vars   map[string]string
	stdin  string
	http   func(socket string) *http.Client // Env.HTTPClient
	stdout testutil.SyncBuffer
	stderr testutil.SyncBuffer
}

// inPaneVars is the environment of a command typed in pane %1 of the
// tests' tmux server, with st's home the fake daemon's.
func (d *fakeDaemon) inPaneVars(pane string) map[string]string {
	return map[string]string{"ST_HOME": d.home, "HOME": d.home, "PATH": "/usr/bin:/bin", "TMUX": tmuxVar, "TMUX_PANE": pane}
}

// run runs st with args and answers its exit status.
func (r *stRun) run(args ...string) int {
	env := Env{Stdin: strings.NewReader(r.stdin), Stdout: &r.stdout, Stderr: &r.stderr,
		Getenv: func(k string) string { return r.vars[k] }, HTTPClient: r.http}
	return Main(args, env)
}

// decodeAs decodes body into a new value of want's type.
func decodeAs(t *testing.T, body []byte, want any) any {
	t.Helper()
	v := reflect.New(reflect.TypeOf(want))
	if err := json.Unmarshal(body, v.Interface()); err != nil {
		t.Fatalf("the request %s is not a %T: %v", body, want, err)
	}
	return v.Elem().Interface()
}

// js is v as JSON, for messages.
func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
