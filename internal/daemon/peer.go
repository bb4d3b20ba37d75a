package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/authz"
	"github.com/sophonz/st/internal/orch"
	"github.com/sophonz/st/internal/plain"
	"github.com/sophonz/st/internal/remote"
	"github.com/sophonz/st/internal/tmux"
	"github.com/sophonz/st/internal/web"
)

// peerNet is this machine's place in its account: the peer listener that
// other machines' st call over mutual TLS, the heartbeat that tells the
// control plane its address and whether it takes workers, and the client
// side (orch.Peers) that reaches the other machines. It follows st login
// and st logout without a restart (/v1/remote/reload).
type peerNet struct {
	home      string
	listen    string        // where the peer listener listens (peer_listen; "off": none)
	heartbeat time.Duration // how often the control plane is told
	log       io.Writer

	// mgr and tmux are set once the manager exists (start); nothing is
	// served before then: a request would reach no manager.
	mgr  *orch.Manager
	tmux *tmux.Client

	mu    sync.Mutex
	id    *remote.Identity
	relay *remote.Relay // the connection to the control plane's relay
	net   *remote.Net   // direct first, else through the relay
	srv   *http.Server
	addr  string // the direct listener's; "" with peer_listen off
	kick  chan struct{}
	base  context.Context // the daemon's life: ends the peers' web terminals
	// waiting are listeners made before the manager existed, served by
	// start.
	waiting []func()
}

func newPeerNet(home, listen string, heartbeat time.Duration, log io.Writer) *peerNet {
	if heartbeat <= 0 {
		heartbeat = 10 * time.Second
	}
	return &peerNet{home: home, listen: listen, heartbeat: heartbeat, log: log, kick: make(chan struct{}, 1)}
}

func (p *peerNet) logf(format string, args ...any) {
	fmt.Fprintf(p.log, "%s peer: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func (p *peerNet) identity() *remote.Identity {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.id
}

// reload reads this machine's sign-in again, and opens or closes the
// peer listener to match.
func (p *peerNet) reload() error {
	id, err := remote.LoadIdentity(p.home)
	if errors.Is(err, remote.ErrNotSignedIn) {
		id, err = nil, nil
	}
	if err != nil {
		p.logf("sign-in: %v", err)
		id = nil
	}
	p.mu.Lock()
	old, oldRelay := p.srv, p.relay
	same := id != nil && p.id != nil && id.Slug == p.id.Slug && id.Account == p.id.Account && id.ControlPlane == p.id.ControlPlane
	if same {
		p.id = id
		p.mu.Unlock()
		p.poke()
		return nil
	}
	p.id, p.srv, p.addr, p.relay, p.net = id, nil, "", nil, nil
	p.mu.Unlock()
	if old != nil {
		old.Close()
	}
	if oldRelay != nil {
		oldRelay.Close()
	}
	if id == nil {
		return nil
	}
	// The relay first: with peer_listen off it is the only way in.
	relay := id.StartRelay(p.logf)
	n := remote.NewNet(id, relay, p.logf)
	p.mu.Lock()
	p.relay, p.net = relay, n
	p.mu.Unlock()
	ln, err := n.Listen(p.listen)
	if err != nil {
		p.logf("cannot listen on %s for other machines: %v (they reach this one through the control plane's relay)", p.listen, err)
		ln, _ = n.Listen(remote.ListenOff)
	}
	srv := &http.Server{Handler: p.routes(n), ReadHeaderTimeout: 10 * time.Second, ErrorLog: nil}
	addr := ""
	if _, direct := ln.Addr().(*net.TCPAddr); direct {
		addr = ln.Addr().String()
	}
	p.mu.Lock()
	p.srv, p.addr = srv, addr
	p.mu.Unlock()
	p.serve(srv, ln)
	if addr != "" {
		p.logf("machine %s of account %s takes peer requests on %s and through the control plane's relay (mutual TLS)", id.Slug, id.Account, addr)
	} else {
		p.logf("machine %s of account %s takes peer requests through the control plane's relay only (peer_listen off; mutual TLS)", id.Slug, id.Account)
	}
	p.poke()
	if err != nil {
		return fmt.Errorf("listen on %s for other machines (set peer_listen in config.toml or ST_PEER_LISTEN; off for none): %w", p.listen, err)
	}
	return nil
}

// serve serves srv on ln once the manager exists.
func (p *peerNet) serve(srv *http.Server, ln net.Listener) {
	p.mu.Lock()
	ready := p.mgr != nil
	if !ready {
		p.waiting = append(p.waiting, func() { srv.Serve(ln) })
	}
	p.mu.Unlock()
	if ready {
		go srv.Serve(ln)
	}
}

// start gives the peer side its manager and tmux client, and serves the
// listeners that waited for them (the daemon's start-up order: the
// manager before any listener serves).
func (p *peerNet) start(mgr *orch.Manager, tm *tmux.Client) {
	p.mu.Lock()
	p.mgr, p.tmux = mgr, tm
	waiting := p.waiting
	p.waiting = nil
	p.mu.Unlock()
	for _, f := range waiting {
		go f()
	}
}

// poke makes the heartbeat loop tell the control plane now.
func (p *peerNet) poke() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// run keeps the control plane told until ctx ends, then says this
// machine is going.
func (p *peerNet) run(ctx context.Context) {
	p.mu.Lock()
	p.base = ctx
	p.mu.Unlock()
	t := time.NewTicker(p.heartbeat)
	defer t.Stop()
	for {
		p.beat(ctx, true)
		select {
		case <-ctx.Done():
			c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			p.beat(c, false)
			cancel()
			p.mu.Lock()
			srv, relay := p.srv, p.relay
			p.mu.Unlock()
			if srv != nil {
				srv.Close()
			}
			if relay != nil {
				relay.Close()
			}
			return
		case <-t.C:
		case <-p.kick:
		}
	}
}

func (p *peerNet) beat(ctx context.Context, online bool) {
	p.mu.Lock()
	id, addr, srv, n, mgr := p.id, p.addr, p.srv, p.net, p.mgr
	p.mu.Unlock()
	if id == nil || srv == nil || mgr == nil {
		return
	}
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	// The certificate first: one that ended while the machine slept would
	// fail the heartbeat, and with it the renewal that mends it.
	if err := id.RenewIfDue(c); err != nil {
		p.logf("renew the certificate: %v", err)
	}
	err := id.Heartbeat(c, addr, mgr.AcceptRemote(), online)
	// The heartbeat brings the revoked keys: a machine that signed out or
	// was removed loses its open connections here now (remote.Net), not
	// only its next request. Also when the control plane did not answer:
	// the list kept from before still holds.
	if k := n.CloseRevoked(); k > 0 {
		p.logf("closed %d connections of machines that signed out or were removed from the account", k)
	}
	if err != nil {
		p.logf("heartbeat: %v", err)
	}
}

// Self is this machine's slug (orch.Peers).
func (p *peerNet) Self() (string, error) {
	id := p.identity()
	if id == nil {
		return "", notSignedIn()
	}
	return id.Slug, nil
}

func notSignedIn() *api.Error {
	return &api.Error{Kind: api.KindRemote, Message: "refused: this machine is not signed in to an account, so it cannot reach other machines",
		Hint: "st login --control-plane URL --account NAME --key KEY"}
}

// Machine finds a machine of the account (orch.Peers).
func (p *peerNet) Machine(ctx context.Context, name string) (api.MachineRef, error) {
	id := p.identity()
	if id == nil {
		return api.MachineRef{}, notSignedIn()
	}
	m, err := id.Access(ctx, name)
	if err != nil {
		err = remoteErr(err, fmt.Sprintf("machine %q of account %s", name, id.Account))
		var oe *api.Error
		if errors.As(err, &oe) && oe.Kind == api.KindNotFound {
			// A machine of another account is not listed here at all.
			oe.Message += fmt.Sprintf(" (this machine is in account %s; a machine of another account cannot take its workers)", id.Account)
		}
		return api.MachineRef{}, err
	}
	return api.MachineRef{Slug: m.Slug, Name: m.Name}, nil
}

// remoteErr turns an error of internal/remote into one the CLI prints
// with its hint.
func remoteErr(err error, what string) error {
	var re *remote.Error
	if errors.As(err, &re) {
		msg := re.Message
		if re.Err != nil {
			msg += ": " + re.Err.Error()
		}
		kind := api.KindNotFound
		if re.Status == 0 && re.Err != nil {
			kind = api.KindUnreachable
		}
		return &api.Error{Kind: kind, Message: msg, Hint: re.Hint}
	}
	return &api.Error{Kind: api.KindUnreachable, Message: fmt.Sprintf("%s: %v", what, err),
		Hint: "check that the control plane runs (st machines shows whether it answers)"}
}

// Call runs op on machine slug's st (orch.Peers): directly when its
// address answers, else through the control plane's relay (remote.Net,
// which also asks the control plane again when the kept address does not
// answer: the machine may have a new one).
func (p *peerNet) Call(ctx context.Context, slug, op string, req, resp any) error {
	id, n := p.reach()
	if id == nil {
		return notSignedIn()
	}
	m, err := id.Access(ctx, slug)
	if err != nil {
		return remoteErr(err, "machine "+slug)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+m.Slug+api.PeerPrefix+op, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Type", "application/json")
	res, err := n.Client(m.Slug).Do(hr)
	if err != nil {
		return p.reachErr(id, m, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(res.Body, 8<<20))
	if res.StatusCode != http.StatusOK {
		return peerAnswerErr(m.Name, res.Status, data)
	}
	if resp == nil {
		return nil
	}
	return json.Unmarshal(data, resp)
}

// peerAnswerErr is another machine's refusal, made printable: its words
// are printed to the person.
func peerAnswerErr(name, status string, data []byte) error {
	var oe api.Error
	if json.Unmarshal(data, &oe) != nil || oe.Message == "" {
		return &api.Error{Kind: api.KindRemote, Message: plain.Clean(fmt.Sprintf("%s answered %s: %.300s", name, status, strings.TrimSpace(string(data))))}
	}
	if !knownKind(oe.Kind) {
		oe.Kind = api.KindRemote
	}
	oe.Message = plain.Clean(name + " says: " + oe.Message)
	oe.Hint = plain.Clean(strings.ReplaceAll(oe.Hint, "that machine", name))
	return &oe
}

// reach is the identity and the transport, together.
func (p *peerNet) reach() (*remote.Identity, *remote.Net) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.id, p.net
}

// reachErr says why machine m could not be reached: refused (a
// certificate, or the control plane would not relay), or out of reach.
func (p *peerNet) reachErr(id *remote.Identity, m remote.Machine, err error) error {
	var re *remote.RelayError
	switch {
	case errors.As(err, &re) && !re.Offline:
		hint := re.Hint
		if hint == "" {
			hint = "check that both machines are signed in to account " + id.Account + " (st machines)"
		}
		return &api.Error{Kind: api.KindRemote, Message: fmt.Sprintf("refused: %s cannot be reached: %v", m.Name, plain.Clean(err.Error())), Hint: hint}
	case remote.IsRefusal(err):
		where := m.Addr
		if where == "" {
			where = "through the control plane's relay"
		}
		return &api.Error{Kind: api.KindRemote,
			Message: fmt.Sprintf("refused: %s (%s) did not accept this machine's certificate, or showed one that is not of account %s: %v", m.Name, where, id.Account, err),
			Hint:    "sign both machines in to the same account with st login"}
	}
	var ue *remote.UnreachableError
	msg := err.Error()
	if !errors.As(err, &ue) {
		msg = "the connection to it ended: " + msg // made, then lost
	}
	return &api.Error{Kind: api.KindUnreachable,
		Message: fmt.Sprintf("machine %s cannot be reached: %s", m.Name, plain.Clean(msg)),
		Hint:    "check that st runs on " + m.Name + " (st up there) and that st machines shows it online"}
}

// knownKind reports whether an error kind from another machine is one
// this st knows (programs act on it).
func knownKind(k string) bool {
	switch k {
	case api.KindUsage, api.KindNotFound, api.KindConflict, api.KindDepth, api.KindBlocked, api.KindNoHooks,
		api.KindTimeout, api.KindInternal, api.KindUnreachable, api.KindRemote:
		return true
	}
	return false
}

// The peer API is this table: what another machine of the account may
// ask, what each route asks of internal/authz, and its handler. The mux
// is built from it, and PeerRoutes (the fuzz test's list, the matrix
// test's rows) reads it. The terminal (GET, a websocket) is a row too.
type peerRoute struct {
	name   string
	method string
	action authz.Action
	h      peerHandler // nil for the terminal (serveTerm)
}

// peerOp is a handler of read, send, stop, rename or release.
func peerOp(name string) peerHandler {
	return peerCall(func(m *orch.Manager, ctx context.Context, from string, req api.PeerOp) (*api.WorkerView, error) {
		return m.PeerOp(ctx, from, name, req)
	})
}

// peerTable is the peer API. Handlers take the manager when a request
// comes (it is set after the listener starts), hence method expressions.
var peerTable = []peerRoute{
	{api.PeerRouteStart, http.MethodPost, authz.Start, peerCall((*orch.Manager).PeerStart)},
	{api.PeerRouteWatch, http.MethodPost, authz.Watch, peerCall((*orch.Manager).PeerWatch)},
	{api.PeerRouteAdopt, http.MethodPost, authz.Adopt, peerCall((*orch.Manager).PeerAdopt)},
	{api.PeerRouteReparent, http.MethodPost, authz.Reparent, peerCall((*orch.Manager).PeerReparent)},
	{api.PeerRoutePane, http.MethodPost, authz.FindCoordinator, peerCall((*orch.Manager).PeerPane)},
	{api.PeerRouteGraph, http.MethodPost, authz.SeeAgents, graphOf},
	{api.PeerRouteRead, http.MethodPost, authz.ReadScreen, peerOp(api.PeerRouteRead)},
	{api.PeerRouteSend, http.MethodPost, authz.Send, peerOp(api.PeerRouteSend)},
	{api.PeerRouteStop, http.MethodPost, authz.Stop, peerOp(api.PeerRouteStop)},
	{api.PeerRouteRename, http.MethodPost, authz.Rename, peerOp(api.PeerRouteRename)},
	{api.PeerRouteRelease, http.MethodPost, authz.Release, peerOp(api.PeerRouteRelease)},
	{api.PeerRouteTerm, http.MethodGet, authz.OpenTerminal, nil},
}

// PeerRoutes lists the peer API's routes, from its table.
func PeerRoutes() []authz.Route {
	out := make([]authz.Route, 0, len(peerTable))
	for _, rt := range peerTable {
		acts := []authz.Action{rt.action}
		if rt.name == api.PeerRouteTerm {
			acts = append(acts, authz.TypeTerminal)
		}
		out = append(out, authz.Route{Surface: "peer", Method: rt.method, Path: api.PeerPrefix + rt.name, Actions: acts, Actor: authz.Machine})
	}
	return out
}

// peerActor is who calls the peer API: the machine its certificate
// proves (checked against the revoked keys on every request), or, with
// none valid, anyone on the network.
func peerActor(tr remote.Transport, r *http.Request) authz.Actor {
	if from, ok := tr.PeerOf(r); ok {
		return authz.Actor{Kind: authz.Machine, Machine: from}
	}
	return authz.Actor{Kind: authz.Network}
}

// peerRefusal is authz's refusal as the asking machine's st prints it
// (it says "NAME says: " before it, and names this machine in the hint).
func peerRefusal(a authz.Actor, d authz.Decision) *api.Error {
	kind := api.KindRemote
	if a.Kind != authz.Machine {
		kind = "forbidden"
	}
	return &api.Error{Kind: kind, Message: "refused: " + d.Why, Hint: d.Hint}
}

// peerTarget is what a peer request names: an id in its body (PeerOp,
// IDRequest), or the pane of a terminal's query.
func peerTarget(r *http.Request, body []byte) authz.Target {
	if r.Method == http.MethodGet {
		pane, _ := web.PeerTermOptsOf(r)
		return authz.Target{ID: pane}
	}
	var e struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(body, &e) != nil {
		return authz.Target{}
	}
	return authz.Target{ID: e.ID}
}

// routes is the peer API: one handler per row of peerTable.
func (p *peerNet) routes(tr remote.Transport) http.Handler {
	mux := http.NewServeMux()
	for _, rt := range peerTable {
		mux.HandleFunc(api.PeerPrefix+rt.name, func(w http.ResponseWriter, r *http.Request) {
			a := peerActor(tr, r)
			if a.Kind != authz.Machine {
				writeErr(w, peerRefusal(a, authz.Decide(a, rt.action, authz.Target{}, p.mgr)), http.StatusForbidden)
				return
			}
			if r.Method != rt.method {
				msg := "use POST"
				if rt.method == http.MethodGet {
					msg = "use GET (a websocket)"
				}
				writeErr(w, &api.Error{Kind: api.KindUsage, Message: msg}, http.StatusMethodNotAllowed)
				return
			}
			if rt.h == nil {
				p.serveTerm(w, r, tr, a)
				return
			}
			answer(w, r, func(body []byte) (any, error) {
				if d := authz.Decide(a, rt.action, peerTarget(r, body), p.mgr); !d.Allowed {
					return nil, forbidden{peerRefusal(a, d)}
				}
				v, err := rt.h(p, r.Context(), a.Machine, body)
				p.mgr.Sync() // what another machine is told is on disk here
				return v, err
			})
		})
	}
	return mux
}

// peerHandler answers a request of machine from.
type peerHandler func(p *peerNet, ctx context.Context, from string, body []byte) (any, error)

// peerCall decodes a peer request into T for op of p's manager.
func peerCall[T, R any](op func(*orch.Manager, context.Context, string, T) (R, error)) peerHandler {
	return func(p *peerNet, ctx context.Context, from string, b []byte) (any, error) {
		req, err := decode[T](b)
		if err != nil {
			return nil, err
		}
		return op(p.mgr, ctx, from, req)
	}
}

// serveTerm serves machine a's web UI the window of a pane here
// (web.ServePeerTerm) as authz decides: opened only on a pane handed to
// that machine, read-only unless this machine lets it type (the asking
// side's switch may only narrow that). Checked before anything touches
// tmux, before each key, and every second (with the machine's
// certificate against the revoked keys, so a revoked machine's terminal
// closes within a second of this machine learning it).
func (p *peerNet) serveTerm(w http.ResponseWriter, r *http.Request, tr remote.Transport, a authz.Actor) {
	pane, o := web.PeerTermOptsOf(r)
	if !tmux.ValidPaneID(pane) {
		writeErr(w, &api.Error{Kind: api.KindUsage, Message: "refused: " + a.Machine + " asked for a pane that is not a pane id",
			Hint: "upgrade st on " + a.Machine + " (this machine refuses what it sent)"}, http.StatusForbidden)
		return
	}
	t := authz.Target{ID: pane}
	d := authz.Decide(a, authz.OpenTerminal, t, p.mgr)
	if !d.Allowed {
		writeErr(w, peerRefusal(a, d), http.StatusForbidden)
		return
	}
	readOnly := o.ReadOnly || d.ReadOnly
	tp, err := p.tmux.Pane(r.Context(), pane)
	if err != nil {
		writeErr(w, &api.Error{Kind: api.KindNotFound, Message: "that agent's window is gone"}, http.StatusNotFound)
		return
	}
	var mu sync.Mutex
	var checked time.Time
	decide := func(act authz.Action) error {
		if _, ok := tr.PeerOf(r); !ok {
			return peerRefusal(authz.Actor{Kind: authz.Network}, authz.Decide(authz.Actor{Kind: authz.Network}, act, t, nil))
		}
		if d := authz.Decide(a, act, t, p.mgr); !d.Allowed {
			return peerRefusal(a, d)
		}
		return nil
	}
	allowed := func() error {
		// The window's other panes (a split shows them all) once a second,
		// as they cost a look at tmux.
		if err := decide(authz.OpenTerminal); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if time.Since(checked) < time.Second {
			return nil
		}
		if err := p.windowVisible(r.Context(), a, tp.WindowID); err != nil {
			return err
		}
		checked = time.Now()
		return nil
	}
	if err := allowed(); err != nil {
		writeErr(w, asOrchErr(err), http.StatusForbidden)
		return
	}
	p.mu.Lock()
	base := p.base
	p.mu.Unlock()
	p.logf("%s opens the window of %s (read-only: %v)", a.Machine, pane, readOnly)
	web.ServePeerTerm(w, r, web.PeerTermConfig{Tmux: p.tmux, Pane: tp, ReadOnly: readOnly, Cols: o.Cols, Rows: o.Rows,
		Allowed: allowed, MayType: func() error { return decide(authz.TypeTerminal) }, Base: base, Log: p.log})
}

// windowVisible refuses a window that holds a pane machine from may not
// see (an agent split beside a shell would show the shell too).
func (p *peerNet) windowVisible(ctx context.Context, a authz.Actor, window string) error {
	panes, err := p.tmux.ListPanes(ctx)
	if err != nil {
		return &api.Error{Kind: api.KindInternal, Message: "tmux did not answer: " + err.Error()}
	}
	for _, tp := range panes {
		if tp.WindowID != window {
			continue
		}
		if d := authz.Decide(a, authz.OpenTerminal, authz.Target{ID: tp.ID}, p.mgr); !d.Allowed {
			return &api.Error{Kind: api.KindRemote, Message: "refused: that agent's window also shows a pane that was not handed to " + a.Machine + " (" + tp.ID + ")",
				Hint: "open it on that machine, or move the agent to a window of its own"}
		}
	}
	return nil
}

func asOrchErr(err error) *api.Error {
	var oe *api.Error
	if errors.As(err, &oe) {
		return oe
	}
	return &api.Error{Kind: api.KindInternal, Message: err.Error()}
}

// openTerm opens, for this machine's web UI, the window of pane on
// machine: a websocket to that machine's st over the peer connection.
func (p *peerNet) openTerm(ctx context.Context, machine, pane string, o web.PeerTermOpts) (*websocket.Conn, error) {
	id, n := p.reach()
	if id == nil {
		return nil, notSignedIn()
	}
	m, err := id.Access(ctx, machine)
	if err != nil {
		return nil, remoteErr(err, "machine "+machine)
	}
	if m.Slug == id.Slug {
		return nil, &api.Error{Kind: api.KindUsage, Message: "that is this machine"}
	}
	dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	c, res, err := websocket.Dial(dctx, "wss://"+m.Slug+api.PeerPrefix+api.PeerRouteTerm+"?"+web.PeerTermQuery(pane, o),
		&websocket.DialOptions{HTTPClient: n.Client(m.Slug), CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		if res != nil && res.StatusCode != http.StatusSwitchingProtocols && res.Body != nil {
			data, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
			return nil, peerAnswerErr(m.Name, res.Status, data)
		}
		return nil, unreachableTerm{p.reachErr(id, m, err)}
	}
	return c, nil
}

// unreachableTerm tells the web UI that a machine was out of reach, not
// refusing.
type unreachableTerm struct{ error }

func (u unreachableTerm) Unreachable() bool {
	var oe *api.Error
	return errors.As(u.error, &oe) && oe.Kind == api.KindUnreachable
}

func (u unreachableTerm) Unwrap() error { return u.error }

// routes answers how each online machine of the account is reached now:
// the last connection's route when recent, else a fresh connection's.
func (p *peerNet) machineRoutes(ctx context.Context) ([]api.MachineRoute, error) {
	id, n := p.reach()
	if id == nil {
		return nil, notSignedIn()
	}
	ms, err := id.Machines(ctx)
	if err != nil {
		return nil, remoteErr(err, "the account's machines")
	}
	out := make([]api.MachineRoute, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		out[i].Slug = m.Slug
		if m.Slug == id.Slug || !m.Online {
			continue
		}
		if via, at, err := n.Route(m.Slug); via != "" && err == nil && time.Since(at) < 30*time.Second {
			out[i].Route = via
			continue
		}
		wg.Add(1)
		go func(r *api.MachineRoute) {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, 8*time.Second)
			defer cancel()
			via, err := n.Probe(pctx, r.Slug)
			r.Route = via
			if err != nil {
				r.Error = plain.Clean(err.Error())
			}
		}(&out[i])
	}
	wg.Wait()
	return out, nil
}

// graph is what machine from sees of this machine's agents, named as this
// machine's web UI names them: a coordinator by its window.
func graphOf(p *peerNet, ctx context.Context, from string, b []byte) (any, error) {
	g := p.mgr.PeerGraph(from)
	if panes, err := p.tmux.ListPanes(ctx); err == nil {
		win := map[string]string{}
		for _, tp := range panes {
			win[tp.ID] = tp.WindowName
		}
		for i := range g {
			if g[i].Name == "" {
				g[i].Name = win[g[i].Pane]
			}
		}
	}
	return g, nil
}

func (p *peerNet) acceptRemote(ctx context.Context, req api.AcceptRemoteRequest) (*api.AcceptRemoteStatus, error) {
	if req.On != nil {
		if err := p.mgr.SetAcceptRemote(*req.On); err != nil {
			return nil, err
		}
		p.poke()
	}
	st := &api.AcceptRemoteStatus{On: p.mgr.AcceptRemote()}
	p.mu.Lock()
	if p.id != nil {
		st.SignedIn, st.Machine, st.Account, st.Addr = true, p.id.Slug, p.id.Account, p.addr
	}
	p.mu.Unlock()
	return st, nil
}
