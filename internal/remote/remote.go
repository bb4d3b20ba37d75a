// Package remote is what a machine needs to reach the other machines of
// its account: its sign-in (its identity: key, certificate, account CA,
// login, renewal, heartbeat, sign-out), the mutual TLS that the peer API
// runs on (transport), and its end of the control plane's relay. The
// control plane itself (the account service that signs each machine's
// certificate and lists the machines and their addresses, and never sees
// a task or an answer) is internal/controlplane; what both ends speak (the
// API's JSON, the relay's first lines, the certificates' names, the proof
// a machine signs) is here, so that the st binary links no server
// (internal/cli TestImports).
//
// Each account has its own CA, made when the account is added. A machine
// makes its P-256 key itself and sends only a certificate request, so its
// private key never leaves it; the control plane signs it for 11 hours as
// st://<account>/<slug>. Two machines trust each other when each presents
// a certificate of their account's CA, and a client also checks that the
// server is the very machine it meant to reach.
//
// On a machine, $ST_HOME holds login.json, machine.key and machine.crt;
// $ST_HOME/remote/<slug>.json keeps the access to another machine (its
// address and certificate) for 11 hours, so a command does not ask the
// control plane each time.
package remote

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Machine is one machine of the account as the control plane lists it.
type Machine struct {
	Slug string `json:"slug"`
	Name string `json:"name"`
	Host string `json:"host"`
	// Addr is host:port of its peer listener; "" before its first heartbeat.
	Addr string `json:"addr"`
	// Online means a heartbeat within the control plane's offline-after
	// (30 s unless set), and the last one did not say it was going.
	Online bool `json:"online"`
	// AcceptRemote is what it said in its last heartbeat.
	AcceptRemote bool      `json:"accept_remote"`
	LastSeen     time.Time `json:"last_seen,omitzero"`
	// CertPEM is its current certificate.
	CertPEM string `json:"cert,omitempty"`
	// Version is its st's version, as its heartbeat said ("" for an st
	// before 0.4).
	Version string `json:"version,omitempty"`
	// Replaced is when a sign-in with st login --replace took its name
	// over from another key (revoked since), within the last 11 hours.
	Replaced time.Time `json:"replaced,omitzero"`
	// Formerly are its old slugs: it signed in again under a new name,
	// and ids with the old one still find it.
	Formerly []string `json:"formerly,omitempty"`
	// AddrKind is AddrDirect (it has a peer listener) or AddrRelayOnly
	// (reached only through the relay); "" before its first heartbeat.
	// st control-plane machines fills it in.
	AddrKind string `json:"addr_kind,omitempty"`
}

// Address kinds of a machine.
const (
	AddrDirect    = "direct"
	AddrRelayOnly = "relay-only"
)

// Error is a failure with what to do about it, printed as the message,
// its cause, and a "Try:" line.
type Error struct {
	Message string
	Hint    string
	Err     error
	// Status is the control plane's HTTP status when it refused; 0 else.
	Status int
}

func (e *Error) Error() string {
	s := e.Message
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	if e.Hint != "" {
		s += "\nTry: " + e.Hint
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// loginHint is the command that signs a machine in.
const LoginHint = "st login --control-plane URL --account NAME --key KEY"

// ErrNotSignedIn means this machine has no sign-in (no st login, or st
// logout since).
var ErrNotSignedIn error = &Error{Message: "this machine is not signed in", Hint: LoginHint}

// ErrControlPlaneNotTold is wrapped by Logout's error when the machine
// signed out here but could not tell the control plane.
var ErrControlPlaneNotTold = errors.New("the control plane was not told")

// Find picks the machine called name: by slug, name or host name, in any
// case. A slug wins over a name, and a name over a host name, so a machine
// can always be named without doubt by its slug.
func Find(ms []Machine, name string) (Machine, error) {
	want := strings.TrimSpace(name)
	for _, m := range ms {
		if strings.EqualFold(m.Slug, want) {
			return m, nil
		}
	}
	// An old slug (the machine signed in again under a new name) is
	// still its own: no other machine gets it while it is kept.
	for _, m := range ms {
		for _, old := range m.Formerly {
			if strings.EqualFold(old, want) {
				return m, nil
			}
		}
	}
	for _, field := range []func(Machine) string{
		func(m Machine) string { return m.Name },
		func(m Machine) string { return m.Host },
	} {
		var hits []Machine
		for _, m := range ms {
			if strings.EqualFold(field(m), want) {
				hits = append(hits, m)
			}
		}
		if len(hits) == 1 {
			return hits[0], nil
		}
		if len(hits) > 1 {
			var slugs []string
			for _, m := range hits {
				slugs = append(slugs, m.Slug)
			}
			return Machine{}, &Error{
				Message: fmt.Sprintf("%q fits %d machines of the account (%s)", name, len(hits), strings.Join(slugs, ", ")),
				Hint:    "name it by its slug; st machines lists them"}
		}
	}
	if len(ms) == 0 {
		return Machine{}, &Error{Message: fmt.Sprintf("no machine %q: the account has no machines", name),
			Hint: "sign that machine in with st login, then st machines lists it"}
	}
	return Machine{}, &Error{
		Message: fmt.Sprintf("no machine %q in the account; its machines are %s", name, listMachines(ms)),
		Hint:    "st machines lists them with their names, host names and slugs"}
}

func listMachines(ms []Machine) string {
	var parts []string
	for _, m := range ms {
		p := m.Slug
		if !strings.EqualFold(m.Name, m.Slug) {
			p += " (" + m.Name + ")"
		}
		parts = append(parts, p)
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
