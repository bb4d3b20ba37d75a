package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/peer"
	"github.com/sophonz/st/internal/remote"
)

// peerTransport stands for mutual TLS in the peer API's fuzz test: every
// request comes from machine alpha of the account (the handshake itself
// is internal/remote's to test).
type peerTransport struct{}

func (peerTransport) Listen(string) (net.Listener, error) { return nil, os.ErrInvalid }
func (peerTransport) Client(string) *http.Client          { return nil }
func (peerTransport) PeerOf(*http.Request) (string, bool) { return "alpha", true }
func (peerTransport) String() string                      { return "fuzz transport" }

var _ remote.Transport = peerTransport{}

// peerRoutes are the peer table's routes, in a fixed order for the
// fuzzer's route index: its POST routes sorted, then its GET ones (the
// terminal).
func peerRoutes() []string {
	var post, get []string
	for _, r := range peer.Routes() {
		if r.Method == http.MethodGet {
			get = append(get, r.Path)
		} else {
			post = append(post, r.Path)
		}
	}
	sort.Strings(post)
	sort.Strings(get)
	return append(post, get...)
}

// FuzzPeerAPI sends every route of the peer API (what another machine
// of the account may ask) bodies of any shape, through the real handler
// and the real orch.Manager over the fake tmux server, with accept-remote
// on. As for the local API: no crash, no hang, a JSON answer or a JSON
// refusal, and nothing run.
func FuzzPeerAPI(f *testing.F) {
	dir := fuzzEnv(f)
	routes := peerRoutes()
	index := map[string]uint8{}
	for i, r := range routes {
		index[r] = uint8(i)
	}
	meta := "$(touch " + filepath.Join(dir, "pwned") + ") `id`; a && b | c #{pane_id} \x1b[31m"
	seeds := []struct{ route, body string }{
		{"/peer/v1/start", `{"run":"run-aaaaaa","coordinator":"%0","parent":"%0","level":1,"ref":"r1","agent":"sim","task_name":"t.md","task_text":` + jsonString(meta) + `,"name":"w"}`},
		{"/peer/v1/start", `{"run":"run-aaaaaa","coordinator":"%0","parent":"%0","level":9,"base_depth":9,"ref":"r1","agent":"sim"}`},
		{"/peer/v1/start", `{"run":"../../etc","coordinator":"x","parent":"%0","ref":"r","cwd":"relative","task_name":"../../x"}`},
		{"/peer/v1/start", `{"run":"run-aaaaaa","coordinator":"%0","parent":"%0","ref":"r","agent":"sim","name":"a;b","owns":["../x"],"worktree":true,"env":{"PATH":"/evil","ST_SIM_TRUST":"1"}}`},
		{"/peer/v1/watch", `{"boot":"","since":0,"wait":100000000}`},
		{"/peer/v1/watch", `{"since":18446744073709551615,"wait":-1}`},
		{"/peer/v1/read", `{"id":"%2"}`},
		{"/peer/v1/send", `{"id":"%2","text":` + jsonString(meta) + `}`},
		{"/peer/v1/stop", `{"id":"w1"}`},
		{"/peer/v1/rename", `{"id":"%2","text":"$(x)"}`},
		{"/peer/v1/release", `{"id":"%2"}`},
		{"/peer/v1/adopt", `{"id":"%9","run":"run-bbbbbb","coordinator":"%0","parent":"%0","level":1,"ref":"r2"}`},
		{"/peer/v1/adopt", `{"id":"main:0.0","run":"","coordinator":"%0"}`},
		{"/peer/v1/reparent", `{"old":"%0","new":"%8"}`},
		{"/peer/v1/reparent", `{"old":"x","new":"alpha/%1"}`},
		{"/peer/v1/pane", `{"id":"%1"}`},
		{"/peer/v1/pane", `{"id":"-t"}`},
		{"/peer/v1/graph", `{}`},
		// Ids, names and runs with ../, line breaks and escapes.
		{"/peer/v1/start", `{"run":"../orch/run-fz","coordinator":"%0","parent":"%0","level":1,"ref":"0123456789abcdef","agent":"sim","task_name":"t.md","task_text":"x","name":"w"}`},
		{"/peer/v1/start", `{"run":"run-abcdef","coordinator":"%0","parent":"%0","level":1,"ref":"0123456789abcdef","agent":"sim","task_name":"../../t.md","task_text":"x","name":"../w"}`},
		{"/peer/v1/start", `{"run":"run-abcdef\n","coordinator":"%0\u001b","parent":"%0","level":1,"ref":"0123456789abcdef","agent":"sim","name":"w\nx"}`},
		{"/peer/v1/read", `{"id":"../../w1"}`},
		{"/peer/v1/send", `{"id":"w1","text":"a\u009b2J"}`},
		{"/peer/v1/rename", `{"id":"w1","text":"x\n\u001b[2J"}`},
		{"/peer/v1/adopt", `{"id":"%1","run":"../x","coordinator":"%0","parent":"%0","level":1,"ref":"0123456789abcdef"}`},
		{"/peer/v1/adopt", `{"id":"%9\n","run":"run-abcdef","coordinator":"%0","parent":"%0","level":1,"ref":"0123456789abcdef"}`},
		{"/peer/v1/reparent", `{"old":"%0\n","new":"../%1"}`},
		{"/peer/v1/pane", `{"id":"%1\u001b[2J"}`},
		{"/peer/v1/start", `[`},
		{"/peer/v1/watch", "\xff\xfe"},
		// The terminal: its query, as another machine's st writes it.
		{"/peer/v1/term", "pane=%252&ro=0&cols=80&rows=24"},
		{"/peer/v1/term", "pane=%251&ro=0&cols=80&rows=24"},
		{"/peer/v1/term", "pane=%253&ro=0&cols=80&rows=24"},
		{"/peer/v1/read", `{"id":"%3"}`},
		{"/peer/v1/send", `{"id":"w3","text":"hello"}`},
		{"/peer/v1/term", "pane=%259&ro=1&cols=-1&rows=99999999"},
		{"/peer/v1/term", "pane=main:0.0&ro=0"},
		{"/peer/v1/term", "pane=%252%0a&cols=1e9"},
		{"/peer/v1/term", "%zz"},
	}
	for _, s := range seeds {
		i, ok := index[s.route]
		if !ok {
			f.Fatalf("seed route %s is not in peerRoutes", s.route)
		}
		f.Add(i, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		s, closeMgr := newFuzzServer(t, dir)
		defer closeMgr()
		if err := s.hub.SetAcceptRemote(true); err != nil {
			t.Fatal(err)
		}
		r := routes[int(route)%len(routes)]
		if r == "/peer/v1/term" {
			serveTermOne(t, s.hub.Handler(peerTransport{}, context.Background()), r, string(body))
		} else {
			serveOne(t, s.hub.Handler(peerTransport{}, context.Background()), r, body, "")
		}
		checkNothingEscaped(t, dir, s.info.Home)
	})
}

// serveTermOne asks for the peer terminal with query, as a plain GET (no
// websocket handshake): a refusal must be a JSON error; a pane alpha may
// open gets as far as the websocket's own refusal of a request that is
// not one. Nothing may hang or crash.
func serveTermOne(t *testing.T, h http.Handler, route, query string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestDeadline)
	defer cancel()
	req := httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx)
	req.URL.Path, req.URL.RawQuery = route, query
	rec := serveNoHang(t, h, req, fmt.Sprintf("GET %s?%s", route, query))
	t.Logf("GET %s?%.80s -> %d %.160s", route, query, rec.Code, rec.Body.String())
	switch rec.Code {
	case http.StatusForbidden, http.StatusNotFound:
		var e api.Error
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Message == "" || e.Kind == "" {
			t.Fatalf("GET %s?%s: %d with %q, want a JSON error with kind and message", route, query, rec.Code, rec.Body.String())
		}
	case http.StatusBadRequest, http.StatusUpgradeRequired:
		// The websocket library's refusal of a GET that is not a handshake:
		// the pane was one alpha may open.
	default:
		t.Fatalf("GET %s?%s: status %d %q", route, query, rec.Code, rec.Body.String())
	}
}
