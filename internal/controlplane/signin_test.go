package controlplane

import (
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/controlplane/cpserver" // the SQLite driver and the meter, as st-control-plane links them
	"github.com/sophonz/st/internal/cpconfig"
	"github.com/sophonz/st/internal/remote"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/testutil"
)

func startCP(t *testing.T, o cpconfig.ServerOptions, addr string) *ControlPlane {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if o.Meter == nil {
		o.Meter = cpserver.NewMeter()
	}
	cp, err := StartControlPlane(o, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cp.Close() })
	return cp
}

func addAccount(t *testing.T, data, name string) string {
	t.Helper()
	key, err := AddAccount(data, name)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func login(t *testing.T, cp *ControlPlane, account, key, name, host string) *remote.Identity {
	t.Helper()
	return loginAt(t, t.TempDir(), cp, account, key, name, host)
}

func loginAt(t *testing.T, home string, cp *ControlPlane, account, key, name, host string) *remote.Identity {
	t.Helper()
	id, err := remote.Login(context.Background(), home, remote.LoginOptions{URL: cp.URL(), CAFile: cp.CAFile(), Account: account, Key: key, Name: name, Host: host})
	if err != nil {
		t.Fatalf("login %s as %s: %v", account, name, err)
	}
	t.Cleanup(id.CloseIdleConnections)
	return id
}

// accountCA reads account's CA and its key from the control plane's
// folder data, as the control plane does.
func accountCA(t *testing.T, data, account string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	d, err := openCPDB(data, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	a, err := d.account(d.db, account)
	if err != nil || a == nil {
		t.Fatalf("account %s: %v", account, err)
	}
	ca, key, err := d.accountCA(a)
	if err != nil {
		t.Fatal(err)
	}
	return ca, key
}

func slugs(ms []remote.Machine) string {
	var s []string
	for _, m := range ms {
		s = append(s, m.Slug)
	}
	return strings.Join(s, ",")
}

// peerServer serves https under id.ServerTLS() and answers with the
// client's slug as PeerOf sees it.
func peerServer(t *testing.T, id *remote.Identity) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		slug, ok := remote.PeerOf(r)
		if !ok {
			http.Error(w, "no peer", http.StatusForbidden)
			return
		}
		io.WriteString(w, "hello "+slug)
	}), ErrorLog: log.New(io.Discard, "", 0)} // the refused handshakes are expected
	go srv.Serve(tls.NewListener(ln, id.ServerTLS()))
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func get(c *http.Client, addr string) (string, error) {
	res, err := c.Get("https://" + addr + "/")
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		return "", errors.New(res.Status + ": " + string(b))
	}
	return string(b), err
}

func TestAccountsLoginFind(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	cp := startCP(t, cpconfig.ServerOptions{Data: data}, "")
	keyA, keyB := addAccount(t, data, "acme"), addAccount(t, data, "other")
	if _, err := AddAccount(data, "acme"); err == nil || !strings.Contains(err.Error(), "account acme exists already") {
		t.Errorf("adding acme twice: %v", err)
	}
	if _, err := AddAccount(data, "Bad Name"); err == nil || !strings.Contains(err.Error(), "cannot name an account") {
		t.Errorf("a bad account name: %v", err)
	}

	// A wrong key is refused with a 401 that says what to do.
	_, err := remote.Login(context.Background(), t.TempDir(), remote.LoginOptions{URL: cp.URL(), CAFile: cp.CAFile(), Account: "acme", Key: "stk_wrong", Name: "x", Host: "x"})
	var re *remote.Error
	if !errors.As(err, &re) || re.Status != http.StatusUnauthorized ||
		!strings.Contains(err.Error(), "account acme does not take this key") || !strings.Contains(err.Error(), "Try: use the key that st control-plane account add acme printed") {
		t.Errorf("wrong key: %v", err)
	}
	// Without the control plane's CA, it says which flag gives it.
	_, err = remote.Login(context.Background(), t.TempDir(), remote.LoginOptions{URL: cp.URL(), Account: "acme", Key: keyA, Name: "x", Host: "x"})
	if err == nil || !strings.Contains(err.Error(), "is not trusted") || !strings.Contains(err.Error(), "--ca") {
		t.Errorf("login without --ca: %v", err)
	}

	homeMac := t.TempDir()
	mac := loginAt(t, homeMac, cp, "acme", keyA, "CI Mac", "ci-mac.local")
	laptop := login(t, cp, "acme", keyA, "laptop", "home-laptop")
	otherMac := login(t, cp, "other", keyB, "CI Mac", "ci-mac.local")
	if mac.Slug != "ci-mac" || laptop.Slug != "laptop" || otherMac.Slug != "ci-mac" || mac.Account != "acme" {
		t.Fatalf("slugs %s %s %s", mac.Slug, laptop.Slug, otherMac.Slug)
	}
	if d := time.Until(mac.Expires); d < remote.CertLifetime-time.Minute || d > remote.CertLifetime {
		t.Errorf("certificate valid for %s, want 11h", d)
	}
	for _, f := range []string{"login.json", "machine.key", "machine.crt"} {
		if fi, err := os.Stat(filepath.Join(homeMac, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", f, fi.Mode(), err)
		}
	}
	// The same name and host again keep the slug; another host gets -2.
	again := loginAt(t, homeMac, cp, "acme", keyA, "CI Mac", "ci-mac.local")
	if again.Slug != "ci-mac" {
		t.Errorf("signing in again gave slug %s", again.Slug)
	}
	second := login(t, cp, "acme", keyA, "CI Mac", "another-mac")
	if second.Slug != "ci-mac-2" {
		t.Errorf("second CI Mac got slug %s", second.Slug)
	}

	ms, err := laptop.Machines(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := slugs(ms); got != "ci-mac,ci-mac-2,laptop" {
		t.Errorf("acme's machines: %s", got)
	}
	ms2, err := otherMac.Machines(context.Background())
	if err != nil || slugs(ms2) != "ci-mac" {
		t.Errorf("other's machines: %s %v", slugs(ms2), err)
	}

	for _, name := range []string{"LAPTOP", "Home-Laptop", "laptop"} {
		if m, err := remote.Find(ms, name); err != nil || m.Slug != "laptop" {
			t.Errorf("Find(%q) = %s, %v", name, m.Slug, err)
		}
	}
	if m, err := remote.Find(ms, "ANOTHER-MAC"); err != nil || m.Slug != "ci-mac-2" {
		t.Errorf("Find by host = %s, %v", m.Slug, err)
	}
	if _, err := remote.Find(ms, "ci mac"); err == nil || !strings.Contains(err.Error(), `"ci mac" fits 2 machines of the account (ci-mac, ci-mac-2)`) {
		t.Errorf("an ambiguous name: %v", err)
	}
	_, err = remote.Find(ms, "gpu-box")
	if err == nil || !strings.Contains(err.Error(), `no machine "gpu-box" in the account; its machines are ci-mac (CI Mac), ci-mac-2 (CI Mac), laptop`) ||
		!strings.Contains(err.Error(), "Try: st machines lists them") {
		t.Errorf("unknown machine: %v", err)
	}

	// The mTLS routes take no caller without a certificate.
	pool := x509.NewCertPool()
	pem, _ := os.ReadFile(cp.CAFile())
	pool.AppendCertsFromPEM(pem)
	err = remote.CallJSON(context.Background(), remote.CPClient(pool, nil), cp.URL(), http.MethodGet, "/v1/machines", nil, &remote.MachinesResponse{})
	if !errors.As(err, &re) || re.Status != http.StatusUnauthorized || !strings.Contains(err.Error(), "needs a machine's certificate") {
		t.Errorf("machines without a certificate: %v", err)
	}
}

func TestMutualTLS(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	cp := startCP(t, cpconfig.ServerOptions{Data: data}, "")
	keyA, keyB := addAccount(t, data, "acme"), addAccount(t, data, "other")
	mac := login(t, cp, "acme", keyA, "ci-mac", "ci-mac")
	laptop := login(t, cp, "acme", keyA, "laptop", "laptop")
	foreign := login(t, cp, "other", keyB, "intruder", "intruder")
	addr := peerServer(t, mac)

	// A machine of the account, reaching the machine it means.
	if got, err := get(laptop.Client("ci-mac"), addr); err != nil || got != "hello laptop" {
		t.Fatalf("laptop to ci-mac: %q, %v", got, err)
	}
	// The same server is not the machine "gpu-box", even of the account.
	if _, err := get(laptop.Client("gpu-box"), addr); err == nil || !strings.Contains(err.Error(), "the certificate is of machine ci-mac, not gpu-box") {
		t.Errorf("a server of another slug was taken: %v", err)
	}
	// Another account's client does not take the server either.
	if _, err := get(foreign.Client("ci-mac"), addr); err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Errorf("another account's client took the server: %v", err)
	}

	// The server refuses: no certificate, another account's, an expired one.
	raw := func(cert *tls.Certificate) *http.Client {
		conf := &tls.Config{InsecureSkipVerify: true}
		if cert != nil {
			conf.Certificates = []tls.Certificate{*cert}
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: conf}}
	}
	foreignCert, _ := foreign.Current()
	ca, caKey := accountCA(t, data, "acme")
	key, _ := remote.NewKey()
	expiredPEM, err := signMachine(ca, caKey, key.Public(), "acme", "old", time.Now().Add(-12*time.Hour), remote.CertLifetime)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, _ := remote.EncodeKey(key)
	expired, err := tls.X509KeyPair(expiredPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*http.Client{"no certificate": raw(nil), "account other": raw(foreignCert), "expired": raw(&expired)} {
		if got, err := get(c, addr); err == nil {
			t.Errorf("%s: the server answered %q", name, got)
		}
	}
	// A fresh certificate of the account, shown the same raw way, passes:
	// the refusals above are for the certificates, not the client.
	macCert, _ := laptop.Current()
	if got, err := get(raw(macCert), addr); err != nil || got != "hello laptop" {
		t.Errorf("raw client with laptop's certificate: %q, %v", got, err)
	}
}

func TestAccessAndRestart(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	cp := startCP(t, cpconfig.ServerOptions{Data: data}, "")
	url := cp.URL()
	keyA := addAccount(t, data, "acme")
	mac := login(t, cp, "acme", keyA, "CI Mac", "ci-mac.local")
	homeLaptop := t.TempDir()
	laptop := loginAt(t, homeLaptop, cp, "acme", keyA, "laptop", "laptop")
	ctx := context.Background()

	// Before its first heartbeat it has no address, and nothing is kept.
	m, err := laptop.Access(ctx, "ci mac")
	if err != nil || m.Slug != "ci-mac" || m.Addr != "" {
		t.Fatalf("access before a heartbeat: %+v, %v", m, err)
	}
	accessFile := filepath.Join(homeLaptop, "remote", "ci-mac.json")
	if _, err := os.Stat(accessFile); !os.IsNotExist(err) {
		t.Errorf("access kept without an address: %v", err)
	}
	if err := mac.Heartbeat(ctx, "127.0.0.1:1111", true, true); err != nil {
		t.Fatal(err)
	}
	m, err = laptop.Access(ctx, "CI-MAC.local")
	if err != nil || m.Addr != "127.0.0.1:1111" || !m.Online || !m.AcceptRemote || m.CertPEM == "" {
		t.Fatalf("access: %+v, %v", m, err)
	}
	fi, err := os.Stat(accessFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("access file: %v %v", fi, err)
	}

	// With the control plane down, the kept access still answers.
	cp.Close()
	if m, err := laptop.Access(ctx, "CI MAC"); err != nil || m.Addr != "127.0.0.1:1111" {
		t.Errorf("kept access with the control plane down: %+v, %v", m, err)
	}
	if _, err := laptop.Machines(ctx); err == nil || !strings.Contains(err.Error(), "cannot reach the control plane at "+url) ||
		!strings.Contains(err.Error(), "Try: check that st control-plane serve runs there") {
		t.Errorf("machines with the control plane down: %v", err)
	}

	// A restart on the same address keeps accounts and machines, and an
	// account added while it runs is usable at once.
	cp2 := startCP(t, cpconfig.ServerOptions{Data: data}, strings.TrimPrefix(url, "https://"))
	ms, err := laptop.Machines(ctx)
	if err != nil || slugs(ms) != "ci-mac,laptop" || ms[0].Addr != "127.0.0.1:1111" {
		t.Fatalf("after a restart: %+v, %v", ms, err)
	}
	keyC := addAccount(t, data, "late")
	if id := login(t, cp2, "late", keyC, "newbie", "newbie"); id.Slug != "newbie" {
		t.Errorf("login to an account added while serving: %s", id.Slug)
	}

	// The machine moves: the kept access still says the old address until
	// Reopen, which picks up the new one and keeps it.
	if err := mac.Heartbeat(ctx, "127.0.0.1:2222", true, true); err != nil {
		t.Fatal(err)
	}
	if m, _ := laptop.Access(ctx, "ci-mac"); m.Addr != "127.0.0.1:1111" {
		t.Errorf("kept access: %s", m.Addr)
	}
	if m, err := laptop.Reopen(ctx, "ci-mac"); err != nil || m.Addr != "127.0.0.1:2222" {
		t.Errorf("reopen: %+v, %v", m, err)
	}
	if m, _ := laptop.Access(ctx, "ci-mac"); m.Addr != "127.0.0.1:2222" {
		t.Errorf("access after reopen: %s", m.Addr)
	}
	// A stale access file (opened over 11 hours ago) is not used.
	cp2.Close()
	var a map[string]any
	if err := store.ReadJSON(accessFile, &a); err != nil {
		t.Fatal(err)
	}
	a["opened"] = time.Now().Add(-12 * time.Hour).UTC().Format(time.RFC3339Nano)
	if err := store.WriteJSON(accessFile, a, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := laptop.Access(ctx, "ci-mac"); err == nil || !strings.Contains(err.Error(), "cannot reach the control plane") {
		t.Errorf("a stale access file was used: %v", err)
	}
}

func TestHeartbeatOnlineOffline(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	const offlineAfter = 2 * time.Second
	cp := startCP(t, cpconfig.ServerOptions{Data: data, OfflineAfter: offlineAfter}, "")
	key := addAccount(t, data, "acme")
	mac := login(t, cp, "acme", key, "mac", "mac")
	ctx := context.Background()
	status := func() remote.Machine {
		ms, err := mac.Machines(ctx)
		if err != nil || len(ms) != 1 {
			t.Fatalf("machines: %v %v", ms, err)
		}
		return ms[0]
	}
	// beat sends a heartbeat and returns the status read right after it.
	// A status read more than offlineAfter after the heartbeat was sent
	// may rightly say offline (a loaded machine can take that long): then
	// it tries again, so that what is checked is always the status within
	// the window.
	beat := func(addr string, accept, online bool) remote.Machine {
		t.Helper()
		for try := 0; ; try++ {
			sent := time.Now()
			if err := mac.Heartbeat(ctx, addr, accept, online); err != nil {
				t.Fatal(err)
			}
			m := status()
			if time.Since(sent) < offlineAfter {
				return m
			}
			if try == 20 {
				t.Fatalf("a heartbeat and a status read never fit in %s", offlineAfter)
			}
		}
	}
	if m := status(); m.Online {
		t.Errorf("online right after login, before a heartbeat")
	}
	if m := beat("127.0.0.1:1234", false, true); !m.Online || m.AcceptRemote || m.Addr != "127.0.0.1:1234" {
		t.Errorf("after a heartbeat: %+v", m)
	}
	testutil.WaitFor(t, 30*time.Second, func() (bool, string) {
		m := status()
		return !m.Online, "still online with no heartbeats"
	})
	if m := beat("127.0.0.1:1234", true, true); !m.Online || !m.AcceptRemote {
		t.Errorf("back: %+v", m)
	}
	if m := beat("127.0.0.1:1234", true, false); m.Online {
		t.Errorf("online after saying it goes: %+v", m)
	}
}

func TestRenewAndLogout(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	// Certificates of 2 hours signed 90 minutes ago have less than a
	// third of their life left: due at once.
	cp := startCP(t, cpconfig.ServerOptions{Data: data, CertLifetime: 2 * time.Hour, SignTime: func() time.Time { return time.Now().Add(-90 * time.Minute) }}, "")
	key := addAccount(t, data, "acme")
	homeMac := t.TempDir()
	mac := loginAt(t, homeMac, cp, "acme", key, "mac", "mac")
	laptop := login(t, cp, "acme", key, "laptop", "laptop")
	addr := peerServer(t, mac)
	ctx := context.Background()

	serialSeen := func() string {
		c := laptop.Client("mac")
		c.CloseIdleConnections()
		res, err := c.Get("https://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.TLS.PeerCertificates[0].SerialNumber.String()
	}
	before, oldEnd := serialSeen(), mac.NotAfter()
	keyBefore, _ := os.ReadFile(filepath.Join(homeMac, "machine.key"))
	if err := mac.RenewIfDue(ctx); err != nil {
		t.Fatal(err)
	}
	if after := serialSeen(); after == before {
		t.Errorf("the peer listener still shows the old certificate")
	}
	// Certificate times are in whole seconds: the renewal may end in the same one.
	if mac.NotAfter().Before(oldEnd) {
		t.Errorf("NotAfter %s before %s", mac.NotAfter(), oldEnd)
	}
	if keyAfter, _ := os.ReadFile(filepath.Join(homeMac, "machine.key")); string(keyAfter) != string(keyBefore) {
		t.Errorf("renewal changed the key")
	}
	// A fresh 11-hour certificate is not due.
	full := startCP(t, cpconfig.ServerOptions{Data: t.TempDir()}, "")
	k2 := addAccount(t, filepath.Dir(full.CAFile()), "b")
	fresh := login(t, full, "b", k2, "m", "m")
	crt := filepath.Join(fresh.Home(), "machine.crt")
	was, _ := os.ReadFile(crt)
	if err := fresh.RenewIfDue(ctx); err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(crt); string(now) != string(was) {
		t.Errorf("a fresh certificate was renewed")
	}

	// Logout tells the control plane and removes the files.
	if err := remote.Logout(ctx, homeMac); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"login.json", "machine.key", "machine.crt", "remote"} {
		if _, err := os.Stat(filepath.Join(homeMac, f)); !os.IsNotExist(err) {
			t.Errorf("%s is left: %v", f, err)
		}
	}
	if _, err := remote.LoadIdentity(homeMac); !errors.Is(err, remote.ErrNotSignedIn) || !strings.Contains(err.Error(), "this machine is not signed in\nTry: st login --control-plane URL --account NAME --key KEY") {
		t.Errorf("after logout: %v", err)
	}
	if ms, err := laptop.Machines(ctx); err != nil || slugs(ms) != "laptop" {
		t.Errorf("machines after mac's logout: %s %v", slugs(ms), err)
	}
	// Its certificate no longer opens the control plane.
	if _, err := mac.Machines(ctx); err == nil || !strings.Contains(err.Error(), "machine mac is no longer signed in to account acme") {
		t.Errorf("a signed-out machine listed machines: %v", err)
	}
	if err := remote.Logout(ctx, homeMac); !errors.Is(err, remote.ErrNotSignedIn) {
		t.Errorf("logout twice: %v", err)
	}

	// With the control plane down, it signs out here and says so.
	homeLaptop := laptop.Home()
	cp.Close()
	err := remote.Logout(ctx, homeLaptop)
	if !errors.Is(err, remote.ErrControlPlaneNotTold) || !strings.Contains(err.Error(), "signed out on this machine, but could not tell the control plane at "+cp.URL()) {
		t.Errorf("logout with the control plane down: %v", err)
	}
	if _, err := remote.LoadIdentity(homeLaptop); !errors.Is(err, remote.ErrNotSignedIn) {
		t.Errorf("still signed in: %v", err)
	}
}

// A certificate that is not valid now is caught where it comes in: at
// login (a control plane whose clock is far off) and at renewal.
func TestExpiredCertificates(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	past := startCP(t, cpconfig.ServerOptions{Data: data, SignTime: func() time.Time { return time.Now().Add(-12 * time.Hour) }}, "")
	key := addAccount(t, data, "acme")
	home := t.TempDir()
	_, err := remote.Login(context.Background(), home, remote.LoginOptions{URL: past.URL(), CAFile: past.CAFile(), Account: "acme", Key: key, Name: "m", Host: "m"})
	if err == nil || !strings.Contains(err.Error(), "the control plane sent a certificate this machine cannot use") ||
		!strings.Contains(err.Error(), "expired") || !strings.Contains(err.Error(), "Try: check that this machine's clock is right") {
		t.Errorf("login with a past certificate: %v", err)
	}

	// Signed in again from the same home (the same key), once the clock
	// is right, it is the machine the control plane has as m.
	cp := startCP(t, cpconfig.ServerOptions{Data: data}, "")
	id := loginAt(t, home, cp, "acme", key, "m", "m")
	// Put an expired certificate of the same key in place, as after a
	// machine was off for longer than 11 hours.
	ca, caKey := accountCA(t, data, "acme")
	cur, _ := id.Current()
	old, err := signMachine(ca, caKey, cur.Leaf.PublicKey, "acme", "m", time.Now().Add(-12*time.Hour), remote.CertLifetime)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.WriteFile(filepath.Join(id.Home(), "machine.crt"), old, 0o600); err != nil {
		t.Fatal(err)
	}
	// The control plane refuses it for everything but its renewal.
	if _, err := id.Machines(context.Background()); err == nil || !strings.Contains(err.Error(), "the machine's certificate is refused") {
		t.Errorf("machines with an expired certificate: %v", err)
	}
	checkEndedRenewal(t, cp, data, key, id)
}

// checkEndedRenewal: a machine that slept past its certificate's end
// (issue 24) renews it with its key, while it is still signed in with
// that key; an ended certificate of a key that is no longer the
// machine's (it signed in again with another), or of a removed machine,
// is refused.
func checkEndedRenewal(t *testing.T, cp *ControlPlane, data, key string, id *remote.Identity) {
	t.Helper()
	ca, caKey := accountCA(t, data, "acme")
	cur, _ := id.Current()
	// One that ended a minute ago: the account's CA here is minutes old.
	old, err := signMachine(ca, caKey, cur.Leaf.PublicKey, "acme", "m", time.Now().Add(-3*time.Minute), 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.WriteFile(filepath.Join(id.Home(), "machine.crt"), old, 0o600); err != nil {
		t.Fatal(err)
	}
	if id, err = remote.LoadIdentity(id.Home()); err != nil {
		t.Fatal(err)
	}
	if err := id.RenewIfDue(context.Background()); err != nil {
		t.Fatalf("renewing an expired certificate of a machine still signed in: %v", err)
	}
	if id.NotAfter().Before(time.Now().Add(remote.CertLifetime - time.Hour)) {
		t.Errorf("renewed certificate ends %s", id.NotAfter())
	}
	if _, err := id.Machines(context.Background()); err != nil {
		t.Errorf("machines after the renewal: %v", err)
	}
	// An ended certificate of a key that is no longer the machine's (it
	// signed in again with another), or of a removed machine, is refused.
	if err := store.WriteFile(filepath.Join(id.Home(), "machine.crt"), old, 0o600); err != nil {
		t.Fatal(err)
	}
	// The same name, a new key: on purpose (--replace), which revokes the
	// old key too.
	if _, err := remote.Login(context.Background(), t.TempDir(), remote.LoginOptions{URL: cp.URL(), CAFile: cp.CAFile(), Account: "acme", Key: key, Name: "m", Host: "m", Replace: true}); err != nil {
		t.Fatalf("login --replace: %v", err)
	}
	if id, err = remote.LoadIdentity(id.Home()); err != nil {
		t.Fatal(err)
	}
	if err := id.RenewIfDue(context.Background()); err == nil || !strings.Contains(err.Error(), "taken over by a sign-in with --replace") {
		t.Errorf("renewing an ended certificate of a replaced key: %v", err)
	}
	gone := login(t, cp, "acme", key, "g", "g")
	gcur, _ := gone.Current()
	gold, _ := signMachine(ca, caKey, gcur.Leaf.PublicKey, "acme", "g", time.Now().Add(-3*time.Minute), 2*time.Minute)
	if err := store.WriteFile(filepath.Join(gone.Home(), "machine.crt"), gold, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := RemoveMachine(data, "acme", "g"); err != nil {
		t.Fatal(err)
	}
	if gone, err = remote.LoadIdentity(gone.Home()); err != nil {
		t.Fatal(err)
	}
	if err := gone.RenewIfDue(context.Background()); err == nil || !strings.Contains(err.Error(), "no longer signed in") {
		t.Errorf("renewing an ended certificate of a removed machine: %v", err)
	}
}

// TestRevocation (issue 12, item 4): a machine that signs out, or that the
// control plane removes (a lost laptop), kept a certificate its peers took
// for up to 11 hours. Now the control plane keeps the revoked key, every
// machine learns it with its next heartbeat, and refuses that machine:
// at the handshake, and on a connection it kept open from before.
func TestRevocation(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	cp := startCP(t, cpconfig.ServerOptions{Data: data}, "")
	key := addAccount(t, data, "acme")
	ctx := context.Background()
	mac := login(t, cp, "acme", key, "mac", "mac")
	lost := login(t, cp, "acme", key, "laptop", "laptop")
	quitter := login(t, cp, "acme", key, "desk", "desk")
	// mac's peer listener, with the per-request check of the transport.
	ln, err := mac.TLSTransport().Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := mac.TLSTransport()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		slug, ok := tr.PeerOf(r)
		if !ok {
			http.Error(w, "refused", http.StatusForbidden)
			return
		}
		io.WriteString(w, "hello "+slug)
	}), ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	addr := ln.Addr().String()
	beat := func() {
		t.Helper()
		if err := mac.Heartbeat(ctx, addr, true, true); err != nil {
			t.Fatal(err)
		}
	}
	beat()
	// Both reach mac; the lost laptop keeps its connection open.
	for _, id := range []*remote.Identity{lost, quitter} {
		if got, err := get(id.Client("mac"), addr); err != nil || got != "hello "+id.Slug {
			t.Fatalf("%s before: %q %v", id.Slug, got, err)
		}
	}
	// The laptop is lost: removed at the control plane (not running
	// through it: the same folder). desk signs out itself.
	if m, err := RemoveMachine(data, "acme", "LAPTOP"); err != nil || m.Slug != "laptop" {
		t.Fatalf("remove laptop: %+v %v", m, err)
	}
	if _, err := RemoveMachine(data, "acme", "nosuch"); err == nil {
		t.Error("removing a machine that is not there")
	}
	// desk's certificate and key, as a thief would keep them.
	stolen := keptIdentity(t, quitter.Home())
	if err := remote.Logout(ctx, quitter.Home()); err != nil {
		t.Fatal(err)
	}
	// Until mac's next heartbeat, mac does not know: the kept connection
	// still answers (so what refuses it below is the heartbeat's news).
	if got, err := get(lost.Client("mac"), addr); err != nil || got != "hello "+lost.Slug {
		t.Errorf("laptop before mac's heartbeat: %q %v, want mac still answering", got, err)
	}
	beat()
	for _, id := range []*remote.Identity{lost, stolen} {
		// On the kept connection (the per-request check) ...
		if got, err := get(id.Client("mac"), addr); err == nil {
			t.Errorf("%s after the heartbeat, kept connection: answered %q", id.Slug, got)
		}
		// ... and on a new one (the handshake).
		id.CloseIdleConnections()
		if got, err := get(id.Client("mac"), addr); err == nil {
			t.Errorf("%s after the heartbeat, new connection: answered %q", id.Slug, got)
		}
	}
	// mac does not take them as servers either.
	if _, err := get(mac.Client("laptop"), peerServer(t, lost)); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Errorf("mac dialling the removed laptop: %v", err)
	}
	// The list is kept across a restart of st (a new Identity of the home).
	again, err := remote.LoadIdentity(mac.Home())
	if err != nil {
		t.Fatal(err)
	}
	c, _ := lost.Current()
	if !again.Revoked(c.Leaf) {
		t.Error("a restarted st forgot the revoked key until its first heartbeat")
	}
	// The lost laptop cannot sign in again with its revoked key.
	_, err = remote.Login(ctx, lost.Home(), remote.LoginOptions{URL: cp.URL(), CAFile: cp.CAFile(), Account: "acme", Key: key, Name: "laptop", Host: "laptop"})
	if err == nil || !strings.Contains(err.Error(), "key was revoked") || !strings.Contains(err.Error(), "st logout") {
		t.Errorf("login with a revoked key: %v", err)
	}
	// desk signed out, so its next sign-in has a new key and works.
	if _, err := remote.Login(ctx, quitter.Home(), remote.LoginOptions{URL: cp.URL(), CAFile: cp.CAFile(), Account: "acme", Key: key, Name: "desk", Host: "desk"}); err != nil {
		t.Errorf("desk signs in again after its logout: %v", err)
	}
	if ms, _ := mac.Machines(ctx); slugs(ms) != "desk,mac" {
		t.Errorf("machines now: %s", slugs(ms))
	}
}

// keptIdentity is the identity signed in at home, its certificate and key
// loaded now and kept in memory once sign-out removes their files, as a
// thief who copied them would keep them.
func keptIdentity(t *testing.T, home string) *remote.Identity {
	t.Helper()
	id, err := remote.LoadIdentity(home)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := id.Current(); err != nil {
		t.Fatal(err)
	}
	return id
}
