package remote

import (
	"crypto/tls"
	"net"
	"net/http"
)

// Transport is how the machines of an account reach each other's st: a
// listener whose connections carry the caller's proven identity, a client
// per machine, and that identity on the server side. Mutual TLS over
// direct TCP (TLSTransport) is the only one today; a relay or an overlay
// network would be another implementation (DESIGN.md, Machines).
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
