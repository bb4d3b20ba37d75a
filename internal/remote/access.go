package remote

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sophonz/st/internal/store"
)

// accessFile is $ST_HOME/remote/<slug>.json: the access to one machine,
// kept for CertLifetime from when it was opened so that a command does
// not ask the control plane each time.
type accessFile struct {
	Account      string    `json:"account"`
	Slug         string    `json:"slug"`
	Name         string    `json:"name"`
	Host         string    `json:"host"`
	Addr         string    `json:"addr"`
	AcceptRemote bool      `json:"accept_remote"`
	Online       bool      `json:"online"`
	LastSeen     time.Time `json:"last_seen,omitzero"`
	Cert         string    `json:"cert"`
	Opened       time.Time `json:"opened"`
	Expires      time.Time `json:"expires"`
}

func (a *accessFile) machine() Machine {
	return Machine{Slug: a.Slug, Name: a.Name, Host: a.Host, Addr: a.Addr, Online: a.Online,
		AcceptRemote: a.AcceptRemote, LastSeen: a.LastSeen, CertPEM: a.Cert}
}

func (id *Identity) accessPath(slug string) string {
	return filepath.Join(id.home, accessDirName, slug+".json")
}

// Access returns the machine called name (its name, host name or slug, in
// any case). A fresh access file that fits is used without asking the
// control plane; its Online and AcceptRemote are as they were when it was
// opened. Otherwise the control plane is asked, and the access file of
// the machine is written when it has an address.
func (id *Identity) Access(ctx context.Context, name string) (Machine, error) {
	if m, ok := id.keptAccess(name); ok {
		return m, nil
	}
	ms, err := id.Machines(ctx)
	if err != nil {
		return Machine{}, err
	}
	m, err := Find(ms, name)
	if err != nil {
		return Machine{}, err
	}
	if err := id.keep(m); err != nil {
		return Machine{}, err
	}
	return m, nil
}

// Reopen asks the control plane again about the machine slug and
// rewrites its access file: for when a dial to the kept address fails,
// which is how a changed address shows.
func (id *Identity) Reopen(ctx context.Context, slug string) (Machine, error) {
	ms, err := id.Machines(ctx)
	if err != nil {
		return Machine{}, err
	}
	for _, m := range ms {
		if strings.EqualFold(m.Slug, slug) {
			return m, id.keep(m)
		}
	}
	os.Remove(id.accessPath(slug))
	// An old slug of a machine that signed in under a new name.
	for _, m := range ms {
		for _, old := range m.Formerly {
			if strings.EqualFold(old, slug) {
				return m, id.keep(m)
			}
		}
	}
	return Machine{}, &Error{Message: fmt.Sprintf("machine %s is no longer in account %s", slug, id.Account),
		Hint: "st machines lists the account's machines"}
}

// keep writes the access file of m. One with no address that is not
// online either (it has not told the control plane anything yet) is not
// kept, so the next Access asks again; one online with no address has no
// listener and is reached through the relay.
func (id *Identity) keep(m Machine) error {
	path := id.accessPath(m.Slug)
	if m.Addr == "" && !m.Online {
		os.Remove(path)
		return nil
	}
	now := time.Now().UTC()
	a := accessFile{Account: id.Account, Slug: m.Slug, Name: m.Name, Host: m.Host, Addr: m.Addr,
		AcceptRemote: m.AcceptRemote, Online: m.Online, LastSeen: m.LastSeen, Cert: m.CertPEM,
		Opened: now, Expires: now.Add(CertLifetime)}
	if err := store.WriteJSON(path, a, 0o600); err != nil {
		return fmt.Errorf("keep the access to machine %s: %w", m.Slug, err)
	}
	return nil
}

// keptAccess finds a fresh access file for name: by slug first, then by
// a name or host name that only one fresh file has.
func (id *Identity) keptAccess(name string) (Machine, bool) {
	dir := filepath.Join(id.home, accessDirName)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return Machine{}, false
	}
	now := time.Now()
	want := strings.TrimSpace(name)
	var byName []Machine
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		var a accessFile
		if err := store.ReadJSON(filepath.Join(dir, e.Name()), &a); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				os.Remove(filepath.Join(dir, e.Name())) // unreadable: open it again
			}
			continue
		}
		if a.Account != id.Account || (a.Addr == "" && !a.Online) || now.Before(a.Opened.Add(-Skew)) || now.After(a.Opened.Add(CertLifetime)) {
			continue
		}
		if strings.EqualFold(a.Slug, want) {
			return a.machine(), true
		}
		if strings.EqualFold(a.Name, want) || strings.EqualFold(a.Host, want) {
			byName = append(byName, a.machine())
		}
	}
	if len(byName) == 1 {
		return byName[0], true
	}
	return Machine{}, false
}
