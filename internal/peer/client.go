package peer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/plain"
	"github.com/sophonz/st/internal/remote"
	"github.com/sophonz/st/internal/web"
)

// Client reaches st on the account's other machines (Account) over
// internal/remote's connections: directly when a machine's address
// answers, else through the control plane's relay, with mutual TLS
// either way. Reach gives this machine's sign-in and its connections as
// they are now (the daemon follows st login and st logout); nil for a
// machine that is not signed in.
type Client struct {
	Reach func() (*remote.Identity, *remote.Net)
}

var _ Account = Client{}

// Self is this machine's slug.
func (c Client) Self() (string, error) {
	id, _ := c.Reach()
	if id == nil {
		return "", NotSignedIn()
	}
	return id.Slug, nil
}

// Machine finds a machine of the account.
func (c Client) Machine(ctx context.Context, name string) (api.MachineRef, error) {
	id, _ := c.Reach()
	if id == nil {
		return api.MachineRef{}, NotSignedIn()
	}
	m, err := id.Access(ctx, name)
	if err != nil {
		err = remoteErr(err, fmt.Sprintf("machine %q of account %s", name, id.Account))
		var oe *api.Error
		if errors.As(err, &oe) && oe.Kind == api.KindNotFound {
			// A machine of another account is not listed here at all.
			oe.Message += fmt.Sprintf(" (this machine is in account %s; a machine of another account cannot take its workers)", id.Account)
		}
		return api.MachineRef{}, err
	}
	return api.MachineRef{Slug: m.Slug, Name: m.Name}, nil
}

// remoteErr turns an error of internal/remote into one the CLI prints
// with its hint.
func remoteErr(err error, what string) error {
	var re *remote.Error
	if errors.As(err, &re) {
		msg := re.Message
		if re.Err != nil {
			msg += ": " + re.Err.Error()
		}
		kind := api.KindNotFound
		if re.Status == 0 && re.Err != nil {
			kind = api.KindUnreachable
		}
		return &api.Error{Kind: kind, Message: msg, Hint: re.Hint}
	}
	return &api.Error{Kind: api.KindUnreachable, Message: fmt.Sprintf("%s: %v", what, err),
		Hint: "check that the control plane runs (st machines shows whether it answers)"}
}

// Call runs op on machine slug's st: directly when its address answers,
// else through the control plane's relay (remote.Net, which also asks
// the control plane again when the kept address does not answer: the
// machine may have a new one).
func (c Client) Call(ctx context.Context, slug, op string, req, resp any) error {
	id, n := c.Reach()
	if id == nil {
		return NotSignedIn()
	}
	m, err := id.Access(ctx, slug)
	if err != nil {
		return remoteErr(err, "machine "+slug)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+m.Slug+api.PeerPrefix+op, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Type", "application/json")
	res, err := n.Client(m.Slug).Do(hr)
	if err != nil {
		return reachErr(id, m, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(res.Body, 8<<20))
	if res.StatusCode != http.StatusOK {
		return answerErr(m.Name, res.Status, data)
	}
	if resp == nil {
		return nil
	}
	return json.Unmarshal(data, resp)
}

// answerErr is another machine's refusal, made printable: its words are
// printed to the person.
func answerErr(name, status string, data []byte) error {
	var oe api.Error
	if json.Unmarshal(data, &oe) != nil || oe.Message == "" {
		return &api.Error{Kind: api.KindRemote, Message: plain.Clean(fmt.Sprintf("%s answered %s: %.300s", name, status, strings.TrimSpace(string(data))))}
	}
	if !knownKind(oe.Kind) {
		oe.Kind = api.KindRemote
	}
	oe.Message = plain.Clean(name + " says: " + oe.Message)
	oe.Hint = plain.Clean(strings.ReplaceAll(oe.Hint, "that machine", name))
	return &oe
}

// reachErr says why machine m could not be reached: refused (a
// certificate, or the control plane would not relay), or out of reach.
func reachErr(id *remote.Identity, m remote.Machine, err error) error {
	var re *remote.RelayError
	switch {
	case errors.As(err, &re) && !re.Offline:
		hint := re.Hint
		if hint == "" {
			hint = "check that both machines are signed in to account " + id.Account + " (st machines)"
		}
		return &api.Error{Kind: api.KindRemote, Message: fmt.Sprintf("refused: %s cannot be reached: %v", m.Name, plain.Clean(err.Error())), Hint: hint}
	case remote.IsRefusal(err):
		where := m.Addr
		if where == "" {
			where = "through the control plane's relay"
		}
		return &api.Error{Kind: api.KindRemote,
			Message: fmt.Sprintf("refused: %s (%s) did not accept this machine's certificate, or showed one that is not of account %s: %v", m.Name, where, id.Account, err),
			Hint:    "sign both machines in to the same account with st login"}
	}
	var ue *remote.UnreachableError
	msg := err.Error()
	if !errors.As(err, &ue) {
		msg = "the connection to it ended: " + msg // made, then lost
	}
	return &api.Error{Kind: api.KindUnreachable,
		Message: fmt.Sprintf("machine %s cannot be reached: %s", m.Name, plain.Clean(msg)),
		Hint:    "check that st runs on " + m.Name + " (st up there) and that st machines shows it online"}
}

// knownKind reports whether an error kind from another machine is one
// this st knows (programs act on it).
func knownKind(k string) bool {
	switch k {
	case api.KindUsage, api.KindNotFound, api.KindConflict, api.KindDepth, api.KindBlocked, api.KindNoHooks,
		api.KindTimeout, api.KindInternal, api.KindUnreachable, api.KindRemote:
		return true
	}
	return false
}

// OpenTerm opens, for this machine's web UI, the window of pane on
// machine: a websocket to that machine's st over the peer connection.
func (c Client) OpenTerm(ctx context.Context, machine, pane string, o web.PeerTermOpts) (*websocket.Conn, error) {
	id, n := c.Reach()
	if id == nil {
		return nil, NotSignedIn()
	}
	m, err := id.Access(ctx, machine)
	if err != nil {
		return nil, remoteErr(err, "machine "+machine)
	}
	if m.Slug == id.Slug {
		return nil, &api.Error{Kind: api.KindUsage, Message: "that is this machine"}
	}
	dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	conn, res, err := websocket.Dial(dctx, "wss://"+m.Slug+api.PeerPrefix+api.PeerRouteTerm+"?"+web.PeerTermQuery(pane, o),
		&websocket.DialOptions{HTTPClient: n.Client(m.Slug), CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		if res != nil && res.StatusCode != http.StatusSwitchingProtocols && res.Body != nil {
			data, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
			return nil, answerErr(m.Name, res.Status, data)
		}
		return nil, unreachableTerm{reachErr(id, m, err)}
	}
	return conn, nil
}

// unreachableTerm tells the web UI that a machine was out of reach, not
// refusing.
type unreachableTerm struct{ error }

func (u unreachableTerm) Unreachable() bool {
	var oe *api.Error
	return errors.As(u.error, &oe) && oe.Kind == api.KindUnreachable
}

func (u unreachableTerm) Unwrap() error { return u.error }

// Routes answers how each online machine of the account is reached now:
// the last connection's route when recent, else a fresh connection's.
func (c Client) Routes(ctx context.Context) ([]api.MachineRoute, error) {
	id, n := c.Reach()
	if id == nil {
		return nil, NotSignedIn()
	}
	ms, err := id.Machines(ctx)
	if err != nil {
		return nil, remoteErr(err, "the account's machines")
	}
	out := make([]api.MachineRoute, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		out[i].Slug = m.Slug
		if m.Slug == id.Slug || !m.Online {
			continue
		}
		if via, at, err := n.Route(m.Slug); via != "" && err == nil && time.Since(at) < 30*time.Second {
			out[i].Route = via
			continue
		}
		wg.Add(1)
		go func(r *api.MachineRoute) {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, 8*time.Second)
			defer cancel()
			via, err := n.Probe(pctx, r.Slug)
			r.Route = via
			if err != nil {
				r.Error = plain.Clean(err.Error())
			}
		}(&out[i])
	}
	wg.Wait()
	return out, nil
}
