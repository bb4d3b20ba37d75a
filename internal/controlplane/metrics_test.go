package controlplane

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sophonz/st/internal/controlplane/cpserver"
	"github.com/sophonz/st/internal/cpconfig"
	"github.com/sophonz/st/internal/remote"
)

// TestMetricsRefused: metrics on an address that is not loopback are
// refused, and so are they in a program without the meter (st: the
// metrics are st-control-plane's) rather than served empty.
func TestMetricsRefused(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:9464", "[::]:0", "example.net:9464"} {
		if _, err := StartControlPlane(cpconfig.ServerOptions{Data: t.TempDir(), MetricsAddr: addr, Meter: cpserver.NewMeter()}, "127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "only on a loopback address") {
			t.Errorf("metrics on %s: %v", addr, err)
		}
	}
	if _, err := StartControlPlane(cpconfig.ServerOptions{Data: t.TempDir(), MetricsAddr: "127.0.0.1:0"}, "127.0.0.1:0"); err == nil ||
		!strings.Contains(err.Error(), "does not serve the control plane's metrics") {
		t.Errorf("metrics with no meter: %v", err)
	}
}

// TestMetrics: /metrics is served only on its own loopback listener, in
// Prometheus's text format, with requests, heartbeats, relay streams and
// bytes per account; the control plane's own port, which every machine
// and the network reach, does not serve it. A non-loopback address is
// refused (TestMetricsRefused). Nothing in it names a machine or holds a
// secret.
func TestMetrics(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	cp := startCP(t, cpconfig.ServerOptions{Data: data, MetricsAddr: "127.0.0.1:0"}, "")
	if cp.MetricsURL() == "" || !strings.HasPrefix(cp.MetricsURL(), "http://127.0.0.1:") {
		t.Fatalf("metrics URL %q", cp.MetricsURL())
	}
	key := addAccount(t, data, "acme")
	other := addAccount(t, data, "other")
	alpha := startRelayMachine(t, cp, "acme", key, "alpha-box", remote.ListenOff)
	startRelayMachine(t, cp, "acme", key, "beta-box", remote.ListenOff)
	lone := login(t, cp, "other", other, "lone-box", "lone-box")
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if err := lone.Heartbeat(ctx, "", false, true); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := alpha.get("beta-box", "/"); err != nil || got != "hello alpha-box" {
		t.Fatalf("alpha -> beta: %q %v", got, err)
	}
	// A stranger's sign-in under a made-up account is counted, but not
	// under its name.
	remote.Login(ctx, t.TempDir(), remote.LoginOptions{URL: cp.URL(), CAFile: cp.CAFile(), Account: "made-up-by-a-stranger", Key: "stk_x", Name: "x", Host: "x"})

	// The control plane's own port has no /metrics.
	c := remote.CPClient(nil, nil)
	c.Transport.(*http.Transport).TLSClientConfig.InsecureSkipVerify = true
	res, err := c.Get(cp.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("/metrics on the control plane's port: %s", res.Status)
	}
	// The metrics listener serves nothing but /metrics.
	if res, err := http.Get(strings.TrimSuffix(cp.MetricsURL(), "/metrics") + "/v1/machines"); err != nil || res.StatusCode != http.StatusNotFound {
		t.Errorf("/v1/machines on the metrics listener: %v %v", res, err)
	}

	alpha.net.CloseIdleConnections() // the stream ends: its bytes are counted
	var text string
	var fams map[string]*dtoFamily
	waitMetrics(t, cp, func(fs map[string]*dtoFamily, raw string) bool {
		fams, text = fs, raw
		return value(fs, "st_cp_relay_bytes_total", "account", "acme") > 0
	})
	for _, c := range []struct {
		name, label, value string
		min                float64
	}{
		{"st_cp_heartbeats_total", "account", "other", 3},
		{"st_cp_heartbeats_total", "account", "acme", 2},
		{"st_cp_relay_connections", "account", "acme", 2},
		{"st_cp_relay_streams_total", "account", "acme", 1},
		{"st_cp_relay_bytes_total", "account", "acme", 1000}, // a TLS handshake at least
		{"st_cp_machines", "account", "acme", 2},
		{"st_cp_requests_total", "account", "", 1}, // the stranger's sign-in
	} {
		if v := value(fams, c.name, c.label, c.value); v < c.min {
			t.Errorf("%s{%s=%q} = %v, want at least %v", c.name, c.label, c.value, v, c.min)
		}
	}
	for _, never := range []string{"made-up-by-a-stranger", "alpha-box", "beta-box", "lone-box", key, other, hashKey(key), "CERTIFICATE", "PRIVATE"} {
		if strings.Contains(text, never) {
			t.Errorf("/metrics holds %q", never)
		}
	}
}

type dtoFamily = map[string]float64 // label value -> value, for one label

// waitMetrics scrapes /metrics until ok says so.
func waitMetrics(t *testing.T, cp *ControlPlane, ok func(map[string]*dtoFamily, string) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := http.Get(cp.MetricsURL())
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		p := expfmt.NewTextParser(model.UTF8Validation)
		parsed, err := p.TextToMetricFamilies(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("/metrics is not the text format: %v\n%s", err, raw)
		}
		fams := map[string]*dtoFamily{}
		for name, f := range parsed {
			m := dtoFamily{}
			for _, metric := range f.Metric {
				lv := ""
				for _, l := range metric.Label {
					if l.GetName() == "account" {
						lv = l.GetValue()
					}
				}
				switch {
				case metric.Counter != nil:
					m[lv] += metric.Counter.GetValue()
				case metric.Gauge != nil:
					m[lv] += metric.Gauge.GetValue()
				}
			}
			fams[name] = &m
		}
		if ok(fams, string(raw)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the metrics never showed what was asked:\n%s", raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func value(fams map[string]*dtoFamily, name, label, v string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	return (*f)[v]
}

// TestNoncesPerKey: a machine that sends more requests in a proof's
// window than its key may have nonces is refused, and only it: another
// machine of the account still passes.
func TestNoncesPerKey(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	cp := startCP(t, cpconfig.ServerOptions{Data: data, PlainHTTP: true}, "")
	key := addAccount(t, data, "acme")
	tlsCP := startCP(t, cpconfig.ServerOptions{Data: data}, "")
	noisy := login(t, tlsCP, "acme", key, "noisy", "noisy")
	quiet := login(t, tlsCP, "acme", key, "quiet", "quiet")
	tlsCP.Close()
	send := func(id *remote.Identity) (int, string) {
		cert, _ := id.Current()
		nonce := make([]byte, 16)
		rand.Read(nonce)
		return postProved(t, cp, cert.PrivateKey.(crypto.Signer), cert.Leaf.Raw, hex.EncodeToString(nonce))
	}
	for i := 0; i < maxNoncesPerKey; i++ {
		if code, msg := send(noisy); code != http.StatusOK {
			t.Fatalf("request %d of noisy: %d %s", i, code, msg)
		}
	}
	if code, msg := send(noisy); code != http.StatusUnauthorized || !strings.Contains(msg, "sent over 2048 requests") {
		t.Errorf("noisy over its bound: %d %s", code, msg)
	}
	if code, msg := send(quiet); code != http.StatusOK {
		t.Errorf("quiet while noisy is over its bound: %d %s", code, msg)
	}
}

// TestNonceCacheForgets: a key keeps only the nonces whose proofs could
// still be fresh, and a key with none left is dropped, so a machine's
// nonces take a few minutes' worth of memory, not a day's.
func TestNonceCacheForgets(t *testing.T) {
	var c nonceCache
	t0 := time.Now()
	for i := 0; i < 100; i++ {
		if err := c.take("k1", fmt.Sprint("n", i), t0, t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.take("k1", "n5", t0, t0); err == nil {
		t.Error("a nonce taken twice")
	}
	// Past their freshness, the first 100 go at the next request.
	later := t0.Add(remote.Skew + 2*time.Second)
	if err := c.take("k1", "fresh", later, later); err != nil {
		t.Fatal(err)
	}
	if n := len(c.keys["k1"].seen); n != 1 {
		t.Errorf("k1 keeps %d nonces, want 1", n)
	}
	// A key that sends nothing more is dropped within a minute of its
	// last nonce's end.
	end := later.Add(remote.Skew + 2*time.Second + time.Minute)
	if err := c.take("k2", "x", end, end); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.keys["k1"]; ok {
		t.Error("k1, silent since, is still kept")
	}
}
