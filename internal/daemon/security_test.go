package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/testutil"
)

// The daemon's doors: the unix socket answers only the user who runs st
// (the socket's mode, and the peer's uid checked on every connection),
// and the web UI answers nothing without its token. These tests run the
// real daemon (Run) in-process, with a tmux socket that no server listens
// on: nothing here needs tmux.

type testDaemon struct {
	home, sock string
	done       chan error
}

// startDaemon runs a daemon on home until the test ends.
func startDaemon(t *testing.T, home string) *testDaemon {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	env := map[string]string{
		"ST_TMUX_SOCKET": filepath.Join(home, "no-tmux-server"),
		"ST_WEB_PORT":    "auto",
	}
	d := &testDaemon{home: home, sock: api.SocketPath(home), done: make(chan error, 1)}
	go func() {
		d.done <- Run(ctx, Options{Home: home, STBin: "/nonexistent/st", Getenv: func(k string) string { return env[k] }})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-d.done:
		case <-time.After(10 * time.Second):
			t.Errorf("the daemon did not stop within 10s")
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		if code, _, err := d.post(d.sock, "/v1/status"); err == nil && code == 200 {
			return d
		}
		select {
		case err := <-d.done:
			t.Fatalf("the daemon stopped: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon never answered on %s", d.sock)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// post sends an empty POST over the unix socket.
func (d *testDaemon) post(sock, path string) (int, string, error) {
	return postUnix(sock, path)
}

func postUnix(sock, path string) (int, string, error) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	res, err := c.Post("http://st"+path, "application/json", strings.NewReader("{}"))
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), nil
}

// shortTemp is a folder under /tmp whose path is short enough for a unix
// socket, removed at the end.
func shortTemp(t *testing.T) string {
	dir, err := os.MkdirTemp("/tmp", "stsec")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func TestSocketIsTheOwnersOnly(t *testing.T) {
	d := startDaemon(t, filepath.Join(shortTemp(t), "h"))
	fi, err := os.Lstat(d.sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("%s is %v, not a socket", d.sock, fi.Mode())
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("socket mode %o, want 600", perm)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if int(st.Uid) != os.Getuid() {
		t.Errorf("socket owned by uid %d, want %d (the daemon's user)", st.Uid, os.Getuid())
	}
	hi, err := os.Stat(d.home)
	if err != nil {
		t.Fatal(err)
	}
	if perm := hi.Mode().Perm(); perm&0o077 != 0 {
		t.Errorf("ST_HOME %s made with mode %o: others may reach the socket's folder", d.home, perm)
	}
	// The web token is kept like the socket.
	if ti, err := os.Stat(filepath.Join(d.home, "web.token")); err != nil || ti.Mode().Perm() != 0o600 {
		t.Errorf("web.token: %v, mode %v, want 600", err, ti.Mode())
	}
}

// The helper client: when ST_TEST_SOCKET_CLIENT names a socket, this test
// binary, started as another user, posts to it each route named in
// ST_TEST_SOCKET_ROUTES and prints what happened, one line a route.
func TestHelperSocketClient(t *testing.T) {
	sock := os.Getenv("ST_TEST_SOCKET_CLIENT")
	if sock == "" {
		t.Skip("the helper client of TestSocketRefusesOtherUsers; runs only in its child process")
	}
	for _, r := range strings.Fields(os.Getenv("ST_TEST_SOCKET_ROUTES")) {
		code, body, err := postUnix(sock, r)
		if err != nil {
			fmt.Printf("RESULT %s uid=%d error: %v\n", r, os.Getuid(), err)
			continue
		}
		fmt.Printf("RESULT %s uid=%d status %d %s\n", r, os.Getuid(), code, strings.TrimSpace(body))
	}
}

// runClient runs the helper client from bin as uid (0 = as this user) and
// returns its result for each route.
func runClient(t *testing.T, bin, sock string, uid int, routes ...string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run=^TestHelperSocketClient$", "-test.v")
	cmd.Env = append(os.Environ(), "ST_TEST_SOCKET_CLIENT="+sock, "ST_TEST_SOCKET_ROUTES="+strings.Join(routes, " "))
	cmd.Dir = "/"
	if uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}}
	}
	out, err := cmd.CombinedOutput()
	res := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if route, rest, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "RESULT "), " "); ok && strings.HasPrefix(sc.Text(), "RESULT ") {
			res[route] = rest
		}
	}
	for _, r := range routes {
		if res[r] == "" {
			t.Fatalf("the client as uid %d printed no result for %s (%v):\n%s", uid, r, err, out)
		}
	}
	return res
}

// TestSocketRefusesOtherUsers connects as another user (nobody) at both
// layers: the socket's mode stops it at connect; with the mode widened to
// 0666 (as a careless chmod would), the daemon's uid check on the
// connection refuses every request with 403, shutdown included.
//
// It needs root, to start the client as another uid; it fails, never
// skips, without it (CI runs as root). An unprivileged user namespace
// cannot stand in: the daemon sees a client in one (unshare --user) with
// the caller's own uid, and mapping other uids needs newuidmap and
// /etc/subuid, which are not there to count on.
func TestSocketRefusesOtherUsers(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatalf("this test runs a client as another user (nobody), which needs root (uid %d here); CI runs it as root. "+
			"Try: sudo go test ./internal/daemon -run TestSocketRefusesOtherUsers", os.Getuid())
	}
	const nobody = 65534
	dir := shortTemp(t)
	// Folders that nobody may pass through, so that only the socket's own
	// mode and the uid check stand in the way.
	home := filepath.Join(dir, "h")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// A copy of this test binary that nobody may run, as the client.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "client")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, home)
	routes := apiRoutes(t)

	// The client works: as this user it gets the status.
	if got := runClient(t, bin, d.sock, 0, "/v1/status")["/v1/status"]; !strings.HasPrefix(got, "uid=0 status 200 ") {
		t.Fatalf("as root: %s, want status 200", got)
	}
	// Layer 1: mode 0600 refuses nobody at connect.
	got := runClient(t, bin, d.sock, nobody, "/v1/status")["/v1/status"]
	t.Logf("as nobody, mode 0600: %s", got)
	if !strings.HasPrefix(got, fmt.Sprintf("uid=%d error:", nobody)) || !strings.Contains(got, "permission denied") {
		t.Errorf("as nobody, socket mode 0600: %s, want permission denied at connect", got)
	}
	// Layer 2: with the mode widened, the uid check refuses every route.
	if err := os.Chmod(d.sock, 0o666); err != nil {
		t.Fatal(err)
	}
	for r, got := range runClient(t, bin, d.sock, nobody, routes...) {
		t.Logf("as nobody, mode 0666, %s: %s", r, got)
		if !strings.HasPrefix(got, fmt.Sprintf("uid=%d status 403 ", nobody)) || !strings.Contains(got, "st's socket answers only the user who runs st") {
			t.Errorf("as nobody, socket mode 0666, %s: %s, want 403 from the uid check", r, got)
		}
	}
	ownerStillServed(t, d)
}

// ownerStillServed checks that nobody's requests (a /v1/shutdown among
// them, each answered 403 before any handler ran) did nothing, as the
// owner sees it: st status answers throughout a watch after them, the
// daemon is still running at its end, and the owner's own shutdown,
// asked the same way, does stop it.
//
// A shutdown takes effect a moment after its answer (50 ms, a timer), so
// a shutdown of nobody's would end the daemon within the watch on any
// machine whose timers run less than 2 s late; the watch asserts no time
// itself. How long the owner's shutdown took to stop the socket is
// logged, for comparison.
func ownerStillServed(t *testing.T, d *testDaemon) {
	t.Helper()
	const watch = 2 * time.Second
	nobodyDone := time.Now()
	for time.Since(nobodyDone) < watch {
		if code, body, err := d.post(d.sock, "/v1/status"); err != nil || code != 200 {
			t.Fatalf("as root, %s after nobody's requests: %d %s %v", time.Since(nobodyDone).Round(time.Millisecond), code, body, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case err := <-d.done:
		t.Fatalf("the daemon stopped after nobody's requests: %v", err)
	default:
	}
	if code, body, err := d.post(d.sock, "/v1/shutdown"); err != nil || code != 200 {
		t.Fatalf("the owner's shutdown: %d %s %v", code, body, err)
	}
	asked := time.Now()
	testutil.WaitFor(t, 30*time.Second, func() (bool, string) {
		_, _, err := d.post(d.sock, "/v1/status")
		return err != nil, "the daemon still answers after the owner's shutdown"
	})
	t.Logf("the owner's shutdown stopped the socket in %s", time.Since(asked).Round(time.Millisecond))
	select {
	case err := <-d.done:
		if err != nil {
			t.Errorf("the daemon ended with %v after the owner's shutdown, want a clean stop", err)
		}
		d.done <- err // for the cleanup
	case <-time.After(30 * time.Second):
		t.Fatalf("the daemon did not return within 30 s of the owner's shutdown")
	}
}

// TestWebUIWithoutTokenIs401 asks the real daemon's web listener every
// route, plain and as a websocket handshake, with no token and with a
// wrong one: each answers 401, but the page and its files, which are the
// same for everyone and hold nothing of the user's. With the token (st
// web's URL) it answers, and the token is not the secret st keeps.
func TestWebUIWithoutTokenIs401(t *testing.T) {
	d := startDaemon(t, filepath.Join(shortTemp(t), "h"))
	code, body, err := d.post(d.sock, "/v1/web")
	if err != nil || code != 200 {
		t.Fatalf("/v1/web: %d %s %v", code, body, err)
	}
	var web struct{ URL string }
	if err := json.Unmarshal([]byte(body), &web); err != nil {
		t.Fatal(err)
	}
	base, token, ok := strings.Cut(web.URL, "/st/?token=")
	if !ok || !strings.HasPrefix(base, "http://127.0.0.1:") || len(token) < 32 {
		t.Fatalf("st web's URL %q: want http://127.0.0.1:PORT/st/?token=SECRET", web.URL)
	}
	do := func(method, path string, hdr map[string]string) (int, string) {
		req, err := http.NewRequest(method, base+path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		// A deadline for a daemon under -race on a loaded machine, not a
		// figure: the answer's code is what the test checks.
		res, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	upgrade := map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
		"Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Origin": base}
	routes := []struct {
		method, path string
		hdr          map[string]string
	}{
		{"GET", "/st/api/state", nil},
		{"GET", "/index.html", nil},
		{"GET", "/api/state", nil},
		{"GET", "/st/assets/../api/state", nil},
		{"GET", "/no/such/page", nil},
		{"POST", "/api/adopt", nil},
		{"POST", "/api/release", nil},
		{"POST", "/api/gates/answer", nil},
		{"GET", "/api/events", upgrade},
		{"GET", "/term?session=%240&window=%401", upgrade},
		// The page with a token in its URL: a wrong one is refused.
		{"GET", "/", nil},
		{"GET", "/st/", nil},
	}
	secret, err := os.ReadFile(filepath.Join(d.home, "web.token"))
	if err != nil {
		t.Fatal(err)
	}
	raw := strings.SplitN(string(secret), "\n", 2)[0]
	if raw == token || strings.Contains(web.URL, raw) {
		t.Errorf("st web's URL carries the secret of web.token itself: %s", web.URL)
	}
	for i, r := range routes {
		sep := "?"
		if strings.Contains(r.path, "?") {
			sep = "&"
		}
		for _, q := range []string{"", sep + "token=", sep + "token=" + strings.Repeat("0", len(token)), sep + "token=" + token[:len(token)-1], sep + "token=" + raw} {
			if q == "" && i >= len(routes)-2 {
				continue // the page itself: below
			}
			if code, body := do(r.method, r.path+q, r.hdr); code != http.StatusUnauthorized {
				t.Errorf("%s %s%s: %d %.80q, want 401", r.method, r.path, q, code, body)
			}
		}
		if i >= len(routes)-2 {
			continue
		}
		// The link's token is no session, nor is a cookie anything.
		if code, _ := do(r.method, r.path, map[string]string{"Authorization": "Bearer " + token, "Cookie": "st_token=" + token}); code != http.StatusUnauthorized {
			t.Errorf("%s %s with the token in Authorization: %d, want 401", r.method, r.path, code)
		}
	}
	// The page and its files: for everyone, and nothing of the user's in them.
	for _, p := range []string{"/", "/st/", "/st/assets/app.js", "/assets/vendor/xterm.mjs"} {
		code, body := do("GET", p, nil)
		if code != 200 || strings.Contains(body, token) || strings.Contains(body, raw) || strings.Contains(body, "st-session\" content") {
			t.Errorf("GET %s: %d, want 200 with no credential in it", p, code)
		}
	}
	// The same listener answers with the token: the 401s above are the
	// token's doing, not a dead port.
	if code, body := do("GET", "/api/state?token="+token, nil); code != 200 || !strings.Contains(body, "agents") {
		t.Errorf("GET /api/state with the token: %d %.200q", code, body)
	}
	if code, _ := do("GET", "/?token="+token, nil); code != 200 {
		t.Errorf("GET / with the token: %d", code)
	}
}
