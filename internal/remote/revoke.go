package remote

import (
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sophonz/st/internal/store"
)

// A machine's certificate lasts 11 hours, and peers check it against the
// account's CA only, so a machine that signs out (or a lost laptop that
// the control plane removes) would still be taken for up to 11 hours.
// The control plane therefore keeps what it revoked: the machine's key,
// until the last certificate it signed for that key has ended. Machines
// learn the list with each heartbeat (and keep it in
// $ST_HOME/revoked.json across restarts), and refuse a revoked key on
// every connection and every request, within one heartbeat.

// Revoked is one revoked machine key.
type Revoked struct {
	Slug  string    `json:"slug"`
	Key   string    `json:"key"`   // keyID of its public key
	Until time.Time `json:"until"` // when its last certificate ends
}

// keyID is the SHA-256 of a public key's PKIX form, in hex.
func keyID(pub crypto.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// revokeMachine removes machine m from account a and revokes its key.
// Called under the state lock.
func (a *cpAccount) revokeMachine(m *cpMachine, now time.Time) {
	delete(a.Machines, m.Slug)
	c, err := decodeCert([]byte(m.Cert))
	if err != nil {
		return
	}
	until := c.NotAfter
	if min := now.Add(CertLifetime); until.Before(min) {
		// Renewals may have signed later ones than the kept certificate.
		until = min
	}
	a.Revoked = append(a.Revoked, Revoked{Slug: m.Slug, Key: keyID(c.PublicKey), Until: until.UTC()})
}

// pruneRevoked drops entries whose certificates have all ended.
func (a *cpAccount) pruneRevoked(now time.Time) {
	keep := a.Revoked[:0]
	for _, r := range a.Revoked {
		if now.Before(r.Until) {
			keep = append(keep, r)
		}
	}
	a.Revoked = keep
}

// isRevoked reports whether a key of account a is revoked.
func (a *cpAccount) isRevoked(pub crypto.PublicKey, now time.Time) bool {
	id := keyID(pub)
	for _, r := range a.Revoked {
		if r.Key == id && now.Before(r.Until) {
			return true
		}
	}
	return false
}

// RemoveMachine signs machine name (its name, host name or slug) of
// account out at the control plane and revokes its key: for a lost
// machine. It works whether or not the control plane runs; peers refuse
// the machine within one heartbeat.
func RemoveMachine(data, account, name string) (Machine, error) {
	d := &cpData{dir: data}
	var gone Machine
	err := d.update(func(s *cpState) error {
		a := s.Accounts[account]
		if a == nil {
			return &Error{Message: fmt.Sprintf("there is no account %s in %s", account, data), Hint: "st control-plane account add NAME --data " + data}
		}
		var ms []Machine
		for _, m := range a.Machines {
			ms = append(ms, Machine{Slug: m.Slug, Name: m.Name, Host: m.Host})
		}
		found, err := Find(ms, name)
		if err != nil {
			return err
		}
		m := a.Machines[found.Slug]
		gone = found
		a.revokeMachine(m, time.Now())
		return nil
	})
	return gone, err
}

// revokedFile keeps the list a machine learnt, across restarts of st.
func (id *Identity) revokedFile() string { return filepath.Join(id.home, "revoked.json") }

// SetRevoked takes the list the control plane sent with a heartbeat and
// keeps it in revoked.json, where every Identity of this home (a daemon
// may hold an older one in its listener) reads it.
func (id *Identity) SetRevoked(list []Revoked) error {
	keep := []Revoked{}
	now := time.Now()
	for _, r := range list {
		if now.Before(r.Until) && r.Key != "" {
			keep = append(keep, r)
		}
	}
	cur := id.revokedNow()
	same := len(keep) == len(cur)
	for i := 0; same && i < len(keep); i++ {
		same = keep[i] == cur[i]
	}
	if same {
		return nil
	}
	if err := store.WriteJSON(id.revokedFile(), keep, 0o600); err != nil {
		return fmt.Errorf("keep the revoked machines: %w", err)
	}
	id.mu.Lock()
	id.revoked, id.revokedStamp = keep, "" // read again at the next check
	id.mu.Unlock()
	return nil
}

// revokedNow is the list as revoked.json holds it now, read again when
// the file changed.
func (id *Identity) revokedNow() []Revoked {
	fi, err := os.Stat(id.revokedFile())
	stamp := ""
	if err == nil {
		stamp = fmt.Sprint(fi.ModTime().UnixNano(), fi.Size())
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	if stamp == id.revokedStamp {
		return id.revoked
	}
	var list []Revoked
	if err == nil {
		if err := store.ReadJSON(id.revokedFile(), &list); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return id.revoked // mid-write: the last list holds
		}
	}
	id.revoked, id.revokedStamp = list, stamp
	return list
}

// Revoked reports whether the certificate c is of a revoked machine key.
func (id *Identity) Revoked(c *x509.Certificate) bool {
	if c == nil {
		return true
	}
	kid := keyID(c.PublicKey)
	now := time.Now()
	for _, r := range id.revokedNow() {
		if strings.EqualFold(r.Key, kid) && now.Before(r.Until) {
			return true
		}
	}
	return false
}
