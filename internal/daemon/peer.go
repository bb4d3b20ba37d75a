package daemon

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/orch"
	"github.com/sophonz/st/internal/plain"
	"github.com/sophonz/st/internal/remote"
	"github.com/sophonz/st/internal/tmux"
)

// peerNet is this machine's place in its account: the peer listener that
// other machines' st call over mutual TLS, the heartbeat that tells the
// control plane its address and whether it takes workers, and the client
// side (orch.Peers) that reaches the other machines. It follows st login
// and st logout without a restart (/v1/remote/reload).
type peerNet struct {
	home      string
	listen    string        // where the peer listener listens (peer_listen)
	heartbeat time.Duration // how often the control plane is told
	log       io.Writer

	mgr  *orch.Manager // set once the manager exists
	tmux *tmux.Client

	mu   sync.Mutex
	id   *remote.Identity
	srv  *http.Server
	addr string
	kick chan struct{}
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
	old := p.srv
	same := id != nil && p.id != nil && id.Slug == p.id.Slug && id.Account == p.id.Account
	if same {
		p.id = id
		p.mu.Unlock()
		p.poke()
		return nil
	}
	p.id, p.srv, p.addr = id, nil, ""
	p.mu.Unlock()
	if old != nil {
		old.Close()
	}
	if id == nil {
		return nil
	}
	tr := id.TLSTransport()
	ln, err := tr.Listen(p.listen)
	if err != nil {
		p.logf("cannot listen on %s for other machines: %v", p.listen, err)
		return fmt.Errorf("listen on %s for other machines (set peer_listen in config.toml or ST_PEER_LISTEN): %w", p.listen, err)
	}
	srv := &http.Server{Handler: p.routes(tr), ReadHeaderTimeout: 10 * time.Second, ErrorLog: nil}
	p.mu.Lock()
	p.srv, p.addr = srv, ln.Addr().String()
	p.mu.Unlock()
	go srv.Serve(ln)
	p.logf("machine %s of account %s takes peer requests on %s (mutual TLS)", id.Slug, id.Account, ln.Addr())
	p.poke()
	return nil
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
			if p.srv != nil {
				p.srv.Close()
			}
			p.mu.Unlock()
			return
		case <-t.C:
		case <-p.kick:
		}
	}
}

func (p *peerNet) beat(ctx context.Context, online bool) {
	p.mu.Lock()
	id, addr := p.id, p.addr
	p.mu.Unlock()
	if id == nil || addr == "" || p.mgr == nil {
		return
	}
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := id.Heartbeat(c, addr, p.mgr.AcceptRemote(), online); err != nil {
		p.logf("heartbeat: %v", err)
		return
	}
	if err := id.RenewIfDue(c); err != nil {
		p.logf("renew the certificate: %v", err)
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

func notSignedIn() *orch.Error {
	return &orch.Error{Kind: orch.KindRemote, Message: "refused: this machine is not signed in to an account, so it cannot reach other machines",
		Hint: "st login --control-plane URL --account NAME --key KEY"}
}

// Machine finds a machine of the account (orch.Peers).
func (p *peerNet) Machine(ctx context.Context, name string) (orch.MachineRef, error) {
	id := p.identity()
	if id == nil {
		return orch.MachineRef{}, notSignedIn()
	}
	m, err := id.Access(ctx, name)
	if err != nil {
		err = remoteErr(err, fmt.Sprintf("machine %q of account %s", name, id.Account))
		var oe *orch.Error
		if errors.As(err, &oe) && oe.Kind == orch.KindNotFound {
			// A machine of another account is not listed here at all.
			oe.Message += fmt.Sprintf(" (this machine is in account %s; a machine of another account cannot take its workers)", id.Account)
		}
		return orch.MachineRef{}, err
	}
	return orch.MachineRef{Slug: m.Slug, Name: m.Name}, nil
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
		kind := orch.KindNotFound
		if re.Status == 0 && re.Err != nil {
			kind = orch.KindUnreachable
		}
		return &orch.Error{Kind: kind, Message: msg, Hint: re.Hint}
	}
	return &orch.Error{Kind: orch.KindUnreachable, Message: fmt.Sprintf("%s: %v", what, err),
		Hint: "check that the control plane runs (st machines shows whether it answers)"}
}

// Call runs op on machine slug's st (orch.Peers). When the kept address
// does not answer, the control plane is asked again: the machine may have
// a new address.
func (p *peerNet) Call(ctx context.Context, slug, op string, req, resp any) error {
	id := p.identity()
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
	res, err := p.post(ctx, id, m, op, body)
	if err != nil && !isTLSRefusal(err) && ctx.Err() == nil {
		if m2, err2 := id.Reopen(ctx, slug); err2 == nil && m2.Addr != m.Addr {
			p.logf("%s moved from %s to %s: opened it again", slug, m.Addr, m2.Addr)
			m = m2
			res, err = p.post(ctx, id, m, op, body)
		}
	}
	if err != nil {
		if isTLSRefusal(err) {
			return &orch.Error{Kind: orch.KindRemote,
				Message: fmt.Sprintf("refused: %s (%s) did not accept this machine's certificate, or showed one that is not of account %s: %v", m.Name, m.Addr, id.Account, err),
				Hint:    "sign both machines in to the same account with st login"}
		}
		where := m.Addr
		if where == "" {
			where = "no address yet"
		}
		return &orch.Error{Kind: orch.KindUnreachable,
			Message: fmt.Sprintf("machine %s cannot be reached (%s): %v", m.Name, where, err),
			Hint:    "check that st runs on " + m.Name + " (st up there) and that st machines shows it online"}
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(res.Body, 8<<20))
	if res.StatusCode != http.StatusOK {
		// Its words are printed to the person: made printable first.
		var oe orch.Error
		if json.Unmarshal(data, &oe) != nil || oe.Message == "" {
			return &orch.Error{Kind: orch.KindRemote, Message: plain.Clean(fmt.Sprintf("%s answered %s: %.300s", m.Name, res.Status, strings.TrimSpace(string(data))))}
		}
		if !knownKind(oe.Kind) {
			oe.Kind = orch.KindRemote
		}
		oe.Message = plain.Clean(m.Name + " says: " + oe.Message)
		oe.Hint = plain.Clean(strings.ReplaceAll(oe.Hint, "that machine", m.Name))
		return &oe
	}
	if resp == nil {
		return nil
	}
	return json.Unmarshal(data, resp)
}

func (p *peerNet) post(ctx context.Context, id *remote.Identity, m remote.Machine, op string, body []byte) (*http.Response, error) {
	if m.Addr == "" {
		return nil, errors.New("it has not told the control plane an address (is st running there?)")
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+m.Addr+api.PeerPrefix+op, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	return id.TLSTransport().Client(m.Slug).Do(hr)
}

// knownKind reports whether an error kind from another machine is one
// this st knows (programs act on it).
func knownKind(k string) bool {
	switch k {
	case orch.KindUsage, orch.KindNotFound, orch.KindConflict, orch.KindDepth, orch.KindBlocked, orch.KindNoHooks,
		orch.KindTimeout, orch.KindInternal, orch.KindUnreachable, orch.KindRemote:
		return true
	}
	return false
}

// isTLSRefusal tells a certificate that was refused (by either side)
// from a machine that does not answer.
func isTLSRefusal(err error) bool {
	var ce *tls.CertificateVerificationError
	var ae tls.AlertError
	if errors.As(err, &ce) || errors.As(err, &ae) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "certificate") || strings.Contains(s, "tls: ")
}

// routes is the peer API: what another machine of the account may ask.
func (p *peerNet) routes(tr remote.Transport) http.Handler {
	mux := http.NewServeMux()
	op := func(name string) peerHandler {
		return peerCall(p, func(m *orch.Manager, ctx context.Context, from string, req orch.PeerOp) (*orch.WorkerView, error) {
			return m.PeerOp(ctx, from, name, req)
		})
	}
	// The manager is p.mgr when a request comes (it is set after the
	// listener starts), hence method expressions, not method values.
	h := map[string]peerHandler{
		api.PeerRouteStart:    peerCall(p, (*orch.Manager).PeerStart),
		api.PeerRouteWatch:    peerCall(p, (*orch.Manager).PeerWatch),
		api.PeerRouteAdopt:    peerCall(p, (*orch.Manager).PeerAdopt),
		api.PeerRouteReparent: peerCall(p, (*orch.Manager).PeerReparent),
		api.PeerRoutePane:     peerCall(p, (*orch.Manager).PeerPane),
		api.PeerRouteGraph:    p.graph,
		api.PeerRouteRead:     op(api.PeerRouteRead),
		api.PeerRouteSend:     op(api.PeerRouteSend),
		api.PeerRouteStop:     op(api.PeerRouteStop),
		api.PeerRouteRename:   op(api.PeerRouteRename),
		api.PeerRouteRelease:  op(api.PeerRouteRelease),
	}
	for name, fn := range h {
		fn := fn
		mux.HandleFunc(api.PeerPrefix+name, func(w http.ResponseWriter, r *http.Request) {
			from, ok := tr.PeerOf(r)
			if !ok {
				writeErr(w, &orch.Error{Kind: "forbidden", Message: "refused: no valid certificate of this account (a machine that signed out or was removed from the account is refused)",
					Hint: "sign this machine in again: st login"}, http.StatusForbidden)
				return
			}
			if r.Method != http.MethodPost {
				writeErr(w, &orch.Error{Kind: orch.KindUsage, Message: "use POST"}, http.StatusMethodNotAllowed)
				return
			}
			answer(w, r, func(body []byte) (any, error) {
				v, err := fn(r.Context(), from, body)
				p.mgr.Sync() // what another machine is told is on disk here
				return v, err
			})
		})
	}
	return mux
}

// peerHandler answers a request of machine from.
type peerHandler func(ctx context.Context, from string, body []byte) (any, error)

// peerCall decodes a peer request into T for op of p's manager.
func peerCall[T, R any](p *peerNet, op func(*orch.Manager, context.Context, string, T) (R, error)) peerHandler {
	return func(ctx context.Context, from string, b []byte) (any, error) {
		req, err := decode[T](b)
		if err != nil {
			return nil, err
		}
		return op(p.mgr, ctx, from, req)
	}
}

// graph is what machine from sees of this machine's agents, named as this
// machine's web UI names them: a coordinator by its window.
func (p *peerNet) graph(ctx context.Context, from string, b []byte) (any, error) {
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
