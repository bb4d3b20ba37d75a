package machines

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/sophonz/st/internal/authz"
	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/web"
)

// The web UI's cells. Its actors: a page of the web UI's session (the
// token that st web prints a person), anyone with no token (another site,
// another local user's process: the network), and a page of another
// origin that the browser sends the session for (same-site, another
// port): its websockets and actions are refused; what it GETs is served
// with no CORS header, so the browser lets it read nothing. The push
// answer's own actor is the holder of a gate's answer link.

// webActor is one kind of caller of the web UI.
type webActor struct {
	name    string
	token   bool   // it carries st web's link token (?token=)
	session bool   // it sends the session of a page the link opened
	origin  string // the Origin its browser sends ("" for none)
	answer  bool   // the push answer: it holds a valid answer link
}

var webActors = []webActor{
	{name: "st web's link", token: true},
	{name: "the page's session", session: true},
	{name: "no token"},
	{name: "another origin", token: true, origin: "http://127.0.0.1:1"},
}

// webExpect is the model's answer for a web cell: served, refused, or
// served to a page that cannot read it (another origin's GET). The page
// and its files are everyone's (authz.Network).
func webExpect(a webActor, r authz.Route, ws bool) string {
	switch {
	case r.Actor == authz.Network:
		return "served"
	case r.Actor == authz.AnswerToken && a.answer:
		return "served"
	case r.Actor == authz.AnswerToken, !a.token && !a.session:
		return "refused"
	case a.origin != "" && (ws || r.Method == http.MethodPost):
		return "refused"
	case a.origin != "":
		return "unreadable"
	}
	return "served"
}

// webURL is a concrete address of a route's pattern.
func webURL(pattern string) string {
	switch {
	case strings.HasSuffix(pattern, "/assets/"):
		return pattern + "app.js"
	case strings.HasSuffix(pattern, "{$}"):
		return strings.TrimSuffix(pattern, "{$}")
	case strings.Contains(pattern, "{token}"):
		return strings.Replace(pattern, "{token}", "0000000000000000", 1)
	}
	return pattern
}

func isWebsocket(path string) bool {
	return strings.HasSuffix(path, "/api/events") || strings.HasSuffix(path, "/term")
}

// web walks the web UI's cells: refused ones first, nothing changed after
// them; then the served ones, each doing what the page does.
func (m *matrix) web() {
	base, token := m.webBase()
	shell := strings.TrimSpace(must(m.t)(m.b.Tmux.Run("new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "main", "-n", "webshell", "sh")))
	var served []func()
	before := m.settled()
	for _, r := range web.Routes() {
		m.routes++
		actors := webActors
		if r.Actor == authz.AnswerToken {
			actors = []webActor{{name: "answer link", answer: true}, {name: "no answer link"}}
		}
		for _, a := range actors {
			for _, act := range r.Actions {
				a, r, act := a, r, act
				switch webExpect(a, r, isWebsocket(r.Path)) {
				case "refused":
					m.webRefused(base, token, a, r, act)
				default:
					served = append(served, func() { m.webServed(base, token, a, r, act, shell) })
				}
			}
		}
	}
	m.same(before, "the web UI's")
	for _, f := range served {
		f()
	}
}

// webBase is beta's web UI's address and token, as st web prints them to
// a person.
func (m *matrix) webBase() (string, string) {
	u, err := url.Parse(strings.TrimSpace(m.b.MustST("", "web")))
	if err != nil {
		m.t.Fatal(err)
	}
	return u.Scheme + "://" + u.Host, u.Query().Get("token")
}

// webDo asks the web UI for r (a websocket's handshake too) as a: its
// status, its body, and a websocket when one opened.
func (m *matrix) webDo(base, token string, a webActor, path, method, body string, query url.Values) (int, string, *websocket.Conn) {
	q := url.Values{}
	for k, v := range query {
		q[k] = v
	}
	if a.token {
		q.Set("token", token)
	}
	var protocols []string
	hdr := http.Header{}
	if a.session {
		session := m.webSession(base, token)
		hdr.Set("Authorization", "Bearer "+session)
		protocols = []string{"st", "st-session." + session}
	}
	u := base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	if a.origin != "" {
		hdr.Set("Origin", a.origin)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if isWebsocket(path) {
		c, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(u, "http"), &websocket.DialOptions{HTTPHeader: hdr, Subprotocols: protocols})
		if err != nil {
			code := 0
			if res != nil {
				code = res.StatusCode
			}
			return code, err.Error(), nil
		}
		return http.StatusSwitchingProtocols, "", c
	}
	req, _ := http.NewRequestWithContext(ctx, method, u, strings.NewReader(body))
	req.Header = hdr
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		m.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if acao := res.Header.Get("Access-Control-Allow-Origin"); acao != "" {
		m.t.Errorf("%s %s answers Access-Control-Allow-Origin: %s", method, path, acao)
	}
	return res.StatusCode, string(b), nil
}

// webSession is the session that the page st web's link opens holds:
// what its script then sends (Authorization: Bearer, the websocket's
// st-session subprotocol).
func (m *matrix) webSession(base, token string) string {
	m.t.Helper()
	res, err := http.Get(base + "/st/?token=" + url.QueryEscape(token))
	if err != nil {
		m.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	f := regexp.MustCompile(`<meta name="st-session" content="([0-9a-f]+)">`).FindSubmatch(b)
	if f == nil {
		m.t.Fatalf("the page st web's link opens holds no session: %d %.300s", res.StatusCode, b)
	}
	return string(f[1])
}

// webRefused asks a refused cell: 401 (no token), 403 (another origin),
// 410 (no answer link), with a body that says so and shows nothing of
// st's state.
func (m *matrix) webRefused(base, token string, a webActor, r authz.Route, act authz.Action) {
	m.t.Helper()
	m.cells.Add(1)
	m.refused.Add(1)
	code, body, c := m.webDo(base, token, a, webURL(r.Path), r.Method, "{}", m.webQuery(r, act, ""))
	if c != nil {
		c.CloseNow()
		m.t.Errorf("%s %s as %s (%s): the websocket opened", r.Method, r.Path, a.name, act)
		return
	}
	ws := isWebsocket(r.Path)
	ok := (code == 401 && (ws || strings.Contains(body, "needs its token"))) ||
		(code == 403 && (ws || strings.Contains(body, "this origin may not use st's web UI"))) ||
		(code == 410 && strings.Contains(body, "not answered"))
	if !ok || regexp.MustCompile(`"agents"|%\d+`).MatchString(body) {
		m.t.Errorf("%s %s as %s (%s): want a refusal that shows nothing, got %d %.200s", r.Method, r.Path, a.name, act, code, body)
	}
}

// webQuery is a route's query: a terminal's window, read-only for
// opening it only.
func (m *matrix) webQuery(r authz.Route, act authz.Action, pane string) url.Values {
	if !strings.HasSuffix(r.Path, "/term") {
		return nil
	}
	ro := "0"
	if act == authz.OpenTerminal {
		ro = "1"
	}
	if pane == "" {
		pane = m.p0
	}
	return url.Values{"pane": {pane}, "cols": {"100"}, "rows": {"30"}, "ro": {ro}}
}

// webServed asks a served cell, doing what the page does, and checks it
// worked.
func (m *matrix) webServed(base, token string, a webActor, r authz.Route, act authz.Action, shell string) {
	m.t.Helper()
	m.cells.Add(1)
	m.allowed.Add(1)
	path, body, item := webURL(r.Path), "{}", ""
	switch {
	case strings.HasSuffix(path, "/api/adopt"):
		body = js(map[string]string{"coordinator": m.coord, "agent": m.b.HandAgent(fmt.Sprintf("dropped%d", m.seq.Add(1)))})
	case strings.HasSuffix(path, "/api/release"):
		body = js(map[string]string{"pane": m.workerOf(m.coord, fmt.Sprintf("let-go%d", m.seq.Add(1)))})
	case strings.HasSuffix(path, "/api/gates/answer"):
		body = js(map[string]string{"id": m.gate(), "option": "yes"})
	case strings.HasSuffix(path, "/api/prompts/answer"):
		body = js(map[string]string{"id": m.prompt(), "option": "allow"})
	case strings.HasSuffix(path, "/api/attention/dismiss"):
		item = m.attentionOf(m.gate())
		body = js(map[string]string{"id": item})
	case r.Actor == authz.AnswerToken && strings.HasPrefix(r.Path, "/push/prompt/"):
		path = m.pushPromptAnswer()
	case r.Actor == authz.AnswerToken:
		path = m.pushAnswer()
	}
	code, got, c := m.webDo(base, token, a, path, r.Method, body, m.webQuery(r, act, shell))
	if c != nil {
		m.webSocketWorks(c, path, act, shell)
		return
	}
	if strings.HasSuffix(path, "/api/state") && code == 200 && (!strings.Contains(got, "sw-secret-summary") || !strings.Contains(got, "cs-secret-summary")) {
		// The web UI's session is the person at this machine's browser.
		m.t.Errorf("%s %s as %s: want every worker's report (a person's page), got %.600s", r.Method, r.Path, a.name, got)
	}
	if item != "" && code == 200 {
		if st := m.attentionState(item); st.Get("closed_by").String() != "dismissed" {
			m.t.Errorf("%s %s as %s: answered 200, but item %s is not dismissed: %s", r.Method, r.Path, a.name, item, st.Raw)
		}
	}
	switch {
	case webExpect(a, r, false) == "unreadable" && code < 400:
	case code == 200, code == http.StatusFound && strings.Contains(got, "/st/"):
	default:
		m.t.Errorf("%s %s as %s (%s): want it served, got %d %.300s", r.Method, r.Path, a.name, act, code, got)
	}
}

// webSocketWorks reads what a websocket of the page gets: a snapshot of
// st's state, or a window drawn (and, typing, what is typed arrives).
func (m *matrix) webSocketWorks(c *websocket.Conn, path string, act authz.Action, shell string) {
	m.t.Helper()
	defer func() {
		c.Close(websocket.StatusNormalClosure, "done")
		testutil.WaitFor(m.t, 30*time.Second, func() (bool, string) {
			out, _ := m.b.Tmux.Run("list-sessions", "-F", "#{session_name}")
			return !strings.Contains(out, "st-web-"), "beta's web sessions are still open:\n" + out
		})
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, _, err := c.Read(ctx); err != nil {
		m.t.Errorf("%s: nothing came: %v", path, err)
		return
	}
	if act != authz.TypeTerminal {
		return
	}
	line := fmt.Sprintf("echo typed-by-the-page-%d\r", m.seq.Add(1))
	if err := c.Write(ctx, websocket.MessageBinary, []byte(line)); err != nil {
		m.t.Fatal(err)
	}
	want := strings.TrimSuffix(strings.TrimPrefix(line, "echo "), "\r")
	testutil.WaitFor(m.t, 30*time.Second, func() (bool, string) {
		s := m.b.Capture(shell)
		return strings.Count(s, want) >= 2, path + ": what the page typed never ran:\n" + s
	})
}

// pushAnswer opens a gate, and returns the path of the answer link its
// push carried for "yes": what the phone POSTs.
func (m *matrix) pushAnswer() string {
	m.t.Helper()
	id := m.gate()
	var path string
	testutil.WaitFor(m.t, 30*time.Second, func() (bool, string) {
		for _, h := range m.pushed() {
			if h.Get("X-St-Gate") != id {
				continue
			}
			for _, action := range strings.Split(h.Get("Actions"), ";") {
				f := strings.Split(action, ",")
				if len(f) >= 3 && strings.TrimSpace(f[1]) == "yes" {
					if u, err := url.Parse(strings.TrimSpace(f[2])); err == nil {
						path = u.Path
					}
				}
			}
		}
		return path != "", "no push with an answer link for gate " + id
	})
	return path
}

// pushPromptAnswer opens a permission prompt, and returns the path of the
// answer link its push carried for Allow once: what the phone POSTs.
func (m *matrix) pushPromptAnswer() string {
	m.t.Helper()
	id := m.prompt()
	var path string
	testutil.WaitFor(m.t, 30*time.Second, func() (bool, string) {
		for _, h := range m.pushed() {
			if h.Get("X-St-Prompt") != id {
				continue
			}
			for _, action := range strings.Split(h.Get("Actions"), ";") {
				f := strings.Split(action, ",")
				if len(f) >= 3 && strings.TrimSpace(f[1]) == "Allow once" {
					if u, err := url.Parse(strings.TrimSpace(f[2])); err == nil {
						path = u.Path
					}
				}
			}
		}
		return path != "", "no push with an Allow once link for prompt " + id
	})
	return path
}
