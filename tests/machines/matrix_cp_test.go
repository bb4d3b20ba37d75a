package machines

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"github.com/tidwall/gjson"

	"github.com/sophonz/st/internal/authz"
	"github.com/sophonz/st/internal/controlplane"
	"github.com/sophonz/st/internal/remote"
	"github.com/sophonz/st/internal/testutil"
)

// The control plane's cells (issue 31, item 6): each route of its table
// (controlplane.ControlPlaneRoutes) asked by a machine signed in to the account
// (delta, signed in for these cells alone, so that its sign-out takes
// nothing from beta), a machine removed from it (alpha, once the peer
// cells removed it), a machine of another account (gamma), and anyone on
// the network (no certificate; a sign-in's credential is the account's
// key). An allowed cell counts only when its effect is seen. /metrics is
// on a listener of its own (cpMetrics says who reaches it).

// cpActor is one caller of the control plane.
type cpActor struct {
	name string
	// client shows the machine's certificate; h1 is the same over
	// HTTP/1.1 (the relay's websocket).
	client, h1 *http.Client
	// signedIn: a machine signed in to an account; own is that account's
	// machines it must see, other those it must not.
	signedIn   bool
	own, other []string
	// network: no certificate, and for /metrics also a caller off the
	// control plane's host.
	network bool
}

// cpExpect is the model's answer for a cell of the control plane: a
// machine signed in to an account may use every route of a machine, each
// about its own account; a removed one and anyone with no certificate,
// none of them. Signing in is anyone's with the account's key, and
// /metrics anyone's who reaches its loopback listener: every process on
// the control plane's host, and nothing off it (cpMetrics).
func cpExpect(a *cpActor, r authz.Route) bool {
	if r.Actor == authz.Network {
		return true
	}
	return a.signedIn
}

func (m *matrix) controlPlane() {
	t := m.t
	id := func(home string) *remote.Identity {
		t.Helper()
		i, err := remote.LoadIdentity(home)
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	delta, gamma := m.c.Machine("delta", "127.0.0.4"), m.c.Machine("gamma", "127.0.0.5")
	delta.Login("acme")
	gamma.Login("other")
	did, aid, gid := id(delta.Home), id(m.a.Home), id(gamma.Home)
	ca, err := os.ReadFile(m.c.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	anon := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	actors := []*cpActor{
		{name: "delta, signed in to acme", client: did.ControlPlaneClient(false), h1: did.ControlPlaneClient(true), signedIn: true,
			own: []string{"beta", "delta"}, other: []string{"gamma"}},
		{name: "alpha, removed from acme", client: aid.ControlPlaneClient(false), h1: aid.ControlPlaneClient(true)},
		{name: "gamma, of another account", client: gid.ControlPlaneClient(false), h1: gid.ControlPlaneClient(true), signedIn: true,
			own: []string{"gamma"}, other: []string{"beta", "delta"}},
		{name: "anyone on the network", client: anon, h1: anon, network: true},
	}
	var outs []func() // sign-outs last: they end what the other cells use
	for _, r := range controlplane.ControlPlaneRoutes() {
		m.routes++
		for _, a := range actors {
			a, r := a, r
			cell := func() { m.cpCell(a, r) }
			if r.Actions[0] == authz.SignOut {
				outs = append(outs, cell)
				continue
			}
			cell()
		}
	}
	for _, f := range outs {
		f()
	}
}

// cpCell asks one cell and checks its answer: an allowed one by its
// effect, a refused one by the control plane's refusal.
func (m *matrix) cpCell(a *cpActor, r authz.Route) {
	m.t.Helper()
	m.cells.Add(1)
	what := fmt.Sprintf("control plane %s %s as %s (%s)", r.Method, r.Path, a.name, r.Actions[0])
	ok := cpExpect(a, r)
	var code int
	var body, missing string
	switch r.Actions[0] {
	case authz.SignIn:
		m.cpSignIn(what, a)
		return
	case authz.ReadMetrics:
		m.cpMetrics(what, a)
		return
	case authz.Relay:
		code, missing = m.cpRelay(a)
	default:
		code, body = m.cpAsk(a, r)
		missing = m.cpEffect(a, r, body)
	}
	switch {
	case ok && code == 200 && missing == "":
		m.allowed.Add(1)
	case ok:
		m.t.Errorf("%s: want it to work, its effect seen: got %d %.300s %s", what, code, body, missing)
	case (code == 401 || code == 403) && (r.Actions[0] == authz.Relay || gjson.Get(body, "error").String() != ""):
		m.refused.Add(1) // (a refused websocket's handshake shows no body)
	default:
		m.t.Errorf("%s: want the control plane's refusal, got %d %.300s", what, code, body)
	}
}

// cpAsk sends a route's request (a heartbeat that says the machine is
// online, with no address).
func (m *matrix) cpAsk(a *cpActor, r authz.Route) (int, string) {
	var body io.Reader
	if r.Method == http.MethodPost {
		body = strings.NewReader(`{"online":true,"version":"0.1.0-dev"}`)
	}
	req, _ := http.NewRequest(r.Method, m.c.URL+r.Path, body)
	req.Header.Set("Content-Type", "application/json")
	res, err := a.client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// cpEffect says what an allowed answer did not do: a renewal gives a
// certificate; a heartbeat marks the machine online in its account's
// list; the list holds its account's machines and no other's; a
// sign-out takes the machine off the list and refuses it after.
func (m *matrix) cpEffect(a *cpActor, r authz.Route, body string) string {
	if !a.signedIn {
		return ""
	}
	list := func() string { _, b := m.cpAsk(a, authz.Route{Method: http.MethodGet, Path: "/v1/machines"}); return b }
	switch r.Actions[0] {
	case authz.Renew:
		if !strings.Contains(gjson.Get(body, "cert").String(), "BEGIN CERTIFICATE") {
			return "no certificate in the answer"
		}
	case authz.Heartbeat:
		me := a.own[len(a.own)-1]
		if !gjson.Get(list(), `machines.#(slug=="`+me+`").online`).Bool() {
			return me + " is not online in its account's list"
		}
	case authz.ListMachines:
		for _, s := range a.own {
			if !gjson.Get(body, `machines.#(slug=="`+s+`")`).Exists() {
				return "its account's machine " + s + " is not listed"
			}
		}
		for _, s := range a.other {
			if gjson.Get(body, `machines.#(slug=="`+s+`")`).Exists() {
				return "another account's machine " + s + " is listed"
			}
		}
	case authz.SignOut:
		if code, _ := m.cpAsk(a, authz.Route{Method: http.MethodPost, Path: "/v1/heartbeat"}); code == 200 {
			return "it is still signed in: its heartbeat is answered"
		}
	}
	return ""
}

// cpRelay opens the relay as a: allowed, the websocket opens (and the
// control plane logs the machine connected).
func (m *matrix) cpRelay(a *cpActor) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, res, err := websocket.Dial(ctx, "wss"+strings.TrimPrefix(m.c.URL, "https")+"/v1/relay", &websocket.DialOptions{HTTPClient: a.h1})
	if err != nil {
		if res != nil {
			return res.StatusCode, ""
		}
		return 0, err.Error()
	}
	c.CloseNow()
	if a.signedIn {
		slug := a.own[len(a.own)-1]
		var missing string
		testutil.WaitFor(m.t, 15*time.Second, func() (bool, string) {
			missing = "the control plane never logged " + slug + " connected to the relay"
			return strings.Contains(m.c.CPLog(), "/"+slug+" connected"), missing
		})
	}
	return 200, ""
}

// cpSignIn signs a machine in as anyone on the network: with the
// account's key it is signed in (the account's list shows it); with
// another key it is refused.
func (m *matrix) cpSignIn(what string, a *cpActor) {
	m.t.Helper()
	if a.signedIn || strings.HasPrefix(a.name, "alpha") {
		m.cells.Add(-1) // a sign-in shows no certificate: one actor, the network, with and without the key
		return
	}
	n := m.seq.Add(1)
	for _, key := range []string{m.c.Key("acme"), "wrong-key"} {
		x := m.c.Machine(fmt.Sprintf("signin%d", n), "127.0.0.6")
		cmd := exec.Command(m.c.Bin, "login", "--control-plane", m.c.URL, "--ca", m.c.CA, "--account", "acme", "--key", key, "--name", x.Name)
		cmd.Env = x.Env()
		out, err := cmd.CombinedOutput()
		if key == "wrong-key" {
			m.cells.Add(1)
			if err == nil || !strings.Contains(string(out), "refused") {
				m.t.Errorf("%s with a wrong key: want it refused, got %v %s", what, err, out)
			}
			m.refused.Add(1)
			continue
		}
		i, lerr := remote.LoadIdentity(x.Home)
		if err != nil || lerr != nil {
			m.t.Errorf("%s with the account's key: want it signed in, got %v %v %s", what, err, lerr, out)
			continue
		}
		ms, err := i.Machines(context.Background())
		found := false
		for _, mm := range ms {
			found = found || mm.Slug == i.Slug
		}
		if err != nil || !found {
			m.t.Errorf("%s with the account's key: the account's list does not show it: %v %+v", what, err, ms)
			continue
		}
		m.allowed.Add(1)
		n = m.seq.Add(1)
	}
}

// cpMetrics asks /metrics as a. Its listener is, by design, plain HTTP on
// a loopback address of the control plane's host that asks no one who
// they are (internal/controlplane/metrics.go; docs/security.md, the control
// plane): every process on that host reads it, whatever certificate it
// shows (a signed-in machine's, a removed one's, another account's, none),
// and nothing off the host reaches it. So the machines here, which run on
// the control plane's host, read it (their certificates are not asked
// for); and anyone with no certificate has two cells: on this host
// (loopback) it reads it, and from the network it does not reach it (the
// listener's address is 127.0.0.1, its port at every other address of
// this host refuses the connection, and the control plane's own port,
// which the network reaches, has no /metrics).
func (m *matrix) cpMetrics(what string, a *cpActor) {
	m.t.Helper()
	url := m.c.MetricsURL()
	u, err := neturl.Parse(url)
	if err != nil {
		m.t.Fatalf("the control plane's metrics URL %q: %v", url, err)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host != "127.0.0.1" || u.Path != "/metrics" {
		m.t.Fatalf("the metrics listener is at %q, not on 127.0.0.1 alone: %v", url, err)
	}
	onHost := what
	if a.network {
		onHost = strings.Replace(what, a.name, "anyone on the control plane's host (loopback, no certificate)", 1)
	}
	if missing := m.metricsRead(a.client, url); missing != "" {
		m.t.Errorf("%s: want the metrics read: %s", onHost, missing)
	} else {
		m.allowed.Add(1)
	}
	if !a.network {
		return
	}
	m.cells.Add(1)
	if unreached := m.metricsUnreached(a, port); unreached != "" {
		m.t.Errorf("%s: want /metrics out of the network's reach: %s", what, unreached)
		return
	}
	m.refused.Add(1)
}

// metricsRead asks url with client and says what its answer lacks: the
// text format with the accounts' counts (the heartbeats of acme's
// machines, the machines of each account), and no machine's name, key or
// certificate in it.
func (m *matrix) metricsRead(client *http.Client, url string) string {
	res, err := client.Get(url)
	if err != nil {
		return err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	text := string(b)
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		return fmt.Sprintf("got %d %s %.300s", res.StatusCode, res.Header.Get("Content-Type"), text)
	}
	for _, want := range []string{`(?m)^st_cp_heartbeats_total\{account="acme"\} [1-9]`, `(?m)^st_cp_machines\{account="acme"\} [1-9]`,
		`(?m)^st_cp_machines\{account="other"\} [1-9]`} {
		if !regexp.MustCompile(want).MatchString(text) {
			return fmt.Sprintf("no line matching %s in:\n%.2000s", want, text)
		}
	}
	for _, never := range []string{`"alpha"`, `"beta"`, `"delta"`, `"gamma"`, m.c.Key("acme"), m.c.Key("other"), "CERTIFICATE", "PRIVATE"} {
		if strings.Contains(text, never) {
			return "it holds " + never
		}
	}
	return ""
}

// metricsUnreached says how the network reaches /metrics: the metrics
// port at an address of this host other than 127.0.0.1 (another loopback
// one, which a listener on every address would answer, and each address
// of this host's network interfaces) takes a connection, or the control
// plane's own port serves /metrics to a.
func (m *matrix) metricsUnreached(a *cpActor, port string) string {
	addrs := []string{"127.0.0.2"}
	ifaddrs, err := net.InterfaceAddrs()
	if err != nil {
		return "this host's addresses: " + err.Error()
	}
	for _, ia := range ifaddrs {
		if n, ok := ia.(*net.IPNet); ok && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			addrs = append(addrs, n.IP.String())
		}
	}
	for _, ip := range addrs {
		if c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, port), 5*time.Second); err == nil {
			c.Close()
			return "the metrics port takes a connection at " + ip
		} else if !errors.Is(err, syscall.ECONNREFUSED) {
			return "the metrics port at " + ip + ": want the connection refused, got " + err.Error()
		}
	}
	code, body := m.cpAsk(a, authz.Route{Method: http.MethodGet, Path: "/metrics"})
	if code != http.StatusNotFound || strings.Contains(body, "st_cp_") {
		return fmt.Sprintf("the control plane's own port answers /metrics: %d %.300s", code, body)
	}
	return ""
}
