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
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/sophonz/st/internal/web"
	"github.com/sophonz/st/internal/web/webtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const token = "s3cret-token-for-tests"

// serve starts the UI on a fake backend holding the sample run.
func serve(t *testing.T, cfg web.Config) (*httptest.Server, *webtest.Backend) {
	t.Helper()
	fake := webtest.New(webtest.Sample(time.Now()))
	if cfg.Backend == nil {
		cfg.Backend = fake
	}
	if cfg.Token == "" {
		cfg.Token = token
	}
	ts := httptest.NewServer(web.New(cfg))
	t.Cleanup(ts.Close)
	return ts, fake
}

// cookieFor loads the page with the token and returns the cookie it sets.
func cookieFor(t *testing.T, base string) *http.Cookie {
	t.Helper()
	res, err := http.Get(base + "/?token=" + token)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	for _, c := range res.Cookies() {
		if strings.HasPrefix(c.Name, "st_") && c.Value != "" {
			if strings.Contains(c.Value, token) {
				t.Fatalf("the cookie holds the token itself: %v", c)
			}
			return c
		}
	}
	t.Fatalf("no session cookie in %v", res.Header["Set-Cookie"])
	return nil
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

var routes = []struct{ method, path string }{
	{"GET", "/"},
	{"GET", "/api/state"},
	{"GET", "/api/events"},
	{"GET", "/term?session=$1&window=@1"},
	{"GET", "/assets/app.js"},
	{"GET", "/assets/app.css"},
	{"GET", "/assets/vendor/xterm.mjs"},
	{"GET", "/assets/vendor/xterm.css"},
	{"GET", "/no/such/page"},
	{"POST", "/api/adopt"},
	{"POST", "/api/release"},
	{"POST", "/api/gates/answer"},
}

func TestEveryRouteNeedsTheToken(t *testing.T) {
	ts, fake := serve(t, web.Config{})
	other := &http.Cookie{Name: cookieFor(t, ts.URL).Name, Value: "wrong"}
	for _, r := range routes {
		for name, hdr := range map[string]map[string]string{
			"none":                       nil,
			"wrong cookie":               {"Cookie": other.String()},
			"cookie of a different name": {"Cookie": (&http.Cookie{Name: "st_token", Value: token}).String()},
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
		if res, _ := do(t, r.method, ts.URL+r.path+sep+"token=wrong", `{}`, nil); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s %s with a wrong token: %d, want 401", r.method, r.path, res.StatusCode)
		}
	}
	if calls := fake.Calls(); len(calls) != 0 {
		t.Errorf("refused requests reached the backend: %v", calls)
	}
}

func TestEmptyTokenRefusesAll(t *testing.T) {
	fake := webtest.New(webtest.Sample(time.Now()))
	ts := httptest.NewServer(web.New(web.Config{Backend: fake}))
	defer ts.Close()
	for _, u := range []string{"/", "/?token=", "/api/state?token="} {
		if res, _ := do(t, "GET", ts.URL+u, "", nil); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s with no token configured: %d, want 401", u, res.StatusCode)
		}
	}
}

func TestTokenThenCookie(t *testing.T) {
	ts, _ := serve(t, web.Config{})
	res, body := do(t, "GET", ts.URL+"/?token="+token, "", nil)
	if res.StatusCode != 200 || res.Request.URL.Path != web.Path || !strings.Contains(body, `<script type="module" src="assets/app.js">`) {
		t.Fatalf("GET /?token=: %d at %s %q", res.StatusCode, res.Request.URL, body)
	}
	var c *http.Cookie
	for _, x := range res.Cookies() {
		c = x
	}
	if c == nil || c.Value == token || strings.Contains(c.Value, token) || len(c.Value) != 64 || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != web.Path {
		t.Fatalf("cookie = %+v, want a session value (not the token), HttpOnly, SameSite=Strict, Path=%s", c, web.Path)
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("CSP = %q", csp)
	}
	if rp := res.Header.Get("Referrer-Policy"); rp != "no-referrer" {
		t.Errorf("Referrer-Policy = %q: the token would leak in Referer", rp)
	}

	hdr := map[string]string{"Cookie": c.String()}
	for _, tc := range []struct{ path, ctype, has string }{
		{"/st/", "text/html", `id="agents-btn"`},
		{"/st/api/state", "application/json", `"machine":"devbox"`},
		{"/st/assets/app.js", "text/javascript", "import { Terminal }"},
		{"/api/state", "application/json", `"machine":"devbox"`},
		{"/assets/app.js", "text/javascript", "import { Terminal }"},
		{"/assets/vendor/xterm.mjs", "text/javascript", "Terminal"},
		{"/assets/vendor/addon-fit.mjs", "text/javascript", "FitAddon"},
		{"/assets/app.css", "text/css", "--green"},
		{"/assets/vendor/xterm.css", "text/css", ".xterm"},
	} {
		res, body := do(t, "GET", ts.URL+tc.path, "", hdr)
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), tc.ctype) || !strings.Contains(body, tc.has) {
			t.Errorf("GET %s with the cookie: %d %s, body has %q: %v", tc.path, res.StatusCode, res.Header.Get("Content-Type"), tc.has, strings.Contains(body, tc.has))
		}
		if res.Header.Get("Set-Cookie") != "" {
			t.Errorf("GET %s with the cookie set it again", tc.path)
		}
	}
	if res, _ := do(t, "GET", ts.URL+"/api/state?token="+token, "", nil); res.StatusCode != 200 {
		t.Errorf("GET /api/state?token=: %d", res.StatusCode)
	}
	if res, _ := do(t, "GET", ts.URL+"/assets/", "", hdr); res.StatusCode == 200 {
		t.Errorf("GET /assets/ lists the folder")
	}
	if res, _ := do(t, "GET", ts.URL+"/nosuch", "", hdr); res.StatusCode != 404 {
		t.Errorf("GET /nosuch: %d, want 404", res.StatusCode)
	}
}

// TestCookieIsUselessElsewhere: the cookie, which browsers send to every
// port of 127.0.0.1, is not the token: it opens nothing as a token, and a
// cookie of one start of st opens nothing after a restart (another key).
func TestCookieIsUselessElsewhere(t *testing.T) {
	ts, _ := serve(t, web.Config{})
	c := cookieFor(t, ts.URL)
	if res, _ := do(t, "GET", ts.URL+"/st/api/state?token="+c.Value, "", nil); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the cookie's value worked as the token: %d", res.StatusCode)
	}
	restarted, _ := serve(t, web.Config{}) // same token, a new start
	if res, _ := do(t, "GET", restarted.URL+"/st/api/state", "", map[string]string{"Cookie": c.String()}); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a cookie of the previous start opened the UI after a restart: %d", res.StatusCode)
	}
	if res, _ := do(t, "GET", ts.URL+"/st/api/state", "", map[string]string{"Cookie": c.String()}); res.StatusCode != 200 {
		t.Errorf("the cookie does not open its own UI: %d", res.StatusCode)
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
	for _, h := range []string{"evil.example:" + port, "evil.example", "127.0.0.1:1", "localhost.:" + port, "127.0.0.2:" + port, "0.0.0.0:" + port} {
		for _, p := range []string{"/st/?token=" + token, "/api/state?token=" + token, "/push/answer/x"} {
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

func TestCookieNamesDifferPerToken(t *testing.T) {
	a, _ := serve(t, web.Config{Token: "one"})
	b, _ := serve(t, web.Config{Token: "two"})
	name := func(base, tok string) string {
		res, _ := do(t, "GET", base+"/?token="+tok, "", nil)
		return res.Cookies()[0].Name
	}
	if na, nb := name(a.URL, "one"), name(b.URL, "two"); na == nb {
		t.Errorf("two daemons share the cookie name %s: one would log the other out", na)
	}
}

func TestState(t *testing.T) {
	ts, fake := serve(t, web.Config{})
	fake.Update(func(s *web.Snapshot) {
		s.Sessions = append(s.Sessions, web.Session{ID: "$9", Name: "st-web-0123456789ab", Windows: []web.Window{{ID: "@3"}}})
		s.Agents[2].Session = "$9" // as list-panes -a can say while a browser looks at it
		s.Gates = nil
	})
	res, body := do(t, "GET", ts.URL+"/api/state?token="+token, "", nil)
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
	if res, body := do(t, "GET", ts2.URL+"/api/state?token="+token, "", nil); res.StatusCode != 503 || !strings.Contains(body, "daemon is busy") {
		t.Errorf("failing backend: %d %s", res.StatusCode, body)
	}
}

type failing struct{ *webtest.Backend }

func (f *failing) Snapshot(ctx context.Context) (web.Snapshot, error) {
	return web.Snapshot{}, errors.New("daemon is busy")
}

func TestActions(t *testing.T) {
	ts, fake := serve(t, web.Config{})
	c := cookieFor(t, ts.URL)
	u, _ := url.Parse(ts.URL)
	own := "http://" + u.Host
	json := map[string]string{"Cookie": c.String(), "Content-Type": "application/json", "Origin": own}
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
		{"adopt itself", "/api/adopt", `{"coordinator":"%2","agent":"%2"}`, json, 400, ""},
		{"missing field", "/api/release", `{}`, json, 400, ""},
		{"unknown field", "/api/release", `{"pane":"%4","x":1}`, json, 400, ""},
		{"form post", "/api/release", `pane=%4`, map[string]string{"Cookie": c.String(), "Content-Type": "application/x-www-form-urlencoded"}, 415, ""},
		{"foreign origin", "/api/release", `{"pane":"%4"}`, map[string]string{"Cookie": c.String(), "Content-Type": "application/json", "Origin": "http://evil.example"}, 403, ""},
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

func dial(ctx context.Context, t *testing.T, u string, hdr http.Header) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	return websocket.Dial(ctx, strings.Replace(u, "http://", "ws://", 1), &websocket.DialOptions{HTTPHeader: hdr})
}

func TestWebsocketsCheckOrigin(t *testing.T) {
	ts, _ := serve(t, web.Config{AllowedOrigins: []string{"https://proxy.example"}})
	c := cookieFor(t, ts.URL)
	u, _ := url.Parse(ts.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, path := range []string{"/api/events", "/term?session=$1&window=@1"} {
		for _, o := range []string{"http://evil.example", "http://evil.example:" + u.Port(), "null", "file://", "http://127.0.0.1.evil.example"} {
			conn, res, err := dial(ctx, t, ts.URL+path, http.Header{"Cookie": {c.String()}, "Origin": {o}})
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
		hdr := http.Header{"Cookie": {c.String()}}
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
	Error    string       `json:"error"`
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
	return m
}

func TestSnapshotPushedOnChange(t *testing.T) {
	fake := webtest.New(webtest.Sample(time.Now()))
	srv := web.New(web.Config{Token: token, Backend: fake})
	web.SetPollForTest(srv, time.Hour) // only Changed can bring the news
	ts := httptest.NewServer(srv)
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, _, err := dial(ctx, t, ts.URL+"/api/events?token="+token, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	first := readEvent(ctx, t, conn)
	if first.Type != "snapshot" || len(first.Snapshot.Agents) != 4 || time.Since(first.Now) > time.Minute {
		t.Fatalf("first event = %+v", first)
	}
	// The poll is an hour away: whatever arrives was pushed by the change.
	for i, state := range []string{"done", "failed"} {
		fake.Update(func(s *web.Snapshot) { s.Agents[2].State = state })
		m := readEvent(ctx, t, conn)
		if m.Snapshot.Agents[2].State != state {
			t.Errorf("change %d: agent state %q, want %q", i, m.Snapshot.Agents[2].State, state)
		}
	}
	conn.Close(websocket.StatusNormalClosure, "")
}

func TestEventsReportBackendErrors(t *testing.T) {
	ts, _ := serve(t, web.Config{Backend: &failing{webtest.New(web.Snapshot{})}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, _, err := dial(ctx, t, ts.URL+"/api/events?token="+token, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	if m := readEvent(ctx, t, conn); m.Type != "error" || m.Error != "daemon is busy" {
		t.Errorf("event = %+v, want the error", m)
	}
	conn.Close(websocket.StatusNormalClosure, "")
}
