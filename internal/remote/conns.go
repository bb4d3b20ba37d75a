package remote

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"sync"
	"sync/atomic"
)

// A machine's key is revoked when it signs out or is removed from the
// account, and the other machines learn it with their next heartbeat.
// Every new connection and every request is checked against the list,
// but a connection already open (a web terminal's websocket, a watch's
// long poll, a kept connection between requests) would carry on. So Net
// keeps every connection it takes or makes, with the certificate the
// other end showed, and CloseRevoked closes those of a revoked key: the
// raw connection under TLS, direct or relayed, so every read and write on
// it ends at once.

// trackedConn is a raw connection under TLS, kept in a connSet.
type trackedConn struct {
	net.Conn
	set  *connSet
	peer atomic.Pointer[x509.Certificate] // what the other end showed
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() { c.set.remove(c) })
	return c.Conn.Close()
}

// connSet is the connections of a Net.
type connSet struct {
	mu    sync.Mutex
	conns map[*trackedConn]struct{}
}

func newConnSet() *connSet { return &connSet{conns: map[*trackedConn]struct{}{}} }

func (s *connSet) add(c *trackedConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns[c] = struct{}{}
}

func (s *connSet) remove(c *trackedConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
}

// track wraps raw so that the set keeps it, and returns the TLS config
// to run on it: base, with the other end's certificate kept once the
// handshake has checked it.
func (s *connSet) track(raw net.Conn, base *tls.Config) (*trackedConn, *tls.Config) {
	c := &trackedConn{Conn: raw, set: s}
	cfg := base.Clone()
	check := base.VerifyConnection
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if check != nil {
			if err := check(cs); err != nil {
				return err
			}
		}
		if len(cs.PeerCertificates) > 0 {
			c.peer.Store(cs.PeerCertificates[0])
		}
		return nil
	}
	s.add(c)
	return c, cfg
}

// closeWhere closes every connection whose other end showed a certificate
// that revoked says is revoked, and says how many it closed.
func (s *connSet) closeWhere(revoked func(*x509.Certificate) bool) int {
	s.mu.Lock()
	var gone []*trackedConn
	for c := range s.conns {
		if cert := c.peer.Load(); cert != nil && revoked(cert) {
			gone = append(gone, c)
		}
	}
	s.mu.Unlock()
	for _, c := range gone {
		c.Close()
	}
	return len(gone)
}

// trackedListener is a TLS listener whose connections a connSet keeps.
type trackedListener struct {
	net.Listener
	set  *connSet
	conf *tls.Config
}

func (l trackedListener) Accept() (net.Conn, error) {
	raw, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	c, cfg := l.set.track(raw, l.conf)
	return tls.Server(c, cfg), nil
}

// CloseRevoked closes every connection, taken or made, whose other end is
// a machine with a revoked key (as the list of the last heartbeat says),
// and says how many it closed.
func (n *Net) CloseRevoked() int {
	return n.conns.closeWhere(n.id.Revoked)
}
