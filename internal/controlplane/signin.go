package controlplane

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/subtle"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sophonz/st/internal/plain"
	"github.com/sophonz/st/internal/remote"
)

// A machine signs in with the account's key and a certificate request
// for its own key. Who it is follows its key, not the name it gives:
//
//   - the same key again (under the same name and host): the same machine,
//     the same slug;
//   - the same key under a new name: the same machine renamed. It gets the
//     new name's slug, and its old slug stays behind, hidden, as its old
//     name until its certificates end, so that the name is not given to
//     another key meanwhile and removing it is refused with why;
//   - a name and host in use by another key: refused, since the account key
//     alone must not take over a machine (issue 23, item 8: the impostor
//     got beta's tasks). With --replace (for a machine whose key is lost:
//     a reinstall, a new disk), the other key is revoked and the machine is
//     marked replaced, which every machine's st machines shows;
//   - else a new machine, with a new slug.

// maxLabel bounds a machine's name and host name.
const maxLabel = 128

func (cp *ControlPlane) login(w http.ResponseWriter, r *http.Request) {
	var req remote.LoginRequest
	if !decodeBody(w, r, &req) {
		return
	}
	req.Account = strings.ToLower(strings.TrimSpace(req.Account))
	req.Name, req.Host = strings.TrimSpace(req.Name), strings.TrimSpace(req.Host)
	if req.Name == "" || req.Host == "" {
		fail(w, http.StatusBadRequest, "a machine signs in with a name and a host name", "st login --name NAME --host HOST")
		return
	}
	for what, v := range map[string]string{"name": req.Name, "host name": req.Host} {
		if msg := checkLabel(v); msg != "" {
			fail(w, http.StatusBadRequest, fmt.Sprintf("the machine's %s %s", what, msg),
				"give st login a --name and --host of letters, digits, spaces and punctuation, at most 128 bytes")
			return
		}
	}
	csr, err := parseCSR(req.CSR)
	if err != nil {
		fail(w, http.StatusBadRequest, "the certificate request does not hold: "+err.Error(), "")
		return
	}
	var res remote.LoginResponse
	var line string
	err = cp.db.write(func(tx *sql.Tx) error {
		a, err := cp.db.account(tx, req.Account)
		if err != nil {
			return err
		}
		// One answer for a wrong key and a missing account, so that the
		// API does not tell which accounts exist.
		if a == nil || subtle.ConstantTimeCompare([]byte(a.KeyHash), []byte(hashKey(req.Key))) != 1 {
			return &httpError{http.StatusUnauthorized, fmt.Sprintf("account %s does not take this key (a wrong key, or no such account)", req.Account),
				"use the key that st control-plane account add " + req.Account + " printed"}
		}
		setAccount(r, a.Name)
		res, line, err = cp.signIn(tx, a, req, csr)
		return err
	})
	if err != nil {
		failErr(w, err)
		return
	}
	fmt.Fprintln(cp.opt.Log, line)
	writeJSON(w, http.StatusOK, res)
}

// checkLabel says what is wrong with a machine's name or host name for
// a person to read in lists and logs; "" when nothing.
func checkLabel(s string) string {
	if len(s) > maxLabel {
		return fmt.Sprintf("is %d bytes, over %d", len(s), maxLabel)
	}
	if err := plain.Line(s); err != nil {
		return "has " + err.(*plain.Error).What()
	}
	return ""
}

// signIn signs csr's key in as the machine req names, in transaction
// tx, and returns the answer and the log's line.
func (cp *ControlPlane) signIn(tx *sql.Tx, a *cpAccount, req remote.LoginRequest, csr *x509.CertificateRequest) (remote.LoginResponse, string, error) {
	now := time.Now()
	kid := remote.KeyID(csr.PublicKey)
	if revoked, err := cp.db.isRevoked(tx, a.Name, kid, now); err != nil || revoked {
		if err != nil {
			return remote.LoginResponse{}, "", err
		}
		return remote.LoginResponse{}, "", &httpError{http.StatusUnauthorized, "this machine's key was revoked (the machine signed out or was removed from account " + a.Name + ")",
			"st logout on this machine (it makes a new key at the next sign-in), then st login again"}
	}
	p, err := cp.planSignIn(tx, a.Name, kid, req.Name, req.Host, req.Replace)
	if err != nil {
		return remote.LoginResponse{}, "", err
	}
	ca, caKey, err := cp.db.accountCA(a)
	if err != nil {
		return remote.LoginResponse{}, "", err
	}
	certPEM, err := signMachine(ca, caKey, csr.PublicKey, a.Name, p.m.Slug, cp.opt.SignTime(), cp.opt.CertLifetime)
	if err != nil {
		return remote.LoginResponse{}, "", err
	}
	cert, err := remote.DecodeCert(certPEM)
	if err != nil {
		return remote.LoginResponse{}, "", err
	}
	m := p.m
	m.Name, m.Host, m.KeyID, m.Cert, m.NotAfter, m.SignedIn = req.Name, req.Host, kid, string(certPEM), cert.NotAfter, now
	// Signed in, but not online until its st says where it listens.
	m.Online = false
	res := remote.LoginResponse{Slug: m.Slug, Cert: m.Cert, AccountCA: a.CACert}
	line := fmt.Sprintf("%s/%s (%s on %s) signed in, key %s", a.Name, m.Slug, m.Name, m.Host, remote.Fingerprint(csr.PublicKey))
	if p.replaced != nil {
		if err := cp.replace(tx, p.replaced, now); err != nil {
			return remote.LoginResponse{}, "", err
		}
		m.Replaced, m.Addr, m.AcceptRemote, m.Version, m.LastSeen = now, "", false, "", time.Time{}
		res.Replaced = fingerprintOfCert(p.replaced.Cert)
		line += fmt.Sprintf(" with --replace: the key it took the name over from, %s, is revoked", res.Replaced)
	}
	if p.formerly != nil && p.formerly.Slug != m.Slug {
		if err := rename(tx, p.formerly, m.Slug); err != nil {
			return remote.LoginResponse{}, "", err
		}
		res.Formerly = p.formerly.Slug
		line += fmt.Sprintf("; it was %s/%s (%s on %s), the same key", a.Name, p.formerly.Slug, p.formerly.Name, p.formerly.Host)
	}
	return res, line, putMachine(tx, m)
}

// signInPlan is what a sign-in does: the row it writes (m, its slug
// chosen), the row of the same key under another slug that becomes its
// old name (formerly), and the row of another key it takes over
// (replaced, with --replace).
type signInPlan struct {
	m, formerly, replaced *cpMachine
}

// planSignIn decides who key kid signing in as name on host is (see the
// top of this file).
func (cp *ControlPlane) planSignIn(tx *sql.Tx, account, kid, name, host string, replace bool) (*signInPlan, error) {
	all, err := cp.db.machines(tx, account, true)
	if err != nil {
		return nil, err
	}
	var byKey, byName *cpMachine
	taken := map[string]bool{}
	for _, m := range all {
		taken[m.Slug] = true
		if m.RenamedTo != "" {
			continue
		}
		if m.KeyID == kid {
			byKey = m
		}
		if m.Name == name && m.Host == host {
			byName = m
		}
	}
	switch {
	case byName != nil && byName.KeyID == kid:
		return &signInPlan{m: byName}, nil
	case byName != nil && !replace:
		return nil, &httpError{http.StatusConflict,
			fmt.Sprintf("machine %s (host %s, slug %s) of account %s is signed in with another key (%s)", name, host, byName.Slug, account, cp.seenText(byName)),
			"sign in on that machine itself (its key is in its ST_HOME), or give this one another --name; if that machine is gone for good (a new disk, a reinstall), take its name over with st login --replace: its key is revoked, and st machines on every machine shows the name was replaced"}
	case byName != nil:
		m := *byName
		return &signInPlan{m: &m, formerly: byKey, replaced: byName}, nil
	case byKey != nil:
		m := *byKey
		if Slugify(name) != Slugify(byKey.Name) {
			m.Slug = freeSlug(Slugify(name), taken)
		}
		return &signInPlan{m: &m, formerly: byKey}, nil
	}
	return &signInPlan{m: &cpMachine{Account: account, Slug: freeSlug(Slugify(name), taken)}}, nil
}

// freeSlug is base, or base-2, base-3 ... when that is taken.
func freeSlug(base string, taken map[string]bool) string {
	slug := base
	for i := 2; taken[slug]; i++ {
		slug = base + "-" + strconv.Itoa(i)
	}
	return slug
}

// replace revokes the key of machine m, whose name a sign-in with
// --replace takes over, and drops its old names (of the same key).
func (cp *ControlPlane) replace(tx *sql.Tx, m *cpMachine, now time.Time) error {
	if err := revoke(tx, m.Account, m.Slug, m.KeyID, revokedUntil(m, now)); err != nil {
		return err
	}
	_, err := tx.Exec(`DELETE FROM machines WHERE account = ? AND renamed_to = ?`, m.Account, m.Slug)
	return err
}

// rename makes machine m's row the old name of slug to (the same key,
// signed in under a new name): hidden from lists, kept until its
// certificates end.
func rename(tx *sql.Tx, m *cpMachine, to string) error {
	if _, err := tx.Exec(`UPDATE machines SET renamed_to = ?, online = 0 WHERE account = ? AND slug = ?`, to, m.Account, m.Slug); err != nil {
		return fmt.Errorf("keep the old name %s/%s: %w", m.Account, m.Slug, err)
	}
	// Its own old names now point at the new one.
	_, err := tx.Exec(`UPDATE machines SET renamed_to = ? WHERE account = ? AND renamed_to = ?`, to, m.Account, m.Slug)
	return err
}

// revokedUntil is when the last certificate signed for m's key ends:
// the kept one, or a renewal of it up to a lifetime from now.
func revokedUntil(m *cpMachine, now time.Time) time.Time {
	until := m.NotAfter
	if min := now.Add(remote.CertLifetime); until.Before(min) {
		until = min
	}
	return until
}

// fingerprintOfCert is the fingerprint of a PEM certificate's key.
func fingerprintOfCert(p string) string {
	c, err := remote.DecodeCert([]byte(p))
	if err != nil {
		return "?"
	}
	return remote.Fingerprint(c.PublicKey)
}

func parseCSR(p string) (*x509.CertificateRequest, error) {
	der, err := remote.PEMBlock([]byte(p), "CERTIFICATE REQUEST")
	if err != nil {
		return nil, err
	}
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return nil, err
	}
	// The signature proves the caller holds the key it asks a
	// certificate for: what "the same key again" rests on.
	if err := csr.CheckSignature(); err != nil {
		return nil, err
	}
	if k, ok := csr.PublicKey.(*ecdsa.PublicKey); !ok || k.Curve != elliptic.P256() {
		return nil, errors.New("st signs only ECDSA P-256 keys")
	}
	return csr, nil
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
	if len(s) > 56 { // room for a -N within validName's 63
		s = strings.TrimRight(s[:56], "-")
	}
	return s
}

func (cp *ControlPlane) renew(w http.ResponseWriter, r *http.Request, a *cpAccount, caller *cpMachine, leaf *x509.Certificate) {
	var res remote.CertResponse
	err := cp.db.write(func(tx *sql.Tx) error {
		m, err := cp.db.machine(tx, a.Name, caller.Slug)
		if err != nil {
			return err
		}
		if m == nil || m.RenamedTo != "" || m.KeyID != remote.KeyID(leaf.PublicKey) {
			return &httpError{http.StatusUnauthorized, "machine " + caller.Slug + " signed out meanwhile", remote.LoginHint}
		}
		ca, caKey, err := cp.db.accountCA(a)
		if err != nil {
			return err
		}
		// The same key again: the private key stays where it is, and the
		// TLS handshake (or the request's signature) has just proved the
		// caller holds it.
		certPEM, err := signMachine(ca, caKey, leaf.PublicKey, a.Name, m.Slug, cp.opt.SignTime(), cp.opt.CertLifetime)
		if err != nil {
			return err
		}
		cert, err := remote.DecodeCert(certPEM)
		if err != nil {
			return err
		}
		res.Cert = string(certPEM)
		_, err = tx.Exec(`UPDATE machines SET cert = ?, not_after = ? WHERE account = ? AND slug = ?`, res.Cert, ns(cert.NotAfter), a.Name, m.Slug)
		return err
	})
	if err != nil {
		failErr(w, err)
		return
	}
	fmt.Fprintf(cp.opt.Log, "%s/%s renewed its certificate\n", a.Name, caller.Slug)
	writeJSON(w, http.StatusOK, res)
}

func (cp *ControlPlane) logout(w http.ResponseWriter, _ *http.Request, a *cpAccount, caller *cpMachine, leaf *x509.Certificate) {
	err := cp.db.write(func(tx *sql.Tx) error {
		m, err := cp.db.machine(tx, a.Name, caller.Slug)
		if err != nil || m == nil || m.KeyID != remote.KeyID(leaf.PublicKey) {
			return err
		}
		// Its certificate stays valid for hours: revoked, so its peers
		// refuse it from their next heartbeat.
		return removeMachine(tx, m, time.Now())
	})
	if err != nil {
		failErr(w, err)
		return
	}
	fmt.Fprintf(cp.opt.Log, "%s/%s signed out\n", a.Name, caller.Slug)
	writeJSON(w, http.StatusOK, struct{}{})
}

// removeMachine signs machine m out: its key is revoked until its last
// certificate ends, and its row and old names go.
func removeMachine(tx *sql.Tx, m *cpMachine, now time.Time) error {
	if m.KeyID != "" {
		if err := revoke(tx, m.Account, m.Slug, m.KeyID, revokedUntil(m, now)); err != nil {
			return err
		}
	}
	_, err := tx.Exec(`DELETE FROM machines WHERE account = ? AND (slug = ? OR renamed_to = ?)`, m.Account, m.Slug, m.Slug)
	return err
}
