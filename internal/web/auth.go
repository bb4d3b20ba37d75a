package web

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"html"
	"net"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/coder/websocket"

	"github.com/sophonz/st/internal/authz"
)

// How a request proves it comes from the user (see the package comment):
// a link token in its URL, made for this port, or the session of a page
// that such a link opened, which the page sends itself. Nothing here is a
// cookie: browsers send 127.0.0.1's cookies to every port.

// LinkToken is the token in a link to the web UI on port: an HMAC of the
// port under the secret, so that the link opens st on that port only (a
// bookmark that reaches another program on the port st left gives it
// nothing to use where st is now). The secret itself never leaves
// $ST_HOME/web.token.
func LinkToken(secret string, port int) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("st-web-link\x00" + strconv.Itoa(port)))
	return hex.EncodeToString(mac.Sum(nil))
}

// sessionProtocol prefixes the session in the Sec-WebSocket-Protocol
// values of the page's websockets (browsers let a page set no other
// header there); wsProtocol is the one the server picks.
const (
	sessionProtocol = "st-session."
	wsProtocol      = "st"
)

// session is the session of a page served on port: an HMAC of the port
// under the key of this start of st.
func (s *Server) session(port int) string {
	mac := hmac.New(sha256.New, s.sessionKey)
	mac.Write([]byte("st-web-session\x00" + strconv.Itoa(port)))
	return hex.EncodeToString(mac.Sum(nil))
}

// localPort is the port of st's listener that r came in on (0 unknown).
// It is the connection's own, not the Host header: a client may write any
// Host, never the port it reached.
func localPort(r *http.Request) int {
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if ta, ok := la.(*net.TCPAddr); ok {
			return ta.Port
		}
		if _, p, err := net.SplitHostPort(la.String()); err == nil {
			n, _ := strconv.Atoi(p)
			return n
		}
	}
	return 0
}

// authorized reports whether r carries this port's link token or the
// session of a page of this port.
func (s *Server) authorized(r *http.Request) bool {
	if s.cfg.Secret == "" {
		return false
	}
	port := localPort(r)
	if r.URL.Query().Has("token") {
		return equal(r.URL.Query().Get("token"), LinkToken(s.cfg.Secret, port))
	}
	if v, ok := bearer(r); ok {
		return equal(v, s.session(port))
	}
	if v, ok := protocolSession(r); ok {
		return equal(v, s.session(port))
	}
	return false
}

// linkOpened reports whether r carries this port's link token (the
// first load of the page, whose answer hands the page its session).
func (s *Server) linkOpened(r *http.Request) bool {
	return s.cfg.Secret != "" && r.URL.Query().Has("token") &&
		equal(r.URL.Query().Get("token"), LinkToken(s.cfg.Secret, localPort(r)))
}

// withSession puts the page's session into the page a link opened, for
// its script to keep (only this origin reads the answer) and send.
func (s *Server) withSession(r *http.Request, page []byte) []byte {
	if !s.linkOpened(r) {
		return page
	}
	meta := `<meta name="st-session" content="` + html.EscapeString(s.session(localPort(r))) + `">` + "\n"
	return bytes.Replace(page, []byte("</head>"), []byte(meta+"</head>"), 1)
}

func bearer(r *http.Request) (string, bool) {
	v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return strings.TrimSpace(v), ok
}

// protocolSession finds the session among the websocket subprotocols the
// page offered.
func protocolSession(r *http.Request) (string, bool) {
	for _, h := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(h, ",") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(p), sessionProtocol); ok {
				return v, true
			}
		}
	}
	return "", false
}

// acceptOptions are the websockets' handshake options: the Origin is
// checked before (refuseOrigin, which knows the configured origins too),
// and the subprotocol picked is never the one that carries the session.
func acceptOptions() *websocket.AcceptOptions {
	return &websocket.AcceptOptions{InsecureSkipVerify: true, Subprotocols: []string{wsProtocol}}
}

// public reports whether r asks for what every visitor gets: a route of
// the table that is authz.Network's (the page and its files, which hold
// nothing of the user's). A request with a link token is not: a wrong or
// stale one is refused, saying what to open instead.
func (s *Server) public(r *http.Request) bool {
	if (r.Method != http.MethodGet && r.Method != http.MethodHead) || r.URL.Query().Has("token") {
		return false
	}
	if p := r.URL.Path; path.Clean(p) != strings.TrimSuffix(p, "/") && p != "/" {
		return false // a path the mux would clean first
	}
	_, pattern := s.mux.Handler(r)
	for _, rt := range webTable {
		if rt.method+" "+rt.path == pattern {
			return rt.actor == authz.Network
		}
	}
	return false
}

// equal compares in constant time; hashing first keeps the length from
// showing in the time too.
func equal(x, y string) bool {
	a := sha256.Sum256([]byte(x))
	b := sha256.Sum256([]byte(y))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}
