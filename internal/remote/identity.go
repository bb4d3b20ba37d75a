package remote

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sophonz/st/internal/plain"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/version"
)

// Files of a signed-in machine, in $ST_HOME.
const (
	loginFileName = "login.json"
	keyFileName   = "machine.key"
	certFileName  = "machine.crt"
	accessDirName = "remote"
)

// dialTimeout bounds a dial to a machine or the control plane, so that a
// machine that is gone is known as such quickly.
const dialTimeout = 3 * time.Second

// loginFile is $ST_HOME/login.json.
type loginFile struct {
	ControlPlane   string    `json:"control_plane"`
	ControlPlaneCA string    `json:"control_plane_ca,omitempty"` // PEM; empty: the system's roots
	Account        string    `json:"account"`
	Slug           string    `json:"slug"`
	Name           string    `json:"name"`
	Host           string    `json:"host"`
	AccountCA      string    `json:"account_ca"`
	SignedIn       time.Time `json:"signed_in"`
}

// Identity is this machine's sign-in to an account.
type Identity struct {
	Account      string
	Slug         string
	Name         string
	Host         string
	ControlPlane string // its URL
	// Expires is when the certificate loaded with the identity ends; a
	// renewal does not change it (see NotAfter).
	Expires time.Time
	// Set by Login only: the slug this machine had before it signed in
	// under a new name, and the fingerprint of the key whose name it
	// took over with Replace.
	Formerly, Replaced string

	home        string
	accountPool *x509.CertPool
	cpPool      *x509.CertPool // nil: the system's roots

	mu           sync.Mutex
	revoked      []Revoked // machine keys the control plane revoked (revoke.go)
	revokedStamp string    // revoked.json as last read
	cert         *tls.Certificate
	stamp        string
	clients      map[string]*http.Client
	cp           *http.Client
}

// LoginOptions are what st login is given.
type LoginOptions struct {
	URL     string // the control plane, https://...
	CAFile  string // the control plane's CA (its DIR/ca.pem); empty: the system's roots
	Account string
	Key     string
	Name    string // how the account calls this machine; the host name when empty
	Host    string // this machine's host name; os.Hostname() when empty
	// Replace takes over a name and host that another key holds (a
	// machine whose ST_HOME was lost): that key is revoked, and the other
	// machines' st machines shows the name was replaced.
	Replace bool
}

// Login signs this machine in to an account: it makes the machine's key
// (or keeps the one it has), has the control plane sign it, and writes
// login.json, machine.key and machine.crt in home.
func Login(ctx context.Context, home string, o LoginOptions) (*Identity, error) {
	base, err := checkURL(o.URL)
	if err != nil {
		return nil, err
	}
	if o, err = o.complete(); err != nil {
		return nil, err
	}
	var cpCA []byte
	var cpPool *x509.CertPool
	if o.CAFile != "" {
		if cpCA, err = os.ReadFile(o.CAFile); err != nil {
			return nil, &Error{Message: "read the control plane's CA", Err: err, Hint: "give --ca the ca.pem in the control plane's --data folder"}
		}
		cpPool = x509.NewCertPool()
		if !cpPool.AppendCertsFromPEM(cpCA) {
			return nil, &Error{Message: o.CAFile + " holds no PEM certificate", Hint: "give --ca the ca.pem in the control plane's --data folder"}
		}
	}
	key, keyPEM, err := machineKey(home)
	if err != nil {
		return nil, err
	}
	// A new key is kept before it is sent: the control plane binds the
	// machine's name to it, so a sign-in that fails after that (a
	// certificate this machine refuses, a lost answer) must try again
	// with the same key, or the name would be another key's.
	if _, err := os.Stat(filepath.Join(home, keyFileName)); errors.Is(err, fs.ErrNotExist) {
		if err := store.WriteFile(filepath.Join(home, keyFileName), keyPEM, 0o600); err != nil {
			return nil, err
		}
	}
	csrDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: o.Name}}, key)
	if err != nil {
		return nil, fmt.Errorf("make the certificate request: %w", err)
	}
	req := LoginRequest{Account: o.Account, Key: o.Key, Name: o.Name, Host: o.Host, Replace: o.Replace,
		CSR: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER}))}
	var res LoginResponse
	hc := CPClient(cpPool, nil)
	defer hc.CloseIdleConnections()
	if err := CallJSON(ctx, hc, base, http.MethodPost, "/v1/login", req, &res); err != nil {
		return nil, err
	}
	if err := checkLoginAnswer(res, o.Account, key); err != nil {
		return nil, err
	}
	lf := loginFile{ControlPlane: base, ControlPlaneCA: string(cpCA), Account: o.Account, Slug: res.Slug,
		Name: o.Name, Host: o.Host, AccountCA: res.AccountCA, SignedIn: time.Now().UTC()}
	if err := keepSignIn(home, lf, keyPEM, res.Cert); err != nil {
		return nil, err
	}
	id, err := LoadIdentity(home)
	if err != nil {
		return nil, err
	}
	if ValidName(res.Formerly) {
		id.Formerly = res.Formerly
	}
	if plain.Line(res.Replaced) == nil {
		id.Replaced = res.Replaced
	}
	return id, nil
}

// complete fills in what st login was not given, or says what it needs.
func (o LoginOptions) complete() (LoginOptions, error) {
	var err error
	o.Account = strings.ToLower(strings.TrimSpace(o.Account))
	if o.Account == "" {
		return o, &Error{Message: "st login needs an account", Hint: "st login --account NAME (or set ST_ACCOUNT)"}
	}
	if o.Key == "" {
		return o, &Error{Message: "st login needs the account's key", Hint: "st login --key KEY (or set ST_ACCOUNT_KEY); st control-plane account add printed it"}
	}
	if o.Host == "" {
		if o.Host, err = os.Hostname(); err != nil {
			return o, &Error{Message: "this machine's host name is unknown", Err: err, Hint: "st login --host HOST"}
		}
	}
	if o.Name == "" {
		o.Name = o.Host
	}
	return o, nil
}

// checkLoginAnswer checks what the control plane sent before it is kept:
// a certificate of key, of account and the slug it names, from the
// account CA that came with it.
func checkLoginAnswer(res LoginResponse, account string, key *ecdsa.PrivateKey) error {
	accountPool := x509.NewCertPool()
	if !accountPool.AppendCertsFromPEM([]byte(res.AccountCA)) {
		return errors.New("the control plane sent no account CA")
	}
	leaf, err := DecodeCert([]byte(res.Cert))
	if err != nil {
		return fmt.Errorf("the control plane's certificate for this machine: %w", err)
	}
	if _, err := VerifyMachine([]*x509.Certificate{leaf}, accountPool, x509.ExtKeyUsageClientAuth, account, res.Slug, time.Now()); err != nil {
		return &Error{Message: "the control plane sent a certificate this machine cannot use", Err: err,
			Hint: "check that this machine's clock is right"}
	}
	if !SamePublicKey(leaf.PublicKey, key.Public()) {
		return errors.New("the control plane signed another key than this machine's")
	}
	return nil
}

// keepSignIn writes the sign-in lf, its key and certificate in home.
func keepSignIn(home string, lf loginFile, keyPEM []byte, cert string) error {
	var prev loginFile
	if err := store.ReadJSON(filepath.Join(home, loginFileName), &prev); err == nil &&
		(prev.Account != lf.Account || prev.ControlPlane != lf.ControlPlane) {
		// Access to the machines of another account is no use now.
		os.RemoveAll(filepath.Join(home, accessDirName))
	}
	if err := store.WriteFile(filepath.Join(home, keyFileName), keyPEM, 0o600); err != nil {
		return err
	}
	if err := store.WriteFile(filepath.Join(home, certFileName), []byte(cert), 0o600); err != nil {
		return err
	}
	// login.json last: until it is written, the machine is signed in as
	// before (or not at all).
	return store.WriteJSON(filepath.Join(home, loginFileName), lf, 0o600)
}

func checkURL(raw string) (string, error) {
	if raw == "" {
		return "", &Error{Message: "st login needs the control plane's URL", Hint: "st login --control-plane https://HOST:PORT (or set ST_CONTROL_PLANE)"}
	}
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return "", &Error{Message: fmt.Sprintf("%q is not an https URL", raw),
			Hint: "give the URL that st control-plane serve printed, such as https://127.0.0.1:43211"}
	}
	return u.String(), nil
}

// machineKey returns the key in home/machine.key, or a new one when
// there is none (written by the caller once the sign-in succeeds).
func machineKey(home string) (*ecdsa.PrivateKey, []byte, error) {
	data, err := os.ReadFile(filepath.Join(home, keyFileName))
	if err == nil {
		if k, err := DecodeKey(data); err == nil {
			return k, data, nil
		}
		// A key that does not decode is replaced; the sign-in that
		// follows makes a certificate for the new one.
	}
	k, err := NewKey()
	if err != nil {
		return nil, nil, err
	}
	p, err := EncodeKey(k)
	return k, p, err
}

// LoadIdentity reads this machine's sign-in from home; ErrNotSignedIn
// when there is none.
func LoadIdentity(home string) (*Identity, error) {
	var lf loginFile
	path := filepath.Join(home, loginFileName)
	if err := store.ReadJSON(path, &lf); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, ErrNotSignedIn
		}
		return nil, &Error{Message: "read this machine's sign-in", Err: err, Hint: "sign in again: " + LoginHint}
	}
	id := &Identity{Account: lf.Account, Slug: lf.Slug, Name: lf.Name, Host: lf.Host, ControlPlane: lf.ControlPlane, home: home}
	id.accountPool = x509.NewCertPool()
	if !id.accountPool.AppendCertsFromPEM([]byte(lf.AccountCA)) {
		return nil, &Error{Message: path + " holds no account CA", Hint: "sign in again: " + LoginHint}
	}
	if lf.ControlPlaneCA != "" {
		id.cpPool = x509.NewCertPool()
		if !id.cpPool.AppendCertsFromPEM([]byte(lf.ControlPlaneCA)) {
			return nil, &Error{Message: path + " holds a control plane CA that does not decode", Hint: "sign in again: " + LoginHint}
		}
	}
	cert, err := id.Current()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotSignedIn
	}
	if err != nil {
		return nil, err
	}
	id.Expires = cert.Leaf.NotAfter
	return id, nil
}

// Current returns the machine's key and certificate, read again when
// machine.crt or machine.key changed on disk, so a renewal or a new
// sign-in by another st process takes effect without a restart.
func (id *Identity) Current() (*tls.Certificate, error) {
	certPath, keyPath := filepath.Join(id.home, certFileName), filepath.Join(id.home, keyFileName)
	ci, err1 := os.Stat(certPath)
	ki, err2 := os.Stat(keyPath)
	id.mu.Lock()
	defer id.mu.Unlock()
	if err := errors.Join(err1, err2); err != nil {
		if id.cert != nil {
			return id.cert, nil // signed out meanwhile: keep what was loaded
		}
		return nil, err
	}
	stamp := fmt.Sprint(ci.ModTime().UnixNano(), ci.Size(), ki.ModTime().UnixNano(), ki.Size())
	if id.cert != nil && stamp == id.stamp {
		return id.cert, nil
	}
	c, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		if id.cert != nil {
			return id.cert, nil // mid-write by another process: the old pair still holds
		}
		return nil, &Error{Message: "load this machine's certificate", Err: err, Hint: "sign in again: " + LoginHint}
	}
	id.cert, id.stamp = &c, stamp
	return id.cert, nil
}

// NotAfter is when the machine's current certificate ends.
func (id *Identity) NotAfter() time.Time {
	c, err := id.Current()
	if err != nil {
		return time.Time{}
	}
	return c.Leaf.NotAfter
}

// CheckCertificate says whether the machine's certificate on disk is one
// the account's other machines take at now: it chains to the account's
// CA, names this machine of this account, and has not expired (st
// doctor). The error says what is wrong; the certificate's end comes
// back either way when it could be read.
func (id *Identity) CheckCertificate(now time.Time) (notAfter time.Time, err error) {
	c, err := id.Current()
	if err != nil {
		return time.Time{}, err
	}
	_, err = VerifyMachine([]*x509.Certificate{c.Leaf}, id.accountPool, x509.ExtKeyUsageClientAuth, id.Account, id.Slug, now)
	return c.Leaf.NotAfter, err
}

// ServerTLS is the TLS configuration of this machine's peer listener: it
// takes only clients with a valid certificate of this account's CA.
func (id *Identity) ServerTLS() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		ClientAuth: tls.RequireAndVerifyClientCert,
		// Only this account's CA: a machine of another account, an expired
		// certificate or none at all fail the handshake.
		ClientCAs: id.accountPool,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return id.Current()
		},
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("st: no client certificate")
			}
			if a, s, ok := MachineOf(cs.PeerCertificates[0]); !ok || s == "" || a != id.Account {
				return fmt.Errorf("st: the client is not a machine of account %s", id.Account)
			}
			if id.Revoked(cs.PeerCertificates[0]) {
				return errors.New("st: the client's machine was removed from the account (its key is revoked)")
			}
			return nil
		},
	}
}

// Client is an https client of the machine slug of this account. It
// shows this machine's certificate, and takes the server only when its
// certificate chains to the account CA, is valid now, and names slug.
// Clients are kept per slug, so connections are reused.
func (id *Identity) Client(slug string) *http.Client {
	id.mu.Lock()
	defer id.mu.Unlock()
	if c := id.clients[slug]; c != nil {
		return c
	}
	c := &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: dialTimeout}).DialContext,
		TLSClientConfig:     id.peerClientTLS(slug),
		TLSHandshakeTimeout: dialTimeout,
		ForceAttemptHTTP2:   true,
		IdleConnTimeout:     90 * time.Second,
	}}
	if id.clients == nil {
		id.clients = map[string]*http.Client{}
	}
	id.clients[slug] = c
	return c
}

// peerClientTLS is the TLS of a client of machine slug: this machine's
// certificate, and the server taken only as slug of this account.
func (id *Identity) peerClientTLS(slug string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		// The standard check would match the server's name against the
		// host we dial (an address that changes); we want the machine's
		// slug instead. So the standard check is off and VerifyConnection
		// does the whole of it: chain to the account CA (only), validity
		// now, server use, and the slug. TLS still proves the server holds
		// the certificate's key.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if _, err := VerifyMachine(cs.PeerCertificates, id.accountPool, x509.ExtKeyUsageServerAuth, id.Account, slug, time.Now()); err != nil {
				return &WrongMachineError{fmt.Errorf("machine %s of account %s is not who answered: %w", slug, id.Account, err)}
			}
			if id.Revoked(cs.PeerCertificates[0]) {
				return fmt.Errorf("machine %s was removed from account %s (its key is revoked)", slug, id.Account)
			}
			return nil
		},
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return id.Current()
		},
	}
}

// CloseIdleConnections closes the kept connections of every client.
func (id *Identity) CloseIdleConnections() {
	id.mu.Lock()
	defer id.mu.Unlock()
	for _, c := range id.clients {
		c.CloseIdleConnections()
	}
	if id.cp != nil {
		id.cp.CloseIdleConnections()
	}
}

// WrongMachineError is a server that is not the machine dialled: another
// machine at an address that was the one's (or no st machine at all). The
// relay, which finds machines by slug, may still reach the right one.
type WrongMachineError struct{ Err error }

func (e *WrongMachineError) Error() string { return e.Err.Error() }
func (e *WrongMachineError) Unwrap() error { return e.Err }

// PeerOf is the machine slug of the client of r, as its verified
// certificate says (server side, under ServerTLS), and only when the
// certificate is of the account whose CA verified it.
func PeerOf(r *http.Request) (slug string, ok bool) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) < 2 {
		return "", false
	}
	chain := r.TLS.VerifiedChains[0]
	account, slug, ok := MachineOf(chain[0])
	if !ok || slug == "" {
		return "", false
	}
	caAccount, caSlug, ok := MachineOf(chain[len(chain)-1])
	if !ok || caSlug != "" || caAccount != account {
		return "", false
	}
	return slug, true
}

// cpClient is a client of the control plane that trusts pool (nil: the
// system's roots). With id, it shows the machine's certificate in the
// handshake and signs each request (auth.go), so that it is known
// whether or not a TLS terminator stands in front of the control plane.
func CPClient(pool *x509.CertPool, id *Identity) *http.Client {
	return &http.Client{Timeout: 15 * time.Second, Transport: cpTransport(pool, id, true)}
}

func cpTransport(pool *x509.CertPool, id *Identity, h2 bool) http.RoundTripper {
	conf := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	if id != nil {
		conf.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return id.Current()
		}
	}
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: dialTimeout}).DialContext,
		TLSClientConfig:     conf,
		TLSHandshakeTimeout: dialTimeout,
		// A websocket (the relay) needs HTTP/1.1.
		ForceAttemptHTTP2: h2,
	}
	if id == nil {
		return tr
	}
	return signingTransport{id: id, base: tr}
}

// ControlPlaneClient is a client of the control plane that shows this
// machine's certificate (and signs its requests behind a TLS
// terminator), over HTTP/1.1 when h1 (a websocket, the relay, needs it):
// what st itself reaches the control plane with, for tests that ask it
// as this machine.
func (id *Identity) ControlPlaneClient(h1 bool) *http.Client {
	return &http.Client{Timeout: 15 * time.Second, Transport: cpTransport(id.cpPool, id, !h1)}
}

func (id *Identity) CPClient() *http.Client {
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.cp == nil {
		id.cp = CPClient(id.cpPool, id)
	}
	return id.cp
}

// callJSON sends req to the control plane and decodes its answer into
// resp, turning each way it can fail into what the user can do about it.
func CallJSON(ctx context.Context, hc *http.Client, base, method, path string, req, resp any) error {
	var body io.Reader
	if req != nil {
		data, err := json.Marshal(req)
		if err != nil {
			return err
		}
		body = bytes.NewReader(data)
	}
	hr, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return fmt.Errorf("control plane request: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	res, err := hc.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var uae x509.UnknownAuthorityError
		var cve *tls.CertificateVerificationError
		if errors.As(err, &uae) || errors.As(err, &cve) {
			return &Error{Message: "the control plane at " + base + " is not trusted", Err: unwrapURLError(err),
				Hint: "give st login the control plane's CA: --ca DATA/ca.pem (or set ST_CONTROL_PLANE_CA), DATA being its --data folder"}
		}
		return &Error{Message: "cannot reach the control plane at " + base, Err: unwrapURLError(err),
			Hint: "check that st control-plane serve runs there and that the URL is right"}
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 4<<20))
	if err != nil {
		return &Error{Message: "read the control plane's answer", Err: err, Hint: "try again"}
	}
	if res.StatusCode != http.StatusOK {
		var ae APIError
		if json.Unmarshal(data, &ae) == nil && ae.Error != "" {
			return &Error{Message: "the control plane refused: " + ae.Error, Hint: ae.Hint, Status: res.StatusCode}
		}
		return &Error{Message: fmt.Sprintf("the control plane at %s answered %s: %s", base, res.Status, bytes.TrimSpace(data)),
			Hint: "check that the URL is the one st control-plane serve printed", Status: res.StatusCode}
	}
	if resp == nil {
		return nil
	}
	if err := json.Unmarshal(data, resp); err != nil {
		return fmt.Errorf("decode the control plane's answer: %w", err)
	}
	return nil
}

// unwrapURLError drops net/url's "Post URL:" prefix; the message names
// the control plane already.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// Machines lists the machines of this machine's account.
func (id *Identity) Machines(ctx context.Context) ([]Machine, error) {
	var res MachinesResponse
	if err := CallJSON(ctx, id.CPClient(), id.ControlPlane, http.MethodGet, "/v1/machines", nil, &res); err != nil {
		return nil, err
	}
	// The control plane is another machine: a slug names a file here and
	// names and hosts are printed, so only what passes is taken.
	ms := res.Machines[:0]
	for _, m := range res.Machines {
		if ValidName(m.Slug) && plain.Line(m.Name) == nil && plain.Line(m.Host) == nil && plain.Line(m.Addr) == nil &&
			plain.Line(m.Version) == nil && len(m.Version) <= MaxVersion {
			old := m.Formerly[:0:0]
			for _, f := range m.Formerly {
				if ValidName(f) {
					old = append(old, f)
				}
			}
			m.Formerly, m.AddrKind = old, ""
			ms = append(ms, m)
		}
	}
	return ms, nil
}

// Heartbeat tells the control plane where this machine's peer listener
// is and whether it takes workers. online=false, on a clean shutdown,
// marks it offline at once instead of after the offline-after time.
func (id *Identity) Heartbeat(ctx context.Context, addr string, acceptRemote, online bool) error {
	var res HeartbeatResponse
	if err := CallJSON(ctx, id.CPClient(), id.ControlPlane, http.MethodPost, "/v1/heartbeat",
		HeartbeatRequest{Addr: addr, AcceptRemote: acceptRemote, Online: online, Version: version.Version}, &res); err != nil {
		return err
	}
	return id.SetRevoked(res.Revoked)
}

// RenewIfDue renews the certificate when less than a third of its
// lifetime is left, keeping the key. ServerTLS and Client pick the new
// one up by themselves. A certificate that ended (a laptop that slept
// past it) is renewed too: the control plane takes the machine's proof
// of its key for a machine still signed in with it.
func (id *Identity) RenewIfDue(ctx context.Context) error {
	cur, err := id.Current()
	if err != nil {
		return err
	}
	left := time.Until(cur.Leaf.NotAfter)
	if left > cur.Leaf.NotAfter.Sub(cur.Leaf.NotBefore)/3 {
		return nil
	}
	var res CertResponse
	if err := CallJSON(ctx, id.CPClient(), id.ControlPlane, http.MethodPost, "/v1/renew", struct{}{}, &res); err != nil {
		return err
	}
	leaf, err := DecodeCert([]byte(res.Cert))
	if err != nil {
		return fmt.Errorf("the renewed certificate: %w", err)
	}
	if _, err := VerifyMachine([]*x509.Certificate{leaf}, id.accountPool, x509.ExtKeyUsageClientAuth, id.Account, id.Slug, time.Now()); err != nil {
		return fmt.Errorf("the renewed certificate: %w", err)
	}
	if !SamePublicKey(leaf.PublicKey, cur.Leaf.PublicKey) {
		return errors.New("the control plane renewed another key than this machine's")
	}
	if err := store.WriteFile(filepath.Join(id.home, certFileName), []byte(res.Cert), 0o600); err != nil {
		return err
	}
	c := tls.Certificate{Certificate: [][]byte{leaf.Raw}, PrivateKey: cur.PrivateKey, Leaf: leaf}
	id.mu.Lock()
	id.cert, id.stamp = &c, "" // the next current() stats the new file and settles the stamp
	id.mu.Unlock()
	// A kept connection still shows the certificate of its handshake,
	// which may have ended: new ones show the new one.
	id.CloseIdleConnections()
	return nil
}

// notTold is Logout's error when the control plane could not be told.
type notTold struct {
	url   string
	cause error
}

func (e *notTold) Error() string {
	cause := e.cause.Error()
	if i := strings.Index(cause, "\nTry:"); i >= 0 {
		cause = cause[:i]
	}
	return fmt.Sprintf("signed out on this machine, but could not tell the control plane at %s (%s); it keeps listing this machine, offline", e.url, cause)
}

func (e *notTold) Is(target error) bool { return target == ErrControlPlaneNotTold }
func (e *notTold) Unwrap() error        { return e.cause }

// Logout signs this machine out: it tells the control plane (best
// effort) and removes the sign-in files and the kept access to machines.
// When the control plane could not be told, the files are removed all
// the same and the error wraps ErrControlPlaneNotTold.
func Logout(ctx context.Context, home string) error {
	id, err := LoadIdentity(home)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	told := CallJSON(ctx, id.CPClient(), id.ControlPlane, http.MethodPost, "/v1/logout", struct{}{}, nil)
	id.CloseIdleConnections()
	// login.json first: once it is gone the machine is signed out, even
	// if removing the rest fails.
	for _, name := range []string{loginFileName, certFileName, keyFileName, accessDirName} {
		if err := os.RemoveAll(filepath.Join(home, name)); err != nil {
			return fmt.Errorf("remove %s: %w", filepath.Join(home, name), err)
		}
	}
	var re *Error
	if errors.As(told, &re) && re.Status == http.StatusUnauthorized {
		told = nil // it does not know this machine (any more): nothing to tell
	}
	if told != nil {
		return &notTold{url: id.ControlPlane, cause: told}
	}
	return nil
}

// Home is the st home this identity was loaded from ($ST_HOME).
func (id *Identity) Home() string { return id.home }
