package remote

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/sophonz/st/internal/store"
)

// The control plane keeps everything in one folder:
//
//	ca.pem, ca.key   its own CA, which signs its server certificate; machines
//	                 trust it with st login --ca DIR/ca.pem
//	state.json       accounts (name, key hash, CA) and their machines
//	state.lock       held for each read-modify-write of state.json, so that
//	                 st control-plane account add works while serve runs
//	url              the URL serve listens on
//
// serve reads state.json on each request instead of keeping a copy, so an
// account added by another process is there at once.

// DefaultOfflineAfter is how long after its last heartbeat a machine
// counts as offline.
const DefaultOfflineAfter = 30 * time.Second

type cpState struct {
	Accounts map[string]*cpAccount `json:"accounts"`
}

type cpAccount struct {
	Name string `json:"name"`
	// KeyHash is the SHA-256 of the key. The key is 32 random bytes, so a
	// plain hash is as hard to reverse as a slow one would be.
	KeyHash  string                `json:"key_hash"`
	CACert   string                `json:"ca_cert"`
	CAKey    string                `json:"ca_key"`
	Created  time.Time             `json:"created"`
	Machines map[string]*cpMachine `json:"machines"`
	// Revoked are keys of machines that signed out or were removed, kept
	// until their certificates end (revoke.go).
	Revoked []Revoked `json:"revoked,omitempty"`
}

type cpMachine struct {
	Slug         string    `json:"slug"`
	Name         string    `json:"name"`
	Host         string    `json:"host"`
	Addr         string    `json:"addr"`
	AcceptRemote bool      `json:"accept_remote"`
	Online       bool      `json:"online"` // what its last heartbeat said
	LastSeen     time.Time `json:"last_seen,omitzero"`
	Cert         string    `json:"cert"`
}

// cpData is the control plane's folder.
type cpData struct {
	dir string
	mu  sync.Mutex // flock is per open file; this keeps goroutines in line too
}

func (d *cpData) path(name string) string { return filepath.Join(d.dir, name) }

func (d *cpData) read() (*cpState, error) {
	var s cpState
	err := store.ReadJSON(d.path("state.json"), &s)
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the control plane's state: %w", err)
	}
	if s.Accounts == nil {
		s.Accounts = map[string]*cpAccount{}
	}
	for _, a := range s.Accounts {
		if a.Machines == nil {
			a.Machines = map[string]*cpMachine{}
		}
	}
	return &s, nil
}

// update runs f on the state under the lock and writes the state when f
// returns no error.
func (d *cpData) update(f func(*cpState) error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := os.MkdirAll(d.dir, 0o700); err != nil {
		return fmt.Errorf("make the control plane's folder %s: %w", d.dir, err)
	}
	l := flock.New(d.path("state.lock"))
	if err := l.Lock(); err != nil {
		return fmt.Errorf("lock %s: %w", d.path("state.lock"), err)
	}
	defer l.Unlock()
	s, err := d.read()
	if err != nil {
		return err
	}
	if err := f(s); err != nil {
		return err
	}
	return store.WriteJSON(d.path("state.json"), s, 0o600)
}

// validName reports whether s names an account or a machine slug: lower-
// case letters, digits and '-', at most 63, not starting with '-'. (A loop,
// not a regular expression: its counted repeat would compile at every
// start of st.)
func validName(s string) bool {
	if len(s) == 0 || len(s) > 63 || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// AddAccount adds the account name to the control plane's folder data,
// with its own CA, and returns its key. Only a hash of the key is kept,
// so this is the one time it is shown. It works whether or not the
// control plane runs.
func AddAccount(data, name string) (key string, err error) {
	if !validName(name) {
		return "", &Error{Message: fmt.Sprintf("%q cannot name an account", name),
			Hint: "use lower-case letters, digits and '-', at most 63, starting with a letter or digit"}
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("make a key: %w", err)
	}
	key = "stk_" + base64.RawURLEncoding.EncodeToString(raw)
	now := time.Now()
	caPEM, caKey, err := newCA("st account "+name, accountURI(name), now)
	if err != nil {
		return "", err
	}
	d := &cpData{dir: data}
	err = d.update(func(s *cpState) error {
		if _, ok := s.Accounts[name]; ok {
			return &Error{Message: fmt.Sprintf("account %s exists already in %s", name, data),
				Hint: "its machines sign in with the key shown when it was added; pick another name for a new account"}
		}
		s.Accounts[name] = &cpAccount{Name: name, KeyHash: hashKey(key), CACert: string(caPEM), CAKey: string(caKey),
			Created: now.UTC(), Machines: map[string]*cpMachine{}}
		return nil
	})
	if err != nil {
		return "", err
	}
	return key, nil
}

func hashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// ServerOptions configure a control plane.
type ServerOptions struct {
	// Data is the control plane's folder.
	Data string
	// OfflineAfter is how long after its last heartbeat a machine is
	// offline; DefaultOfflineAfter when zero.
	OfflineAfter time.Duration
	// Log gets a line for each sign-in, renewal and sign-out; nil for none.
	Log io.Writer

	// CertFile and KeyFile are the control plane's own certificate (a
	// public CA's, say), used instead of the one it makes from its CA.
	CertFile, KeyFile string
	// Names are host names its own certificate is made for, besides
	// 127.0.0.1, localhost and the host of the listen address.
	Names []string
	// PlainHTTP serves HTTP without TLS, for a TLS terminator in front
	// (Caddy, nginx, a load balancer). Machines then prove themselves with
	// signed headers instead of their certificate in the handshake.
	PlainHTTP bool

	// RelayStreams is how many streams a machine may have open through
	// the relay at once (DefaultRelayStreams when zero), and RelayRate how
	// many bytes a second it may send through it (DefaultRelayRate when
	// zero; below zero, no limit).
	RelayStreams int
	RelayRate    int64
	// RelayRecord, when set, is a folder where each relayed stream's
	// bytes are kept as the relay read them: for tests and audits, which
	// find nothing in them but TLS records.
	RelayRecord string

	// CertLifetime and SignTime are for tests: how long the certificates
	// it signs last (CertLifetime when zero) and the time they start
	// (now when nil), so that a test can make an expired certificate.
	CertLifetime time.Duration
	SignTime     func() time.Time
}

// ControlPlane is a running control plane.
type ControlPlane struct {
	opt    ServerOptions
	data   *cpData
	ln     net.Listener
	srv    *http.Server
	url    string
	done   chan struct{}
	srvErr error
	nonces nonceCache
	hub    *relayHub
}

// StartControlPlane listens on addr (host:port; port 0 for any free one)
// over HTTPS and serves until Close. On first start it makes its CA in
// the data folder; its server certificate is made anew at each start for
// 127.0.0.1, localhost and the host of addr. It writes its URL to
// Data/url.
func StartControlPlane(opt ServerOptions, addr string) (*ControlPlane, error) {
	if opt.Data == "" {
		return nil, errors.New("the control plane needs a data folder")
	}
	if opt.OfflineAfter <= 0 {
		opt.OfflineAfter = DefaultOfflineAfter
	}
	if opt.CertLifetime <= 0 {
		opt.CertLifetime = CertLifetime
	}
	if opt.SignTime == nil {
		opt.SignTime = time.Now
	}
	if opt.Log == nil {
		opt.Log = io.Discard
	}
	if opt.RelayStreams <= 0 {
		opt.RelayStreams = DefaultRelayStreams
	}
	if opt.RelayRate == 0 {
		opt.RelayRate = DefaultRelayRate
	}
	d := &cpData{dir: opt.Data}
	if err := os.MkdirAll(opt.Data, 0o700); err != nil {
		return nil, fmt.Errorf("make the control plane's folder: %w", err)
	}
	if opt.RelayRecord != "" {
		if err := os.MkdirAll(opt.RelayRecord, 0o700); err != nil {
			return nil, fmt.Errorf("make the relay's record folder: %w", err)
		}
	}
	ca, caKey, err := loadOrMakeCA(d)
	if err != nil {
		return nil, err
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &Error{Message: fmt.Sprintf("listen address %q", addr), Err: err, Hint: "give host:port, such as 127.0.0.1:0"}
	}
	tlsConf, err := serverTLS(opt, ca, caKey, host)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, &Error{Message: "the control plane cannot listen on " + addr, Err: err,
			Hint: "pick another --listen port, or 0 for any free one"}
	}
	cp := &ControlPlane{opt: opt, data: d, ln: ln, done: make(chan struct{})}
	cp.url = "https://" + ln.Addr().String()
	if opt.PlainHTTP {
		cp.url = "http://" + ln.Addr().String()
	}
	if err := store.WriteFile(d.path("url"), []byte(cp.url+"\n"), 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	cp.hub = newRelayHub(cp)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/login", cp.login)
	mux.HandleFunc("POST /v1/renew", cp.withMachineEnded(cp.renew))
	mux.HandleFunc("POST /v1/heartbeat", cp.withMachine(cp.heartbeat))
	mux.HandleFunc("GET /v1/machines", cp.withMachine(cp.machines))
	mux.HandleFunc("POST /v1/logout", cp.withMachine(cp.logout))
	mux.HandleFunc("GET /v1/relay", cp.withMachine(cp.hub.serve))
	cp.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		// Handshake failures (a machine without --ca, say) go to Log, not
		// the process's global logger.
		ErrorLog:  log.New(opt.Log, "control plane: ", 0),
		TLSConfig: tlsConf,
	}
	go func() {
		defer close(cp.done)
		var err error
		if opt.PlainHTTP {
			err = cp.srv.Serve(ln)
		} else {
			err = cp.srv.ServeTLS(ln, "", "")
		}
		if !errors.Is(err, http.ErrServerClosed) {
			cp.srvErr = err
		}
	}()
	return cp, nil
}

// serverTLS is the control plane's TLS: its own certificate when given,
// else one made from its CA for 127.0.0.1, localhost, the host it listens
// on and opt.Names; nil for plain HTTP.
func serverTLS(opt ServerOptions, ca *x509.Certificate, caKey *ecdsa.PrivateKey, host string) (*tls.Config, error) {
	if opt.PlainHTTP {
		if opt.CertFile != "" {
			return nil, &Error{Message: "a certificate and plain HTTP were both asked for", Hint: "leave out --http, or --cert and --key"}
		}
		return nil, nil
	}
	var cert tls.Certificate
	var err error
	switch {
	case opt.CertFile != "" || opt.KeyFile != "":
		if opt.CertFile == "" || opt.KeyFile == "" {
			return nil, &Error{Message: "its own certificate needs both --cert and --key"}
		}
		cert, err = tls.LoadX509KeyPair(opt.CertFile, opt.KeyFile)
		if err != nil {
			return nil, &Error{Message: "load the control plane's certificate", Err: err, Hint: "give --cert a PEM certificate (with its chain) and --key its PEM key"}
		}
	default:
		hosts := append([]string{"127.0.0.1", "localhost", host}, opt.Names...)
		certPEM, keyPEM, err := signServer(ca, caKey, hosts, time.Now())
		if err != nil {
			return nil, err
		}
		if cert, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
			return nil, fmt.Errorf("load the control plane's server certificate: %w", err)
		}
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		// Each account has its own CA, so the handshake only asks for a
		// certificate and proves the key; withMachine verifies it against
		// the CA of the account it names.
		ClientAuth: tls.RequestClientCert,
	}, nil
}

// URL is the https URL the control plane serves on.
func (cp *ControlPlane) URL() string { return cp.url }

// CAFile is the file of the CA that machines trust it with (st login --ca).
func (cp *ControlPlane) CAFile() string { return cp.data.path("ca.pem") }

// Close stops it at once.
func (cp *ControlPlane) Close() error {
	err := cp.srv.Close()
	cp.hub.close()
	<-cp.done
	if err == nil {
		err = cp.srvErr
	}
	return err
}

// Shutdown stops it after the requests under way, or when ctx ends.
func (cp *ControlPlane) Shutdown(ctx context.Context) error {
	err := cp.srv.Shutdown(ctx)
	cp.hub.close() // the relay's connections are hijacked: Shutdown leaves them
	<-cp.done
	if err == nil {
		err = cp.srvErr
	}
	return err
}

func loadOrMakeCA(d *cpData) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certFile, keyFile := d.path("ca.pem"), d.path("ca.key")
	certPEM, err1 := os.ReadFile(certFile)
	keyPEM, err2 := os.ReadFile(keyFile)
	if errors.Is(err1, fs.ErrNotExist) && errors.Is(err2, fs.ErrNotExist) {
		var err error
		certPEM, keyPEM, err = newCA("st control plane CA", nil, time.Now())
		if err != nil {
			return nil, nil, err
		}
		// The key first: a crash between the two leaves no CA whose key
		// is lost, only a key that the next start replaces.
		if err := store.WriteFile(keyFile, keyPEM, 0o600); err != nil {
			return nil, nil, err
		}
		if err := store.WriteFile(certFile, certPEM, 0o644); err != nil {
			return nil, nil, err
		}
	} else if err1 != nil || err2 != nil {
		return nil, nil, &Error{Message: "the control plane's CA in " + d.dir + " is incomplete", Err: errors.Join(err1, err2),
			Hint: "restore ca.pem and ca.key from a backup; removing both makes a new CA, and every machine must then sign in again with the new ca.pem"}
	}
	ca, err := decodeCert(certPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", certFile, err)
	}
	key, err := decodeKey(keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", keyFile, err)
	}
	return ca, key, nil
}

// apiError is what the control plane answers on failure.
type apiError struct {
	Error string `json:"error"`
	Hint  string `json:"hint,omitempty"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, code int, msg, hint string) {
	writeJSON(w, code, apiError{Error: msg, Hint: hint})
}

func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(v); err != nil {
		fail(w, http.StatusBadRequest, "the control plane could not read the request: "+err.Error(), "use an st of the same version as the control plane")
		return false
	}
	return true
}

// Wire types of the control plane's API.
type (
	loginRequest struct {
		Account string `json:"account"`
		Key     string `json:"key"`
		Name    string `json:"name"`
		Host    string `json:"host"`
		CSR     string `json:"csr"`
	}
	loginResponse struct {
		Slug      string `json:"slug"`
		Cert      string `json:"cert"`
		AccountCA string `json:"account_ca"`
	}
	certResponse struct {
		Cert string `json:"cert"`
	}
	heartbeatRequest struct {
		Addr         string `json:"addr"`
		AcceptRemote bool   `json:"accept_remote"`
		Online       bool   `json:"online"`
	}
	heartbeatResponse struct {
		// Revoked are the account's revoked machine keys, which peers
		// refuse from then on.
		Revoked []Revoked `json:"revoked"`
	}
	machinesResponse struct {
		Machines []Machine `json:"machines"`
	}
)

func (cp *ControlPlane) login(w http.ResponseWriter, r *http.Request) {
	var req loginRequest
	if !decodeBody(w, r, &req) {
		return
	}
	req.Account = strings.ToLower(strings.TrimSpace(req.Account))
	req.Name, req.Host = strings.TrimSpace(req.Name), strings.TrimSpace(req.Host)
	if req.Name == "" || req.Host == "" {
		fail(w, http.StatusBadRequest, "a machine signs in with a name and a host name", "st login --name NAME --host HOST")
		return
	}
	csr, err := parseCSR(req.CSR)
	if err != nil {
		fail(w, http.StatusBadRequest, "the certificate request does not hold: "+err.Error(), "")
		return
	}
	var res loginResponse
	err = cp.data.update(func(s *cpState) error {
		a := s.Accounts[req.Account]
		// One answer for a wrong key and a missing account, so that the
		// API does not tell which accounts exist.
		if a == nil || subtle.ConstantTimeCompare([]byte(a.KeyHash), []byte(hashKey(req.Key))) != 1 {
			return &httpError{http.StatusUnauthorized, fmt.Sprintf("account %s does not take this key (a wrong key, or no such account)", req.Account),
				"use the key that st control-plane account add " + req.Account + " printed"}
		}
		if a.isRevoked(csr.PublicKey, time.Now()) {
			return &httpError{http.StatusUnauthorized, "this machine's key was revoked (the machine signed out or was removed from account " + a.Name + ")",
				"st logout on this machine (it makes a new key at the next sign-in), then st login again"}
		}
		ca, caKey, err := a.ca()
		if err != nil {
			return err
		}
		m := a.machineFor(req.Name, req.Host)
		certPEM, err := signMachine(ca, caKey, csr.PublicKey, a.Name, m.Slug, cp.opt.SignTime(), cp.opt.CertLifetime)
		if err != nil {
			return err
		}
		m.Cert = string(certPEM)
		// Signed in, but not online until its st says where it listens.
		m.Online = false
		a.Machines[m.Slug] = m
		res = loginResponse{Slug: m.Slug, Cert: m.Cert, AccountCA: a.CACert}
		fmt.Fprintf(cp.opt.Log, "%s/%s (%s on %s) signed in, key %s\n", a.Name, m.Slug, m.Name, m.Host, fingerprint(csr.PublicKey))
		return nil
	})
	if err != nil {
		failErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

type httpError struct {
	code      int
	msg, hint string
}

func (e *httpError) Error() string { return e.msg }

func failErr(w http.ResponseWriter, err error) {
	var he *httpError
	if errors.As(err, &he) {
		fail(w, he.code, he.msg, he.hint)
		return
	}
	fail(w, http.StatusInternalServerError, "the control plane failed: "+err.Error(), "look at the control plane's output")
}

func parseCSR(p string) (*x509.CertificateRequest, error) {
	der, err := pemBlock([]byte(p), "CERTIFICATE REQUEST")
	if err != nil {
		return nil, err
	}
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return nil, err
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, err
	}
	if k, ok := csr.PublicKey.(*ecdsa.PublicKey); !ok || k.Curve != elliptic.P256() {
		return nil, errors.New("st signs only ECDSA P-256 keys")
	}
	return csr, nil
}

func (a *cpAccount) ca() (*x509.Certificate, *ecdsa.PrivateKey, error) {
	ca, err := decodeCert([]byte(a.CACert))
	if err != nil {
		return nil, nil, fmt.Errorf("the CA of account %s: %w", a.Name, err)
	}
	key, err := decodeKey([]byte(a.CAKey))
	if err != nil {
		return nil, nil, fmt.Errorf("the CA key of account %s: %w", a.Name, err)
	}
	return ca, key, nil
}

// machineFor finds the machine that signs in again with the same name and
// host, or makes a new slug for it: the name in lower case with anything
// but [a-z0-9-] as '-', and -2, -3 ... when that is taken.
func (a *cpAccount) machineFor(name, host string) *cpMachine {
	for _, m := range a.Machines {
		if m.Name == name && m.Host == host {
			return m
		}
	}
	base := Slugify(name)
	slug := base
	for i := 2; a.Machines[slug] != nil; i++ {
		slug = base + "-" + strconv.Itoa(i)
	}
	return &cpMachine{Slug: slug, Name: name, Host: host}
}

// Slugify is the slug a machine called name gets (before a -2 suffix).
func Slugify(name string) string {
	b := []byte(strings.ToLower(name))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			b[i] = '-'
		}
	}
	s := strings.Trim(string(b), "-")
	if s == "" {
		s = "machine"
	}
	return s
}

// withMachine verifies the caller's certificate before h runs: it must
// chain to the CA of the account it names, be valid now, and be the
// current certificate key of a machine still signed in.
func (cp *ControlPlane) withMachine(h func(http.ResponseWriter, *http.Request, *cpAccount, *cpMachine, *x509.Certificate)) http.HandlerFunc {
	return cp.machineCheck(h, false)
}

// withMachineEnded is withMachine that also takes a certificate that has
// ended, for a renewal only: a machine that slept past its certificate's
// end proves its key all the same (the handshake, or the signed proof),
// and the key must still be the current one of a machine signed in.
func (cp *ControlPlane) withMachineEnded(h func(http.ResponseWriter, *http.Request, *cpAccount, *cpMachine, *x509.Certificate)) http.HandlerFunc {
	return cp.machineCheck(h, true)
}

func (cp *ControlPlane) machineCheck(h func(http.ResponseWriter, *http.Request, *cpAccount, *cpMachine, *x509.Certificate), ended bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		const hint = "sign this machine in again: " + loginHint
		chain := []*x509.Certificate(nil)
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			chain = r.TLS.PeerCertificates // the handshake proved the key
		} else {
			leaf, err := cp.proofLeaf(r) // behind a TLS terminator
			if err != nil {
				fail(w, http.StatusUnauthorized, err.Error(), hint)
				return
			}
			chain = []*x509.Certificate{leaf}
		}
		leaf := chain[0]
		account, slug, ok := machineOf(leaf)
		if !ok || slug == "" {
			fail(w, http.StatusUnauthorized, "the certificate names no st machine", hint)
			return
		}
		s, err := cp.data.read()
		if err != nil {
			failErr(w, err)
			return
		}
		a := s.Accounts[account]
		if a == nil {
			fail(w, http.StatusUnauthorized, "the certificate is of an account this control plane does not have", hint)
			return
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM([]byte(a.CACert)) {
			failErr(w, fmt.Errorf("the CA of account %s does not decode", a.Name))
			return
		}
		at := time.Now()
		if ended && at.After(leaf.NotAfter) {
			at = leaf.NotAfter // checked as it was when it ended
		}
		if _, err := verifyMachine(chain, roots, x509.ExtKeyUsageClientAuth, account, slug, at); err != nil {
			fail(w, http.StatusUnauthorized, "the machine's certificate is refused: "+err.Error(), hint)
			return
		}
		m := a.Machines[slug]
		if m == nil || a.isRevoked(leaf.PublicKey, time.Now()) {
			fail(w, http.StatusUnauthorized, fmt.Sprintf("machine %s is no longer signed in to account %s", slug, account), hint)
			return
		}
		// A machine that signed in again with a new key leaves its old
		// certificate behind; only the current key counts.
		if cur, err := decodeCert([]byte(m.Cert)); err != nil || !samePublicKey(cur.PublicKey, leaf.PublicKey) {
			fail(w, http.StatusUnauthorized, fmt.Sprintf("this certificate of machine %s was replaced by a later sign-in", slug), hint)
			return
		}
		h(w, r, a, m, leaf)
	}
}

func (cp *ControlPlane) renew(w http.ResponseWriter, r *http.Request, acct *cpAccount, caller *cpMachine, leaf *x509.Certificate) {
	var res certResponse
	err := cp.data.update(func(s *cpState) error {
		var m *cpMachine
		a := s.Accounts[acct.Name]
		if a != nil {
			m = a.Machines[caller.Slug]
		}
		if m == nil {
			return &httpError{http.StatusUnauthorized, "machine " + caller.Slug + " signed out meanwhile", loginHint}
		}
		ca, caKey, err := a.ca()
		if err != nil {
			return err
		}
		// The same key again: the private key stays where it is, and the
		// TLS handshake has just proved the caller holds it.
		certPEM, err := signMachine(ca, caKey, leaf.PublicKey, a.Name, m.Slug, cp.opt.SignTime(), cp.opt.CertLifetime)
		if err != nil {
			return err
		}
		m.Cert = string(certPEM)
		res.Cert = m.Cert
		fmt.Fprintf(cp.opt.Log, "%s/%s renewed its certificate\n", a.Name, m.Slug)
		return nil
	})
	if err != nil {
		failErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (cp *ControlPlane) heartbeat(w http.ResponseWriter, r *http.Request, a *cpAccount, caller *cpMachine, _ *x509.Certificate) {
	var req heartbeatRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Addr != "" {
		if _, _, err := net.SplitHostPort(req.Addr); err != nil {
			fail(w, http.StatusBadRequest, fmt.Sprintf("address %q is not host:port", req.Addr), "")
			return
		}
	}
	res := heartbeatResponse{Revoked: []Revoked{}}
	err := cp.data.update(func(s *cpState) error {
		var m *cpMachine
		sa := s.Accounts[a.Name]
		if sa != nil {
			m = sa.Machines[caller.Slug]
		}
		if m == nil {
			return &httpError{http.StatusUnauthorized, "machine " + caller.Slug + " signed out meanwhile", loginHint}
		}
		if req.Addr != "" || req.Online {
			m.Addr = req.Addr
		}
		m.AcceptRemote, m.Online, m.LastSeen = req.AcceptRemote, req.Online, time.Now().UTC()
		sa.pruneRevoked(time.Now())
		res.Revoked = append(res.Revoked, sa.Revoked...)
		return nil
	})
	if err != nil {
		failErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (cp *ControlPlane) machines(w http.ResponseWriter, _ *http.Request, a *cpAccount, _ *cpMachine, _ *x509.Certificate) {
	now := time.Now()
	res := machinesResponse{Machines: []Machine{}}
	for _, m := range a.Machines {
		res.Machines = append(res.Machines, Machine{
			Slug: m.Slug, Name: m.Name, Host: m.Host, Addr: m.Addr,
			Online:       m.Online && !m.LastSeen.IsZero() && now.Sub(m.LastSeen) <= cp.opt.OfflineAfter,
			AcceptRemote: m.AcceptRemote, LastSeen: m.LastSeen, CertPEM: m.Cert,
		})
	}
	sort.Slice(res.Machines, func(i, j int) bool { return res.Machines[i].Slug < res.Machines[j].Slug })
	writeJSON(w, http.StatusOK, res)
}

func (cp *ControlPlane) logout(w http.ResponseWriter, _ *http.Request, a *cpAccount, caller *cpMachine, _ *x509.Certificate) {
	err := cp.data.update(func(s *cpState) error {
		if sa := s.Accounts[a.Name]; sa != nil {
			if m := sa.Machines[caller.Slug]; m != nil {
				// Its certificate stays valid for hours: revoked, so its
				// peers refuse it from their next heartbeat.
				sa.revokeMachine(m, time.Now())
			}
		}
		return nil
	})
	if err != nil {
		failErr(w, err)
		return
	}
	fmt.Fprintf(cp.opt.Log, "%s/%s signed out\n", a.Name, caller.Slug)
	writeJSON(w, http.StatusOK, struct{}{})
}
