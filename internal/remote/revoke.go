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
func KeyID(pub crypto.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
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
	if stamp == id.revokedStamp {
		defer id.mu.Unlock()
		return id.revoked
	}
	id.mu.Unlock()
	// Read with the lock let go: a check of another machine's key does
	// not wait for this disk.
	var list []Revoked
	if err == nil {
		if err := store.ReadJSON(id.revokedFile(), &list); err != nil && !errors.Is(err, fs.ErrNotExist) {
			id.mu.Lock()
			defer id.mu.Unlock()
			return id.revoked // mid-write: the last list holds
		}
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	id.revoked, id.revokedStamp = list, stamp
	return list
}

// Revoked reports whether the certificate c is of a revoked machine key.
func (id *Identity) Revoked(c *x509.Certificate) bool {
	if c == nil {
		return true
	}
	kid := KeyID(c.PublicKey)
	now := time.Now()
	for _, r := range id.revokedNow() {
		if strings.EqualFold(r.Key, kid) && now.Before(r.Until) {
			return true
		}
	}
	return false
}
