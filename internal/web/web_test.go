package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/sophonz/st/internal/web"
	"github.com/sophonz/st/internal/web/webtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const secret = "s3cret-for-tests-of-the-web-ui-0123456789"

// serve starts the UI on a fake backend holding the sample run.
func serve(t *testing.T, cfg web.Config) (*httptest.Server, *webtest.Backend) {
	t.Helper()
	fake := webtest.New(webtest.Sample(time.Now()))
	if cfg.Backend == nil {
		cfg.Backend = fake
	}
	if cfg.Secret == "" {
		cfg.Secret = secret
	}
	ts := httptest.NewServer(web.New(cfg))
	t.Cleanup(ts.Close)
	return ts, fake
}

// portOf is the port of a server's URL.
func portOf(t *testing.T, base string) int {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatalf("%s has no port", base)
	}
	return p
}

// tok is the token of st web's link to the UI at base.
func tok(t *testing.T, base string) string { return web.LinkToken(secret, portOf(t, base)) }

var sessionMeta = regexp.MustCompile(`<meta name="st-session" content="([0-9a-f]{64})">`)

// sessionFor opens the page with the link, as a browser does, and
// returns the session the page got. No cookie is set.
func sessionFor(t *testing.T, base string) string {
	t.Helper()
	res, body := do(t, "GET", base+"/st/?token="+tok(t, base), "", nil)
	if res.StatusCode != 200 {
		t.Fatalf("the link: %d %q", res.StatusCode, body)
	}
	if c := res.Header.Values("Set-Cookie"); len(c) > 0 {
		t.Fatalf("the link set cookies %q: a browser sends them to every port of 127.0.0.1", c)
	}
	m := sessionMeta.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no session in the page the link opened:\n%s", body)
	}
	if strings.Contains(body, secret) || strings.Contains(m[1], tok(t, base)) {
		t.Fatalf("the page holds the secret or the link's token")
	}
	return m[1]
}

func bearer(session string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + session}
}

func do(t *testing.T, method, u string, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// routes that act or show the user's state: each needs the link's token
// or a page's session.
var routes = []struct{ method, path string }{
	{"GET", "/api/state"},
	{"GET", "/st/api/state"},
	{"GET", "/api/events"},
	{"GET", "/st/api/events"},
	{"GET", "/term?session=$1&window=@1"},
	{"GET", "/st/term?session=$1&window=@1"},
	{"GET", "/no/such/page"},
	{"GET", "/st/assets/../api/state"},
	{"GET", "/st/assets//x"},
	{"POST", "/api/adopt"},
	{"POST", "/api/release"},
	{"POST", "/st/api/gates/answer"},
	{"POST", "/st/"},
}

// publicFiles are the page and its files: the same for everyone, holding
// nothing of the user's, so served to all.
var publicFiles = []struct{ path, ctype, has string }{
	{"/st/", "text/html", `id="agents-btn"`},
	{"/st/assets/app.js", "text/javascript", "import { Terminal }"},
	{"/assets/app.js", "text/javascript", "import { Terminal }"},
	{"/st/assets/vendor/xterm.mjs", "text/javascript", "Terminal"},
	{"/assets/vendor/addon-fit.mjs", "text/javascript", "FitAddon"},
	{"/st/assets/app.css", "text/css", "--green"},
	{"/assets/vendor/xterm.css", "text/css", ".xterm"},
}

func TestEveryRouteNeedsTheToken(t *testing.T) {
	ts, fake := serve(t, web.Config{})
	session := sessionFor(t, ts.URL)
	link := tok(t, ts.URL)
	for _, r := range routes {
		for name, hdr := range map[string]map[string]string{
			"none":                               nil,
			"a wrong session":                    bearer(strings.Repeat("0", 64)),
			"the link's token as a session":      bearer(link),
			"the secret as a session":            bearer(secret),
			"the session in a cookie":            {"Cookie": "st=" + session},
			"the session as another subprotocol": {"Sec-WebSocket-Protocol": "st, " + session},
		} {
			res, body := do(t, r.method, ts.URL+r.path, `{}`, hdr)
			if res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "401") {
				t.Errorf("%s %s with %s: %d %q, want 401", r.method, r.path, name, res.StatusCode, body)
			}
			if res.Header.Get("Set-Cookie") != "" {
				t.Errorf("%s %s with %s set a cookie", r.method, r.path, name)
			}
		}
		sep := "?"
		if strings.Contains(r.path, "?") {
			sep = "&"
		}
		for _, q := range []string{"wrong", secret, session, link[:len(link)-1]} {
			if res, _ := do(t, r.method, ts.URL+r.path+sep+"token="+q, `{}`, nil); res.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s %s with token=%.8s…: %d, want 401", r.method, r.path, q, res.StatusCode)
			}
		}
	}
	// The page and its files answer anyone, and hold no credential.
	for _, f := range publicFiles {
		res, body := do(t, "GET", ts.URL+f.path, "", nil)
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), f.ctype) || !strings.Contains(body, f.has) {
			t.Errorf("GET %s: %d %s, has %q: %v", f.path, res.StatusCode, res.Header.Get("Content-Type"), f.has, strings.Contains(body, f.has))
		}
		for _, c := range []string{secret, session, link} {
			if strings.Contains(body, c) {
				t.Errorf("GET %s without a credential shows one: %.8s…", f.path, c)
			}
		}
		if res.Header.Get("Set-Cookie") != "" {
			t.Errorf("GET %s set a cookie", f.path)
		}
	}
	// A link with a wrong token says so, rather than showing a page that
	// cannot work.
	if res, body := do(t, "GET", ts.URL+"/st/?token=wrong", "", nil); res.StatusCode != 401 || !strings.Contains(body, "st web") {
		t.Errorf("the page with a wrong token: %d %q, want 401 naming st web", res.StatusCode, body)
	}
	if calls := fake.Calls(); len(calls) != 0 {
		t.Errorf("refused requests reached the backend: %v", calls)
	}
}

func TestEmptySecretRefusesAll(t *testing.T) {
	fake := webtest.New(webtest.Sample(time.Now()))
	ts := httptest.NewServer(web.New(web.Config{Backend: fake}))
	defer ts.Close()
	for _, u := range []string{"/st/?token=", "/api/state?token=", "/api/state?token=" + web.LinkToken("", portOf(t, ts.URL))} {
		if res, _ := do(t, "GET", ts.URL+u, "", nil); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s with no secret configured: %d, want 401", u, res.StatusCode)
		}
	}
}

// TestLinkThenSession: st web's link opens the page, which gets its
// session in the page (no cookie) and works with it: the state, the
// actions and both websockets. The link's token works for a client that
// carries it itself.
func TestLinkThenSession(t *testing.T) {
	ts, _ := serve(t, web.Config{})
	res, body := do(t, "GET", ts.URL+"/?token="+tok(t, ts.URL), "", nil)
	if res.StatusCode != 200 || res.Request.URL.Path != web.Path || !strings.Contains(body, `<script type="module" src="assets/app.js">`) || !sessionMeta.MatchString(body) {
		t.Fatalf("GET /?token=: %d at %s %q", res.StatusCode, res.Request.URL, body)
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("CSP = %q", csp)
	}
	if rp := res.Header.Get("Referrer-Policy"); rp != "no-referrer" {
		t.Errorf("Referrer-Policy = %q: the token would leak in Referer", rp)
	}
	if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control of the page with its session = %q, want no-store", cc)
	}
	session := sessionFor(t, ts.URL)
	// The page without the link holds no session: the script uses the one
	// it keeps.
	if _, body := do(t, "GET", ts.URL+"/st/", "", nil); sessionMeta.MatchString(body) {
		t.Error("the page without the link's token holds a session")
	}
	if _, body := do(t, "GET", ts.URL+"/st/", "", bearer(session)); sessionMeta.MatchString(body) {
		t.Error("the page asked with a session hands out a session")
	}
	for _, p := range []string{"/st/api/state", "/api/state"} {
		if res, body := do(t, "GET", ts.URL+p, "", bearer(session)); res.StatusCode != 200 || !strings.Contains(body, `"machine":"devbox"`) {
			t.Errorf("GET %s with the session: %d %q", p, res.StatusCode, body)
		}
	}
	if res, _ := do(t, "GET", ts.URL+"/api/state?token="+tok(t, ts.URL), "", nil); res.StatusCode != 200 {
		t.Errorf("GET /api/state?token=: %d", res.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.URL, "http")+"/st/api/events",
		&websocket.DialOptions{Subprotocols: []string{"st", "st-session." + session}})
	if err != nil {
		t.Fatalf("/st/api/events with the session as a subprotocol: %v", err)
	}
	if p := res.Header.Get("Sec-WebSocket-Protocol"); p != "st" {
		t.Errorf("the server picked the subprotocol %q, want st (never the session back)", p)
	}
	readEvent(ctx, t, c)
	c.Close(websocket.StatusNormalClosure, "")
	if res, _ := do(t, "GET", ts.URL+"/assets/", "", bearer(session)); res.StatusCode == 200 {
		t.Errorf("GET /assets/ lists the folder")
	}
	if res, _ := do(t, "GET", ts.URL+"/nosuch", "", bearer(session)); res.StatusCode != 404 {
		t.Errorf("GET /nosuch: %d, want 404", res.StatusCode)
	}
}

// TestCredentialsAreBoundToThePort: one UI served on two ports. A link
// made for one port opens nothing on the other, and neither does a page's
// session of the other port: what a program on the port st left (a
// bookmark's request, a page's script) holds is useless where st is now.
// A session of the previous start of st opens nothing after a restart.
func TestCredentialsAreBoundToThePort(t *testing.T) {
	fake := webtest.New(webtest.Sample(time.Now()))
	srv := web.New(web.Config{Secret: secret, Backend: fake})
	a := httptest.NewServer(srv)
	defer a.Close()
	b := httptest.NewUnstartedServer(srv)
	b.Start()
	defer b.Close()
	sa, sb := sessionFor(t, a.URL), sessionFor(t, b.URL)
	if sa == sb || tok(t, a.URL) == tok(t, b.URL) {
		t.Fatal("the two ports share a credential")
	}
	for _, tc := range []struct {
		name string
		base string
		hdr  map[string]string
		q    string
		want int
	}{
		{"port A's link on A", a.URL, nil, "?token=" + tok(t, a.URL), 200},
		{"port A's link on B", b.URL, nil, "?token=" + tok(t, a.URL), 401},
		{"port A's session on A", a.URL, bearer(sa), "", 200},
		{"port A's session on B", b.URL, bearer(sa), "", 401},
		{"port B's session on A", a.URL, bearer(sb), "", 401},
		{"the secret itself on A", a.URL, nil, "?token=" + secret, 401},
	} {
		if res, body := do(t, "GET", tc.base+"/st/api/state"+tc.q, "", tc.hdr); res.StatusCode != tc.want {
			t.Errorf("%s: %d %.60q, want %d", tc.name, res.StatusCode, body, tc.want)
		}
	}
	restarted := httptest.NewServer(web.New(web.Config{Secret: secret, Backend: fake}))
	defer restarted.Close()
	if res, _ := do(t, "GET", restarted.URL+"/st/api/state", "", bearer(sessionFor(t, a.URL))); res.StatusCode != 401 {
		t.Errorf("a session of another start of st: %d, want 401", res.StatusCode)
	}
}

// TestHostHeader: only this machine's loopback names on the UI's port
// (and hosts configured on purpose) are served, token or not, so a page
// whose DNS name was rebound to 127.0.0.1 gets nothing, and neither do
// its websockets.
func TestHostHeader(t *testing.T) {
	ts, fake := serve(t, web.Config{AllowedHosts: []string{"st.example.net"}})
	u, _ := url.Parse(ts.URL)
	_, port, _ := net.SplitHostPort(u.Host)
	get := func(host, path string) int {
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		req.Host = host
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	token := tok(t, ts.URL)
	for _, h := range []string{"evil.example:" + port, "evil.example", "127.0.0.1:1", "localhost.:" + port, "127.0.0.2:" + port, "0.0.0.0:" + port} {
		for _, p := range []string{"/st/?token=" + token, "/st/", "/st/assets/app.js", "/api/state?token=" + token, "/push/answer/x"} {
			if code := get(h, p); code != http.StatusMisdirectedRequest {
				t.Errorf("Host %q %s: %d, want 421", h, p, code)
			}
		}
	}
	for _, h := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST:" + port, "[::1]:" + port, "st.example.net"} {
		if code := get(h, "/api/state?token="+token); code != 200 {
			t.Errorf("Host %q: %d, want 200", h, code)
		}
	}
	// The terminal socket with Host and Origin both the rebound name.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, path := range []string{"/term?session=$1&window=@1&token=" + token, "/api/events?token=" + token} {
		_, res, err := websocket.Dial(ctx, ts.URL+path, &websocket.DialOptions{Host: "evil.example:" + port,
			HTTPHeader: http.Header{"Origin": {"http://evil.example:" + port}}})
		if err == nil || res == nil || res.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("websocket %s with a rebound Host: %v, want 421", path, err)
		}
	}
	if calls := fake.Calls(); len(calls) != 0 {
		t.Errorf("refused requests reached the backend: %v", calls)
	}
}

// TestPushAnswer: a push's action answers with its own one-time token,
// as a POST with no body, no cookie and no web token.
func TestPushAnswer(t *testing.T) {
	var got []string
	ts, _ := serve(t, web.Config{AnswerPush: func(ctx context.Context, tok string) error {
		got = append(got, tok)
		if tok != "good" {
			return errors.New("this answer link is not valid")
		}
		return nil
	}})
	if res, body := do(t, "POST", ts.URL+"/push/answer/good", "", nil); res.StatusCode != 200 || !strings.Contains(body, "answered") {
		t.Errorf("POST good: %d %q", res.StatusCode, body)
	}
	if res, _ := do(t, "POST", ts.URL+"/push/answer/bad", "", nil); res.StatusCode != http.StatusGone {
		t.Errorf("POST bad: %d, want 410", res.StatusCode)
	}
	if res, _ := do(t, "GET", ts.URL+"/push/answer/good", "", nil); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET of an answer link: %d, want 401 (only POST answers)", res.StatusCode)
	}
	if len(got) != 2 || got[0] != "good" || got[1] != "bad" {
		t.Errorf("answered with %v", got)
	}
}

func TestState(t *testing.T) {
	ts, fake := serve(t, web.Config{})
	fake.Update(func(s *web.Snapshot) {
		s.Sessions = append(s.Sessions, web.Session{ID: "$9", Name: "st-web-0123456789ab", Windows: []web.Window{{ID: "@3"}}})
		s.Agents[2].Session = "$9" // as list-panes -a can say while a browser looks at it
		s.Gates = nil
	})
	res, body := do(t, "GET", ts.URL+"/api/state?token="+tok(t, ts.URL), "", nil)
	if res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		t.Fatal(err)
	}
	if string(raw["gates"]) != "[]" {
		t.Errorf("gates = %s, want [] (never null)", raw["gates"])
	}
	if strings.Contains(body, "st-web-") {
		t.Errorf("the web terminal's own session is listed: %s", body)
	}
	var snap web.Snapshot
	json.Unmarshal([]byte(body), &snap)
	if len(snap.Agents) != 4 || snap.Agents[3].Summary == "" || snap.Agents[1].Parent != "%1" || snap.Agents[2].Session != "$1" {
		t.Errorf("agents = %+v", snap.Agents)
	}
	// The JSON field names the page reads.
	for _, k := range []string{`"pane":"%1"`, `"role":"coordinator"`, `"state":"working"`, `"since":"`, `"parent":"%1"`,
		`"subagents":[{"id":"sa-1","type":"Explore","state":"working"`, `"session":"$1"`, `"window":"@1"`, `"kind":"codex"`,
		`"windows":[{"id":"@1","index":"0","name":"claude","active":true,"panes":[{"id":"%1","agent":"claude","role":"coordinator"}]}`} {
		if !strings.Contains(body, k) {
			t.Errorf("state lacks %s", k)
		}
	}

	fake2 := &failing{webtest.New(web.Snapshot{})}
	ts2, _ := serve(t, web.Config{Backend: fake2})
	if res, body := do(t, "GET", ts2.URL+"/api/state?token="+tok(t, ts2.URL), "", nil); res.StatusCode != 503 || !strings.Contains(body, "daemon is busy") {
		t.Errorf("failing backend: %d %s", res.StatusCode, body)
	}
}

type failing struct{ *webtest.Backend }

func (f *failing) Snapshot(ctx context.Context) (web.Snapshot, error) {
	return web.Snapshot{}, errors.New("daemon is busy")
}

func TestActions(t *testing.T) {
	ts, fake := serve(t, web.Config{})
	session := sessionFor(t, ts.URL)
	u, _ := url.Parse(ts.URL)
	own := "http://" + u.Host
	auth := "Bearer " + session
	json := map[string]string{"Authorization": auth, "Content-Type": "application/json", "Origin": own}
	tests := []struct {
		name, path, body string
		hdr              map[string]string
		code             int
		call             string
	}{
		{"adopt", "/api/adopt", `{"coordinator":"%2","agent":"%3"}`, json, 200, `Adopt["%2" "%3"]`},
		{"release", "/api/release", `{"pane":"%4"}`, json, 200, `Release["%4"]`},
		{"answer", "/api/gates/answer", `{"id":"g-1","option":"Yes"}`, json, 200, `AnswerGate["g-1" "Yes"]`},
		{"second answer", "/api/gates/answer", `{"id":"g-1","option":"No"}`, json, 409, `AnswerGate["g-1" "No"]`},
		{"prompt answer", "/api/prompts/answer", `{"id":"p-9","option":"Allow once"}`, json, 409, `AnswerPrompt["p-9" "Allow once"]`},
		{"prompt answer without option", "/api/prompts/answer", `{"id":"p-9"}`, json, 400, ""},
		{"adopt itself", "/api/adopt", `{"coordinator":"%2","agent":"%2"}`, json, 400, ""},
		{"missing field", "/api/release", `{}`, json, 400, ""},
		{"unknown field", "/api/release", `{"pane":"%4","x":1}`, json, 400, ""},
		{"form post", "/api/release", `pane=%4`, map[string]string{"Authorization": auth, "Content-Type": "application/x-www-form-urlencoded"}, 415, ""},
		{"foreign origin", "/api/release", `{"pane":"%4"}`, map[string]string{"Authorization": auth, "Content-Type": "application/json", "Origin": "http://evil.example"}, 403, ""},
	}
	for _, tc := range tests {
		before := len(fake.Calls())
		res, body := do(t, "POST", ts.URL+tc.path, tc.body, tc.hdr)
		if res.StatusCode != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, res.StatusCode, body, tc.code)
		}
		calls := fake.Calls()[before:]
		got := ""
		if len(calls) == 1 {
			got = calls[0].String()
		}
		if got != tc.call || len(calls) > 1 {
			t.Errorf("%s: backend calls %v, want %s", tc.name, calls, tc.call)
		}
	}
	fake.Err = errors.New("cannot adopt: depth would exceed two levels. Try: release a worker first")
	res, body := do(t, "POST", ts.URL+"/api/adopt", `{"coordinator":"%2","agent":"%3"}`, json)
	if res.StatusCode != 409 || !strings.Contains(body, "Try: release") {
		t.Errorf("a refused adopt: %d %s, want 409 with the reason", res.StatusCode, body)
	}
}

// dial opens a websocket; the subprotocols in hdr (the page's session
// among them) are offered as a browser offers them.
func dial(ctx context.Context, t *testing.T, u string, hdr http.Header) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	opts := &websocket.DialOptions{HTTPHeader: hdr.Clone()}
	for k, vs := range opts.HTTPHeader {
		if !strings.EqualFold(k, "Sec-WebSocket-Protocol") {
			continue
		}
		delete(opts.HTTPHeader, k)
		for _, sp := range strings.Split(strings.Join(vs, ","), ",") {
			opts.Subprotocols = append(opts.Subprotocols, strings.TrimSpace(sp))
		}
	}
	return websocket.Dial(ctx, strings.Replace(u, "http://", "ws://", 1), opts)
}

func TestWebsocketsCheckOrigin(t *testing.T) {
	ts, _ := serve(t, web.Config{AllowedOrigins: []string{"https://proxy.example"}})
	session := sessionFor(t, ts.URL)
	u, _ := url.Parse(ts.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, path := range []string{"/api/events", "/term?session=$1&window=@1"} {
		for _, o := range []string{"http://evil.example", "http://evil.example:" + u.Port(), "null", "file://", "http://127.0.0.1.evil.example"} {
			conn, res, err := dial(ctx, t, ts.URL+path, http.Header{"Sec-WebSocket-Protocol": {"st, st-session." + session}, "Origin": {o}})
			if err == nil {
				conn.CloseNow()
				t.Errorf("%s from origin %s: accepted", path, o)
				continue
			}
			if res == nil || res.StatusCode != http.StatusForbidden {
				t.Errorf("%s from origin %s: %v, want 403", path, o, err)
			}
		}
	}
	for _, o := range []string{"http://" + u.Host, "https://proxy.example", ""} {
		hdr := http.Header{"Sec-WebSocket-Protocol": {"st, st-session." + session}}
		if o != "" {
			hdr.Set("Origin", o)
		}
		conn, _, err := dial(ctx, t, ts.URL+"/api/events", hdr)
		if err != nil {
			t.Errorf("/api/events from origin %q: %v", o, err)
			continue
		}
		conn.Close(websocket.StatusNormalClosure, "")
	}
	if _, res, err := dial(ctx, t, ts.URL+"/api/events", http.Header{"Origin": {"http://" + u.Host}}); err == nil || res.StatusCode != 401 {
		t.Errorf("/api/events without the token: %v, want 401", err)
	}
}

type eventMsg struct {
	Type     string       `json:"type"`
	Now      time.Time    `json:"now"`
	Snapshot web.Snapshot `json:"snapshot"`
	Patch    *patchMsg    `json:"patch"`
	Error    string       `json:"error"`
	Size     int          `json:"-"` // the message's bytes
}

// patchMsg is a patch of /api/events: the agents that changed by their
// index, and the other fields that changed, whole.
type patchMsg struct {
	Agents    map[string]json.RawMessage `json:"agents"`
	Machine   json.RawMessage            `json:"machine"`
	Sessions  json.RawMessage            `json:"sessions"`
	Gates     json.RawMessage            `json:"gates"`
	Machines  json.RawMessage            `json:"machines"`
	Attention json.RawMessage            `json:"attention"`
	Prompts   json.RawMessage            `json:"prompts"`
}

// apply is what the page does with a message: the snapshot it has after it.
func (m eventMsg) apply(t *testing.T, have web.Snapshot) web.Snapshot {
	t.Helper()
	switch m.Type {
	case "snapshot":
		return m.Snapshot
	case "patch":
	default:
		t.Fatalf("event of type %q", m.Type)
	}
	s := have
	s.Agents = append([]web.Agent(nil), have.Agents...)
	for k, raw := range m.Patch.Agents {
		i, err := strconv.Atoi(k)
		if err != nil || i < 0 || i >= len(s.Agents) {
			t.Fatalf("patch of agent %q, and there are %d", k, len(s.Agents))
		}
		s.Agents[i] = web.Agent{}
		if err := json.Unmarshal(raw, &s.Agents[i]); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []struct {
		raw json.RawMessage
		to  any
	}{{m.Patch.Machine, &s.Machine}, {m.Patch.Sessions, &s.Sessions}, {m.Patch.Gates, &s.Gates}, {m.Patch.Machines, &s.Machines}, {m.Patch.Attention, &s.Attention}, {m.Patch.Prompts, &s.Prompts}} {
		if f.raw != nil {
			if err := json.Unmarshal(f.raw, f.to); err != nil {
				t.Fatal(err)
			}
		}
	}
	return s
}

func readEvent(ctx context.Context, t *testing.T, c *websocket.Conn) eventMsg {
	t.Helper()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read event: %v", err)
	}
	var m eventMsg
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("event %s: %v", b, err)
	}
	m.Size = len(b)
	return m
}

func TestSnapshotPushedOnChange(t *testing.T) {
	fake := webtest.New(webtest.Sample(time.Now()))
	srv := web.New(web.Config{Secret: secret, Backend: fake})
	web.SetPollForTest(srv, time.Hour) // only Changed can bring the news
	ts := httptest.NewServer(srv)
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, _, err := dial(ctx, t, ts.URL+"/api/events?token="+tok(t, ts.URL), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	first := readEvent(ctx, t, conn)
	if first.Type != "snapshot" || len(first.Snapshot.Agents) != 4 || time.Since(first.Now) > time.Minute {
		t.Fatalf("first event = %+v", first)
	}
	// The poll is an hour away: whatever arrives was pushed by the change.
	have := first.Snapshot
	for i, state := range []string{"done", "failed"} {
		fake.Update(func(s *web.Snapshot) { s.Agents[2].State = state })
		have = readEvent(ctx, t, conn).apply(t, have)
		if have.Agents[2].State != state {
			t.Errorf("change %d: agent state %q, want %q", i, have.Agents[2].State, state)
		}
	}
	conn.Close(websocket.StatusNormalClosure, "")
}

func TestEventsReportBackendErrors(t *testing.T) {
	ts, _ := serve(t, web.Config{Backend: &failing{webtest.New(web.Snapshot{})}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, _, err := dial(ctx, t, ts.URL+"/api/events?token="+tok(t, ts.URL), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	if m := readEvent(ctx, t, conn); m.Type != "error" || m.Error != "daemon is busy" {
		t.Errorf("event = %+v, want the error", m)
	}
	conn.Close(websocket.StatusNormalClosure, "")
}
