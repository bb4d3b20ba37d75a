package controlplane

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sophonz/st/internal/cpconfig"
	"github.com/sophonz/st/internal/plain"
	"github.com/sophonz/st/internal/remote"
	"github.com/sophonz/st/internal/testutil"
)

// These tests are the holes of issue 23 (items 8, 9 and the log of
// item 11) and issue 25 (item 5, names) in the control plane: each failed
// on the code before its fix.

// TestNameTakeoverNeedsTheOldKey (issue 23, item 8): `st login --name beta
// --host host-b` from a fresh ST_HOME elsewhere, with nothing but the
// account key, took beta's slug; the real beta was signed out, and the
// next task for beta went to the impostor. A sign-in under a name in use
// by another key is refused with why, and the real beta stays signed in.
func TestNameTakeoverNeedsTheOldKey(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	cp := startCP(t, cpconfig.ServerOptions{Data: data}, "")
	key := addAccount(t, data, "acme")
	ctx := context.Background()
	beta := login(t, cp, "acme", key, "beta", "host-b")
	alpha := login(t, cp, "acme", key, "alpha", "host-a")
	if err := beta.Heartbeat(ctx, "127.0.0.1:4444", true, true); err != nil {
		t.Fatal(err)
	}

	// The impostor: another home (another key), beta's own name and host.
	_, err := remote.Login(ctx, t.TempDir(), remote.LoginOptions{URL: cp.URL(), CAFile: cp.CAFile(), Account: "acme", Key: key, Name: "beta", Host: "host-b"})
	if err == nil {
		t.Fatal("a sign-in with another key took over beta's name and host")
	}
	for _, want := range []string{"machine beta", "signed in with another key", "Try:", "--replace"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q:\n%v", want, err)
		}
	}
	// The real beta is still signed in, and alpha still finds it as it was.
	if err := beta.Heartbeat(ctx, "127.0.0.1:4444", true, true); err != nil {
		t.Errorf("the real beta after the attempt: %v", err)
	}
	m, err := alpha.Reopen(ctx, "beta")
	if err != nil {
		t.Fatal(err)
	}
	cur, _ := beta.Current()
	got, err := remote.DecodeCert([]byte(m.CertPEM))
	if err != nil || !remote.SamePublicKey(got.PublicKey, cur.Leaf.PublicKey) || m.Addr != "127.0.0.1:4444" {
		t.Errorf("alpha's access to beta after the attempt is no longer the real beta: %+v %v", m, err)
	}
	if ms, _ := alpha.Machines(ctx); slugs(ms) != "alpha,beta" {
		t.Errorf("machines after the attempt: %s", slugs(ms))
	}
}

// TestStrangersCannotFillTheNonceCache (issue 23, item 9): behind a TLS
// terminator, self-signed proofs (no account CA signed them) filled the
// control plane's nonce cache: 200,000 of them in 3.6 minutes, after
// which every account's requests were refused as replays. The
// certificate and the machine are checked before a nonce is kept, and
// nonces are kept per verified key: a stranger's proof keeps nothing, so
// a nonce a stranger sent is still new to a machine of the account.
func TestStrangersCannotFillTheNonceCache(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	cp := startCP(t, cpconfig.ServerOptions{Data: data, PlainHTTP: true}, "")
	key := addAccount(t, data, "acme")
	// Sign in over TLS (a sign-in needs https) at a second instance of
	// the same folder, then speak to the plain HTTP one with proofs.
	tlsCP := startCP(t, cpconfig.ServerOptions{Data: data}, "")
	beta := login(t, tlsCP, "acme", key, "beta", "host-b")
	tlsCP.Close()
	betaCert, err := beta.Current()
	if err != nil {
		t.Fatal(err)
	}

	// A stranger's key and a self-signed certificate that names acme/beta.
	sk, _ := remote.NewKey()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "beta"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		URIs: []*neturl.URL{remote.MachineURI("acme", "beta")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, sk.Public(), sk)
	if err != nil {
		t.Fatal(err)
	}
	send := func(signer crypto.Signer, der []byte, nonce string) int {
		code, _ := postProved(t, cp, signer, der, nonce)
		return code
	}
	newNonce := func() string {
		b := make([]byte, 16)
		rand.Read(b)
		return hex.EncodeToString(b)
	}
	// The strangers' flood: each refused.
	const flood = 2000
	var refused atomic.Int64
	var wg sync.WaitGroup
	var strangers []string
	var mu sync.Mutex
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < flood/4; i++ {
				n := newNonce()
				if send(sk, der, n) == http.StatusUnauthorized {
					refused.Add(1)
				}
				mu.Lock()
				strangers = append(strangers, n)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if refused.Load() != flood {
		t.Errorf("%d of %d self-signed proofs were taken", flood-refused.Load(), flood)
	}
	// Each of their nonces is still new to beta: none was kept.
	kept := 0
	for _, n := range strangers[:50] {
		if code := send(betaCert.PrivateKey.(crypto.Signer), betaCert.Leaf.Raw, n); code != http.StatusOK {
			kept++
		}
	}
	if kept > 0 {
		t.Errorf("%d of 50 nonces that strangers sent were kept, and refused to beta as replays", kept)
	}
	// And beta's own nonce is still taken only once.
	n := newNonce()
	if code := send(betaCert.PrivateKey.(crypto.Signer), betaCert.Leaf.Raw, n); code != http.StatusOK {
		t.Errorf("beta's heartbeat: %d", code)
	}
	if code := send(betaCert.PrivateKey.(crypto.Signer), betaCert.Leaf.Raw, n); code != http.StatusUnauthorized {
		t.Errorf("beta's heartbeat replayed: %d, want 401", code)
	}
}

// postProved posts a heartbeat to cp's handler (no network: a flood is
// fast), proved with signer and certificate der under nonce, and returns
// the answer's status and body.
func postProved(t *testing.T, cp *ControlPlane, signer crypto.Signer, der []byte, nonce string) (int, string) {
	t.Helper()
	body := []byte(`{"addr":"","accept_remote":true,"online":true}`)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	sum := sha256.Sum256(remote.ProofInput(http.MethodPost, "/v1/heartbeat", ts, nonce, body))
	sig, err := signer.Sign(rand.Reader, sum[:], crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/v1/heartbeat", bytes.NewReader(body))
	req.Header.Set(remote.HdrCert, base64.StdEncoding.EncodeToString(der))
	req.Header.Set(remote.HdrTime, ts)
	req.Header.Set(remote.HdrNonce, nonce)
	req.Header.Set(remote.HdrSig, base64.StdEncoding.EncodeToString(sig))
	rec := httptest.NewRecorder()
	cp.srv.Handler.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// TestRelayOneMachineCannotLockAnotherOut (issue 23, item 9): the limit of
// 128 streams counted each machine's streams at both ends, so one machine
// that opened 128 streams to beta locked beta out: nobody else reached
// it, and beta reached nobody. A pair of machines has a limit of its own.
func TestRelayOneMachineCannotLockAnotherOut(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	cp := startCP(t, cpconfig.ServerOptions{Data: data}, "")
	key := addAccount(t, data, "acme")
	alpha := startRelayMachine(t, cp, "acme", key, "alpha", remote.ListenOff)
	beta := startRelayMachine(t, cp, "acme", key, "beta", remote.ListenOff)
	gamma := startRelayMachine(t, cp, "acme", key, "gamma", remote.ListenOff)
	ctx := context.Background()
	// alpha holds as many streams to beta as the relay lets it.
	held, lastErr := 0, error(nil)
	for held < cpconfig.DefaultRelayStreams {
		c, err := alpha.relay.Dial(ctx, "beta")
		if err != nil {
			lastErr = err
			break
		}
		t.Cleanup(func() { c.Close() })
		held++
	}
	t.Logf("alpha holds %d streams to beta (then: %v)", held, lastErr)
	// gamma still reaches beta, and beta still reaches gamma.
	if got, err := gamma.get("beta", "/"); err != nil || got != "hello gamma" {
		t.Errorf("gamma -> beta while alpha holds %d streams to it: %q %v", held, got, err)
	}
	if got, err := beta.get("gamma", "/"); err != nil || got != "hello beta" {
		t.Errorf("beta -> gamma while alpha holds %d streams to it: %q %v", held, got, err)
	}
}

// TestRelayStreamsBeforeTheirFirstLine (issue 23, item 9): streams that
// never send their first line each kept a goroutine and a buffer of the
// control plane for 10 s; a machine that opened them by the thousand grew
// it from 30 to 212 MB in 8 s. A machine now has a few slots for streams
// that have not said where they go; past them the control plane takes no
// more of its streams (yamux keeps a backlog, then resets the rest), and
// the other machines are still reached meanwhile.
func TestRelayStreamsBeforeTheirFirstLine(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	cp := startCP(t, cpconfig.ServerOptions{Data: data}, "")
	key := addAccount(t, data, "acme")
	alpha := startRelayMachine(t, cp, "acme", key, "alpha", remote.ListenOff)
	startRelayMachine(t, cp, "acme", key, "beta", remote.ListenOff)
	gamma := startRelayMachine(t, cp, "acme", key, "gamma", remote.ListenOff)
	sess := alpha.relay.Session()
	// alpha opens 1,000 streams and writes a line that never ends on
	// each; it stops when yamux makes it wait (the other end takes no
	// more), after 3 s at most.
	const silent = 1000
	opened := make(chan net.Conn, silent)
	go func() {
		defer close(opened)
		for i := 0; i < silent; i++ {
			st, err := sess.OpenStream()
			if err != nil {
				return
			}
			st.Write([]byte(`{"to":`))
			opened <- st
		}
	}()
	var open []net.Conn
	t.Cleanup(func() {
		for _, c := range open {
			c.Close()
		}
	})
	stop := time.After(3 * time.Second)
collect:
	for {
		select {
		case c, ok := <-opened:
			if !ok {
				break collect
			}
			open = append(open, c)
		case <-stop:
			break collect
		}
	}
	// The control plane's goroutines that wait for a stream's first line:
	// one per stream before the fix.
	waiting := 0
	testutil.WaitFor(t, 5*time.Second, func() (bool, string) {
		waiting = goroutinesIn("controlplane.(*relayHub).stream(")
		return waiting >= 1 && len(open) > relayPendingMax, fmt.Sprintf("%d streams opened, %d waiting for their line", len(open), waiting)
	})
	t.Logf("alpha opened %d silent streams; the control plane waits on %d of them", len(open), waiting)
	if waiting > relayPendingMax+2 {
		t.Errorf("%d silent streams keep %d goroutines of the control plane waiting for their first line", len(open), waiting)
	}
	// Meanwhile gamma reaches beta.
	if got, err := gamma.get("beta", "/"); err != nil || got != "hello gamma" {
		t.Errorf("gamma -> beta during the flood: %q %v", got, err)
	}
}

// goroutinesIn counts the goroutines whose stack has fn.
func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) {
			count++
		}
	}
	return count
}

// TestControlPlaneLogIsPlain (issue 23, item 11): the control plane's log
// printed machine names, as machines sent them, with their terminal
// escapes: a sign-in as "\x1b]0;owned\x07" retitled the operator's
// terminal. What a machine sends is checked, and the log holds no
// control character but line breaks.
func TestControlPlaneLogIsPlain(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	cpLog := &testutil.SyncBuffer{}
	cp := startCP(t, cpconfig.ServerOptions{Data: data, Log: cpLog}, "")
	key := addAccount(t, data, "acme")
	ctx := context.Background()
	evil := "box\x1b]0;owned\x07\x1b[2J\u009b31m"
	_, err := remote.Login(ctx, t.TempDir(), remote.LoginOptions{URL: cp.URL(), CAFile: cp.CAFile(), Account: "acme", Key: key, Name: evil, Host: "h"})
	if err == nil || !strings.Contains(err.Error(), "control character") {
		t.Errorf("a sign-in with escapes in its name: %v", err)
	}
	_, err = remote.Login(ctx, t.TempDir(), remote.LoginOptions{URL: cp.URL(), CAFile: cp.CAFile(), Account: "acme", Key: key, Name: "ok", Host: evil})
	if err == nil || !strings.Contains(err.Error(), "control character") {
		t.Errorf("a sign-in with escapes in its host name: %v", err)
	}
	// The log's lines so far: every one plain.
	for i, line := range strings.Split(cpLog.String(), "\n") {
		if err := plain.Line(line); err != nil {
			t.Errorf("log line %d: %v: %q", i+1, err, line)
		}
	}
}

// TestNameFollowsItsKey (issue 25, item 5): a machine that signed in
// again under a new name (the same key) stayed listed under its old one
// as offline, and `st control-plane machine remove <old name>` then
// revoked the key the live machine still used. A name follows its
// machine's key: the machine is listed once, under its new name, and
// removing the old name is refused with why.
func TestNameFollowsItsKey(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	cp := startCP(t, cpconfig.ServerOptions{Data: data}, "")
	key := addAccount(t, data, "acme")
	ctx := context.Background()
	home := t.TempDir()
	loginAt(t, home, cp, "acme", key, "laptop", "laptop.local")
	other := login(t, cp, "acme", key, "desk", "desk")
	renamed := loginAt(t, home, cp, "acme", key, "work-laptop", "laptop.local")
	if err := renamed.Heartbeat(ctx, "", true, true); err != nil {
		t.Fatal(err)
	}
	ms, err := other.Machines(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	if got := strings.Join(names, ","); got != "desk,work-laptop" {
		t.Errorf("machines after laptop signed in again as work-laptop: %s (want desk,work-laptop)", got)
	}
	_, err = RemoveMachine(data, "acme", "laptop")
	if err == nil {
		t.Fatal("removing laptop, the old name of the live work-laptop, was taken")
	}
	for _, want := range []string{"work-laptop", "Try:", "st control-plane machine remove work-laptop"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q:\n%v", want, err)
		}
	}
	// The live machine is untouched.
	if err := renamed.Heartbeat(ctx, "", true, true); err != nil {
		t.Errorf("work-laptop after the refused removal: %v", err)
	}
}
