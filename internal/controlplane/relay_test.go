package controlplane

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/cpconfig"
	"github.com/sophonz/st/internal/remote"
	"github.com/sophonz/st/internal/testutil"
)

// relayMachine is a signed-in machine with its relay connection and its
// transport; serve answers "hello <caller>" (or the body it was sent,
// for /echo) on its peer listener, direct on listen or relay-only.
type relayMachine struct {
	id    *remote.Identity
	relay *remote.Relay
	net   *remote.Net
	addr  string // its direct listener, "" when none
}

func startRelayMachine(t *testing.T, cp *ControlPlane, account, key, name, listen string) *relayMachine {
	t.Helper()
	return runRelayMachine(t, login(t, cp, account, key, name, name), listen)
}

// runRelayMachine starts the relay, transport and peer server of the
// signed-in machine id.
func runRelayMachine(t *testing.T, id *remote.Identity, listen string) *relayMachine {
	t.Helper()
	m := &relayMachine{id: id, relay: id.StartRelay(t.Logf)}
	t.Cleanup(m.relay.Close)
	m.net = remote.NewNet(id, m.relay, t.Logf)
	t.Cleanup(m.net.CloseIdleConnections)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.relay.WaitConnected(ctx); err != nil {
		t.Fatalf("%s: %v", id.Slug, err)
	}
	ln, err := m.net.Listen(listen)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ln.Addr().(*net.TCPAddr); ok {
		m.addr = ln.Addr().String()
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		slug, ok := m.net.PeerOf(r)
		if !ok {
			http.Error(w, "refused", http.StatusForbidden)
			return
		}
		if r.URL.Path == "/echo" {
			b, _ := io.ReadAll(r.Body) // all of it first: HTTP/1.1 is not full duplex
			w.Write(b)
			return
		}
		io.WriteString(w, "hello "+slug)
	}), ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	if err := id.Heartbeat(context.Background(), m.addr, true, true); err != nil {
		t.Fatal(err)
	}
	return m
}

func (m *relayMachine) get(slug, path string) (string, error) {
	return get(m.net.Client(slug), slug+path)
}

// tlsRecords checks that b is TLS records and nothing else: each a
// content type of TLS 1.2/1.3 (20-23), a legacy version 3.1-3.4, and a
// length within the limit, back to back. A stream cut in the middle may
// end in part of one.
func tlsRecords(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		if len(b) < 5 {
			return n, nil // a cut header
		}
		typ, major, minor, l := b[0], b[1], b[2], int(b[3])<<8|int(b[4])
		if typ < 20 || typ > 23 || major != 3 || minor < 1 || minor > 4 || l > 16384+256 {
			return n, fmt.Errorf("byte %d is not the start of a TLS record: % x", n, b[:5])
		}
		n++
		if len(b) < 5+l {
			return n, nil
		}
		b = b[5+l:]
	}
	return n, nil
}

// TestRelay: two machines reach each other through the control plane when
// one has no listener at all. The two run their mutual TLS inside the
// relayed stream, so what the relay read (kept with RelayRecord) is the
// first line and TLS records only: no request, no answer. The control
// plane's log names the connection and the stream, never what they carry.
func TestRelay(t *testing.T) {
	t.Parallel()
	data, record := t.TempDir(), t.TempDir()
	cpLog := &testutil.SyncBuffer{}
	cp := startCP(t, cpconfig.ServerOptions{Data: data, RelayRecord: record, Log: cpLog}, "")
	key := addAccount(t, data, "acme")
	alpha := startRelayMachine(t, cp, "acme", key, "alpha", remote.ListenOff)
	beta := startRelayMachine(t, cp, "acme", key, "beta", remote.ListenOff)

	if got, err := alpha.get("beta", "/"); err != nil || got != "hello alpha" {
		t.Fatalf("alpha -> beta through the relay: %q %v", got, err)
	}
	if got, err := beta.get("alpha", "/"); err != nil || got != "hello beta" {
		t.Fatalf("beta -> alpha through the relay: %q %v", got, err)
	}
	if via, _, err := alpha.net.Route("beta"); via != remote.RouteRelayed || err != nil {
		t.Errorf("alpha reached beta %q (%v), want relayed", via, err)
	}
	secret := "the task text that only beta may read " + strings.Repeat("x", 3000)
	res, err := alpha.net.Client("beta").Post("https://beta/echo", "text/plain", strings.NewReader(secret))
	if err != nil {
		t.Fatal(err)
	}
	echo, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(echo) != secret {
		t.Fatalf("echo through the relay: %d bytes back of %d", len(echo), len(secret))
	}
	// The three requests of alpha went over one kept-alive connection:
	// one stream. (A relayed stream must behave as a TCP connection does
	// when net/http cuts a read short with a deadline after each request.)
	if n := strings.Count(cpLog.String(), "relay: acme/alpha -> acme/beta: stream"); n != 1 {
		t.Errorf("alpha's 3 requests to beta took %d streams, want 1 (the connection was not kept alive):\n%s", n, cpLog.String())
	}
	// What the relay read: every stream's first line, then TLS records.
	alpha.net.CloseIdleConnections()
	beta.net.CloseIdleConnections()
	var files []string
	testutil.WaitFor(t, 10*time.Second, func() (bool, string) {
		files, _ = filepath.Glob(filepath.Join(record, "*"))
		return len(files) >= 4 && strings.Count(cpLog.String(), "closed after") >= 2, cpLog.String()
	})
	total := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, word := range []string{"the task text", "hello alpha", "hello beta", "/echo", "POST"} {
			if bytes.Contains(b, []byte(word)) {
				t.Errorf("the relay read %q in %s", word, filepath.Base(f))
			}
		}
		if strings.HasSuffix(f, ".out") {
			first, rest, _ := bytes.Cut(b, []byte("\n"))
			if !bytes.HasPrefix(first, []byte(`{"to":"`)) {
				t.Errorf("%s starts with %q, not the relay's line", filepath.Base(f), first)
			}
			b = rest
		}
		n, err := tlsRecords(b)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
		}
		total += n
	}
	if total < 8 {
		t.Errorf("the relay carried %d TLS records in all; the requests did not go through it?", total)
	}
	logText := cpLog.String()
	for _, want := range []string{"relay: acme/alpha connected", "relay: acme/alpha -> acme/beta: stream", "relay: acme/beta -> acme/alpha: stream"} {
		if !strings.Contains(logText, want) {
			t.Errorf("the control plane's log does not say %q:\n%s", want, logText)
		}
	}
	if strings.Contains(logText, "task text") || strings.Contains(logText, "hello") {
		t.Errorf("the control plane's log holds what a stream carried:\n%s", logText)
	}
}

// TestRelayRefusals: the relay reaches only machines of the caller's own
// account, connected and signed in; and cuts off a machine removed from
// the account, on the streams it has and at its next try.
func TestRelayRefusals(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	cp := startCP(t, cpconfig.ServerOptions{Data: data}, "")
	key, otherKey := addAccount(t, data, "acme"), addAccount(t, data, "other")
	alpha := startRelayMachine(t, cp, "acme", key, "alpha", remote.ListenOff)
	beta := startRelayMachine(t, cp, "acme", key, "beta", remote.ListenOff)
	foreign := startRelayMachine(t, cp, "other", otherKey, "beta", remote.ListenOff) // same name, other account
	ctx := context.Background()

	dial := func(m *relayMachine, slug string) error {
		c, err := m.relay.Dial(ctx, slug)
		if err == nil {
			c.Close()
		}
		return err
	}
	// Another account's machine named beta reaches its own account only:
	// there, no beta but itself.
	if err := dial(foreign, "alpha"); err == nil || !strings.Contains(err.Error(), "account other has no machine alpha") {
		t.Errorf("a machine of another account dialling alpha: %v", err)
	}
	if err := dial(foreign, "beta"); err == nil || !strings.Contains(err.Error(), "does not reach itself") {
		t.Errorf("a machine dialling itself: %v", err)
	}
	// Through the transport too: beta of account other is never taken for
	// acme's beta (its TLS would refuse it even if the relay did not).
	if got, err := foreign.get("alpha", "/"); err == nil {
		t.Errorf("a machine of another account reached alpha: %q", got)
	}
	if err := dial(alpha, "../beta"); err == nil || !strings.Contains(err.Error(), "not a machine's slug") {
		t.Errorf("a bad slug: %v", err)
	}
	// Signed in but not connected: out of reach, not refused.
	login(t, cp, "acme", key, "gamma", "gamma")
	var re *remote.RelayError
	if err := dial(alpha, "gamma"); !errors.As(err, &re) || !re.Offline || !strings.Contains(err.Error(), "gamma is not connected") {
		t.Errorf("a machine not connected: %v", err)
	}

	// beta is removed: its relay connection is cut within a sweep, it
	// cannot connect again, and nobody reaches it.
	if got, err := alpha.get("beta", "/"); err != nil || got != "hello alpha" {
		t.Fatalf("before the removal: %q %v", got, err)
	}
	if _, err := RemoveMachine(data, "acme", "beta"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, func() (bool, string) {
		err := dial(alpha, "beta")
		return err != nil && !beta.relay.Connected(), fmt.Sprintf("alpha -> beta: %v; beta connected: %v", err, beta.relay.Connected())
	})
	testutil.WaitFor(t, 10*time.Second, func() (bool, string) {
		err := dial(beta, "alpha")
		return err != nil && remote.IsRefusal(err) && strings.Contains(err.Error(), "no longer signed in"), fmt.Sprint(err)
	})
}

// TestRelayLimits: a machine may have so many streams open through the
// relay at once, and send so many bytes a second.
func TestRelayLimits(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	const rate = 1 << 20
	cp := startCP(t, cpconfig.ServerOptions{Data: data, RelayStreams: 2, RelayRate: rate}, "")
	key := addAccount(t, data, "acme")
	alpha := startRelayMachine(t, cp, "acme", key, "alpha", remote.ListenOff)
	startRelayMachine(t, cp, "acme", key, "beta", remote.ListenOff)
	ctx := context.Background()
	var open []net.Conn
	for i := 0; i < 2; i++ {
		c, err := alpha.relay.Dial(ctx, "beta")
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		open = append(open, c)
	}
	if _, err := alpha.relay.Dial(ctx, "beta"); err == nil || !strings.Contains(err.Error(), "has 2 streams open through the relay, its limit") ||
		!remote.IsRefusal(err) {
		t.Errorf("a third stream: %v", err)
	}
	open[0].Close()
	testutil.WaitFor(t, 5*time.Second, func() (bool, string) {
		c, err := alpha.relay.Dial(ctx, "beta")
		if err == nil {
			open = append(open, c)
		}
		return err == nil, fmt.Sprint(err)
	})
	for _, c := range open {
		c.Close()
	}
	// 4 MiB at 1 MiB a second, 2 MiB of it let through at once: at least
	// 2 s (a loaded machine only makes it slower).
	alpha.net.CloseIdleConnections()
	testutil.WaitFor(t, 5*time.Second, func() (bool, string) {
		_, err := alpha.get("beta", "/")
		return err == nil, fmt.Sprint(err)
	})
	body := bytes.Repeat([]byte("z"), 4<<20)
	start := time.Now()
	res, err := alpha.net.Client("beta").Post("https://beta/echo", "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, res.Body)
	res.Body.Close()
	took := time.Since(start)
	if n != int64(len(body)) {
		t.Fatalf("echoed %d of %d bytes", n, len(body))
	}
	if took < 1800*time.Millisecond {
		t.Errorf("4 MiB went through in %s at a limit of 1 MiB/s", took)
	}
	t.Logf("4 MiB each way at 1 MiB/s: %s", took.Round(time.Millisecond))
}

// TestDirectFirst: a machine with an address that answers is reached
// directly; an address that leads elsewhere (its old address, now another
// machine's) falls back to the relay, which finds the machine by name.
func TestDirectFirst(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	cp := startCP(t, cpconfig.ServerOptions{Data: data}, "")
	key := addAccount(t, data, "acme")
	alpha := startRelayMachine(t, cp, "acme", key, "alpha", remote.ListenOff)
	beta := startRelayMachine(t, cp, "acme", key, "beta", "127.0.0.1:0")
	gamma := startRelayMachine(t, cp, "acme", key, "gamma", "127.0.0.1:0")
	if got, err := alpha.get("beta", "/"); err != nil || got != "hello alpha" {
		t.Fatalf("alpha -> beta: %q %v", got, err)
	}
	if via, _, _ := alpha.net.Route("beta"); via != remote.RouteDirect {
		t.Errorf("alpha reached beta %q, want direct", via)
	}
	// beta now tells gamma's address (as a machine that got another's old
	// address would): its TLS is not beta's, so the relay is taken.
	if err := beta.id.Heartbeat(context.Background(), gamma.addr, true, true); err != nil {
		t.Fatal(err)
	}
	if _, err := alpha.id.Reopen(context.Background(), "beta"); err != nil {
		t.Fatal(err)
	}
	alpha.net.CloseIdleConnections()
	if got, err := alpha.get("beta", "/"); err != nil || got != "hello alpha" {
		t.Fatalf("alpha -> beta at a wrong address: %q %v", got, err)
	}
	if via, _, _ := alpha.net.Route("beta"); via != remote.RouteRelayed {
		t.Errorf("alpha reached beta %q, want relayed", via)
	}
}

// TestBehindTLSTerminator: the control plane serves plain HTTP behind a
// TLS terminator (here a reverse proxy with its own certificate), so no
// client certificate reaches it; machines prove themselves with signed
// headers instead, and the relay's websocket goes through the proxy too.
// A proof copied and sent again, one for another body, and none at all
// are refused.
func TestBehindTLSTerminator(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	cp := startCP(t, cpconfig.ServerOptions{Data: data, PlainHTTP: true}, "")
	if !strings.HasPrefix(cp.URL(), "http://") {
		t.Fatalf("plain HTTP serves at %s", cp.URL())
	}
	target, _ := url.Parse(cp.URL())
	proxy := httptest.NewUnstartedServer(httputil.NewSingleHostReverseProxy(target))
	proxy.Config.ErrorLog = log.New(io.Discard, "", 0)
	proxy.StartTLS()
	t.Cleanup(proxy.Close)
	caFile := filepath.Join(t.TempDir(), "proxy.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: proxy.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	key := addAccount(t, data, "acme")
	ctx := context.Background()
	signIn := func(name string) *relayMachine {
		id, err := remote.Login(ctx, t.TempDir(), remote.LoginOptions{URL: proxy.URL, CAFile: caFile, Account: "acme", Key: key, Name: name, Host: name})
		if err != nil {
			t.Fatalf("login through the terminator: %v", err)
		}
		t.Cleanup(id.CloseIdleConnections)
		return runRelayMachine(t, id, remote.ListenOff)
	}
	alpha, _ := signIn("alpha"), signIn("beta")
	if ms, err := alpha.id.Machines(ctx); err != nil || slugs(ms) != "alpha,beta" || !ms[1].Online {
		t.Fatalf("machines through the terminator: %+v %v", ms, err)
	}
	if got, err := alpha.get("beta", "/"); err != nil || got != "hello alpha" {
		t.Fatalf("alpha -> beta through the terminator's relay: %q %v", got, err)
	}

	// A proof as the terminator passed it on, kept and sent again.
	var kept *http.Request
	var keptBody []byte
	capture := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		kept = r.Clone(r.Context())
		keptBody, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(keptBody))
		return http.DefaultTransport.RoundTrip(r)
	})
	hc := &http.Client{Transport: alpha.id.SigningTransport(capture)}
	body := []byte(`{"addr":"","accept_remote":true,"online":true}`)
	res, err := hc.Post(cp.URL()+"/v1/heartbeat", "application/json", bytes.NewReader(body))
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("a signed heartbeat: %v %v", res, err)
	}
	res.Body.Close()
	send := func(h http.Header, b []byte) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, cp.URL()+"/v1/heartbeat", bytes.NewReader(b))
		req.Header = h.Clone()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		msg, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(msg)
	}
	if code, msg := send(kept.Header, keptBody); code != http.StatusUnauthorized || !strings.Contains(msg, "seen before") {
		t.Errorf("a replayed proof: %d %s", code, msg)
	}
	h := kept.Header.Clone()
	h.Set(remote.HdrNonce, strings.Repeat("ab", 16))
	if code, msg := send(h, keptBody); code != http.StatusUnauthorized || !strings.Contains(msg, "signature does not hold") {
		t.Errorf("a proof with another nonce: %d %s", code, msg)
	}
	if code, msg := send(kept.Header, []byte(`{"addr":"6.6.6.6:1","online":true}`)); code != http.StatusUnauthorized {
		t.Errorf("a proof for another body: %d %s", code, msg)
	}
	h = kept.Header.Clone()
	h.Del(remote.HdrSig)
	if code, msg := send(h, keptBody); code != http.StatusUnauthorized || !strings.Contains(msg, "needs a machine's certificate") {
		t.Errorf("no proof: %d %s", code, msg)
	}
	h = kept.Header.Clone()
	h.Set(remote.HdrTime, fmt.Sprint(time.Now().Add(-time.Hour).Unix()))
	if code, msg := send(h, keptBody); code != http.StatusUnauthorized || !strings.Contains(msg, "clock") {
		t.Errorf("an old proof: %d %s", code, msg)
	}
	if ms, err := alpha.id.Machines(ctx); err != nil || len(ms) != 2 {
		t.Errorf("machines after the refusals: %v", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestRelayCutsSplicedStreamsOnRevocation: when a machine is removed or
// signs out, the relay cuts its connection within a sweep (2 s), and with
// it every stream already spliced between it and another machine, at both
// ends: the other machine's end of the stream ends too. Both with the
// removal made by another connection to the database (st control-plane
// machine remove, while serve runs) and with a sign-out through the API.
func TestRelayCutsSplicedStreamsOnRevocation(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	cpLog := &testutil.SyncBuffer{}
	cp := startCP(t, cpconfig.ServerOptions{Data: data, Log: cpLog}, "")
	key := addAccount(t, data, "acme")
	alpha := startRelayMachine(t, cp, "acme", key, "alpha", remote.ListenOff)
	beta := startRelayMachine(t, cp, "acme", key, "beta", remote.ListenOff)
	gamma := startRelayMachine(t, cp, "acme", key, "gamma", remote.ListenOff)
	ctx := context.Background()
	// ended waits until c (a raw spliced stream) reads an end, and says
	// how long that took from since.
	ended := func(c net.Conn, since time.Time) time.Duration {
		t.Helper()
		done := make(chan error, 1)
		go func() {
			_, err := io.Copy(io.Discard, c)
			done <- err
		}()
		select {
		case <-done:
			return time.Since(since)
		case <-time.After(30 * time.Second):
			t.Fatalf("a spliced stream was not cut 30 s after the removal")
			return 0
		}
	}

	// alpha holds a stream to beta; beta is removed: alpha's end is cut.
	toBeta, err := alpha.relay.Dial(ctx, "beta")
	if err != nil {
		t.Fatal(err)
	}
	defer toBeta.Close()
	removed := time.Now()
	if _, err := RemoveMachine(data, "acme", "beta"); err != nil {
		t.Fatal(err)
	}
	t.Logf("beta removed: alpha's stream to it cut after %s", ended(toBeta, removed).Round(time.Millisecond))
	testutil.WaitFor(t, 10*time.Second, func() (bool, string) { return !beta.relay.Connected(), "beta still connected" })

	// gamma holds a stream to alpha; gamma signs out: alpha's end (the
	// stream the relay opened on alpha's connection) is cut too.
	toAlpha, err := gamma.relay.Dial(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	defer toAlpha.Close()
	out := time.Now()
	if err := remote.Logout(ctx, gamma.id.Home()); err != nil {
		t.Fatal(err)
	}
	t.Logf("gamma signed out: its stream to alpha cut after %s", ended(toAlpha, out).Round(time.Millisecond))
	testutil.WaitFor(t, 10*time.Second, func() (bool, string) {
		return strings.Count(cpLog.String(), "closed after") >= 2, cpLog.String()
	})
	// alpha stays connected and reachable for what is left.
	if !alpha.relay.Connected() {
		t.Error("alpha lost its own connection")
	}
}
