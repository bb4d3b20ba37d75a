package controlplane

import (
	"crypto/x509"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/sophonz/st/internal/cpconfig"
	"github.com/sophonz/st/internal/plain"
	"github.com/sophonz/st/internal/remote"
)

// This file is the control plane's API for signed-in machines: who the
// caller is (withMachine), heartbeats, and the list of machines.

// seenFlush is how often the last-seen times kept in memory reach the
// database (see cpdb.go).
const seenFlush = 10 * time.Second

// machineHandler is a route that runs once the caller is known.
type machineHandler func(http.ResponseWriter, *http.Request, *cpAccount, *cpMachine, *x509.Certificate)

// withMachine verifies the caller's certificate before h runs: it must
// chain to the CA of the account it names, be valid now, and be the
// current key of a machine still signed in under that slug. Behind a TLS
// terminator, the request's proof is checked too, and its nonce is kept
// only then, per verified key (auth.go): a stranger's proof keeps nothing.
func (cp *ControlPlane) withMachine(h machineHandler) http.HandlerFunc {
	return cp.machineCheck(h, false)
}

// withMachineEnded is withMachine that also takes a certificate that has
// ended, for a renewal only: a machine that slept past its certificate's
// end proves its key all the same (the handshake, or the signed proof),
// and the key must still be the current one of a machine signed in.
func (cp *ControlPlane) withMachineEnded(h machineHandler) http.HandlerFunc {
	return cp.machineCheck(h, true)
}

func (cp *ControlPlane) machineCheck(h machineHandler, ended bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		const hint = "sign this machine in again: " + remote.LoginHint
		var chain []*x509.Certificate
		var p *proof
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			chain = r.TLS.PeerCertificates // the handshake proved the key
		} else {
			var err error
			if p, err = cp.proofOf(r); err != nil { // behind a TLS terminator
				fail(w, http.StatusUnauthorized, err.Error(), hint)
				return
			}
			chain = []*x509.Certificate{p.leaf}
		}
		at := time.Now()
		if ended && at.After(chain[0].NotAfter) {
			at = chain[0].NotAfter // checked as it was when it ended
		}
		a, m, err := cp.verifyCaller(chain, at)
		if err != nil {
			failErr(w, err)
			return
		}
		if p != nil {
			if err := cp.nonces.take(m.KeyID, p.nonce, p.signed, time.Now()); err != nil {
				fail(w, http.StatusUnauthorized, err.Error(), "")
				return
			}
		}
		setAccount(r, a.Name)
		h(w, r, a, m, chain[0])
	}
}

// verifyCaller finds the account and machine of a caller's certificate
// chain, or says why it is refused.
func (cp *ControlPlane) verifyCaller(chain []*x509.Certificate, now time.Time) (*cpAccount, *cpMachine, error) {
	const hint = "sign this machine in again: " + remote.LoginHint
	refuse := func(format string, args ...any) error {
		return &httpError{http.StatusUnauthorized, fmt.Sprintf(format, args...), hint}
	}
	leaf := chain[0]
	account, slug, ok := remote.MachineOf(leaf)
	if !ok || slug == "" {
		return nil, nil, refuse("the certificate names no st machine")
	}
	a, err := cp.db.account(cp.db.db, account)
	if err != nil {
		return nil, nil, err
	}
	if a == nil {
		return nil, nil, refuse("the certificate is of an account this control plane does not have")
	}
	roots, err := cp.pools.get(a)
	if err != nil {
		return nil, nil, err
	}
	if _, err := remote.VerifyMachine(chain, roots, x509.ExtKeyUsageClientAuth, account, slug, now); err != nil {
		return nil, nil, refuse("the machine's certificate is refused: %v", err)
	}
	kid := remote.KeyID(leaf.PublicKey)
	m, err := cp.db.machine(cp.db.db, account, slug)
	if err != nil {
		return nil, nil, err
	}
	revoked := false
	if m != nil {
		if revoked, err = cp.db.isRevoked(cp.db.db, account, kid, now); err != nil {
			return nil, nil, err
		}
	}
	switch {
	case m == nil:
		return nil, nil, refuse("machine %s is no longer signed in to account %s", slug, account)
	case revoked && !m.Replaced.IsZero() && m.KeyID != kid:
		return nil, nil, &httpError{http.StatusUnauthorized,
			fmt.Sprintf("machine %s of account %s was taken over by a sign-in with --replace at %s, and this machine's key is revoked", slug, account, m.Replaced.Local().Format("2006-01-02 15:04")),
			"if this is the real " + slug + ", sign it in again with st logout, then st login --replace; and find out who signed in as it (the control plane's log names the key)"}
	case revoked:
		return nil, nil, refuse("machine %s is no longer signed in to account %s (its key was revoked: it signed out or was removed)", slug, account)
	case m.RenamedTo != "" && m.KeyID == kid:
		return nil, nil, &httpError{http.StatusUnauthorized,
			fmt.Sprintf("machine %s of account %s signed in again as %s: this certificate is of its old name", slug, account, m.RenamedTo),
			"restart st on that machine (st down, then st up), so that it uses its new sign-in"}
	case m.RenamedTo != "" || m.KeyID != kid:
		// A machine that signed in again with a new key leaves its old
		// certificate behind; only the current key counts.
		return nil, nil, refuse("this certificate of machine %s was replaced by a later sign-in", slug)
	}
	return a, m, nil
}

// caPools keeps each account CA as a pool, made again only when the CA
// changes.
type caPools struct {
	mu sync.Mutex
	m  map[string]caPool
}

type caPool struct {
	pem  string
	pool *x509.CertPool
}

func (c *caPools) get(a *cpAccount) (*x509.CertPool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.m[a.Name]; ok && p.pem == a.CACert {
		return p.pool, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(a.CACert)) {
		return nil, fmt.Errorf("the CA of account %s does not decode", a.Name)
	}
	if c.m == nil {
		c.m = map[string]caPool{}
	}
	c.m[a.Name] = caPool{pem: a.CACert, pool: pool}
	return pool, nil
}

func (cp *ControlPlane) heartbeat(w http.ResponseWriter, r *http.Request, a *cpAccount, m *cpMachine, _ *x509.Certificate) {
	var req remote.HeartbeatRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Addr != "" {
		if _, _, err := net.SplitHostPort(req.Addr); err != nil || plain.Line(req.Addr) != nil {
			fail(w, http.StatusBadRequest, fmt.Sprintf("address %q is not host:port", req.Addr), "")
			return
		}
	}
	if len(req.Version) > remote.MaxVersion || plain.Line(req.Version) != nil {
		fail(w, http.StatusBadRequest, fmt.Sprintf("version %q is not an st version", req.Version), "")
		return
	}
	now := time.Now()
	addr := m.Addr
	if req.Addr != "" || req.Online {
		addr = req.Addr
	}
	version := m.Version
	if req.Version != "" {
		version = req.Version
	}
	if addr != m.Addr || req.AcceptRemote != m.AcceptRemote || req.Online != m.Online || version != m.Version {
		// Something a list shows changed: one row.
		err := cp.db.write(func(tx *sql.Tx) error {
			res, err := tx.Exec(`UPDATE machines SET addr = ?, accept_remote = ?, online = ?, version = ?, last_seen = ?
				WHERE account = ? AND slug = ? AND key_id = ? AND renamed_to = ''`,
				addr, req.AcceptRemote, req.Online, version, ns(now), a.Name, m.Slug, m.KeyID)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return &httpError{http.StatusUnauthorized, "machine " + m.Slug + " signed out meanwhile", remote.LoginHint}
			}
			return nil
		})
		if err != nil {
			failErr(w, err)
			return
		}
		cp.seen.mark(a.Name, m.Slug, now, false)
	} else {
		// Only the time: memory, written every seenFlush.
		cp.seen.mark(a.Name, m.Slug, now, true)
	}
	cp.metrics.Heartbeat(a.Name)
	revoked, err := cp.db.revokedOf(cp.db.db, a.Name, now)
	if err != nil {
		failErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, remote.HeartbeatResponse{Revoked: revoked})
}

func (cp *ControlPlane) machines(w http.ResponseWriter, _ *http.Request, a *cpAccount, _ *cpMachine, _ *x509.Certificate) {
	ms, err := cp.list(a.Name, time.Now())
	if err != nil {
		failErr(w, err)
		return
	}
	for i := range ms {
		ms[i].AddrKind = "" // st machines says how it reaches each itself
	}
	writeJSON(w, http.StatusOK, remote.MachinesResponse{Machines: ms})
}

// list is the machines of account, as a machine or st control-plane
// machines sees them.
func (cp *ControlPlane) list(account string, now time.Time) ([]remote.Machine, error) {
	rows, err := cp.db.machines(cp.db.db, account, true)
	if err != nil {
		return nil, err
	}
	return listMachinesOf(rows, cp.seen.get, cp.opt.OfflineAfter, now), nil
}

// listMachinesOf turns rows into the list machines see: renamed rows are
// the old names of the others (Formerly); seen gives a later last-seen
// time than the row's when memory has one.
func listMachinesOf(rows []*cpMachine, seen func(account, slug string) time.Time, offlineAfter time.Duration, now time.Time) []remote.Machine {
	formerly := map[string][]string{}
	for _, m := range rows {
		if m.RenamedTo != "" {
			formerly[m.RenamedTo] = append(formerly[m.RenamedTo], m.Slug)
		}
	}
	out := []remote.Machine{}
	for _, m := range rows {
		if m.RenamedTo != "" {
			continue
		}
		last := m.LastSeen
		if t := seen(m.Account, m.Slug); t.After(last) {
			last = t
		}
		mm := remote.Machine{Slug: m.Slug, Name: m.Name, Host: m.Host, Addr: m.Addr,
			Online:       m.Online && !last.IsZero() && now.Sub(last) <= offlineAfter,
			AcceptRemote: m.AcceptRemote, LastSeen: last, CertPEM: m.Cert, Version: m.Version,
			Formerly: formerly[m.Slug]}
		if !m.Replaced.IsZero() && now.Sub(m.Replaced) < remote.CertLifetime {
			mm.Replaced = m.Replaced
		}
		switch {
		case m.Addr != "":
			mm.AddrKind = remote.AddrDirect
		case !last.IsZero():
			mm.AddrKind = remote.AddrRelayOnly
		}
		out = append(out, mm)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	return out
}

// seenText says when machine m was last seen, for a refusal.
func (cp *ControlPlane) seenText(m *cpMachine) string {
	last := m.LastSeen
	if t := cp.seen.get(m.Account, m.Slug); t.After(last) {
		last = t
	}
	switch {
	case last.IsZero():
		return "never seen since it signed in"
	case m.Online && time.Since(last) <= cp.opt.OfflineAfter:
		return "online, last seen " + last.Local().Format("15:04:05")
	}
	return "offline, last seen " + last.Local().Format("2006-01-02 15:04")
}

// cpSeen is when each machine was last seen, kept in memory between
// writes (see cpdb.go).
type cpSeen struct {
	mu    sync.Mutex
	at    map[slugKey]time.Time
	dirty map[slugKey]bool // not yet written
}

// slugKey names a machine of an account.
type slugKey struct{ account, slug string }

func newCPSeen() *cpSeen {
	return &cpSeen{at: map[slugKey]time.Time{}, dirty: map[slugKey]bool{}}
}

func (s *cpSeen) mark(account, slug string, t time.Time, dirty bool) {
	k := slugKey{account, slug}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at[k] = t
	if dirty {
		s.dirty[k] = true
	} else {
		delete(s.dirty, k)
	}
}

func (s *cpSeen) get(account, slug string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.at[slugKey{account, slug}]
}

// takeDirty returns the times not yet written, and forgets they were not.
func (s *cpSeen) takeDirty() map[slugKey]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[slugKey]time.Time, len(s.dirty))
	for k := range s.dirty {
		out[k] = s.at[k]
	}
	s.dirty = map[slugKey]bool{}
	return out
}

// flushSeen writes the last-seen times kept in memory, in one
// transaction.
func (cp *ControlPlane) flushSeen() error {
	dirty := cp.seen.takeDirty()
	if len(dirty) == 0 {
		return nil
	}
	return cp.db.write(func(tx *sql.Tx) error {
		st, err := tx.Prepare(`UPDATE machines SET last_seen = ? WHERE account = ? AND slug = ? AND last_seen < ?`)
		if err != nil {
			return err
		}
		defer st.Close()
		for k, t := range dirty {
			if _, err := st.Exec(ns(t), k.account, k.slug, ns(t)); err != nil {
				return err
			}
		}
		return nil
	})
}

// flushLoop writes the last-seen times every seenFlush, and drops what
// has ended every minute, until Close.
func (cp *ControlPlane) flushLoop() {
	defer close(cp.flushDone)
	t := time.NewTicker(seenFlush)
	defer t.Stop()
	lastPrune := time.Time{}
	for {
		select {
		case <-cp.stopFlush:
			return
		case <-t.C:
		}
		if err := cp.flushSeen(); err != nil {
			fmt.Fprintf(cp.opt.Log, "keep the machines' last-seen times: %v\n", err)
		}
		if time.Since(lastPrune) >= time.Minute {
			lastPrune = time.Now()
			if err := cp.db.prune(lastPrune); err != nil {
				fmt.Fprintf(cp.opt.Log, "drop ended revocations: %v\n", err)
			}
		}
	}
}

// plainLog makes what is written to the control plane's log plain: a
// machine's name, a header, anything a machine sent could carry terminal
// escapes, and the log is read on an operator's terminal. Control
// characters other than line breaks and tabs become U+FFFD.
type plainLog struct{ w io.Writer }

func (l plainLog) Write(p []byte) (int, error) {
	s := string(p)
	if plain.Text(s) != nil {
		s = plain.Clean(s)
	}
	if _, err := io.WriteString(l.w, s); err != nil {
		return 0, err
	}
	return len(p), nil
}

// ListMachines lists the machines of account in the control plane's
// folder data, for st control-plane machines: whether or not serve runs,
// from the database. A last-seen time kept in serve's memory reaches the
// database within seenFlush, so a machine counts as online here when its
// last heartbeat said so within serve's offline-after plus that.
func ListMachines(data, account string) ([]remote.Machine, error) {
	d, err := openCPDB(data, io.Discard)
	if err != nil {
		return nil, err
	}
	defer d.close()
	a, err := d.account(d.db, account)
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, &remote.Error{Message: fmt.Sprintf("there is no account %s in %s", account, data),
			Hint: "st control-plane account add " + account + " --data " + data + " adds it"}
	}
	offlineAfter := cpconfig.DefaultOfflineAfter
	if v, err := d.meta("offline_after"); err == nil && v != "" {
		if dur, err := time.ParseDuration(v); err == nil {
			offlineAfter = dur
		}
	}
	rows, err := d.machines(d.db, account, true)
	if err != nil {
		return nil, err
	}
	none := func(string, string) time.Time { return time.Time{} }
	ms := listMachinesOf(rows, none, offlineAfter+seenFlush, time.Now())
	for i := range ms {
		ms[i].CertPEM = ""
	}
	return ms, nil
}
