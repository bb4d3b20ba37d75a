package remote

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Transport is how the machines of an account reach each other's st: a
// listener whose connections carry the caller's proven identity, a client
// per machine, and that identity on the server side. TLSTransport is
// mutual TLS over direct TCP only; Net adds the control plane's relay
// (DESIGN.md, Machines).
type Transport interface {
	// Listen opens the listener that other machines' st call.
	Listen(addr string) (net.Listener, error)
	// Client is an HTTP client that reaches machine slug and no other.
	Client(slug string) *http.Client
	// PeerOf is the calling machine's slug on the server side.
	PeerOf(r *http.Request) (slug string, ok bool)
}

// TLSTransport is mutual TLS over TCP with this machine's identity.
func (id *Identity) TLSTransport() Transport { return tlsTransport{id} }

type tlsTransport struct{ id *Identity }

func (t tlsTransport) Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return tls.NewListener(ln, t.id.ServerTLS()), nil
}

func (t tlsTransport) Client(slug string) *http.Client { return t.id.Client(slug) }

// PeerOf checks every request, not only the handshake: a kept connection
// of a machine revoked since is refused from the heartbeat that told.
func (t tlsTransport) PeerOf(r *http.Request) (string, bool) {
	slug, ok := PeerOf(r)
	if !ok || t.id.Revoked(r.TLS.PeerCertificates[0]) {
		return "", false
	}
	return slug, true
}

// ListenOff is the peer_listen that opens no listener: the machine takes
// other machines' requests through the relay only.
const ListenOff = "off"

// Routes a connection to a machine takes.
const (
	RouteDirect  = "direct"
	RouteRelayed = "relayed"
)

// Net is mutual TLS between the machines of an account, directly over
// TCP when a machine's address answers, else inside a stream through the
// control plane's relay. Direct comes first; an address whose dial timed
// out (a machine behind NAT that tells a private address) is skipped for
// a minute, so that each call does not wait for it again.
type Net struct {
	id    *Identity
	relay *Relay // nil: direct only
	logf  func(format string, args ...any)

	mu      sync.Mutex
	routes  map[string]*route
	clients map[string]*http.Client
	// conns are the connections taken and made, for CloseRevoked.
	conns *connSet
}

type route struct {
	via    string // RouteDirect or RouteRelayed; "" before the first connection
	at     time.Time
	err    error  // of the last try, when it failed
	slow   string // an address whose dial timed out
	slowAt time.Time
}

// slowFor is how long an address that timed out is not dialled again.
const slowFor = time.Minute

// NewNet is the transport of this machine with its relay (nil for none).
func NewNet(id *Identity, relay *Relay, logf func(format string, args ...any)) *Net {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return &Net{id: id, relay: relay, logf: logf, routes: map[string]*route{}, clients: map[string]*http.Client{}, conns: newConnSet()}
}

// Listen takes connections from the direct listener on addr (none when
// addr is ListenOff) and from the relay, both under mutual TLS.
func (n *Net) Listen(addr string) (net.Listener, error) {
	var direct net.Listener
	if addr != ListenOff {
		var err error
		if direct, err = net.Listen("tcp", addr); err != nil {
			return nil, err
		}
	}
	var relayed net.Listener
	if n.relay != nil {
		relayed = n.relay.Listener()
	}
	if direct == nil && relayed == nil {
		return nil, errors.New("no listener and no relay")
	}
	return trackedListener{Listener: newMergedListener(direct, relayed), set: n.conns, conf: n.id.ServerTLS()}, nil
}

// PeerOf is as TLSTransport's: every request is checked.
func (n *Net) PeerOf(r *http.Request) (string, bool) { return tlsTransport{n.id}.PeerOf(r) }

// Client reaches machine slug by whichever route works: its requests go
// to https://<slug>/..., and the connection is made here.
func (n *Net) Client(slug string) *http.Client {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c := n.clients[slug]; c != nil {
		return c
	}
	c := &http.Client{Transport: &http.Transport{
		DialTLSContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return n.dial(ctx, slug)
		},
		// A long poll per coordinator, calls and web terminals at once:
		// keep enough of them that each does not pay a handshake.
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
	}}
	n.clients[slug] = c
	return c
}

// CloseIdleConnections closes the kept connections of every client.
func (n *Net) CloseIdleConnections() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, c := range n.clients {
		c.CloseIdleConnections()
	}
}

// Route is how machine slug was last reached (RouteDirect, RouteRelayed,
// or "" when not yet), when, and the error of the last try if it failed.
func (n *Net) Route(slug string) (via string, at time.Time, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if r := n.routes[slug]; r != nil {
		return r.via, r.at, r.err
	}
	return "", time.Time{}, nil
}

// Probe connects to machine slug (and closes the connection), so that
// Route says how it is reached now.
func (n *Net) Probe(ctx context.Context, slug string) (string, error) {
	c, err := n.dial(ctx, slug)
	if err != nil {
		return "", err
	}
	c.Close()
	via, _, _ := n.Route(slug)
	return via, nil
}

func (n *Net) routeOf(slug string) *route {
	r := n.routes[slug]
	if r == nil {
		r = &route{}
		n.routes[slug] = r
	}
	return r
}

// dial makes a TLS connection to machine slug: directly at the address
// kept for it; when that does not answer, at the address the control
// plane has now (the machine may have moved); else through the relay.
// A machine with no address is asked about again when the relay cannot
// reach it either (it may have one now).
func (n *Net) dial(ctx context.Context, slug string) (net.Conn, error) {
	m, err := n.id.Access(ctx, slug)
	if err != nil {
		return nil, err
	}
	var why []string
	c, tried, err := n.tryDirect(ctx, m)
	if tried {
		if err == nil || isFinal(err) {
			return c, err
		}
		why = append(why, fmt.Sprintf("directly at %s: %v", m.Addr, err))
	}
	reopened := false
	reopen := func() bool {
		reopened = true
		m2, err := n.id.Reopen(ctx, slug)
		if err != nil || m2.Addr == m.Addr {
			return false
		}
		if m.Addr != "" && m2.Addr != "" {
			n.logf("%s moved from %s to %s: opened it again", slug, m.Addr, m2.Addr)
		}
		m = m2
		return true
	}
	if tried && ctx.Err() == nil && reopen() {
		if c, tried, err := n.tryDirect(ctx, m); tried {
			if err == nil || isFinal(err) {
				return c, err
			}
			why = append(why, fmt.Sprintf("directly at %s: %v", m.Addr, err))
		}
	}
	if n.relay != nil {
		c, err := n.relayed(ctx, m.Slug)
		if err == nil {
			n.reached(m.Slug, RouteRelayed, nil)
			return c, nil
		}
		if IsRefusal(err) {
			n.reached(m.Slug, "", err)
			return nil, err
		}
		why = append(why, "through the control plane: "+err.Error())
	}
	if !reopened && ctx.Err() == nil && reopen() {
		if c, tried, err := n.tryDirect(ctx, m); tried {
			if err == nil || isFinal(err) {
				return c, err
			}
			why = append(why, fmt.Sprintf("directly at %s: %v", m.Addr, err))
		}
	}
	if len(why) == 0 {
		why = append(why, "it has told the control plane no address, and this machine has no relay")
	}
	err = &UnreachableError{Slug: m.Slug, Why: strings.Join(why, "; ")}
	n.reached(m.Slug, "", err)
	return nil, err
}

// isFinal is a refusal that no other route would change: the machine
// refused this one's certificate, or was revoked. A server that is not
// the machine dialled (another one at its old address) is not final.
func isFinal(err error) bool {
	var wrong *WrongMachineError
	return IsRefusal(err) && !errors.As(err, &wrong)
}

// tryDirect dials m's address, unless it has none or it timed out lately;
// tried says whether it did.
func (n *Net) tryDirect(ctx context.Context, m Machine) (c net.Conn, tried bool, err error) {
	if m.Addr == "" {
		return nil, false, nil
	}
	n.mu.Lock()
	r := n.routeOf(m.Slug)
	skip := r.slow == m.Addr && time.Since(r.slowAt) < slowFor
	n.mu.Unlock()
	if skip {
		return nil, false, nil
	}
	c, err = n.direct(ctx, m)
	switch {
	case err == nil:
		n.reached(m.Slug, RouteDirect, nil)
	case isFinal(err):
		n.reached(m.Slug, "", err)
	default:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() && ctx.Err() == nil {
			n.mu.Lock()
			r.slow, r.slowAt = m.Addr, time.Now()
			n.mu.Unlock()
		}
	}
	return c, true, err
}

func (n *Net) reached(slug, via string, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	r := n.routeOf(slug)
	if err == nil {
		r.via = via
	}
	r.at, r.err = time.Now(), err
}

// UnreachableError says a machine answered by no route.
type UnreachableError struct {
	Slug string
	Why  string
}

func (e *UnreachableError) Error() string { return e.Why }

func (n *Net) direct(ctx context.Context, m Machine) (net.Conn, error) {
	raw, err := (&net.Dialer{Timeout: dialTimeout}).DialContext(ctx, "tcp", m.Addr)
	if err != nil {
		return nil, err
	}
	return n.handshake(ctx, raw, m.Slug)
}

func (n *Net) relayed(ctx context.Context, slug string) (net.Conn, error) {
	raw, err := n.relay.Dial(ctx, slug)
	if err != nil {
		return nil, err
	}
	return n.handshake(ctx, raw, slug)
}

func (n *Net) handshake(ctx context.Context, raw net.Conn, slug string) (net.Conn, error) {
	tc, cfg := n.conns.track(raw, n.id.peerClientTLS(slug))
	c := tls.Client(tc, cfg)
	hctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	if err := c.HandshakeContext(hctx); err != nil {
		tc.Close()
		return nil, err
	}
	return c, nil
}

// IsRefusal tells a certificate that was refused (by either side) from a
// machine that does not answer.
func IsRefusal(err error) bool {
	var re *RelayError
	var ue *UnreachableError
	switch {
	case errors.As(err, &re):
		return !re.Offline
	case errors.As(err, &ue):
		return false
	}
	var ce *tls.CertificateVerificationError
	var ae tls.AlertError
	if errors.As(err, &ce) || errors.As(err, &ae) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "certificate") || strings.Contains(s, "tls: ")
}

// mergedListener takes the connections of two listeners (either may be
// nil) as one.
type mergedListener struct {
	lns    []net.Listener
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newMergedListener(a, b net.Listener) *mergedListener {
	m := &mergedListener{conns: make(chan net.Conn), closed: make(chan struct{})}
	for _, l := range []net.Listener{a, b} {
		if l == nil {
			continue
		}
		m.lns = append(m.lns, l)
		go func(l net.Listener) {
			for {
				c, err := l.Accept()
				if err != nil {
					var ne net.Error
					if errors.As(err, &ne) && ne.Timeout() {
						time.Sleep(10 * time.Millisecond)
						continue
					}
					return
				}
				select {
				case m.conns <- c:
				case <-m.closed:
					c.Close()
					return
				}
			}
		}(l)
	}
	return m
}

func (m *mergedListener) Accept() (net.Conn, error) {
	select {
	case c := <-m.conns:
		return c, nil
	case <-m.closed:
		return nil, net.ErrClosed
	}
}

func (m *mergedListener) Close() error {
	m.once.Do(func() {
		close(m.closed)
		for _, l := range m.lns {
			l.Close()
		}
	})
	return nil
}

// Addr is the direct listener's address, or the relay's when there is none.
func (m *mergedListener) Addr() net.Addr {
	for _, l := range m.lns {
		if _, ok := l.(*relayListener); !ok {
			return l.Addr()
		}
	}
	return relayAddr{}
}
