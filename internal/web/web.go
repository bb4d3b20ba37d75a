// Package web is st's browser UI, served by the daemon on 127.0.0.1: a
// web terminal onto the windows of st's tmux server, the Agents card, the
// agent graph, the phone's Agents chart and the decision gates.
//
// Who may use it. The page and its script and style files are the same
// for everyone (they hold nothing of the user's), so they are served to
// anyone who asks; everything else (the state, both websockets, the
// actions) answers 401 without a credential:
//   - the link token in the URL that `st web` prints (?token=): an HMAC of
//     the secret in $ST_HOME/web.token and the port it was made for
//     (LinkToken), so that a link opens st only on that port. When st
//     moves to another port, a link to the old one, which another local
//     user's server may now hold, opens nothing (and st makes a new secret).
//   - the page's session: the page the link opened holds an HMAC of the
//     port under a key made at this start of st, keeps it in its origin's
//     localStorage (scheme, host and port: no other port's page reads it)
//     and sends it itself, as a bearer header on fetches and as a
//     websocket subprotocol (st-session.VALUE). The browser never sends it
//     anywhere on its own: there is no cookie, because browsers send
//     127.0.0.1's cookies to every port, where another user's server would
//     take it and replay it. A session dies when st restarts.
//
// Requests are served only for the Host names of this machine's loopback
// (127.0.0.1, localhost, [::1] on the UI's port) and hosts the user
// configured, so a page of another site that DNS-rebinds its name to
// 127.0.0.1 gets nothing. Websockets and actions also check their
// Origin: browsers let any page open a websocket to 127.0.0.1.
//
// The front end is plain JavaScript and CSS with xterm.js, embedded from
// assets/ (xterm's built files are vendored there from npm, see web/), so
// building st never needs node. The page keeps one websocket for state
// (/api/events: a whole Snapshot, then what changed) and one per open
// terminal (/term, bridged to a tmux client in a pty; see term.go).
package web

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/sophonz/st/internal/authz"
	"github.com/sophonz/st/internal/tmux"
)

//go:embed assets
var assetsFS embed.FS

// Config is what a Server needs.
type Config struct {
	// Secret is what the links' tokens are made from (LinkToken): never
	// in a URL itself. An empty Secret refuses every credential.
	Secret string
	// Tmux is st's tmux server: the terminals attach to it.
	Tmux    *tmux.Client
	Backend Backend
	// Log gets one line per refusal and failure; nil discards.
	Log io.Writer
	// AllowedOrigins are origins (scheme://host:port) whose pages may open
	// the websockets besides the UI's own, such as a reverse proxy's.
	AllowedOrigins []string
	// AllowedHosts are Host values (host or host:port) served besides the
	// loopback names on the UI's own port: a name the user configured on
	// purpose, such as a reverse proxy's or the push answers' base.
	AllowedHosts []string
	// PeerTerm opens a socket to the window of pane on another machine
	// of the account, over the two machines' peer connection; that machine
	// decides whether it opens. An error that has Unreachable() true is a
	// machine out of reach rather than a refusal. Nil: windows of other
	// machines do not open here.
	PeerTerm func(ctx context.Context, machine, pane string, o PeerTermOpts) (*websocket.Conn, error)
	// AnswerPush answers a gate with an answer token of a push's action
	// (the token alone authorizes it); nil: no push answers.
	AnswerPush func(ctx context.Context, answerToken string) error
	// AnswerPushPrompt answers a permission prompt with an answer token of
	// a push's action (the token alone authorizes it); nil: none.
	AnswerPushPrompt func(ctx context.Context, answerToken string) error
}

// Path is where the UI lives.
const Path = "/st/"

// Server serves the UI. It is an http.Handler. Call Close when the daemon
// stops: http.Server.Shutdown does not wait for websockets, and each open
// terminal has a tmux session to clean up.
type Server struct {
	cfg Config
	log io.Writer
	// sessionKey is made at each start: the pages' sessions are HMACs of
	// their port under it (see auth.go).
	sessionKey []byte
	mux        *http.ServeMux
	assets     fs.FS

	pollEvery time.Duration
	eventGap  time.Duration

	base     context.Context // ends at Close; every socket ends with it
	stopBase context.CancelFunc
	mu       sync.Mutex
	closed   bool
	sockets  sync.WaitGroup
}

// New returns the UI's handler.
func New(cfg Config) *Server {
	s := &Server{cfg: cfg, log: cfg.Log, mux: http.NewServeMux(), pollEvery: defaultPoll, eventGap: defaultEventGap}
	s.base, s.stopBase = context.WithCancel(context.Background())
	if s.log == nil {
		s.log = io.Discard
	}
	s.sessionKey = make([]byte, 32)
	if _, err := rand.Read(s.sessionKey); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	sub, err := fs.Sub(assetsFS, "assets")
	if err != nil {
		panic(err) // the embed pattern guarantees the folder
	}
	s.assets = sub

	for _, rt := range webTable {
		if rt.actor == authz.AnswerToken {
			continue // before the credential check: ServeHTTP
		}
		s.mux.HandleFunc(rt.method+" "+rt.path, s.guard(rt))
	}
	return s
}

// The web UI is this table: each route's method and path, what it asks of
// internal/authz, and its handler. The mux is built from it, and Routes
// (the matrix test's rows) reads it. Every route but the push answer
// comes after the web UI's credential check (ServeHTTP), which makes its
// caller a WebSession; the push answer's own one-time token makes its
// caller an AnswerToken.
type webRoute struct {
	method, path string
	action       authz.Action
	actor        authz.Kind
	h            func(s *Server, w http.ResponseWriter, r *http.Request)
}

// webTable is the UI's routes, at /st/ (where the page lives) and at /
// (for a client that carries ?token= itself); / and /st lead to the page.
// The page and its files are every visitor's (authz.Network: they hold
// nothing of the user's, and a <script src> carries no header); the rest
// is the page's session's.
var webTable = func() []webRoute {
	var t []webRoute
	for _, pre := range []string{"", strings.TrimSuffix(Path, "/")} {
		t = append(t,
			webRoute{"GET", pre + "/assets/", authz.ReadPage, authz.Network, assetsUnder(pre)},
			webRoute{"GET", pre + "/api/state", authz.ReadState, authz.WebSession, (*Server).serveState},
			webRoute{"GET", pre + "/api/events", authz.ReadState, authz.WebSession, (*Server).serveEvents},
			webRoute{"GET", pre + "/term", authz.TypeTerminal, authz.WebSession, (*Server).serveTerm},
			webRoute{"POST", pre + "/api/adopt", authz.Adopt, authz.WebSession, (*Server).serveAdopt},
			webRoute{"POST", pre + "/api/release", authz.Release, authz.WebSession, (*Server).serveRelease},
			webRoute{"POST", pre + "/api/gates/answer", authz.AnswerGate, authz.WebSession, serveAnswer(Backend.AnswerGate)},
			webRoute{"POST", pre + "/api/prompts/answer", authz.AnswerPrompt, authz.WebSession, serveAnswer(Backend.AnswerPrompt)},
			webRoute{"POST", pre + "/api/attention/dismiss", authz.Dismiss, authz.WebSession, (*Server).serveDismiss},
		)
	}
	return append(t,
		webRoute{"GET", Path + "{$}", authz.ReadPage, authz.Network, (*Server).serveIndex},
		webRoute{"GET", "/{$}", authz.ReadPage, authz.Network, (*Server).toPage},
		webRoute{"GET", strings.TrimSuffix(Path, "/"), authz.ReadPage, authz.Network, (*Server).toPage},
		webRoute{"POST", pushPromptPath + "{token}", authz.AnswerPrompt, authz.AnswerToken, (*Server).servePushPrompt},
		webRoute{"POST", pushAnswerPath + "{token}", authz.AnswerGate, authz.AnswerToken, (*Server).servePushAnswer},
	)
}()

// Routes lists the web UI's routes, from its table.
func Routes() []authz.Route {
	out := make([]authz.Route, 0, len(webTable))
	for _, rt := range webTable {
		acts := []authz.Action{rt.action}
		if rt.action == authz.TypeTerminal {
			acts = []authz.Action{authz.OpenTerminal, authz.TypeTerminal}
		}
		out = append(out, authz.Route{Surface: "web", Method: rt.method, Path: rt.path, Actions: acts, Actor: rt.actor})
	}
	return out
}

// assetsUnder serves the files of assets/ under pre+"/assets/".
func assetsUnder(pre string) func(*Server, http.ResponseWriter, *http.Request) {
	return func(s *Server, w http.ResponseWriter, r *http.Request) {
		r2 := r.Clone(r.Context())
		r2.URL.Path = strings.TrimPrefix(r.URL.Path, pre+"/assets/")
		s.serveAsset(w, r2)
	}
}

// guard serves rt as authz decides for its caller: a terminal opened
// read-only (ro=1) asks only to open it.
func (s *Server) guard(rt webRoute) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		act := rt.action
		if act == authz.TypeTerminal && r.URL.Query().Get("ro") == "1" {
			act = authz.OpenTerminal
		}
		if d := authz.Decide(authz.Actor{Kind: rt.actor}, act, authz.Target{ID: r.URL.Query().Get("pane")}, nil); !d.Allowed {
			s.logf("403 %s %s: %s", r.Method, r.URL.Path, d.Why)
			http.Error(w, "403 Forbidden: refused: "+d.Why, http.StatusForbidden)
			return
		}
		rt.h(s, w, r)
	}
}

// toPage sends / to the page at Path, keeping the query (the token).
func (s *Server) toPage(w http.ResponseWriter, r *http.Request) {
	u := Path
	if r.URL.RawQuery != "" {
		u += "?" + r.URL.RawQuery
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, u, http.StatusFound)
}

// Close ends every open socket and waits, up to ctx, for the terminals to
// have killed their tmux sessions. New sockets are refused after it.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stopBase()
	done := make(chan struct{})
	go func() { s.sockets.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("web: sockets still open: %w", ctx.Err())
	}
}

// socket registers a websocket's handler: its context ends with the
// request or at Close, and Close waits for done.
func (s *Server) socket(r *http.Request) (ctx context.Context, done func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, false
	}
	s.sockets.Add(1)
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(s.base, cancel)
	return ctx, func() { stop(); cancel(); s.sockets.Done() }, true
}

func (s *Server) logf(format string, args ...any) {
	fmt.Fprintf(s.log, "web: "+format+"\n", args...)
}

// ServeHTTP checks the credential before anything else, so that no
// route, not even a 404, answers without it: only the page and its files,
// which are the same for everyone, do (see auth.go).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer") // the first URL carries the token
	h.Set("X-Frame-Options", "DENY")
	if !s.hostAllowed(r) {
		// Before the token: a rebound name gets nothing, not even a 401
		// page that says what st is.
		s.logf("421 %s %s for host %q from %s", r.Method, r.URL.Path, r.Host, r.RemoteAddr)
		http.Error(w, "421 Misdirected Request: st's web UI answers only on this machine's loopback address", http.StatusMisdirectedRequest)
		return
	}
	if s.cfg.AnswerPush != nil && r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, pushAnswerPath) {
		s.guard(pushRoute)(w, r) // authorized by its own one-time token
		return
	}
	if s.cfg.AnswerPushPrompt != nil && r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, pushPromptPath) {
		s.guard(pushPromptRoute)(w, r) // authorized by its own one-time token
		return
	}
	if !s.authorized(r) && !s.public(r) {
		s.logf("401 %s %s from %s", r.Method, r.URL.Path, r.RemoteAddr)
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, unauthorizedPage)
		return
	}
	s.mux.ServeHTTP(w, r)
}

const unauthorizedPage = `<!doctype html><meta charset="utf-8"><title>st: 401</title>
<body style="font:15px system-ui,sans-serif;background:#0d1117;color:#c9d1d9;padding:2em">
<h1>401 Unauthorized</h1>
<p>This page needs its token. Open the address that <code>st web</code> prints.</p>`

// hostAllowed reports whether r's Host is this UI's: 127.0.0.1, localhost
// or [::1] on the port the request came in on, or one configured.
func (s *Server) hostAllowed(r *http.Request) bool {
	host := strings.ToLower(r.Host)
	for _, a := range s.cfg.AllowedHosts {
		if strings.EqualFold(a, host) {
			return true
		}
	}
	h, port, err := net.SplitHostPort(host)
	if err != nil {
		return false
	}
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if _, lport, err := net.SplitHostPort(la.String()); err == nil && lport != port {
			return false
		}
	}
	switch h {
	case "127.0.0.1", "localhost", "::1":
		return true
	}
	return false
}

// originAllowed reports whether a browser page of Origin may use the
// websockets and the actions: only the UI's own pages (and configured
// origins). A request without Origin is not from a page, and the token
// alone decides.
func (s *Server) originAllowed(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	for _, a := range s.cfg.AllowedOrigins {
		if strings.EqualFold(strings.TrimSuffix(a, "/"), o) {
			return true
		}
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return strings.EqualFold(u.Host, r.Host)
}

func (s *Server) refuseOrigin(w http.ResponseWriter, r *http.Request) bool {
	if s.originAllowed(r) {
		return false
	}
	s.logf("403 %s %s from origin %q", r.Method, r.URL.Path, r.Header.Get("Origin"))
	http.Error(w, "403 Forbidden: this origin may not use st's web UI", http.StatusForbidden)
	return true
}

func (s *Server) serveIndex(w http.ResponseWriter, r *http.Request) {
	b, err := fs.ReadFile(s.assets, "index.html")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	b = s.withSession(r, b)
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	// xterm.js writes <style> elements, hence the inline styles.
	h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; "+
		"img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	w.Write(b)
}

func (s *Server) serveAsset(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Path
	if name == "" || strings.HasSuffix(name, "/") {
		http.NotFound(w, r) // no folder listings
		return
	}
	if strings.HasSuffix(name, ".mjs") || strings.HasSuffix(name, ".js") {
		// Module scripts need a JavaScript type, and Go's table may not
		// know .mjs.
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	}
	// Revalidate every time: the files change with st, and the check is a
	// cheap 304.
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeFileFS(w, r, s.assets, name)
}

// snapshot asks the Backend and fills in what it left out.
func (s *Server) snapshot(ctx context.Context) (Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	snap, err := s.cfg.Backend.Snapshot(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	if snap.Sessions == nil && s.cfg.Tmux != nil {
		if snap.Sessions, err = TmuxSessions(ctx, s.cfg.Tmux); err != nil {
			s.logf("list tmux sessions: %v", err)
		}
	}
	snap.Kinds = kindInfos()
	return normalize(snap), nil
}

// normalize drops the web terminal's own grouped sessions and turns nil
// lists into empty ones, so the page never sees null.
func normalize(snap Snapshot) Snapshot {
	sessions := make([]Session, 0, len(snap.Sessions))
	for _, se := range snap.Sessions {
		if tmux.IsWebSession(se.Name) {
			continue
		}
		if se.Windows == nil {
			se.Windows = []Window{}
		}
		for i := range se.Windows {
			if se.Windows[i].Panes == nil {
				se.Windows[i].Panes = []Pane{}
			}
		}
		sessions = append(sessions, se)
	}
	snap.Sessions = sessions
	if snap.Agents == nil {
		snap.Agents = []Agent{}
	}
	// list-panes -a repeats a pane under every session of its group, so a
	// Backend may name a web terminal's session as an agent's: name the
	// listed session that has the agent's window instead.
	listed := map[string]bool{}
	sessionOf := map[string]string{}
	for _, se := range sessions {
		listed[se.ID] = true
		for _, w := range se.Windows {
			if _, ok := sessionOf[w.ID]; !ok {
				sessionOf[w.ID] = se.ID
			}
		}
	}
	for i := range snap.Agents {
		a := &snap.Agents[i]
		local := a.Machine == "" || a.Machine == snap.Machine
		if id, ok := sessionOf[a.Window]; local && ok && !listed[a.Session] {
			a.Session = id
		}
	}
	if snap.Gates == nil {
		snap.Gates = []Gate{}
	}
	if snap.Prompts == nil {
		snap.Prompts = []Prompt{}
	}
	for i := range snap.Prompts {
		if snap.Prompts[i].Options == nil {
			snap.Prompts[i].Options = []string{}
		}
	}
	if snap.Attention == nil {
		snap.Attention = []Attention{}
	}
	for i := range snap.Gates {
		if snap.Gates[i].Options == nil {
			snap.Gates[i].Options = []string{}
		}
	}
	return snap
}

// TmuxSessions lists the sessions and windows of a tmux server, leaving
// out the web terminal's grouped sessions; a pane's agent and role come
// from st's pane options.
func TmuxSessions(ctx context.Context, c *tmux.Client) ([]Session, error) {
	panes, err := c.ListPanes(ctx)
	if err != nil {
		return nil, err
	}
	active, err := c.ActiveWindows(ctx)
	if err != nil {
		return nil, err
	}
	out := []Session{}
	for _, se := range tmux.Sessions(panes) {
		if tmux.IsWebSession(se.Name) {
			continue
		}
		s := Session{ID: se.ID, Name: se.Name, Windows: []Window{}}
		for _, w := range se.Windows {
			win := Window{ID: w.ID, Index: w.Index, Name: w.Name, Active: active[se.ID] == w.ID, Panes: []Pane{}}
			for _, p := range w.Panes {
				win.Panes = append(win.Panes, Pane{ID: p.ID, Agent: p.StAgent, Role: p.StRole})
			}
			s.Windows = append(s.Windows, win)
		}
		out = append(out, s)
	}
	return out, nil
}

func (s *Server) serveState(w http.ResponseWriter, r *http.Request) {
	snap, err := s.snapshot(r.Context())
	if err != nil {
		s.logf("snapshot: %v", err)
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: err.Error()})
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, snap)
}

type errorBody struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// action decodes a small JSON body and runs do with a bounded time. It
// wants application/json: a cross-site form cannot send that without a
// preflight, which this server never grants.
func (s *Server) action(w http.ResponseWriter, r *http.Request, body any, do func(ctx context.Context) error) {
	if s.refuseOrigin(w, r) {
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		writeJSON(w, http.StatusUnsupportedMediaType, errorBody{Error: "send application/json"})
		return
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(body); err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody{Error: "bad request: " + err.Error()})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	if err := do(ctx); err != nil {
		var bad *badRequest
		if errors.As(err, &bad) {
			writeJSON(w, http.StatusBadRequest, errorBody{Error: err.Error()})
			return
		}
		s.logf("%s: %v", r.URL.Path, err)
		writeJSON(w, http.StatusConflict, errorBody{Error: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, struct {
		OK bool `json:"ok"`
	}{true})
}

type badRequest struct{ msg string }

func (e *badRequest) Error() string { return e.msg }

func required(fields ...string) error {
	for i := 0; i < len(fields); i += 2 {
		if strings.TrimSpace(fields[i+1]) == "" {
			return &badRequest{msg: fields[i] + " is required"}
		}
	}
	return nil
}

func (s *Server) serveAdopt(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Coordinator string `json:"coordinator"`
		Agent       string `json:"agent"`
	}
	s.action(w, r, &b, func(ctx context.Context) error {
		if err := required("coordinator", b.Coordinator, "agent", b.Agent); err != nil {
			return err
		}
		if b.Coordinator == b.Agent {
			return &badRequest{msg: "an agent cannot adopt itself"}
		}
		return s.cfg.Backend.Adopt(ctx, b.Coordinator, b.Agent)
	})
}

func (s *Server) serveRelease(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Pane string `json:"pane"`
	}
	s.action(w, r, &b, func(ctx context.Context) error {
		if err := required("pane", b.Pane); err != nil {
			return err
		}
		return s.cfg.Backend.Release(ctx, b.Pane)
	})
}

// serveAnswer is the handler of an answer the page sends, {id, option}:
// a gate's (Backend.AnswerGate) or a permission prompt's
// (Backend.AnswerPrompt), one body and one check for both.
func serveAnswer(answer func(b Backend, ctx context.Context, id, option string) error) func(*Server, http.ResponseWriter, *http.Request) {
	return func(s *Server, w http.ResponseWriter, r *http.Request) {
		var b struct {
			ID     string `json:"id"`
			Option string `json:"option"`
		}
		s.action(w, r, &b, func(ctx context.Context) error {
			if err := required("id", b.ID, "option", b.Option); err != nil {
				return err
			}
			return answer(s.cfg.Backend, ctx, b.ID, b.Option)
		})
	}
}

func (s *Server) serveDismiss(w http.ResponseWriter, r *http.Request) {
	var b struct {
		ID string `json:"id"`
	}
	s.action(w, r, &b, func(ctx context.Context) error {
		if err := required("id", b.ID); err != nil {
			return err
		}
		return s.cfg.Backend.DismissAttention(ctx, b.ID)
	})
}

// pushAnswerPath is where a push notification's action answers a gate:
// POST pushAnswerPath + <answer token>, with no body, no cookie and no
// web token; the answer token (one per option of one gate, good once)
// is the whole authorization.
const pushAnswerPath = "/push/answer/"

// pushRoute and pushPromptRoute are the push answers' rows of webTable.
var (
	pushRoute       = webTable[len(webTable)-1]
	pushPromptRoute = webTable[len(webTable)-2]
)

// pushPromptPath is where a push's action answers a permission prompt,
// as pushAnswerPath a gate: its one-time token is the whole authorization.
const pushPromptPath = "/push/prompt/"

// PushPromptURL is the URL of a prompt's answer token under base.
func PushPromptURL(base, answerToken string) string {
	return strings.TrimSuffix(base, "/") + pushPromptPath + answerToken
}

func (s *Server) servePushPrompt(w http.ResponseWriter, r *http.Request) {
	s.pushToken(w, r, pushPromptPath, s.cfg.AnswerPushPrompt)
}

// PushAnswerURL is the URL of an answer token under base (the address the
// phone reaches st's web UI at).
func PushAnswerURL(base, answerToken string) string {
	return strings.TrimSuffix(base, "/") + pushAnswerPath + answerToken
}

func (s *Server) servePushAnswer(w http.ResponseWriter, r *http.Request) {
	s.pushToken(w, r, pushAnswerPath, s.cfg.AnswerPush)
}

// pushToken answers with the token in the path under prefix.
func (s *Server) pushToken(w http.ResponseWriter, r *http.Request, prefix string, answer func(context.Context, string) error) {
	tok := strings.TrimPrefix(r.URL.Path, prefix)
	if tok == "" || strings.Contains(tok, "/") || answer == nil {
		http.NotFound(w, r)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	if err := answer(ctx, tok); err != nil {
		s.logf("push answer refused: %v", err)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusGone)
		io.WriteString(w, "not answered: "+err.Error()+"\n")
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, "answered\n")
}
