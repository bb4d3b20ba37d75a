package daemon

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/tmux"
)

// TestPeerTermChecksBeforeTmux (issue 17; issue 23, item 1): another
// machine asks for a window here by pane id. Only a pane handed to it
// (its own worker here) opens, and only while accept-remote is on;
// everything else, this machine's own coordinator and workers included,
// is refused with what it may do, before any command that would make a
// session, attach or type reaches tmux.
func TestPeerTermChecksBeforeTmux(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir) // nothing to run
	s, closeMgr := newFuzzServer(t, dir)
	defer closeMgr()
	h := s.hub.Handler(peerTransport{}, context.Background())
	fake := fakeOf(t, s.tmux)
	ask := func(query string) (int, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req := httptest.NewRequest(http.MethodGet, "/peer/v1/term?"+query, nil).WithContext(ctx)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	// accept-remote off: not even its worker opens.
	if code, body := ask("pane=" + url.QueryEscape(fzAlphas)); code != http.StatusForbidden || !strings.Contains(body, "accept-remote is off there") {
		t.Errorf("with accept-remote off: %d %s", code, body)
	}
	if err := s.hub.SetAcceptRemote(true); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"pane=" + url.QueryEscape(fzCoord),  // this machine's coordinator
		"pane=" + url.QueryEscape(fzWorker), // this machine's worker
		"pane=" + fzShell,                   // a shell
		"pane=%2525",                        // a pane st does not know
		"pane=main:1",                       // not a pane id
		"pane=-t",                           // a flag
		"pane=%252%0A",                      // a line break after an id
		"pane=beta%2F%252",                  // another machine's record
		"pane=%252%3Bkill-server",           // a command after it
		"pane=&session=%240&window=@9",      // the local terminal's way of naming
	} {
		if code, body := ask(q); code != http.StatusForbidden || !strings.Contains(body, "refused") {
			t.Errorf("%s: %d %s", q, code, body)
		}
	}
	// alpha's worker passes the checks (and, this not being a
	// websocket, goes no further).
	if code, body := ask("pane=" + url.QueryEscape(fzAlphas)); code == http.StatusForbidden {
		t.Errorf("the worker: %d %s", code, body)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	for _, c := range fake.ran {
		for _, acting := range []string{"new-session", "link-window", "attach", "send-keys", "kill"} {
			if strings.HasPrefix(c, acting) {
				t.Errorf("a refused request reached tmux with: %s", c)
			}
		}
	}
}

// fakeOf is the fake server under a tmux client of newFuzzServer.
func fakeOf(t *testing.T, c *tmux.Client) *fakeServer {
	t.Helper()
	f, ok := fakes.Load(c)
	if !ok {
		t.Fatal("not a fake tmux server")
	}
	return f.(*fakeServer)
}
