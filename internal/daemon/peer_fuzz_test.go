package daemon

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"testing"

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

// peerRoutes are the peer API's routes, in a fixed order for the
// fuzzer's route index.
func peerRoutes() []string {
	rs := []string{"start", "watch", "read", "send", "stop", "rename", "release", "adopt", "reparent", "pane", "graph"}
	sort.Strings(rs)
	for i := range rs {
		rs[i] = "/peer/v1/" + rs[i]
	}
	return rs
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
		if err := s.mgr.SetAcceptRemote(true); err != nil {
			t.Fatal(err)
		}
		pn := &peerNet{home: s.info.Home, mgr: s.mgr, tmux: s.tmux, log: os.Stderr}
		serveOne(t, pn.routes(peerTransport{}), routes[int(route)%len(routes)], body, "")
		checkNothingEscaped(t, dir, s.info.Home)
	})
}
