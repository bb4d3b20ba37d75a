package machines

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/authz"
	"github.com/sophonz/st/internal/peer"
	"github.com/sophonz/st/internal/remote"
	"github.com/sophonz/st/internal/testutil"
)

// The peer API's cells: alpha, another machine of beta's account, asks
// beta with its own certificate (its identity, as alpha's st holds it):
// while beta takes workers, and while it does not; then a client with no
// certificate; then alpha once removed from the account.

// peerWorld is what the peer cells act on, on beta.
type peerWorld struct {
	client  *http.Client // alpha's, to beta
	aw      string       // alpha's worker on beta
	offered string       // an agent a person on beta offered to alpha
	coordOf string       // beta's pane whose worker runs on alpha
}

// peerVariant is alpha as beta sees it in one part of the walk.
type peerVariant struct {
	name    string
	accept  bool // beta takes workers
	machine bool // alpha's certificate is valid (not removed)
	cert    bool // the client shows a certificate at all
}

// peerTargets: what each route of the peer API acts on in a cell: the
// allowed target and another.
func (w *peerWorld) targets(m *matrix, name string) []string {
	switch name {
	case api.PeerRouteRead, api.PeerRouteSend, api.PeerRouteRename:
		return []string{w.aw, m.pw}
	case api.PeerRouteStop, api.PeerRouteRelease:
		return []string{"fresh", m.pw}
	case api.PeerRouteAdopt:
		return []string{"offered", m.lone}
	case api.PeerRoutePane:
		return []string{w.coordOf, m.coord}
	case api.PeerRouteTerm:
		return []string{w.aw, w.offered, m.pw}
	}
	return []string{""}
}

// peerExpect is the model's answer for a peer cell: allowed, and whether
// its terminal is read-only.
func peerExpect(v peerVariant, act authz.Action, target string, w *peerWorld, m *matrix) (ok, readOnly bool) {
	if !v.machine || !v.cert {
		return false, false
	}
	mine := target == w.aw || target == "fresh"
	switch act {
	case authz.Watch:
		return true, false
	case authz.FindCoordinator:
		return target == w.coordOf, false
	case authz.ReadScreen:
		return mine, false
	case authz.Start, authz.Reparent, authz.SeeAgents:
		return v.accept, false
	case authz.Send, authz.Stop, authz.Rename, authz.Release:
		return v.accept && mine, false
	case authz.Adopt:
		return v.accept && target == "offered", false
	case authz.OpenTerminal, authz.TypeTerminal:
		// An offer not yet adopted opens read-only, whatever alpha asks:
		// its keys never arrive.
		return v.accept && (mine || target == w.offered), target == w.offered
	}
	return false, false
}

// newPeerWorld gives beta what the peer cells act on.
func (m *matrix) newPeerWorld() *peerWorld {
	t := m.t
	m.a.MustST("", "orch", "accept-remote", "on")
	w := &peerWorld{client: m.alphaClient(true)}
	w.aw = strings.TrimPrefix(has(t, must(t)(m.a.In(m.pa, "worker", "start", "--machine", "beta", "--agent", "sim", "--task", m.idle, "--name", "aw")),
		`(?m)^(beta/%\d+) aw$`)[1], "beta/")
	// as: alpha's worker on beta that reported; alpha reads its report
	// (the graph's summary), and no other of beta's workers'.
	as := m.c.TaskFile("as-secret.md", "summary: as-secret-summary\n")
	has(t, must(t)(m.a.In(m.pa, "worker", "start", "--machine", "beta", "--agent", "sim", "--task", as, "--name", "as")), `(?m)^beta/%\d+ as$`)
	testutil.WaitFor(t, 60*time.Second, func() (bool, string) {
		out, _ := m.b.ST("worker", "list", "--all", "--json")
		return strings.Contains(out, "as-secret-summary"), "alpha's worker as never reported on beta:\n" + out
	})
	w.offered = m.b.HandAgent("offered")
	m.b.MustST("", "worker", "offer", w.offered, "--machine", "alpha")
	has(t, must(t)(m.b.In(m.p0, "worker", "start", "--machine", "alpha", "--agent", "sim", "--task", m.slow, "--name", "onalpha")), `alpha/%\d+ onalpha`)
	w.coordOf = m.p0
	return w
}

// alphaClient is an HTTP client of beta with alpha's identity (with no
// certificate at all when cert is false).
func (m *matrix) alphaClient(cert bool) *http.Client {
	m.t.Helper()
	id, err := remote.LoadIdentity(m.a.Home)
	if err != nil {
		m.t.Fatal(err)
	}
	if cert {
		return remote.NewNet(id, nil, m.t.Logf).Client("beta")
	}
	acc, err := id.Access(context.Background(), "beta")
	if err != nil {
		m.t.Fatal(err)
	}
	return &http.Client{Transport: &http.Transport{
		DialTLSContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}}).DialContext(ctx, "tcp", acc.Addr)
		}}}
}

// peer walks the peer API's cells in each variant of alpha.
func (m *matrix) peer() {
	w := m.newPeerWorld()
	for _, r := range peer.Routes() {
		m.routes++
		if _, ok := peerRows[strings.TrimPrefix(r.Path, api.PeerPrefix)]; !ok {
			m.t.Errorf("route %s of the peer table has no row in the matrix (peerRows)", r.Path)
		}
	}
	m.peerVariant(w, peerVariant{name: "alpha", accept: true, machine: true, cert: true})
	m.b.MustST("", "orch", "accept-remote", "off")
	m.peerVariant(w, peerVariant{name: "alpha, beta taking no workers", machine: true, cert: true})
	m.b.MustST("", "orch", "accept-remote", "on")
	w.client = m.alphaClient(false)
	m.peerVariant(w, peerVariant{name: "no certificate", accept: true, machine: true})
	has(m.t, m.c.RemoveMachine("alpha", "acme"), `removed machine alpha`)
	w.client = m.alphaClient(true)
	testutil.WaitFor(m.t, 30*time.Second, func() (bool, string) {
		code, body, err := m.peerPost(w, api.PeerRouteWatch, `{"wait":1}`)
		return err != nil || code == 403, fmt.Sprintf("beta still answers removed alpha: %d %s %v", code, body, err)
	})
	m.peerVariant(w, peerVariant{name: "alpha, removed from the account", accept: true, cert: true})
}

// peerCell is one cell of the peer API's matrix.
type peerCell struct {
	name, target string
	act          authz.Action
	ok, ro       bool
}

// peerVariant asks every cell in one variant: the refused ones first,
// nothing changed after them, then the allowed ones.
func (m *matrix) peerVariant(w *peerWorld, v peerVariant) {
	var refused, allowed []peerCell
	for _, r := range peer.Routes() {
		name := strings.TrimPrefix(r.Path, api.PeerPrefix)
		for _, act := range r.Actions {
			for _, target := range w.targets(m, name) {
				ok, ro := peerExpect(v, act, target, w, m)
				c := peerCell{name, target, act, ok, ro}
				if ok {
					allowed = append(allowed, c)
				} else {
					refused = append(refused, c)
				}
			}
		}
	}
	before := m.settled()
	for _, c := range refused {
		m.peerAsk(w, v, c)
	}
	m.same(before, v.name+"'s refused peer requests")
	for _, c := range allowed {
		m.peerAsk(w, v, c)
	}
}

// peerAsk asks one cell and checks its answer.
func (m *matrix) peerAsk(w *peerWorld, v peerVariant, c peerCell) {
	m.t.Helper()
	m.cells.Add(1)
	if c.ok {
		m.allowed.Add(1)
	} else {
		m.refused.Add(1)
	}
	target := c.target
	switch {
	case target == "fresh" && c.ok:
		target = strings.TrimPrefix(has(m.t, must(m.t)(m.a.In(m.pa, "worker", "start", "--machine", "beta", "--agent", "sim", "--task", m.idle,
			"--name", fmt.Sprintf("aw%d", m.seq.Add(1)))), `(?m)^(beta/%\d+) `)[1], "beta/")
	case target == "fresh":
		target = w.aw
	case target == "offered" && c.ok:
		// An adoption uses its offer up: an agent offered for it alone.
		target = m.b.HandAgent(fmt.Sprintf("offered%d", m.seq.Add(1)))
		m.b.MustST("", "worker", "offer", target, "--machine", "alpha")
	case target == "offered":
		target = w.offered
	}
	if c.name == api.PeerRouteTerm {
		m.peerTerm(w, v, c, target)
		return
	}
	code, body, err := m.peerPost(w, c.name, peerRows[c.name](m, target))
	what := fmt.Sprintf("%s %s on %s (%s)", v.name, c.name, target, c.act)
	m.secretsIn(what, body, false, false) // beta's own workers are not alpha's to read
	if c.ok && c.name == api.PeerRouteGraph && !strings.Contains(body, "as-secret-summary") {
		m.t.Errorf("%s: want the report of alpha's own worker on beta (as), got %.600s", what, body)
	}
	switch {
	case c.ok && (err != nil || code != 200):
		m.t.Errorf("%s: want it to work, got %d %.300s %v", what, code, body, err)
	case !c.ok && err == nil && !(answer{code: code, body: body}).refusal():
		m.t.Errorf("%s: want a refusal saying why and what to do, got %d %.300s", what, code, body)
	case !c.ok && err != nil && v.machine && v.cert:
		m.t.Errorf("%s: want a refusal, got no answer: %v", what, err)
	}
}

// peerPost posts one peer request as alpha.
func (m *matrix) peerPost(w *peerWorld, name, body string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://beta"+api.PeerPrefix+name, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	res, err := w.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), nil
}

// peerTerm opens a terminal of target as alpha: allowed, it draws, and
// takes keys unless read-only; refused, it is refused before a byte of
// the screen is sent.
func (m *matrix) peerTerm(w *peerWorld, v peerVariant, c peerCell, target string) {
	m.t.Helper()
	ro := "0"
	if c.act == authz.OpenTerminal {
		ro = "1"
	}
	q := url.Values{"pane": {target}, "cols": {"100"}, "rows": {"30"}, "ro": {ro}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, res, err := websocket.Dial(ctx, "wss://beta"+api.PeerPrefix+api.PeerRouteTerm+"?"+q.Encode(), &websocket.DialOptions{HTTPClient: w.client})
	what := fmt.Sprintf("%s term of %s (%s)", v.name, target, c.act)
	if !c.ok {
		if err == nil {
			conn.CloseNow()
			m.t.Errorf("%s: opened", what)
		} else if v.machine && v.cert && (res == nil || res.StatusCode != 403) {
			m.t.Errorf("%s: want 403, got %v", what, err)
		}
		return
	}
	if err != nil {
		m.t.Errorf("%s: want it open, got %v", what, err)
		return
	}
	defer func() {
		conn.Close(websocket.StatusNormalClosure, "done")
		testutil.WaitFor(m.t, 30*time.Second, func() (bool, string) {
			out, _ := m.b.Tmux.Run("list-sessions", "-F", "#{session_name}")
			return !strings.Contains(out, "st-web-"), "beta's web sessions are still open:\n" + out
		})
	}()
	if _, _, err := conn.Read(ctx); err != nil {
		m.t.Errorf("%s: nothing drawn: %v", what, err)
		return
	}
	if c.act != authz.TypeTerminal {
		return
	}
	key := fmt.Sprintf("peerkey%d", m.seq.Add(1))
	conn.Write(ctx, websocket.MessageBinary, []byte(key))
	if c.ro {
		m.peerNothingTyped(what, target, key, conn)
		return
	}
	testutil.WaitFor(m.t, 30*time.Second, func() (bool, string) {
		s := m.b.Capture(target)
		return strings.Contains(s, key), what + ": the keys never arrived:\n" + s
	})
}

// peerNothingTyped: keys typed into a read-only terminal never arrive.
// Once the terminal is closed and beta's session of it is gone, beta has
// handled every key it got; a person's keys typed into the pane after
// that arrive after any of them would have.
func (m *matrix) peerNothingTyped(what, target, key string, conn *websocket.Conn) {
	m.t.Helper()
	conn.Close(websocket.StatusNormalClosure, "done")
	testutil.WaitFor(m.t, 30*time.Second, func() (bool, string) {
		out, _ := m.b.Tmux.Run("list-sessions", "-F", "#{session_name}")
		return !strings.Contains(out, "st-web-"), "beta's web sessions are still open:\n" + out
	})
	marker := fmt.Sprintf("person%d", m.seq.Add(1))
	must(m.t)(m.b.Tmux.Run("send-keys", "-t", target, "-l", marker))
	testutil.WaitFor(m.t, 30*time.Second, func() (bool, string) {
		s := m.b.Capture(target)
		return strings.Contains(s, marker), "a person's keys never arrived:\n" + s
	})
	if s := m.b.Capture(target); strings.Contains(s, key) {
		m.t.Errorf("%s: keys typed read-only arrived:\n%s", what, s)
	}
	must(m.t)(m.b.Tmux.Run("send-keys", "-t", target, "C-u"))
}

// peerRows are the bodies of the peer API's POST routes, by name; the
// terminal's row is its query (peerTerm).
var peerRows = map[string]func(m *matrix, target string) string{
	api.PeerRouteStart: func(m *matrix, _ string) string {
		return js(map[string]any{"run": fmt.Sprintf("run-%06x", m.seq.Add(1)), "coordinator": "%0", "parent": "%0", "level": 1,
			"ref": fmt.Sprintf("%016x", m.seq.Add(1)), "agent": "sim", "task_name": "t.md", "task_text": "answer: waiting\n",
			"name": fmt.Sprintf("ps%d", m.seq.Add(1))})
	},
	api.PeerRouteWatch: func(*matrix, string) string { return `{"wait":1000000}` },
	api.PeerRouteRead:  func(_ *matrix, t string) string { return js(map[string]string{"id": t}) },
	api.PeerRouteSend: func(_ *matrix, t string) string {
		return js(map[string]string{"id": t, "text": "sent by alpha"})
	},
	api.PeerRouteStop: func(_ *matrix, t string) string { return js(map[string]string{"id": t}) },
	api.PeerRouteRename: func(m *matrix, t string) string {
		return js(map[string]string{"id": t, "text": fmt.Sprintf("peer-renamed-%d", m.seq.Add(1))})
	},
	api.PeerRouteRelease: func(_ *matrix, t string) string { return js(map[string]string{"id": t}) },
	api.PeerRouteAdopt: func(m *matrix, t string) string {
		return js(map[string]any{"id": t, "run": fmt.Sprintf("run-%06x", m.seq.Add(1)), "coordinator": "%0", "parent": "%0", "level": 1,
			"ref": fmt.Sprintf("%016x", m.seq.Add(1))})
	},
	api.PeerRouteReparent: func(*matrix, string) string { return `{"old":"%90","new":"%91"}` },
	api.PeerRoutePane:     func(_ *matrix, t string) string { return js(map[string]string{"id": t}) },
	api.PeerRouteGraph:    func(*matrix, string) string { return "{}" },
	api.PeerRouteTerm:     func(*matrix, string) string { return "" },
}
