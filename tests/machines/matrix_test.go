package machines

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sophonz/st/internal/authz"
	"github.com/sophonz/st/internal/testutil"
)

// TestAuthzMatrix (issue 23) walks every route of every surface, as the
// route tables list them (daemon.SocketRoutes, peer.Routes,
// web.Routes: a route with no row here fails the test), against every
// kind of actor that can reach that surface, on running daemons: beta,
// the machine under test, and alpha, another machine of its account, with
// a control plane between them. Each cell's answer is the model's (the
// package doc of internal/authz, restated here as the test's own
// expectations, not asked of authz): an allowed cell works; a refused one
// is refused saying why and what to do, and nothing is typed into any
// pane, written under ST_HOME, or shown of a screen.
//
// The actors on the socket are real processes of the shapes st tells
// apart: a person's shell in a pane; the coordinator, a worker and an
// agent st does not know (each the real sim agent, the requests made by
// its tool command); a sandboxed Codex's escalated command (a process
// named codex with the environment Codex 0.171.0 gives its commands, as
// measured: tests/real TestSandboxedCodexGainsNothing runs the real one);
// an agent naming another pane in $TMUX_PANE; another local user.
func TestAuthzMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("starts daemons and tmux servers")
	}
	if os.Getuid() != 0 {
		t.Fatalf("the matrix asks st's socket as another user (nobody), which needs root (uid %d here); CI runs it as root", os.Getuid())
	}
	began := time.Now()
	m := newMatrix(t)
	m.views()
	m.socket()
	m.web()
	m.peer()
	m.controlPlane()
	m.shutdowns()
	t.Logf("authz matrix: %d cells (%d allowed, their effect seen; %d refused; %d answered by st's own check) over %d routes of 4 surfaces in %s",
		m.cells.Load(), m.allowed.Load(), m.refused.Load(), m.stSaid.Load(), m.routes, time.Since(began).Round(time.Millisecond))
}

// matrix is the world of the matrix test.
type matrix struct {
	t    *testing.T
	c    *testutil.Cluster
	a, b *testutil.Machine
	pa   string // alpha's coordinator, a person's shell pane there
	dir  string // the test's folder (requests, bodies, tasks)
	// beta's panes: a person's shell, its worker, the coordinator agent
	// and its worker (the coordinator's own target), an agent of no one
	// (what is adopted or offered in refused cells).
	p0, pw, coord, cw, lone string
	// sw and cs are workers of p0 and of coord that reported, whose texts
	// only their owners read (matrix_views_test.go); swRun, csRun their
	// runs.
	sw, cs, swRun, csRun string
	// swNR and csNR are workers of p0 and of coord whose turn ended with
	// an answer of their own and no report: their attention items hold
	// it (matrix_views_test.go).
	swNR, csNR              string
	actors                  []*actor
	idle, slow              string // task files
	repo                    string // a git repository of beta's (for tries of a fan)
	gates                   map[string]bool
	openGate                string            // a person's gate, open for the refused cells
	openPrompt              string            // a permission prompt, open for the refused cells
	promptOut               map[string]string // prompt id -> what its hook printed
	routes                  int
	cells, allowed, refused atomic.Int64
	// stSaid counts the cells authz let through whose answer was st's own
	// error (a sockRow's fails): neither allowed nor refused.
	stSaid atomic.Int64
	seq    atomic.Int64
	pushMu sync.Mutex
	pushes []http.Header // what beta's push target got
}

// pushTarget is a push service for beta, whose answer links reach its web
// UI at a port of its own: the settings that make beta send pushes.
func (m *matrix) pushTarget() []string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.pushMu.Lock()
		m.pushes = append(m.pushes, r.Header.Clone())
		m.pushMu.Unlock()
	}))
	m.t.Cleanup(srv.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		m.t.Fatal(err)
	}
	port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	return []string{"ST_PUSH_URL=" + srv.URL + "/push", "ST_WEB_PORT=" + port, "ST_PUSH_ANSWER_URL=http://127.0.0.1:" + port}
}

// pushed is what beta's push target got so far.
func (m *matrix) pushed() []http.Header {
	m.pushMu.Lock()
	defer m.pushMu.Unlock()
	return append([]http.Header(nil), m.pushes...)
}

// actor is one kind of caller of beta's socket, and where its requests
// come from.
type actor struct {
	name string
	kind authz.Kind
	// pane is the pane its requests name ($TMUX_PANE); own is a worker of
	// its own ("" for none).
	pane, own string
	forged    bool   // it names a pane it does not run in
	reqs      string // its runner's folder ("" for the other user)
}

func newMatrix(t *testing.T) *matrix {
	t.Helper()
	c := testutil.NewClusterWay(t, "direct")
	c.Extra = []string{"ST_HEARTBEAT=1s"}
	// Its control plane serves /metrics on a loopback listener of its
	// own, at a free port, for the control plane's cells: started again
	// with it, before any machine signs in.
	c.CPArgs = append(c.CPArgs, "--metrics", "127.0.0.1:0")
	c.StopControlPlane()
	c.StartControlPlane()
	m := &matrix{t: t, c: c, dir: filepath.Join(c.Dir, "matrix"), gates: map[string]bool{}}
	must(t)("", os.MkdirAll(m.dir, 0o755))
	m.a, m.b = c.Machine("alpha", "127.0.0.2"), c.Machine("beta", "127.0.0.3")
	// A permission prompt waits for the whole matrix.
	m.b.Extra = append(m.pushTarget(), "ST_PERMISSION_WAIT=1h")
	for _, x := range []*testutil.Machine{m.a, m.b} {
		x.Login("acme")
	}
	m.pa = m.a.Up()
	m.p0 = m.b.Up()
	m.b.MustST("", "orch", "accept-remote", "on")
	m.idle = c.TaskFile("idle.md", "answer: waiting\n")
	m.slow = c.TaskFile("slow.md", "sleep: 600s\n")
	m.repo = filepath.Join(m.b.UserDir, "repo")
	gitInit(t, m.repo)
	m.pw = m.workerOf(m.p0, "pw")
	m.coord = m.b.HandAgent("coord")
	m.b.MustST(m.coord, "orch", "start", "--objective", "the matrix")
	m.cw = m.workerOf(m.coord, "cw")
	m.lone = m.b.HandAgent("lone")
	m.sw, m.swRun = m.secretWorker(m.p0, "sw")
	m.cs, m.csRun = m.secretWorker(m.coord, "cs")
	m.swNR = m.noReportWorker(m.p0, "sw")
	m.csNR = m.noReportWorker(m.coord, "cs")
	m.openGate = m.gate()
	m.startActors()
	m.openPrompt = m.prompt()
	return m
}

// workerOf starts an idle sim worker of pane, as a person there, and
// returns its pane.
func (m *matrix) workerOf(pane, name string) string {
	m.t.Helper()
	out := m.b.MustST(pane, "worker", "start", "--agent", "sim", "--task", m.idle, "--name", name, "--cwd", m.b.UserDir)
	id := has(m.t, out, `(?m)^(%\d+) `+regexp.QuoteMeta(name)+`$`)[1]
	testutil.WaitFor(m.t, 30*time.Second, func() (bool, string) {
		l, _ := m.b.ST("worker", "list", "--all")
		return regexp.MustCompile(regexp.QuoteMeta(name) + `\s+sim\s+idle`).MatchString(l), l
	})
	return id
}

// startActors starts each actor's request runner in its own processes.
func (m *matrix) startActors() {
	t := m.t
	runner, err := filepath.Abs("testdata/runner.sh")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(m.b.Home, "st.sock")
	run := func(name string) (dir, line string) {
		dir = filepath.Join(m.dir, name)
		must(t)("", os.MkdirAll(dir, 0o755))
		t.Cleanup(func() { os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644) })
		return dir, "sh " + runner + " " + dir + " " + sock
	}
	task := func(name, line string) string { return m.c.TaskFile(name+".md", "run: "+line+"\n") }
	// A person at the shell of pane p0.
	pdir, pline := run("person")
	must(t)(m.b.Tmux.Run("send-keys", "-t", m.p0, "-l", pline))
	must(t)(m.b.Tmux.Run("send-keys", "-t", m.p0, "Enter"))
	// The coordinator (an agent) runs it as its tool command.
	cdir, cline := run("coordinator")
	m.typeLine(m.coord, "Your task is in the file "+task("coordinator-runs", cline))
	// A worker of the coordinator, whose task is to run it.
	wdir, wline := run("worker")
	wtask := task("worker-runs", wline)
	wpane := has(t, m.b.MustST(m.coord, "worker", "start", "--agent", "sim", "--task", wtask, "--name", "wrun", "--cwd", m.b.UserDir),
		`(?m)^(%\d+) wrun$`)[1]
	// An agent st does not know: no hooks at all.
	udir, uline := run("unknown")
	upane := strings.TrimSpace(must(t)(m.b.Tmux.Run("new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "main", "-n", "unknown",
		"-e", m.b.PathEnv(), "-e", "ST_HOME="+m.b.Home, "-e", "ST_SIM_NO_HOOKS=1", m.c.Bin, "agent", "sim")))
	testutil.WaitFor(t, 30*time.Second, func() (bool, string) {
		s := m.b.Capture(upane)
		return strings.Contains(s, "❯"), "the unknown agent never drew its box:\n" + s
	})
	m.typeLine(upane, "Your task is in the file "+task("unknown-runs", uline))
	// A sandboxed Codex's escalated command: codex, with the environment
	// Codex gives its tool commands.
	xdir, xline := run("codex")
	codex := filepath.Join(m.dir, "bin", "codex")
	must(t)("", os.MkdirAll(filepath.Dir(codex), 0o755))
	must(t)("", os.Symlink("/bin/sh", codex))
	xpane := strings.TrimSpace(must(t)(m.b.Tmux.Run("new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "main", "-n", "codex",
		"-e", "CODEX_THREAD_ID=01a2", "-e", "CODEX_TOOL_CALL_ID=call_1", "-e", "CODEX_SANDBOX_NETWORK_DISABLED=1",
		codex+" "+strings.TrimPrefix(xline, "sh "))))
	m.actors = []*actor{
		{name: "person", kind: authz.Person, pane: m.p0, own: m.pw, reqs: pdir},
		{name: "coordinator", kind: authz.Agent, pane: m.coord, own: m.cw, reqs: cdir},
		{name: "worker", kind: authz.Agent, pane: wpane, reqs: wdir},
		{name: "unknown agent", kind: authz.Agent, pane: upane, reqs: udir},
		{name: "sandboxed codex", kind: authz.SandboxedCodex, pane: xpane, reqs: xdir},
		{name: "forged pane", kind: authz.Agent, pane: m.p0, forged: true, reqs: cdir},
		{name: "other user", kind: authz.OtherUser, pane: m.p0},
	}
	for _, a := range m.actors {
		if a.reqs != "" {
			testutil.WaitFor(t, 60*time.Second, func() (bool, string) {
				res := m.ask(a, "/v1/status", "{}")
				return res.code == 200, a.name + "'s runner does not answer: " + res.String()
			})
		}
	}
}

// typeLine types a line into an agent's box and submits it.
func (m *matrix) typeLine(pane, line string) {
	m.t.Helper()
	must(m.t)(m.b.Tmux.Run("send-keys", "-t", pane, "-l", line))
	time.Sleep(100 * time.Millisecond) // the sim takes a quick Enter as part of a paste
	must(m.t)(m.b.Tmux.Run("send-keys", "-t", pane, "Enter"))
}

// answer is what st answered one request.
type answer struct {
	code int
	body string
	err  error
}

func (r answer) String() string { return fmt.Sprintf("%d %.300s %v", r.code, r.body, r.err) }

// refusal reports whether r is st's refusal (403) saying why and what to
// do.
func (r answer) refusal() bool {
	var e struct{ Kind, Error, Hint string }
	return r.code == 403 && json.Unmarshal([]byte(r.body), &e) == nil && strings.HasPrefix(e.Error, "refused: ") && e.Hint != ""
}

// ask sends one request to beta's socket as actor a.
func (m *matrix) ask(a *actor, route, body string) answer {
	m.t.Helper()
	n := m.seq.Add(1)
	bf := filepath.Join(m.dir, fmt.Sprintf("body-%d.json", n))
	must(m.t)("", os.WriteFile(bf, []byte(body), 0o644))
	if a.reqs == "" {
		return m.askAsNobody(route, bf)
	}
	base := filepath.Join(a.reqs, fmt.Sprint(n))
	must(m.t)("", os.WriteFile(base+".tmp", []byte(route+"\n"+bf+"\n"), 0o644))
	must(m.t)("", os.Rename(base+".tmp", base+".req"))
	var data []byte
	testutil.WaitFor(m.t, 60*time.Second, func() (bool, string) {
		var err error
		data, err = os.ReadFile(base + ".res")
		return err == nil, a.name + " did not answer " + route
	})
	os.Remove(base + ".res")
	first, rest, _ := strings.Cut(string(data), "\n")
	var code int
	fmt.Sscan(first, &code)
	return answer{code: code, body: rest}
}

// askAsNobody sends a request to beta's socket as another local user
// (nobody). Its folders and socket are the owner's: the connection is
// refused (internal/daemon TestSocketRefusesOtherUsers widens each layer
// in turn).
func (m *matrix) askAsNobody(route, bodyFile string) answer {
	body, _ := os.ReadFile(bodyFile)
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "curl", "-s", "-m", "10", "-w", "\n%{http_code}",
		"--unix-socket", filepath.Join(m.b.Home, "st.sock"), "-X", "POST", "--data-binary", string(body), "http://st"+route)
	out, err := cmd.CombinedOutput()
	s := strings.TrimRight(string(out), "\n")
	i := strings.LastIndex(s, "\n")
	var code int
	fmt.Sscan(s[i+1:], &code)
	return answer{code: code, body: s[:max(i, 0)], err: err}
}

// quiet is what must not change when a refused request is answered: each
// file under beta's ST_HOME (its log aside), each pane's screen, and
// tmux's status line (screens["status-right"]: st setup --tmux-status).
//
// Two marks are written by st's own timers, whatever anyone asks, so
// they are left out of the files' sums (timerMarks): an item's "pushed",
// set when a summary push goes out at the end of its window (30 s after
// the window's first item, [attention] summary_window), and a worker's
// "told", a soft mark of run.json written alone 30 s after its parent saw
// the report (orch's softLinger) when no other write of the run carried
// it. The matrix's first items and reads come just before its refused
// cells, so on a loaded machine those writes fell among them (a flaky
// "attention.json changed", "run.json changed"). A refused request sets
// neither: no handler runs for it (its answer is checked to be st's
// refusal), and each mark is set only by what it records, a push of an
// item opened already and a parent's read of its worker.
type quiet struct {
	files   map[string]string
	screens map[string]string
	// texts keeps each file's text, so that a failure says what changed
	// in it, not only that it did.
	texts map[string]string
}

func (m *matrix) quiet() quiet {
	q := quiet{files: map[string]string{}, screens: map[string]string{}, texts: map[string]string{}}
	filepath.WalkDir(m.b.Home, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || filepath.Base(p) == "daemon.log" {
			return nil
		}
		data, _ := os.ReadFile(p)
		sum := sha256.Sum256(withoutTimerMarks(p, data))
		q.files[p] = hex.EncodeToString(sum[:8])
		q.texts[p] = string(data)
		return nil
	})
	out, _ := m.b.Tmux.Run("list-panes", "-a", "-F", "#{pane_id}")
	for _, p := range strings.Fields(out) {
		q.screens[p] = m.b.Capture(p)
	}
	q.screens["status-right"], _ = m.b.Tmux.Run("show-options", "-gv", "status-right")
	return q
}

// settled is quiet once beta has stopped changing on its own (a window
// just opened is written to tmux-layout.json a moment later, a worker
// just started reports its turn): the same for half a second.
func (m *matrix) settled() quiet {
	m.t.Helper()
	q, since := m.quiet(), time.Now()
	testutil.WaitFor(m.t, 60*time.Second, func() (bool, string) {
		now := m.quiet()
		if !now.equal(q) {
			q, since = now, time.Now()
			return false, "beta kept changing"
		}
		return time.Since(since) >= 500*time.Millisecond, "beta kept changing"
	})
	return q
}

func (q quiet) equal(o quiet) bool {
	return fmt.Sprint(q.files) == fmt.Sprint(o.files) && fmt.Sprint(q.screens) == fmt.Sprint(o.screens)
}

// same fails the test when anything of before changed.
func (m *matrix) same(before quiet, what string) {
	m.t.Helper()
	after := m.quiet()
	var diff []string
	for p, h := range before.files {
		if after.files[p] != h {
			diff = append(diff, "changed or gone: "+p+"\n"+lineDiff(before.texts[p], after.texts[p]))
		}
	}
	for p := range after.files {
		if _, ok := before.files[p]; !ok {
			diff = append(diff, "written: "+p)
		}
	}
	for p, s := range before.screens {
		if after.screens[p] != s {
			diff = append(diff, fmt.Sprintf("the screen of %s changed:\n%s", p, after.screens[p]))
		}
	}
	sort.Strings(diff)
	if len(diff) > 0 {
		m.t.Errorf("refused requests (%s) changed beta:\n%s", what, strings.Join(diff, "\n"))
	}
}

// timerMarks are the fields st's timers write into a file of its home,
// by the file's name (see quiet).
var timerMarks = map[string]string{"attention.json": "pushed", "run.json": "told"}

// withoutTimerMarks is data with the field its timers write taken out of
// every object, or data itself for another file (or one that is not
// JSON: then it is compared whole).
func withoutTimerMarks(path string, data []byte) []byte {
	field, ok := timerMarks[filepath.Base(path)]
	if !ok {
		return data
	}
	var v any
	if json.Unmarshal(data, &v) != nil {
		return data
	}
	var strip func(any)
	strip = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			delete(x, field)
			for _, y := range x {
				strip(y)
			}
		case []any:
			for _, y := range x {
				strip(y)
			}
		}
	}
	strip(v)
	out, err := json.Marshal(v)
	if err != nil {
		return data
	}
	return out
}

// lineDiff is what changed between two texts, a line at a time: the lines
// of a alone (-), then those of b alone (+).
func lineDiff(a, b string) string {
	in := func(s string) map[string]bool {
		set := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			set[l] = true
		}
		return set
	}
	as, bs := in(a), in(b)
	var out []string
	for _, l := range strings.Split(a, "\n") {
		if !bs[l] {
			out = append(out, "  - "+l)
		}
	}
	for _, l := range strings.Split(b, "\n") {
		if !as[l] {
			out = append(out, "  + "+l)
		}
	}
	return strings.Join(out, "\n")
}

// TestWithoutTimerMarks: the matrix's sums leave out only the marks st's
// timers write; any other change of those files still counts.
func TestWithoutTimerMarks(t *testing.T) {
	same := func(path, a, b string) bool {
		return string(withoutTimerMarks(path, []byte(a))) == string(withoutTimerMarks(path, []byte(b)))
	}
	item := `[{"id":"att-4","kind":"no-report","text":"x"%s}]`
	pushed := fmt.Sprintf(item, `,"pushed":"2026-12-07T17:12:48Z"`)
	if !same("/h/attention.json", fmt.Sprintf(item, ""), pushed) {
		t.Error("an item's pushed mark counts as a change")
	}
	for _, other := range []string{
		`[{"id":"att-4","kind":"no-report","text":"x","closed":"2026-12-07T17:12:48Z"}]`,
		`[{"id":"att-4","kind":"no-report","text":"x"},{"id":"att-5","kind":"failed"}]`,
	} {
		if same("/h/attention.json", fmt.Sprintf(item, ""), other) {
			t.Errorf("%s is taken for the same attention.json", other)
		}
	}
	run := `{"id":"run-1","workers":[{"id":"%%3","state":"%s"%s}]}`
	if !same("/h/orch/run-1/run.json", fmt.Sprintf(run, "done", ""), fmt.Sprintf(run, "done", `,"told":true`)) {
		t.Error("a worker's told mark counts as a change")
	}
	if same("/h/orch/run-1/run.json", fmt.Sprintf(run, "done", ""), fmt.Sprintf(run, "idle", "")) {
		t.Error("a worker's state is left out of run.json's sum")
	}
	// In any other file, the same field counts.
	if same("/h/tmux-layout.json", `{"told":false}`, `{"told":true}`) {
		t.Error("a told field of another file is left out")
	}
}
