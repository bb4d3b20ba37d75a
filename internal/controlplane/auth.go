package controlplane

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/sophonz/st/internal/remote"
)

// The control plane's side of a machine's proof (internal/remote's
// auth.go says what the proof is and signs it).

// nonceCache remembers the nonces of fresh proofs, per verified machine
// key, so that each is taken once. A nonce is kept only once the proof's
// certificate chains to its account's CA and is the current key of a
// machine signed in (withMachine): a stranger's proof keeps nothing
// (issue 23, item 9: 200,000 self-signed proofs filled the one cache of
// old, and every account's requests were then refused as replays). Each
// key may have maxNoncesPerKey at once; past that only that key's
// requests are refused, until its old nonces expire.
type nonceCache struct {
	mu    sync.Mutex
	keys  map[string]*keyNonces
	swept time.Time // when keys with nothing left were last dropped
}

// keyNonces are one key's nonces and when each can be forgotten.
type keyNonces struct {
	seen   map[string]time.Time
	oldest time.Time // no entry expires before it
}

// maxNoncesPerKey is what one machine may send in a proof's freshness
// (skew, 5 minutes: a nonce is kept until its proof could no longer be
// fresh): about 7 requests a second, where a machine sends a heartbeat
// every 10 s and a few more requests a minute.
const maxNoncesPerKey = 2048

// take keeps nonce of key kid, from a proof signed at signed. It fails
// for a nonce seen before, and for a key over its bound.
func (c *nonceCache) take(kid, nonce string, signed, now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keys == nil {
		c.keys = map[string]*keyNonces{}
	}
	k := c.keys[kid]
	if k == nil {
		k = &keyNonces{seen: map[string]time.Time{}}
		c.keys[kid] = k
	}
	if _, dup := k.seen[nonce]; dup {
		return errors.New("this request was seen before (a replay)")
	}
	if len(k.seen) > 0 && !now.Before(k.oldest) {
		k.prune(now) // one has expired: a machine keeps a few minutes' worth
	}
	if len(k.seen) >= maxNoncesPerKey {
		return fmt.Errorf("this machine sent over %d requests in %s; the control plane takes more once the oldest are %s old", maxNoncesPerKey, remote.Skew, remote.Skew)
	}
	// A proof is fresh within skew of its time: after that, its nonce
	// cannot come again.
	exp := signed.Add(remote.Skew + time.Second)
	k.seen[nonce] = exp
	if k.oldest.IsZero() || exp.Before(k.oldest) {
		k.oldest = exp
	}
	if now.Sub(c.swept) > time.Minute {
		c.swept = now
		c.pruneKeys(now) // the keys of machines gone
	}
	return nil
}

func (k *keyNonces) prune(now time.Time) {
	k.oldest = time.Time{}
	for n, exp := range k.seen {
		if now.After(exp) {
			delete(k.seen, n)
		} else if k.oldest.IsZero() || exp.Before(k.oldest) {
			k.oldest = exp
		}
	}
}

// pruneKeys drops the keys whose nonces have all expired.
func (c *nonceCache) pruneKeys(now time.Time) {
	for kid, k := range c.keys {
		if !now.Before(k.oldest) {
			k.prune(now)
		}
		if len(k.seen) == 0 {
			delete(c.keys, kid)
		}
	}
}

// proof is a request's signed headers, checked: the certificate whose
// key signed it, and its nonce and time, for the nonce cache.
type proof struct {
	leaf   *x509.Certificate
	nonce  string
	signed time.Time
}

// proofOf checks the proof headers of r: fresh, well formed, and signed
// by the key of the certificate it carries. The certificate itself is
// checked by the caller (withMachine), as one from a TLS handshake would
// be, and the nonce is kept only after that. r's body is read (up to
// 1 MiB) and put back.
func (cp *ControlPlane) proofOf(r *http.Request) (*proof, error) {
	certB64, ts, nonce, sigB64 := r.Header.Get(remote.HdrCert), r.Header.Get(remote.HdrTime), r.Header.Get(remote.HdrNonce), r.Header.Get(remote.HdrSig)
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
	signed := time.Unix(sec, 0)
	if d := time.Since(signed); d > remote.Skew || d < -remote.Skew {
		return nil, fmt.Errorf("the request was signed at %s, over %s from the control plane's clock (check this machine's clock)", signed.UTC().Format(time.RFC3339), remote.Skew)
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
	body, err := readBodyBack(r)
	if err != nil {
		return nil, err
	}
	pub, ok := leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok {
		return nil, errors.New("the certificate's key is not ECDSA")
	}
	sum := sha256.Sum256(remote.ProofInput(r.Method, r.URL.Path, ts, nonce, body))
	if !ecdsa.VerifyASN1(pub, sum[:], sig) {
		return nil, errors.New("the request's signature does not hold for its certificate")
	}
	return &proof{leaf: leaf, nonce: nonce, signed: signed}, nil
}

// readBodyBack reads r's body (up to 1 MiB) and puts it back.
func readBodyBack(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20+1))
	r.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read the request: %w", err)
	}
	if len(body) > 1<<20 {
		return nil, errors.New("the request is over 1 MiB")
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}
