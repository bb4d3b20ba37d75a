package remote

import (
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
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

// RemoveMachine signs machine name (its name, host name or slug) of
// account out at the control plane and revokes its key: for a lost
// machine. It works whether or not the control plane runs; peers refuse
// the machine within one heartbeat. The old name of a machine that signed
// in again under a new one is refused with why: its key is the live
// machine's (issue 25, item 5).
func RemoveMachine(data, account, name string) (Machine, error) {
	d, err := openCPDB(data, io.Discard)
	if err != nil {
		return Machine{}, err
	}
	defer d.close()
	var gone Machine
	err = d.write(func(tx *sql.Tx) error {
		a, err := d.account(tx, account)
		if err != nil {
			return err
		}
		if a == nil {
			return &Error{Message: fmt.Sprintf("there is no account %s in %s", account, data), Hint: "st control-plane account add NAME --data " + data}
		}
		rows, err := d.machines(tx, account, true)
		if err != nil {
			return err
		}
		m, err := machineToRemove(rows, account, name, data)
		if err != nil {
			return err
		}
		gone = Machine{Slug: m.Slug, Name: m.Name, Host: m.Host}
		return removeMachine(tx, m, time.Now())
	})
	return gone, err
}

// machineToRemove finds the machine name names among rows, or says why
// it is not one to remove: a slug names a machine first; then the old
// slug or name of one that signed in again under a new name is refused
// with why (its key is the live machine's); then a name or host name.
func machineToRemove(rows []*cpMachine, account, name, data string) (*cpMachine, error) {
	var live []Machine
	bySlug := map[string]*cpMachine{}
	liveNames := map[string]bool{}
	for _, m := range rows {
		bySlug[m.Slug] = m
		if m.RenamedTo == "" {
			live = append(live, Machine{Slug: m.Slug, Name: m.Name, Host: m.Host})
			liveNames[strings.ToLower(m.Name)] = true
		}
	}
	want := strings.TrimSpace(name)
	if m := bySlug[strings.ToLower(want)]; m != nil && m.RenamedTo == "" {
		return m, nil
	}
	for _, m := range rows {
		now := bySlug[m.RenamedTo]
		if now == nil || !(strings.EqualFold(m.Slug, want) || strings.EqualFold(m.Name, want) && !liveNames[strings.ToLower(want)]) {
			continue
		}
		return nil, &Error{
			Message: fmt.Sprintf("%s is the old name of machine %s of account %s, which signed in again as %s with the same key; removing %s would revoke the key that %s uses",
				want, now.Slug, account, now.Name, want, now.Slug),
			Hint: fmt.Sprintf("st control-plane machine remove %s --account %s --data %s signs that machine out; its old name goes by itself when its last certificate ends (%s)",
				now.Slug, account, data, m.NotAfter.Local().Format("2006-01-02 15:04"))}
	}
	found, err := Find(live, want)
	if err != nil {
		return nil, err
	}
	return bySlug[found.Slug], nil
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
