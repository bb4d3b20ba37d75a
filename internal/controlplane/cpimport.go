package controlplane

import (
	"database/sql"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/sophonz/st/internal/remote"
	"github.com/sophonz/st/internal/store"
)

// The state.json of an st before the database: every account, machine
// and revoked key in one file, the CA keys among them. openCPDB imports
// it into state.db and renames it aside (state.json.imported-TIME): kept,
// never deleted, since it is the only copy of what came before.

type jsonState struct {
	Accounts map[string]*jsonAccount `json:"accounts"`
}

type jsonAccount struct {
	Name     string                  `json:"name"`
	KeyHash  string                  `json:"key_hash"`
	CACert   string                  `json:"ca_cert"`
	CAKey    string                  `json:"ca_key"`
	Created  time.Time               `json:"created"`
	Machines map[string]*jsonMachine `json:"machines"`
	Revoked  []remote.Revoked        `json:"revoked,omitempty"`
}

type jsonMachine struct {
	Slug         string    `json:"slug"`
	Name         string    `json:"name"`
	Host         string    `json:"host"`
	Addr         string    `json:"addr"`
	AcceptRemote bool      `json:"accept_remote"`
	Online       bool      `json:"online"`
	LastSeen     time.Time `json:"last_seen,omitzero"`
	Cert         string    `json:"cert"`
}

// importJSON imports DIR/state.json when there is one. What the database
// has already (an import that crashed before the rename, say) is kept;
// the rest is added. A state.json that does not decode stops the control
// plane: nothing is lost, and the user says what to do.
func (d *cpDB) importJSON(log io.Writer) error {
	path := d.path(jsonStateName)
	var s jsonState
	err := store.ReadJSON(path, &s)
	if errNoFile(err) {
		return nil
	}
	if err != nil {
		return &remote.Error{Message: "the control plane cannot import its old state", Err: err,
			Hint: "restore " + path + " from a backup, or move it aside to start with no accounts"}
	}
	var accounts, machines int
	err = d.write(func(tx *sql.Tx) error {
		names := make([]string, 0, len(s.Accounts))
		for name := range s.Accounts {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			a := s.Accounts[name]
			if a == nil || !remote.ValidName(name) {
				continue
			}
			na, nm, err := d.importAccount(tx, name, a)
			if err != nil {
				return err
			}
			accounts, machines = accounts+na, machines+nm
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("import %s: %w", path, err)
	}
	aside := fmt.Sprintf("%s.imported-%s", path, time.Now().UTC().Format("20060102T150405Z"))
	for i := 2; ; i++ {
		if _, err := os.Lstat(aside); errNoFile(err) {
			break
		}
		aside = fmt.Sprintf("%s.imported-%s-%d", path, time.Now().UTC().Format("20060102T150405Z"), i)
	}
	if err := os.Rename(path, aside); err != nil {
		return fmt.Errorf("keep %s aside after its import: %w", path, err)
	}
	fmt.Fprintf(log, "imported %d accounts and %d machines from %s into %s; the old file is kept as %s (it holds the accounts' CA keys: keep it as safe as the folder)\n",
		accounts, machines, path, d.path(dbFileName), aside)
	return nil
}

// importAccount adds account a unless the database has it; its CA key
// goes to its own file first, so no row is ever without its key.
func (d *cpDB) importAccount(tx *sql.Tx, name string, a *jsonAccount) (accounts, machines int, err error) {
	have, err := d.account(tx, name)
	if err != nil || have != nil {
		return 0, 0, err
	}
	if err := d.writeCAKey(name, []byte(a.CAKey)); err != nil {
		return 0, 0, err
	}
	if _, err := tx.Exec(`INSERT INTO accounts (name, key_hash, ca_cert, created) VALUES (?,?,?,?)`,
		name, a.KeyHash, a.CACert, ns(a.Created)); err != nil {
		return 0, 0, fmt.Errorf("import account %s: %w", name, err)
	}
	// The same key under two slugs is a machine that signed in again
	// under a new name (before a name followed its key): the one seen
	// last is the machine; the others become its old names.
	var ms []*cpMachine
	for slug, jm := range a.Machines {
		if jm == nil || !remote.ValidName(slug) {
			continue
		}
		m := &cpMachine{Account: name, Slug: slug, Name: jm.Name, Host: jm.Host, Cert: jm.Cert, Addr: jm.Addr,
			AcceptRemote: jm.AcceptRemote, Online: jm.Online, LastSeen: jm.LastSeen}
		if c, err := remote.DecodeCert([]byte(jm.Cert)); err == nil {
			m.KeyID, m.NotAfter = remote.KeyID(c.PublicKey), c.NotAfter
		}
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool {
		if !ms[i].LastSeen.Equal(ms[j].LastSeen) {
			return ms[i].LastSeen.After(ms[j].LastSeen)
		}
		return ms[i].NotAfter.After(ms[j].NotAfter)
	})
	current := map[string]string{} // key -> the slug that keeps it
	for _, m := range ms {
		if cur, ok := current[m.KeyID]; ok && m.KeyID != "" {
			m.RenamedTo = cur
		} else {
			current[m.KeyID] = m.Slug
		}
		if err := putMachine(tx, m); err != nil {
			return 0, 0, err
		}
	}
	for _, r := range a.Revoked {
		if r.Key != "" {
			if err := revoke(tx, name, r.Slug, r.Key, r.Until); err != nil {
				return 0, 0, err
			}
		}
	}
	return 1, len(ms), nil
}
