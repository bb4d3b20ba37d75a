package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/peer"
	"github.com/sophonz/st/internal/remote"
)

// peerNet is this machine's place in its account, as far as listeners
// go: the peer listener that other machines' st call over mutual TLS
// (serving internal/peer's Hub.Handler), the heartbeat that tells the
// control plane its address and whether it takes workers, and this
// machine's sign-in and connections, which internal/peer's Client reaches
// the other machines through (reach). It follows st login and st logout
// without a restart (/v1/remote/reload).
type peerNet struct {
	home      string
	listen    string        // where the peer listener listens (peer_listen; "off": none)
	heartbeat time.Duration // how often the control plane is told
	log       io.Writer
	base      context.Context // the daemon's life: ends the peers' web terminals
	// hub answers the other machines; it is given before reload, but
	// nothing is served before start: a request would reach no manager.
	hub *peer.Hub

	mu    sync.Mutex
	id    *remote.Identity
	relay *remote.Relay // the connection to the control plane's relay
	net   *remote.Net   // direct first, else through the relay
	srv   *http.Server
	addr  string // the direct listener's; "" with peer_listen off
	kick  chan struct{}
	// ready: the manager exists (start); waiting are listeners made
	// before, served by start.
	ready   bool
	waiting []func()
}

func newPeerNet(base context.Context, home, listen string, heartbeat time.Duration, log io.Writer) *peerNet {
	if heartbeat <= 0 {
		heartbeat = 10 * time.Second
	}
	return &peerNet{base: base, home: home, listen: listen, heartbeat: heartbeat, log: log, kick: make(chan struct{}, 1)}
}

func (p *peerNet) logf(format string, args ...any) {
	fmt.Fprintf(p.log, "%s peer: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func (p *peerNet) identity() *remote.Identity {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.id
}

// client reaches the other machines through this machine's sign-in and
// connections as they are at each call.
func (p *peerNet) client() peer.Client { return peer.Client{Reach: p.reach} }

// reach is the identity and the transport, together (peer.Client's).
func (p *peerNet) reach() (*remote.Identity, *remote.Net) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.id, p.net
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
	srv := &http.Server{Handler: p.hub.Handler(n, p.base), ReadHeaderTimeout: 10 * time.Second, ErrorLog: nil}
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
	ready := p.ready
	if !ready {
		p.waiting = append(p.waiting, func() { srv.Serve(ln) })
	}
	p.mu.Unlock()
	if ready {
		go srv.Serve(ln)
	}
}

// start serves the listeners that waited for the manager (the daemon's
// start-up order: the manager, attached to the hub, before any listener
// serves).
func (p *peerNet) start() {
	p.mu.Lock()
	p.ready = true
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
	id, addr, srv, n, ready := p.id, p.addr, p.srv, p.net, p.ready
	p.mu.Unlock()
	if id == nil || srv == nil || !ready {
		return
	}
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	// The certificate first: one that ended while the machine slept would
	// fail the heartbeat, and with it the renewal that mends it.
	if err := id.RenewIfDue(c); err != nil {
		p.logf("renew the certificate: %v", err)
	}
	err := id.Heartbeat(c, addr, p.hub.AcceptRemote(), online)
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

func (p *peerNet) acceptRemote(ctx context.Context, req api.AcceptRemoteRequest) (*api.AcceptRemoteStatus, error) {
	if req.On != nil {
		if err := p.hub.SetAcceptRemote(*req.On); err != nil {
			return nil, err
		}
		p.poke()
	}
	st := &api.AcceptRemoteStatus{On: p.hub.AcceptRemote()}
	p.mu.Lock()
	if p.id != nil {
		st.SignedIn, st.Machine, st.Account, st.Addr = true, p.id.Slug, p.id.Account, p.addr
	}
	p.mu.Unlock()
	return st, nil
}
