package controlplane

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/sophonz/st/internal/remote"
)

// The CA of each account and the certificates it signs: machines' (for
// 11 hours) and the control plane's own server certificate.

// newCA makes a self-signed CA. uri, when set, names what it signs for
// (an account); the control plane's own CA has none.
func newCA(cn string, uri *url.URL, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := remote.NewKey()
	if err != nil {
		return nil, nil, err
	}
	sn, err := remote.Serial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-remote.Skew),
		NotAfter:              now.AddDate(20, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		// Machine certificates hang directly off it: no intermediates.
		MaxPathLenZero: true,
	}
	if uri != nil {
		tmpl.URIs = []*url.URL{uri}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("sign CA %q: %w", cn, err)
	}
	keyPEM, err = remote.EncodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return remote.EncodeCert(der), keyPEM, nil
}

// signMachine signs pub as the machine slug of account, valid for life
// from notBefore, for both ends of a TLS connection: a machine is a server
// to its peers and a client of them and of the control plane.
func signMachine(ca *x509.Certificate, caKey crypto.Signer, pub crypto.PublicKey, account, slug string, notBefore time.Time, life time.Duration) ([]byte, error) {
	sn, err := remote.Serial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: slug, Organization: []string{account}},
		NotBefore:    notBefore.Add(-remote.Skew),
		NotAfter:     notBefore.Add(life),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		URIs:         []*url.URL{remote.MachineURI(account, slug)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, pub, caKey)
	if err != nil {
		return nil, fmt.Errorf("sign the certificate of %s/%s: %w", account, slug, err)
	}
	return remote.EncodeCert(der), nil
}

// signServer makes the control plane's own server certificate for the
// given host names and addresses.
func signServer(ca *x509.Certificate, caKey crypto.Signer, hosts []string, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := remote.NewKey()
	if err != nil {
		return nil, nil, err
	}
	sn, err := remote.Serial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: "st control plane"},
		NotBefore:    now.Add(-remote.Skew),
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("sign the control plane's server certificate: %w", err)
	}
	keyPEM, err = remote.EncodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return remote.EncodeCert(der), keyPEM, nil
}
