package remote

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// A machine proves itself to the control plane in two ways. When the
// control plane serves TLS itself, the machine's certificate in the TLS
// handshake does. Behind a TLS terminator (Caddy, nginx, a cloud load
// balancer) the handshake ends at the terminator and no client
// certificate reaches the control plane, so every request of a machine
// also carries its certificate and a signature, made with the machine's
// key, over the request's method, path, time, a nonce and its body. The
// control plane takes the signature only when it is fresh (within skew of
// its clock) and its nonce was not seen before for that machine's key, so
// a request copied on the way cannot be played again.

// Headers of the machine's proof.
const (
	HdrCert  = "St-Machine-Cert"  // base64 of the leaf's DER
	HdrTime  = "St-Machine-Time"  // unix seconds
	HdrNonce = "St-Machine-Nonce" // 16 random bytes in hex
	HdrSig   = "St-Machine-Sig"   // base64 of an ASN.1 ECDSA signature
)

// proofInput is what the signature covers. The path is the API's own
// (from /v1/ on), so that a terminator that serves the control plane
// under a prefix and strips it does not break the proof.
func ProofInput(method, path, ts, nonce string, body []byte) []byte {
	if i := strings.LastIndex(path, "/v1/"); i > 0 {
		path = path[i:]
	}
	sum := sha256.Sum256(body)
	return []byte("st-control-plane-request-v1\n" + method + "\n" + path + "\n" + ts + "\n" + nonce + "\n" + hex.EncodeToString(sum[:]))
}

// signingTransport adds this machine's proof to every request.
type signingTransport struct {
	id   *Identity
	base http.RoundTripper
}

func (t signingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		if r.GetBody == nil {
			return nil, errors.New("st: a request to the control plane must have a body that can be read again")
		}
		rc, err := r.GetBody()
		if err != nil {
			return nil, err
		}
		body, err = io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, err
		}
	}
	cert, err := t.id.Current()
	if err != nil {
		return nil, err
	}
	signer, ok := cert.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, errors.New("st: this machine's key cannot sign")
	}
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	n := hex.EncodeToString(nonce)
	sum := sha256.Sum256(ProofInput(r.Method, r.URL.Path, ts, n, body))
	sig, err := signer.Sign(rand.Reader, sum[:], crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("st: sign the request: %w", err)
	}
	r2 := r.Clone(r.Context())
	if body != nil {
		r2.Body = io.NopCloser(bytes.NewReader(body))
	}
	r2.Header.Set(HdrCert, base64.StdEncoding.EncodeToString(cert.Leaf.Raw))
	r2.Header.Set(HdrTime, ts)
	r2.Header.Set(HdrNonce, n)
	r2.Header.Set(HdrSig, base64.StdEncoding.EncodeToString(sig))
	return t.base.RoundTrip(r2)
}

// CloseIdleConnections closes the kept connections of the transport below.
func (t signingTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// SigningTransport is base with this machine's proof added to every
// request, as the control plane's client sends it (for tests of the
// control plane's side of the proof).
func (id *Identity) SigningTransport(base http.RoundTripper) http.RoundTripper {
	return signingTransport{id: id, base: base}
}
