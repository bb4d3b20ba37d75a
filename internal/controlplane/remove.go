package controlplane

import (
	"database/sql"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sophonz/st/internal/remote"
)

// RemoveMachine signs machine name (its name, host name or slug) of
// account out at the control plane and revokes its key: for a lost
// machine. It works whether or not the control plane runs; peers refuse
// the machine within one heartbeat. The old name of a machine that signed
// in again under a new one is refused with why: its key is the live
// machine's (issue 25, item 5).
func RemoveMachine(data, account, name string) (remote.Machine, error) {
	d, err := openCPDB(data, io.Discard)
	if err != nil {
		return remote.Machine{}, err
	}
	defer d.close()
	var gone remote.Machine
	err = d.write(func(tx *sql.Tx) error {
		a, err := d.account(tx, account)
		if err != nil {
			return err
		}
		if a == nil {
			return &remote.Error{Message: fmt.Sprintf("there is no account %s in %s", account, data), Hint: "st control-plane account add NAME --data " + data}
		}
		rows, err := d.machines(tx, account, true)
		if err != nil {
			return err
		}
		m, err := machineToRemove(rows, account, name, data)
		if err != nil {
			return err
		}
		gone = remote.Machine{Slug: m.Slug, Name: m.Name, Host: m.Host}
		return removeMachine(tx, m, time.Now())
	})
	return gone, err
}

// machineToRemove finds the machine name names among rows, or says why
// it is not one to remove: a slug names a machine first; then the old
// slug or name of one that signed in again under a new name is refused
// with why (its key is the live machine's); then a name or host name.
func machineToRemove(rows []*cpMachine, account, name, data string) (*cpMachine, error) {
	var live []remote.Machine
	bySlug := map[string]*cpMachine{}
	liveNames := map[string]bool{}
	for _, m := range rows {
		bySlug[m.Slug] = m
		if m.RenamedTo == "" {
			live = append(live, remote.Machine{Slug: m.Slug, Name: m.Name, Host: m.Host})
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
		return nil, &remote.Error{
			Message: fmt.Sprintf("%s is the old name of machine %s of account %s, which signed in again as %s with the same key; removing %s would revoke the key that %s uses",
				want, now.Slug, account, now.Name, want, now.Slug),
			Hint: fmt.Sprintf("st control-plane machine remove %s --account %s --data %s signs that machine out; its old name goes by itself when its last certificate ends (%s)",
				now.Slug, account, data, m.NotAfter.Local().Format("2006-01-02 15:04"))}
	}
	found, err := remote.Find(live, want)
	if err != nil {
		return nil, err
	}
	return bySlug[found.Slug], nil
}
