package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/orch"
	"github.com/sophonz/st/internal/peer"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/tmux"
)

// The daemon's API takes JSON from any program of the user: the CLI, the
// agents' hooks, a script. FuzzAPI sends every route bodies of any shape
// through the real handler (s.routes) and the real orch.Manager, with a
// fake tmux server behind it, so that decoding and every check made before
// tmux acts run as in the daemon. No input may crash the daemon, hang it,
// or get an answer that is not a JSON refusal or result.

// fakePane is a pane of fakeServer.
type fakePane struct {
	id, window, index, session, sessName, winName, cmd, path, pid string
	opts                                                          map[string]string
}

// fakeServer answers what the Manager reads and sets on panes. It opens
// nothing: new-window, split-window, send-keys and the like fail, as on a
// server that refuses them, so a fuzzed start never launches a program.
type fakeServer struct {
	mu    sync.Mutex
	panes []*fakePane
	ran   []string // the commands, for tests that check what reached tmux
}

func (f *fakeServer) pane(id string) *fakePane {
	for _, p := range f.panes {
		if p.id == id {
			return p
		}
	}
	return nil
}

func (p *fakePane) field(name string) string {
	if p == nil {
		return ""
	}
	switch name {
	case "pane_id":
		return p.id
	case "window_id":
		return p.window
	case "window_index":
		return p.index
	case "session_id":
		return p.session
	case "pane_pid":
		return p.pid
	case "pane_dead":
		return "0"
	case "session_name":
		return p.sessName
	case "window_name":
		return p.winName
	case "pane_current_command":
		return p.cmd
	case "pane_current_path":
		return p.path
	case "window_active", "pane_index":
		return "0"
	}
	if strings.HasPrefix(name, "@") {
		return p.opts[name]
	}
	return ""
}

func render(format string, p *fakePane) string {
	parts := strings.Split(format, "\x1f")
	for i, part := range parts {
		parts[i] = p.field(strings.TrimSuffix(strings.TrimPrefix(part, "#{"), "}"))
	}
	return strings.Join(parts, "\x1f")
}

var errRefused = errors.New("the fake tmux server refuses this command")

func (f *fakeServer) Run(ctx context.Context, args ...string) (string, error) {
	for i, a := range args {
		if a == ";" {
			if _, err := f.Run(ctx, args[:i]...); err != nil {
				return "", err
			}
			return f.Run(ctx, args[i+1:]...)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(args) == 0 {
		return "", errRefused
	}
	f.ran = append(f.ran, strings.Join(args, " "))
	switch {
	case args[0] == "list-panes" && len(args) == 4:
		var b strings.Builder
		for _, p := range f.panes {
			b.WriteString(render(args[3], p) + "\n")
		}
		return b.String(), nil
	case args[0] == "display-message" && len(args) == 6 && args[4] == "-F":
		return render(args[5], f.pane(args[3])) + "\n", nil
	case args[0] == "set-option" && len(args) == 6 && args[2] == "-t":
		if p := f.pane(args[3]); p != nil {
			p.opts[args[4]] = args[5]
			return "", nil
		}
	case args[0] == "set-option" && len(args) == 6 && args[2] == "-u":
		if p := f.pane(args[4]); p != nil {
			delete(p.opts, args[5])
			return "", nil
		}
	case args[0] == "show-options" && len(args) == 7 && args[4] == "-t":
		if p := f.pane(args[5]); p != nil {
			return p.opts[args[6]] + "\n", nil
		}
	case args[0] == "capture-pane":
		return "", nil
	case args[0] == "list-windows", args[0] == "list-sessions":
		return "", nil
	}
	return "", errRefused
}

// fakes finds the fake server under a tmux client of newFuzzServer.
var fakes sync.Map // *tmux.Client -> *fakeServer

const (
	fzRun    = "run-fz"
	fzCoord  = "%1"
	fzWorker = "%2"
	fzShell  = "%9"
	// alpha's worker here, and its run.
	fzAlphas   = "%3"
	fzAlphaRun = "run-0a1fa0"
)

// newFuzzServer makes the daemon's server over a Manager that finds two
// runs on disk: coordinator %1 with worker %2 "w1" (idle), and a plain
// shell %9, all in session $0 in folder dir; and machine alpha's worker
// %3 "w3" (idle) in session $1.
func newFuzzServer(t *testing.T, dir string) (*server, func()) {
	// ST_HOME one level down in a folder of its own, so that a write
	// through ../ lands where checkNothingEscaped sees it.
	home := filepath.Join(t.TempDir(), "home")
	now := time.Now()
	r := orch.Run{ID: fzRun, Objective: "fuzz", Coordinator: fzCoord, Session: "$0", Created: now,
		Workers: []*orch.Worker{{ID: fzWorker, Name: "w1", Agent: "sim", Parent: fzCoord, Level: 1, State: api.Idle,
			Since: now, Task: filepath.Join(dir, "t.md"), Cwd: dir, Window: "@2", Session: "$0", StartedAt: now}}}
	if err := store.WriteJSON(filepath.Join(home, "orch", fzRun, "run.json"), &r, 0o600); err != nil {
		t.Fatal(err)
	}
	// A worker here of machine alpha's coordinator (the peer fuzz's caller).
	ra := orch.Run{ID: fzAlphaRun, Objective: "alpha's", Coordinator: "alpha/%0", CoordinatorMachine: "alpha", Created: now,
		Workers: []*orch.Worker{{ID: fzAlphas, Name: "w3", Agent: "sim", Parent: "alpha/%0", Level: 1, State: api.Idle,
			Since: now, Task: filepath.Join(dir, "t.md"), Cwd: dir, Window: "@3", Session: "$1", StartedAt: now, Ref: "0123456789abcdef"}}}
	if err := store.WriteJSON(filepath.Join(home, "orch", fzAlphaRun, "run.json"), &ra, 0o600); err != nil {
		t.Fatal(err)
	}
	fs := &fakeServer{panes: []*fakePane{
		{id: fzCoord, window: "@1", index: "0", session: "$0", sessName: "main", winName: "coord", cmd: "sh", path: dir, pid: "1",
			opts: map[string]string{"@st_run": fzRun, "@st_role": "coordinator"}},
		{id: fzWorker, window: "@2", index: "1", session: "$0", sessName: "main", winName: "w1", cmd: "st", path: dir, pid: "2",
			opts: map[string]string{"@st_run": fzRun, "@st_role": "worker", "@st_parent": fzCoord, "@st_name": "w1", "@st_agent": "sim"}},
		{id: fzShell, window: "@9", index: "2", session: "$0", sessName: "main", winName: "sh", cmd: "sh", path: dir, pid: "9",
			opts: map[string]string{}},
		{id: fzAlphas, window: "@3", index: "0", session: "$1", sessName: "st-remote", winName: "w3", cmd: "st", path: dir, pid: "3",
			opts: map[string]string{"@st_run": fzAlphaRun, "@st_role": "worker", "@st_parent": "alpha/%0", "@st_name": "w3", "@st_agent": "sim"}},
	}}
	tm := tmux.NewWithRunner(filepath.Join(dir, "fake.sock"), fs)
	fakes.Store(tm, fs)
	hub := peer.NewHub(peer.Config{Home: home, Tmux: tm})
	mgr, err := orch.NewManager(context.Background(), orch.Config{Home: home, STBin: "/nonexistent/st", Tmux: tm,
		ReadWait: 10 * time.Millisecond, Remote: hub})
	if err != nil {
		t.Fatal(err)
	}
	hub.Attach(mgr)
	s := &server{mgr: mgr, hub: hub, tmux: tm, cancel: func() {}, token: "fuzz-token", proc: realProc,
		info: api.StatusInfo{PID: 1, Home: home, Socket: filepath.Join(home, "st.sock"), TmuxSocket: tm.Socket()}}
	return s, mgr.Close
}

// apiRoutes are the routes of the socket table that FuzzAPI sends to,
// sorted: the fuzzer's corpus names a route by its index here.
func apiRoutes(t testing.TB) []string {
	var routes []string
	for _, r := range SocketRoutes() {
		if notFuzzed[r.Path] == "" {
			routes = append(routes, r.Path)
		}
	}
	sort.Strings(routes)
	return routes
}

// requestDeadline is how long one fuzzed request may run: waits and
// gates block until it, and must then return.
const requestDeadline = 100 * time.Millisecond

// hangLimit is how long after its deadline a handler may take to return.
const hangLimit = 3 * time.Second

// serveOne sends one request through the routes and checks the answer.
// serveNoHang serves req, failing t (as what) when the handler panics or
// does not return within hangLimit of the request's deadline.
func serveNoHang(t *testing.T, h http.Handler, req *http.Request, what string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		h.ServeHTTP(rec, req)
	}()
	select {
	case p := <-done:
		if p != nil {
			t.Fatalf("%s panicked: %v", what, p)
		}
	case <-time.After(requestDeadline + hangLimit):
		t.Fatalf("%s did not return %v after its deadline", what, hangLimit)
	}
	return rec
}

func serveOne(t *testing.T, h http.Handler, route string, body []byte, tmuxHdr string) *httptest.ResponseRecorder {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), ctxKey{}, sockPeer{owner: true, pid: os.Getpid()}), requestDeadline)
	defer cancel()
	req := httptest.NewRequest(http.MethodPost, route, strings.NewReader(string(body))).WithContext(ctx)
	if tmuxHdr != "" {
		req.Header.Set(api.TmuxHeader, tmuxHdr)
	}
	rec := serveNoHang(t, h, req, fmt.Sprintf("POST %s %q", route, body))
	t.Logf("POST %s %.80q -> %d %.160s", route, body, rec.Code, rec.Body.String())
	switch rec.Code {
	case http.StatusOK:
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("POST %s %q: 200 with a body that is not JSON: %q", route, body, rec.Body.String())
		}
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusForbidden:
		var e api.Error
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Message == "" || e.Kind == "" {
			t.Fatalf("POST %s %q: %d with %q, want a JSON error with kind and message", route, body, rec.Code, rec.Body.String())
		}
	default:
		t.Fatalf("POST %s %q: status %d %q", route, body, rec.Code, rec.Body.String())
	}
	return rec
}

// fuzzEnv keeps a fuzzed request from reaching anything outside the test:
// no git (so --worktree and --owns stop at "needs a git repository"), and
// a HOME of its own (where agents' trust files would be written).
func fuzzEnv(f *testing.F) string {
	dir := f.TempDir()
	empty := filepath.Join(dir, "bin")
	os.MkdirAll(empty, 0o700)
	f.Setenv("PATH", empty)
	f.Setenv("HOME", dir)
	if err := os.WriteFile(filepath.Join(dir, "t.md"), []byte("summary: ok\n"), 0o600); err != nil {
		f.Fatal(err)
	}
	return dir
}

// checkNothingEscaped fails the test when a request ran a command (the
// pwned marker) or wrote a file outside ST_HOME (../ in an id or name):
// ST_HOME is the only folder of the fuzz's temp folder st may write to.
func checkNothingEscaped(t *testing.T, dir, home string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Fatalf("a request ran a command: %s exists", filepath.Join(dir, "pwned"))
	}
	filepath.WalkDir(filepath.Dir(home), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && p != home && !strings.HasPrefix(p, home+string(filepath.Separator)) {
			t.Fatalf("a request wrote %s, outside ST_HOME %s", p, home)
		}
		return nil
	})
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func FuzzAPI(f *testing.F) {
	dir := fuzzEnv(f)
	routes := apiRoutes(f)
	index := map[string]uint8{}
	for i, r := range routes {
		index[r] = uint8(i)
	}
	seeds := apiSeeds(filepath.Join(dir, "t.md"), "$(touch "+filepath.Join(dir, "pwned")+") `id`; a && b | c #{pane_id} \x1b[31m")
	for _, s := range seeds {
		i, ok := index[s.route]
		if !ok {
			f.Fatalf("seed route %s is not in apiRoutes", s.route)
		}
		f.Add(i, []byte(s.body), s.tmux)
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte, tmuxHdr string) {
		s, closeMgr := newFuzzServer(t, dir)
		defer closeMgr()
		serveOne(t, s.routes(), routes[int(route)%len(routes)], body, tmuxHdr)
		checkNothingEscaped(t, dir, s.info.Home)
	})
}

// notFuzzed are socket routes that FuzzAPI leaves out, and why.
var notFuzzed = map[string]string{
	"/v1/orch/accept-remote": "turns the peer listener (mutual TLS) on and off: the peer layer's own tests cover it",
	"/v1/remote/reload":      "rereads the machine's access files for the peer layer",
	"/v1/remote/routes":      "reads no input: it connects to the account's machines to say how each is reached (tests/machines)",
}

// TestSocketTableIsServed: the mux serves every row of the socket table
// and nothing else, each path once; FuzzAPI sends to every route but the
// few notFuzzed says why it leaves out.
func TestSocketTableIsServed(t *testing.T) {
	s, closeMgr := newFuzzServer(t, t.TempDir())
	defer closeMgr()
	mux, ok := s.routes().(*http.ServeMux)
	if !ok {
		t.Fatalf("routes is not a ServeMux")
	}
	seen := map[string]bool{}
	for _, r := range SocketRoutes() {
		if seen[r.Path] {
			t.Errorf("the socket table has %s twice", r.Path)
		}
		seen[r.Path] = true
		if len(r.Actions) == 0 {
			t.Errorf("route %s asks authz about nothing", r.Path)
		}
		if _, pattern := mux.Handler(httptest.NewRequest(http.MethodPost, r.Path, nil)); pattern != r.Path {
			t.Errorf("route %s of the table is not served (pattern %q)", r.Path, pattern)
		}
	}
	for r := range notFuzzed {
		if !seen[r] {
			t.Errorf("notFuzzed names %s, which is not a route", r)
		}
	}
	if _, pattern := mux.Handler(httptest.NewRequest(http.MethodPost, "/v1/nosuch", nil)); pattern != "" {
		t.Errorf("a path with no row is served (pattern %q)", pattern)
	}
	if n := len(apiRoutes(t)) + len(notFuzzed); n != len(SocketRoutes()) {
		t.Errorf("FuzzAPI sends to %d routes and leaves out %d, of %d", len(apiRoutes(t)), len(notFuzzed), len(SocketRoutes()))
	}
}

// TestAPIRefusesWhatItCannotRead: a body that is not the request's JSON
// is refused with a message that says so, on every route that reads one.
func TestAPIRefusesWhatItCannotRead(t *testing.T) {
	dir := t.TempDir()
	s, closeMgr := newFuzzServer(t, dir)
	defer closeMgr()
	h := s.routes()
	for _, r := range apiRoutes(t) {
		switch r {
		case "/v1/status", "/v1/shutdown", "/v1/ls", "/v1/web":
			continue // they read no body
		}
		for _, body := range []string{`[`, `{"pane":1}`, "\xff"} {
			rec := serveOne(t, h, r, []byte(body), "")
			if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), "bad request") {
				t.Errorf("POST %s %q: %d %s, want 422 bad request", r, body, rec.Code, rec.Body.String())
			}
		}
	}
}

// apiSeed is one request of FuzzAPI's corpus: a route, a body, and the
// tmux header it comes with.
type apiSeed struct {
	route, body, tmux string
}

// apiSeeds are the requests FuzzAPI starts from: every route, with
// shell and tmux metacharacters (meta), ids and names with ../, line
// breaks and escapes, and bodies that are not JSON.
func apiSeeds(task, meta string) []apiSeed {
	return []apiSeed{
		{"/v1/status", `{}`, ""},
		{"/v1/ls", ``, ""},
		{"/v1/orch/start", `{"pane":"%1","objective":` + jsonString(meta) + `}`, ""},
		{"/v1/orch/start", `{"pane":"%99999999999999999999"}`, ""},
		{"/v1/orch/show", `{"pane":"%1","id":"../../etc"}`, ""},
		{"/v1/worker/start", `{"pane":"%1","agent":"sim","task":` + jsonString(task) + `,"name":"a;b"}`, ""},
		{"/v1/worker/start", `{"pane":"%1","agent":"sim","task":` + jsonString(task) + `,"owns":["../x"],"worktree":true}`, ""},
		{"/v1/worker/start", `{"pane":"%1","agent":"sim","task":` + jsonString(task) + `,"env":{"A":"$(x)"},"hook_timeout":-1}`, ""},
		{"/v1/worker/start", `{"pane":"%1","agent":"nosuch","task":"relative.md"}`, "/other/server,1,0"},
		{"/v1/worker/wait", `{"pane":"%1","ids":["w1","%2","nosuch"],"timeout":-5}`, ""},
		{"/v1/worker/wait", `{"pane":"%1","timeout":9223372036854775807}`, ""},
		{"/v1/worker/done", `{"pane":"%2","summary":` + jsonString(meta) + `}`, ""},
		{"/v1/worker/read", `{"pane":"%1","id":"w1"}`, ""},
		{"/v1/worker/send", `{"pane":"%1","id":"w1","text":` + jsonString(meta) + `}`, ""},
		{"/v1/worker/send", `{"pane":"%1","id":"w1","text":"hello"}`, ""},
		{"/v1/worker/stop", `{"pane":"%1","id":"w1"}`, ""},
		{"/v1/worker/rename", `{"pane":"%1","id":"w1","text":"$(x)"}`, ""},
		{"/v1/worker/release", `{"pane":"%1","id":"%2"}`, ""},
		{"/v1/worker/adopt", `{"pane":"%1","id":"%9"}`, ""},
		{"/v1/worker/diff", `{"pane":"%1","id":"w1"}`, ""},
		{"/v1/worker/merge", `{"pane":"%1","id":"w1"}`, ""},
		{"/v1/worker/pick", `{"pane":"%1","id":"w1"}`, ""},
		{"/v1/worker/fan", `{"pane":"%1","agent":"sim","task":` + jsonString(task) + `,"fan":1000000}`, ""},
		{"/v1/worker/list", `{"pane":"%1","all":true}`, ""},
		{"/v1/task/create", `{"pane":"%1","name":"t1","file":` + jsonString(task) + `,"agent":"sim","deps":["t1","t2"]}`, ""},
		{"/v1/task/list", `{"pane":"%1"}`, ""},
		{"/v1/task/cancel", `{"pane":"%1","id":"t1"}`, ""},
		{"/v1/gate/ask", `{"pane":"%2","question":` + jsonString(meta) + `,"options":["a","A"," "],"timeout":1}`, ""},
		{"/v1/gate/wait", `{"id":"gate-000000","timeout":1000000}`, ""},
		{"/v1/gate/answer", `{"id":"gate-000000","option":"a"}`, ""},
		{"/v1/gate/list", `{"all":true}`, ""},
		{"/v1/gate/withdraw", `{"pane":"%2","id":"../gate-000000"}`, ""},
		{"/v1/hook", `{"agent":"sim","event":"UserPromptSubmit","pane":"%2","payload":"eyJwcm9tcHQiOiIkKHgpIn0="}`, ""},
		{"/v1/hook", `{"agent":"sim","event":"PreToolUse","pane":"%2","payload":null}`, ""},
		{"/v1/hook", `{"agent":"codex","event":"Interrupt","pane":"%2","payload":"not base64"}`, ""},
		// Ids and names with ../, line breaks and escapes, on every route
		// that takes one.
		{"/v1/worker/read", `{"pane":"%1","id":"../../etc/passwd"}`, ""},
		{"/v1/worker/send", `{"pane":"%1","id":"w1\n","text":"hi\u009b2J"}`, ""},
		{"/v1/worker/stop", `{"pane":"%1","id":"alpha/../x"}`, ""},
		{"/v1/worker/rename", `{"pane":"%1","id":"w1","text":"../w2"}`, ""},
		{"/v1/worker/rename", `{"pane":"%1","id":"w1","text":"w\u001b[2J"}`, ""},
		{"/v1/worker/adopt", `{"pane":"%1","id":"%9\nkill"}`, ""},
		{"/v1/worker/offer", `{"pane":"%9","id":"%2","machine":"../beta"}`, ""},
		{"/v1/worker/offer", `{"pane":"%9","id":"../%2","machine":"beta"}`, ""},
		{"/v1/worker/offer", `{"pane":"%9","id":"%1","withdraw":true}`, ""},
		{"/v1/worker/start", `{"pane":"%1","agent":"sim","task":` + jsonString(task) + `,"name":"../x"}`, ""},
		{"/v1/worker/start", `{"pane":"%1","agent":"sim","task":` + jsonString(task) + `,"name":"a\nb","machine":"../m"}`, ""},
		{"/v1/orch/show", `{"pane":"%1","id":"run-fz\n\u001b[2J"}`, ""},
		{"/v1/task/create", `{"pane":"%1","name":"../t","file":` + jsonString(task) + `,"agent":"sim"}`, ""},
		{"/v1/gate/answer", `{"pane":"%2","id":"../gate","option":"a\u001b"}`, ""},
		{"/v1/worker/done", `{"pane":"%2","summary":"ok\u009b2J"}`, ""},
		{"/v1/worker/start", `[`, ""},
		{"/v1/worker/start", `{"pane":1,"agent":["sim"]}`, ""},
		{"/v1/worker/start", "\xff\xfe", ""},
	}
}
