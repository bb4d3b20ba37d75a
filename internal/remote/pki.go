package remote

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"strings"
	"time"
)

// CertLifetime is how long a machine's certificate, and so the access to
// a machine kept in $ST_HOME/remote, is valid.
const CertLifetime = 11 * time.Hour

// uriScheme names the machines in certificates: st://<account>/<slug>
// for a machine, st://<account> for the account's CA.
const uriScheme = "st"

// skew is how far back NotBefore goes, so that a machine whose clock is a
// little behind the control plane's still accepts a fresh certificate.
const Skew = 5 * time.Minute

func NewKey() (*ecdsa.PrivateKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("make a P-256 key: %w", err)
	}
	return k, nil
}

func Serial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("make a certificate serial: %w", err)
	}
	return n, nil
}

func EncodeKey(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func DecodeKey(data []byte) (*ecdsa.PrivateKey, error) {
	b, _ := pem.Decode(data)
	if b == nil || b.Type != "PRIVATE KEY" {
		return nil, errors.New("no PEM private key in it")
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, err
	}
	ek, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("a %T key, not ECDSA", k)
	}
	return ek, nil
}

// pemBlock returns the DER of the first PEM block of type typ in data.
func PEMBlock(data []byte, typ string) ([]byte, error) {
	b, _ := pem.Decode(data)
	if b == nil || b.Type != typ {
		return nil, fmt.Errorf("no PEM %s in it", strings.ToLower(typ))
	}
	return b.Bytes, nil
}

func EncodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func DecodeCert(data []byte) (*x509.Certificate, error) {
	b, _ := pem.Decode(data)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate in it")
	}
	return x509.ParseCertificate(b.Bytes)
}

func AccountURI(account string) *url.URL { return &url.URL{Scheme: uriScheme, Host: account} }

func MachineURI(account, slug string) *url.URL {
	return &url.URL{Scheme: uriScheme, Host: account, Path: "/" + slug}
}

// machineOf reads st://<account>/<slug> from a certificate; slug is ""
// for an account CA.
func MachineOf(c *x509.Certificate) (account, slug string, ok bool) {
	for _, u := range c.URIs {
		if u.Scheme != uriScheme || u.Host == "" {
			continue
		}
		account, slug = u.Host, strings.TrimPrefix(u.Path, "/")
		// Both name files and show in lists: only what st makes them.
		if !ValidName(account) || (slug != "" && !ValidName(slug)) {
			return "", "", false
		}
		return account, slug, true
	}
	return "", "", false
}

// verifyMachine checks that leaf chains to the account CA in roots, is
// valid now for usage, and names a machine of account (and the machine
// slug, unless slug is ""). It returns the slug it names.
func VerifyMachine(certs []*x509.Certificate, roots *x509.CertPool, usage x509.ExtKeyUsage, account, slug string, now time.Time) (string, error) {
	if len(certs) == 0 {
		return "", errors.New("no certificate")
	}
	leaf := certs[0]
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		return "", err
	}
	a, s, ok := MachineOf(leaf)
	if !ok || s == "" {
		return "", errors.New("the certificate names no st machine")
	}
	if a != account {
		return "", fmt.Errorf("the certificate is of account %s, not %s", a, account)
	}
	if slug != "" && s != slug {
		return "", fmt.Errorf("the certificate is of machine %s, not %s", s, slug)
	}
	return s, nil
}

func SamePublicKey(a, b crypto.PublicKey) bool {
	ea, ok1 := a.(*ecdsa.PublicKey)
	eb, ok2 := b.(*ecdsa.PublicKey)
	return ok1 && ok2 && ea.Equal(eb)
}

// fingerprint is a short hex digest of a public key, for logs.
func Fingerprint(pub crypto.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "?"
	}
	sum := sha256.Sum256(der)
	return fmt.Sprintf("%x", sum[:6])
}
