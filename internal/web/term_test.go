package web_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/creack/pty"

	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/tmux"
	"github.com/sophonz/st/internal/web"
	"github.com/sophonz/st/internal/web/webtest"
)

// privateTmux starts a tmux server of this test only, with a session
// "main" running sh, and returns a client of it. Only that server is
// killed at the end.
func privateTmux(t *testing.T) (*testutil.Tmux, *tmux.Client) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a tmux server")
	}
	t.Setenv("TMUX", "")
	t.Setenv("TMUX_PANE", "")
	os.Unsetenv("TMUX")
	os.Unsetenv("TMUX_PANE")
	dir := testutil.ShortTempDir(t)
	tm := testutil.NewTmux(t, dir)
	// tmux makes its socket's folder only for its default path, not for -S.
	if err := os.MkdirAll(filepath.Dir(tm.Socket), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMUX_TMPDIR", dir)
	if _, err := tm.Run("new-session", "-d", "-s", "main", "-x", "100", "-y", "30", "sh"); err != nil {
		t.Fatal(err)
	}
	// A plain prompt, so that what the test types is easy to find.
	if _, err := tm.Run("send-keys", "-t", "main:0", "PS1='$ '", "Enter"); err != nil {
		t.Fatal(err)
	}
	return tm, tmux.New(tm.Socket)
}

// attachNormal attaches an ordinary client, one whose size counts, in a
// pty of cols x rows, as a person's terminal would be.
func attachNormal(t *testing.T, tm *testutil.Tmux, cols, rows int) {
	t.Helper()
	cmd := exec.Command("tmux", "-S", tm.Socket, "attach-session", "-t", "=main")
	cmd.Env = testutil.Env(os.Environ(), "TERM=xterm-256color", "TMUX_TMPDIR="+tm.Dir)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)})
	if err != nil {
		t.Fatal(err)
	}
	go func() { // drain what it draws, or it stops
		b := make([]byte, 4096)
		for {
			if _, err := f.Read(b); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		f.Close()
	})
}

func tmuxOut(t *testing.T, tm *testutil.Tmux, args ...string) string {
	t.Helper()
	out, err := tm.Run(args...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

func webSessions(t *testing.T, tm *testutil.Tmux) []string {
	var out []string
	for _, s := range strings.Fields(tmuxOut(t, tm, "list-sessions", "-F", "#{session_name}")) {
		if tmux.IsWebSession(s) {
			out = append(out, s)
		}
	}
	return out
}

// termConn reads what a terminal socket draws in the background.
type termConn struct {
	c   *websocket.Conn
	mu  sync.Mutex
	out bytes.Buffer
	end chan struct{}
	err error
}

func openTerm(ctx context.Context, t *testing.T, base, query string) *termConn {
	t.Helper()
	c, _, err := dial(ctx, t, base+"/term?token="+tok(t, base)+"&"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	tc := &termConn{c: c, end: make(chan struct{})}
	go func() {
		defer close(tc.end)
		for {
			_, b, err := c.Read(context.Background())
			if err != nil {
				tc.mu.Lock()
				tc.err = err
				tc.mu.Unlock()
				return
			}
			tc.mu.Lock()
			tc.out.Write(b)
			tc.mu.Unlock()
		}
	}()
	t.Cleanup(func() { c.CloseNow(); <-tc.end })
	return tc
}

func (tc *termConn) output() string {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.out.String()
}

func (tc *termConn) close(t *testing.T) {
	tc.c.Close(websocket.StatusNormalClosure, "")
	<-tc.end
}

func (tc *termConn) resize(ctx context.Context, t *testing.T, cols, rows int) {
	t.Helper()
	msg := fmt.Sprintf(`{"type":"resize","cols":%d,"rows":%d}`, cols, rows)
	if err := tc.c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		t.Fatal(err)
	}
}

// waitWebClientSize waits until tmux lists a client of a web session at
// cols x rows: tmux has taken the browser's size, and any change to a
// window's size that it brings has been made.
func waitWebClientSize(t *testing.T, tm *testutil.Tmux, cols, rows int) {
	t.Helper()
	want := fmt.Sprintf("%dx%d", cols, rows)
	testutil.WaitFor(t, 20*time.Second, func() (bool, string) {
		out := tmuxOut(t, tm, "list-clients", "-F", "#{client_session} #{client_width}x#{client_height}")
		for _, l := range strings.Split(out, "\n") {
			if s, size, ok := strings.Cut(l, " "); ok && tmux.IsWebSession(s) && size == want {
				return true, ""
			}
		}
		return false, "no web client at " + want + "; clients:\n" + out
	})
}

func clientCount(t *testing.T, tm *testutil.Tmux) int {
	return len(strings.Fields(tmuxOut(t, tm, "list-clients", "-F", "#{client_pid}")))
}

func TestTerminalBridge(t *testing.T) {
	tm, tc := privateTmux(t)
	ts, _ := serve(t, web.Config{Tmux: tc})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	attachNormal(t, tm, 100, 30)
	testutil.WaitFor(t, 5*time.Second, func() (bool, string) {
		n := clientCount(t, tm)
		return n == 1, fmt.Sprintf("%d clients", n)
	})
	ids := strings.Fields(tmuxOut(t, tm, "display-message", "-p", "-t", "main:0", "#{session_id} #{window_id} #{pane_id}"))
	size := func() string {
		return tmuxOut(t, tm, "display-message", "-p", "-t", ids[1], "#{window_width}x#{window_height}")
	}
	before := size()
	if before != "100x29" { // the status line takes a row
		t.Fatalf("window size with a 100x30 client = %s", before)
	}

	// A tiny browser.
	term := openTerm(ctx, t, ts.URL, "session="+url.QueryEscape(ids[0])+"&window="+url.QueryEscape(ids[1])+"&cols=20&rows=5")
	testutil.WaitFor(t, 5*time.Second, func() (bool, string) {
		// The person's client, the browser's and its size anchor.
		n := clientCount(t, tm)
		return n == 3 && len(webSessions(t, tm)) == 1, fmt.Sprintf("%d clients, web sessions %v", n, webSessions(t, tm))
	})
	term.resize(ctx, t, 10, 3)
	waitWebClientSize(t, tm, 10, 3)
	// While it is there, the lists of sessions leave it out.
	sessions, err := web.TmuxSessions(ctx, tc)
	if err != nil || len(sessions) != 1 || sessions[0].Name != "main" || len(sessions[0].Windows) != 1 ||
		!sessions[0].Windows[0].Active || sessions[0].Windows[0].Panes[0].ID != ids[2] {
		t.Errorf("TmuxSessions = %+v, %v; want main with its one window", sessions, err)
	}
	if got := size(); got != before {
		t.Errorf("window size after a 20x5 browser = %s, want %s", got, before)
	}

	// Typing goes in; the output comes back.
	if err := term.c.Write(ctx, websocket.MessageBinary, []byte("echo typed-$((6*7))\r")); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, func() (bool, string) {
		s := tmuxOut(t, tm, "capture-pane", "-p", "-t", ids[2])
		return strings.Contains(s, "\ntyped-42"), "pane: " + s
	})
	testutil.WaitFor(t, 5*time.Second, func() (bool, string) {
		return strings.Contains(term.output(), "typed-42"), "browser got: " + term.output()
	})
	// Once more a size, after the typing: when tmux shows the client at
	// that size, it has taken every size the browser sent.
	term.resize(ctx, t, 12, 4)
	waitWebClientSize(t, tm, 12, 4)
	if got := size(); got != before {
		t.Errorf("window size while the browser works = %s, want %s", got, before)
	}

	// Closing the socket takes its grouped session and clients, and only those.
	term.close(t)
	testutil.WaitFor(t, 5*time.Second, func() (bool, string) {
		ws, n := webSessions(t, tm), clientCount(t, tm)
		return len(ws) == 0 && n == 1, fmt.Sprintf("web sessions %v, %d clients", ws, n)
	})
	if s := tmuxOut(t, tm, "list-sessions", "-F", "#{session_name}"); s != "main" {
		t.Errorf("sessions after close: %q, want main", s)
	}
	if got := size(); got != before {
		t.Errorf("window size after close = %s, want %s", got, before)
	}
}

// With no ordinary client at all, the browser still never sets the size.
func TestTerminalAloneKeepsTheSize(t *testing.T) {
	tm, tc := privateTmux(t)
	ts, _ := serve(t, web.Config{Tmux: tc})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pane := tmuxOut(t, tm, "display-message", "-p", "-t", "main:0", "#{pane_id}")
	before := tmuxOut(t, tm, "display-message", "-p", "-t", pane, "#{window_width}x#{window_height}")
	term := openTerm(ctx, t, ts.URL, "pane="+url.QueryEscape(pane)+"&cols=20&rows=5")
	testutil.WaitFor(t, 5*time.Second, func() (bool, string) {
		return strings.Contains(term.output(), "$"), "browser got: " + term.output()
	})
	term.resize(ctx, t, 12, 4)
	waitWebClientSize(t, tm, 12, 4)
	if got := tmuxOut(t, tm, "display-message", "-p", "-t", pane, "#{window_width}x#{window_height}"); got != before {
		t.Errorf("window size with only a 20x5 browser = %s, want %s", got, before)
	}
	term.close(t)
}

func TestTerminalReadOnly(t *testing.T) {
	tm, tc := privateTmux(t)
	ts, _ := serve(t, web.Config{Tmux: tc})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pane := tmuxOut(t, tm, "display-message", "-p", "-t", "main:0", "#{pane_id}")
	term := openTerm(ctx, t, ts.URL, "pane="+url.QueryEscape(pane)+"&ro=1")
	testutil.WaitFor(t, 5*time.Second, func() (bool, string) {
		s := tmuxOut(t, tm, "list-clients", "-F", "#{client_flags}")
		return strings.Contains(s, "read-only"), "clients: " + s
	})
	term.c.Write(ctx, websocket.MessageBinary, []byte("echo should-not-$((1+1))\r"))
	// The server handles a socket's messages in order: once the size sent
	// after the keys has reached tmux, the keys have reached it too.
	term.resize(ctx, t, 30, 6)
	waitWebClientSize(t, tm, 30, 6)
	// Output still flows: something typed by someone else shows.
	tm.Run("send-keys", "-t", pane, "-l", "echo from-elsewhere-$((2+3))")
	tm.Run("send-keys", "-t", pane, "Enter")
	testutil.WaitFor(t, 5*time.Second, func() (bool, string) {
		return strings.Contains(term.output(), "from-elsewhere-5"), "browser got: " + term.output()
	})
	if s := tmuxOut(t, tm, "capture-pane", "-p", "-t", pane); strings.Contains(s, "should-not") {
		t.Errorf("a read-only terminal typed into the pane:\n%s", s)
	}
	term.close(t)
}

func TestTerminalBadTargets(t *testing.T) {
	tm, tc := privateTmux(t)
	ts, _ := serve(t, web.Config{Tmux: tc})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		query string
		code  websocket.StatusCode
	}{
		{"session=main", 4400}, // names are not ids
		{"session=$1;kill-server", 4400},
		{"session=$0&window=@0%3Bkill-server", 4400},
		{"pane=%25999", 4404},
		{"session=$77&window=@0", 4404},
		{"session=$0&window=@77", 4404},
	} {
		c, _, err := dial(ctx, t, ts.URL+"/term?token="+tok(t, ts.URL)+"&"+tc.query, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.query, err)
		}
		_, _, err = c.Read(ctx)
		if got := websocket.CloseStatus(err); got != tc.code {
			t.Errorf("%s: closed with %d (%v), want %d", tc.query, got, err, tc.code)
		}
		c.CloseNow()
	}
	testutil.WaitFor(t, 5*time.Second, func() (bool, string) {
		ws := webSessions(t, tm)
		return len(ws) == 0, fmt.Sprintf("web sessions left: %v", ws)
	})
	if s := tmuxOut(t, tm, "list-sessions", "-F", "#{session_name}"); s != "main" {
		t.Errorf("sessions = %q", s)
	}
}

// Close, as the daemon calls it when it stops, ends the terminals and
// their grouped sessions, and refuses new sockets.
func TestCloseEndsTerminals(t *testing.T) {
	tm, tc := privateTmux(t)
	srv := web.New(web.Config{Secret: secret, Tmux: tc, Backend: webtest.New(webtest.Sample(time.Now()))})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pane := tmuxOut(t, tm, "display-message", "-p", "-t", "main:0", "#{pane_id}")
	term := openTerm(ctx, t, ts.URL, "pane="+url.QueryEscape(pane))
	events, _, err := dial(ctx, t, ts.URL+"/api/events?token="+tok(t, ts.URL), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer events.CloseNow()
	testutil.WaitFor(t, 5*time.Second, func() (bool, string) {
		return len(webSessions(t, tm)) == 1, fmt.Sprintf("web sessions %v", webSessions(t, tm))
	})
	if err := srv.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if ws := webSessions(t, tm); len(ws) != 0 {
		t.Errorf("web sessions after Close: %v", ws)
	}
	select {
	case <-term.end:
	case <-time.After(5 * time.Second):
		t.Error("the terminal socket is still open after Close")
	}
	for {
		if _, _, err := events.Read(ctx); err != nil {
			break
		}
	}
	if _, res, err := dial(ctx, t, ts.URL+"/api/events?token="+tok(t, ts.URL), nil); err == nil || res == nil || res.StatusCode != 503 {
		t.Errorf("a socket after Close: %v, want 503", err)
	}
}
