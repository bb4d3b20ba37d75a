package controlplane

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
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
	"sync"
	"time"

	"github.com/sophonz/st/internal/authz"
	"github.com/sophonz/st/internal/cpconfig"
	"github.com/sophonz/st/internal/remote"
	"github.com/sophonz/st/internal/store"
)

// AddAccount adds the account name to the control plane's folder data,
// with its own CA, and returns its key. Only a hash of the key is kept,
// so this is the one time it is shown. It works whether or not the
// control plane runs.
func AddAccount(data, name string) (key string, err error) {
	if !remote.ValidName(name) {
		return "", &remote.Error{Message: fmt.Sprintf("%q cannot name an account", name),
			Hint: "use lower-case letters, digits and '-', at most 63, starting with a letter or digit"}
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("make a key: %w", err)
	}
	key = "stk_" + base64.RawURLEncoding.EncodeToString(raw)
	now := time.Now()
	caPEM, caKey, err := newCA("st account "+name, remote.AccountURI(name), now)
	if err != nil {
		return "", err
	}
	d, err := openCPDB(data, io.Discard)
	if err != nil {
		return "", err
	}
	defer d.close()
	err = d.write(func(tx *sql.Tx) error {
		have, err := d.account(tx, name)
		if err != nil {
			return err
		}
		if have != nil {
			return &remote.Error{Message: fmt.Sprintf("account %s exists already in %s", name, data),
				Hint: "its machines sign in with the key shown when it was added; pick another name for a new account"}
		}
		// The key's file first: a row is never without its key (a crash
		// between the two leaves a file that the next add replaces).
		if err := d.writeCAKey(name, caKey); err != nil {
			return err
		}
		_, err = tx.Exec(`INSERT INTO accounts (name, key_hash, ca_cert, created) VALUES (?,?,?,?)`,
			name, hashKey(key), string(caPEM), ns(now))
		return err
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

// ControlPlane is a running control plane.
type ControlPlane struct {
	opt     cpconfig.ServerOptions
	db      *cpDB
	ln      net.Listener
	srv     *http.Server
	url     string
	done    chan struct{}
	srvErr  error
	nonces  nonceCache
	hub     *relayHub
	seen    *cpSeen
	pools   caPools
	metrics *cpMetrics

	stopFlush chan struct{}
	flushDone chan struct{}
	closeOnce sync.Once
}

// StartControlPlane listens on addr (host:port; port 0 for any free one)
// over HTTPS and serves until Close. On first start it makes its CA in
// the data folder; its server certificate is made anew at each start for
// 127.0.0.1, localhost and the host of addr. It writes its URL to
// Data/url.
func StartControlPlane(opt cpconfig.ServerOptions, addr string) (*ControlPlane, error) {
	opt, err := withDefaults(opt)
	if err != nil {
		return nil, err
	}
	d, err := openCPDB(opt.Data, opt.Log)
	if err != nil {
		return nil, err
	}
	cp, err := startOn(opt, d, addr)
	if err != nil {
		d.close()
		return nil, err
	}
	return cp, nil
}

func withDefaults(opt cpconfig.ServerOptions) (cpconfig.ServerOptions, error) {
	if opt.Data == "" {
		return opt, errors.New("the control plane needs a data folder")
	}
	if opt.OfflineAfter <= 0 {
		opt.OfflineAfter = cpconfig.DefaultOfflineAfter
	}
	if opt.CertLifetime <= 0 {
		opt.CertLifetime = remote.CertLifetime
	}
	if opt.SignTime == nil {
		opt.SignTime = time.Now
	}
	if opt.Log == nil {
		opt.Log = io.Discard
	}
	opt.Log = plainLog{opt.Log}
	if opt.RelayStreams <= 0 {
		opt.RelayStreams = cpconfig.DefaultRelayStreams
	}
	if opt.RelayPairStreams <= 0 {
		opt.RelayPairStreams = min(cpconfig.DefaultRelayPairStreams, opt.RelayStreams)
	}
	if opt.RelayRate == 0 {
		opt.RelayRate = cpconfig.DefaultRelayRate
	}
	if opt.RelayRecord != "" {
		if err := os.MkdirAll(opt.RelayRecord, 0o700); err != nil {
			return opt, fmt.Errorf("make the relay's record folder: %w", err)
		}
	}
	return opt, nil
}

// startOn serves the control plane of database d on addr.
func startOn(opt cpconfig.ServerOptions, d *cpDB, addr string) (*ControlPlane, error) {
	ca, caKey, err := loadOrMakeCA(d)
	if err != nil {
		return nil, err
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &remote.Error{Message: fmt.Sprintf("listen address %q", addr), Err: err, Hint: "give host:port, such as 127.0.0.1:0"}
	}
	tlsConf, err := serverTLS(opt, ca, caKey, host)
	if err != nil {
		return nil, err
	}
	// What st control-plane machines needs to say "online" as serve does.
	if err := d.setMeta("offline_after", opt.OfflineAfter.String()); err != nil {
		return nil, fmt.Errorf("the control plane's database: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, &remote.Error{Message: "the control plane cannot listen on " + addr, Err: err,
			Hint: "pick another --listen port, or 0 for any free one"}
	}
	cp := &ControlPlane{opt: opt, db: d, ln: ln, done: make(chan struct{}), seen: newCPSeen(),
		metrics: newCPMetrics(d, opt.Meter), stopFlush: make(chan struct{}), flushDone: make(chan struct{})}
	cp.url = "https://" + ln.Addr().String()
	if opt.PlainHTTP {
		cp.url = "http://" + ln.Addr().String()
	}
	if err := store.WriteFile(d.path("url"), []byte(cp.url+"\n"), 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	if err := cp.metrics.listen(opt.MetricsAddr, opt.Log); err != nil {
		ln.Close()
		return nil, err
	}
	cp.hub = newRelayHub(cp)
	cp.srv = &http.Server{
		Handler:           cp.metrics.count(cp.routes()),
		ReadHeaderTimeout: 10 * time.Second,
		// Handshake failures (a machine without --ca, say) go to Log, not
		// the process's global logger.
		ErrorLog:  log.New(opt.Log, "control plane: ", 0),
		TLSConfig: tlsConf,
	}
	go cp.flushLoop()
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

// The control plane's API is this table: each route, the action it is,
// the actor it serves, and its handler. routes builds the mux from it and
// ControlPlaneRoutes (the golden file of every route's action, the matrix
// test's rows) reads it. The actor is what the route checks: a machine
// signed in to an account (its certificate, which withMachine verifies
// against that account's CA and revoked keys, and which scopes what it
// sees to that account), or anyone who reaches the control plane (a
// sign-in's credential is the account's key in its body).
type cpRoute struct {
	method, path string
	action       authz.Action
	actor        authz.Kind
	h            func(cp *ControlPlane) http.HandlerFunc
}

var cpTable = []cpRoute{
	{"POST", "/v1/login", authz.SignIn, authz.Network, func(cp *ControlPlane) http.HandlerFunc { return cp.login }},
	{"POST", "/v1/renew", authz.Renew, authz.Machine, func(cp *ControlPlane) http.HandlerFunc { return cp.withMachineEnded(cp.renew) }},
	{"POST", "/v1/heartbeat", authz.Heartbeat, authz.Machine, func(cp *ControlPlane) http.HandlerFunc { return cp.withMachine(cp.heartbeat) }},
	{"GET", "/v1/machines", authz.ListMachines, authz.Machine, func(cp *ControlPlane) http.HandlerFunc { return cp.withMachine(cp.machines) }},
	{"POST", "/v1/logout", authz.SignOut, authz.Machine, func(cp *ControlPlane) http.HandlerFunc { return cp.withMachine(cp.logout) }},
	{"GET", "/v1/relay", authz.Relay, authz.Machine, func(cp *ControlPlane) http.HandlerFunc { return cp.withMachine(cp.hub.serve) }},
}

// metricsRoute is /metrics: on a loopback listener of its own (serveMetrics),
// to anyone who reaches it there.
var metricsRoute = authz.Route{Surface: "control-plane", Method: http.MethodGet, Path: "/metrics", Actions: []authz.Action{authz.ReadMetrics}, Actor: authz.Network}

// ControlPlaneRoutes lists the control plane's routes, from its table,
// and /metrics.
func ControlPlaneRoutes() []authz.Route {
	out := make([]authz.Route, 0, len(cpTable)+1)
	for _, rt := range cpTable {
		out = append(out, authz.Route{Surface: "control-plane", Method: rt.method, Path: rt.path, Actions: []authz.Action{rt.action}, Actor: rt.actor})
	}
	return append(out, metricsRoute)
}

// routes is the control plane's API: one handler per row of cpTable.
// /metrics is not among them: it has a listener of its own.
func (cp *ControlPlane) routes() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range cpTable {
		mux.HandleFunc(rt.method+" "+rt.path, rt.h(cp))
	}
	return mux
}

// serverTLS is the control plane's TLS: its own certificate when given,
// else one made from its CA for 127.0.0.1, localhost, the host it listens
// on and opt.Names; nil for plain HTTP.
func serverTLS(opt cpconfig.ServerOptions, ca *x509.Certificate, caKey *ecdsa.PrivateKey, host string) (*tls.Config, error) {
	if opt.PlainHTTP {
		if opt.CertFile != "" {
			return nil, &remote.Error{Message: "a certificate and plain HTTP were both asked for", Hint: "leave out --http, or --cert and --key"}
		}
		return nil, nil
	}
	var cert tls.Certificate
	var err error
	switch {
	case opt.CertFile != "" || opt.KeyFile != "":
		if opt.CertFile == "" || opt.KeyFile == "" {
			return nil, &remote.Error{Message: "its own certificate needs both --cert and --key"}
		}
		cert, err = tls.LoadX509KeyPair(opt.CertFile, opt.KeyFile)
		if err != nil {
			return nil, &remote.Error{Message: "load the control plane's certificate", Err: err, Hint: "give --cert a PEM certificate (with its chain) and --key its PEM key"}
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
func (cp *ControlPlane) CAFile() string { return cp.db.path("ca.pem") }

// MetricsURL is where /metrics is served; "" when it is not.
func (cp *ControlPlane) MetricsURL() string { return cp.metrics.url() }

// Close stops it at once.
func (cp *ControlPlane) Close() error {
	err := cp.srv.Close()
	cp.hub.close()
	<-cp.done
	cp.finish()
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
	cp.finish()
	if err == nil {
		err = cp.srvErr
	}
	return err
}

// finish writes the last-seen times kept in memory and closes the
// database and the metrics listener, once.
func (cp *ControlPlane) finish() {
	cp.closeOnce.Do(func() {
		close(cp.stopFlush)
		<-cp.flushDone
		if err := cp.flushSeen(); err != nil {
			fmt.Fprintf(cp.opt.Log, "keep the machines' last-seen times: %v\n", err)
		}
		cp.metrics.close()
		cp.db.close()
	})
}

func loadOrMakeCA(d *cpDB) (*x509.Certificate, *ecdsa.PrivateKey, error) {
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
		return nil, nil, &remote.Error{Message: "the control plane's CA in " + d.dir + " is incomplete", Err: errors.Join(err1, err2),
			Hint: "restore ca.pem and ca.key from a backup; removing both makes a new CA, and every machine must then sign in again with the new ca.pem"}
	}
	ca, err := remote.DecodeCert(certPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", certFile, err)
	}
	key, err := remote.DecodeKey(keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", keyFile, err)
	}
	return ca, key, nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, code int, msg, hint string) {
	writeJSON(w, code, remote.APIError{Error: msg, Hint: hint})
}

func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(v); err != nil {
		fail(w, http.StatusBadRequest, "the control plane could not read the request: "+err.Error(), "use an st of the same version as the control plane")
		return false
	}
	return true
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
