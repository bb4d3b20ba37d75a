package remote

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
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
// its clock) and its nonce was not seen before, so a request copied on
// the way cannot be played again.

// Headers of the machine's proof.
const (
	hdrCert  = "St-Machine-Cert"  // base64 of the leaf's DER
	hdrTime  = "St-Machine-Time"  // unix seconds
	hdrNonce = "St-Machine-Nonce" // 16 random bytes in hex
	hdrSig   = "St-Machine-Sig"   // base64 of an ASN.1 ECDSA signature
)

// proofInput is what the signature covers. The path is the API's own
// (from /v1/ on), so that a terminator that serves the control plane
// under a prefix and strips it does not break the proof.
func proofInput(method, path, ts, nonce string, body []byte) []byte {
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
	cert, err := t.id.current()
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
	sum := sha256.Sum256(proofInput(r.Method, r.URL.Path, ts, n, body))
	sig, err := signer.Sign(rand.Reader, sum[:], crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("st: sign the request: %w", err)
	}
	r2 := r.Clone(r.Context())
	if body != nil {
		r2.Body = io.NopCloser(bytes.NewReader(body))
	}
	r2.Header.Set(hdrCert, base64.StdEncoding.EncodeToString(cert.Leaf.Raw))
	r2.Header.Set(hdrTime, ts)
	r2.Header.Set(hdrNonce, n)
	r2.Header.Set(hdrSig, base64.StdEncoding.EncodeToString(sig))
	return t.base.RoundTrip(r2)
}

// nonceCache remembers the nonces of fresh proofs, so that each is taken
// once. Entries go when their proof could no longer be fresh.
type nonceCache struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

// maxNonces bounds the cache: past it, proofs are refused (fail closed)
// until old ones expire. Machines send a few requests a minute each.
const maxNonces = 200000

func (c *nonceCache) take(nonce string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]time.Time{}
	}
	if len(c.seen) >= maxNonces/2 {
		for k, exp := range c.seen {
			if now.After(exp) {
				delete(c.seen, k)
			}
		}
	}
	if _, dup := c.seen[nonce]; dup || len(c.seen) >= maxNonces {
		return false
	}
	c.seen[nonce] = now.Add(2*skew + time.Minute)
	return true
}

// proofLeaf checks the proof headers of r and returns the certificate
// whose key signed it. The certificate itself is checked by the caller
// (withMachine), as one from a TLS handshake would be. r's body is read
// (up to 1 MiB) and put back.
func (cp *ControlPlane) proofLeaf(r *http.Request) (*x509.Certificate, error) {
	certB64, ts, nonce, sigB64 := r.Header.Get(hdrCert), r.Header.Get(hdrTime), r.Header.Get(hdrNonce), r.Header.Get(hdrSig)
	if certB64 == "" || ts == "" || nonce == "" || sigB64 == "" {
		return nil, errors.New("this request needs a machine's certificate (in the TLS handshake, or its signed headers behind a TLS terminator)")
	}
	der, err := base64.StdEncoding.DecodeString(certB64)
	if err != nil {
		return nil, errors.New("the machine's certificate header does not decode")
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("the machine's certificate header: %w", err)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return nil, errors.New("the request's time does not decode")
	}
	now := time.Now()
	if d := now.Sub(time.Unix(sec, 0)); d > skew || d < -skew {
		return nil, fmt.Errorf("the request was signed at %s, over %s from the control plane's clock (check this machine's clock)", time.Unix(sec, 0).UTC().Format(time.RFC3339), skew)
	}
	if len(nonce) != 32 {
		return nil, errors.New("the request's nonce is not 16 bytes in hex")
	}
	if _, err := hex.DecodeString(nonce); err != nil {
		return nil, errors.New("the request's nonce is not hex")
	}
	sig, err := base64.StdEncoding.DecodeString(sigB64)
	if err != nil {
		return nil, errors.New("the request's signature does not decode")
	}
	var body []byte
	if r.Body != nil {
		body, err = io.ReadAll(io.LimitReader(r.Body, 1<<20+1))
		r.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read the request: %w", err)
		}
		if len(body) > 1<<20 {
			return nil, errors.New("the request is over 1 MiB")
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	pub, ok := leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok {
		return nil, errors.New("the certificate's key is not ECDSA")
	}
	sum := sha256.Sum256(proofInput(r.Method, r.URL.Path, ts, nonce, body))
	if !ecdsa.VerifyASN1(pub, sum[:], sig) {
		return nil, errors.New("the request's signature does not hold for its certificate")
	}
	// Last, so that a forged request cannot use up a real one's nonce.
	if !cp.nonces.take(nonce, now) {
		return nil, errors.New("this request was seen before (a replay), or the control plane is overloaded")
	}
	return leaf, nil
}

// CloseIdleConnections closes the kept connections of the transport below.
func (t signingTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
