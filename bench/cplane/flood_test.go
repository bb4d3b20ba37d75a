package cplane

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/yamux"

	"github.com/sophonz/st/bench/benchfig"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/testutil"
)

// BenchmarkRelayFlood floods the relay from one machine of the account
// (issue 23, item 9), before the fix and after it, in the same run: alpha
// holds as many streams to beta as the relay gives it, then for 8 s opens
// streams that never send their first line, as fast as it can. Meanwhile
// gamma relays starts to beta (the victim), and beta to gamma. Figures:
// the control plane's memory (VmRSS before, VmHWM after), the streams
// alpha got, and the victim's start time during the flood as a ratio to
// the same starts just before it, with how many failed.
func BenchmarkRelayFlood(b *testing.B) {
	after, before := testutil.BuildST(b), beforeST(b)
	b.ResetTimer()
	for _, v := range []struct{ name, bin string }{{"before", before}, {"after", after}} {
		r := runFlood(b, v.bin)
		fmt.Printf("%s: %s\n", v.name, r)
		name := "relay_flood_" + v.name
		benchfig.Figure(b, name+"_rss_before", r.rss0, "MiB")
		benchfig.Ratio(b, name+"_hwm", r.hwm, r.rss0, "MiB")
		benchfig.Figure(b, name+"_held_to_victim", float64(r.held), "n")
		benchfig.Figure(b, name+"_silent_opened", float64(r.silent), "n")
		benchfig.Ratio(b, name+"_victim_start", benchfig.Ms(r.during.Pct(50)), benchfig.Ms(r.calm.Pct(50)), "ms")
		benchfig.Figure(b, name+"_victim_starts_failed", float64(r.duringFailed), "n")
		benchfig.Figure(b, name+"_victim_own_starts_failed", float64(r.ownFailed), "n")
	}
	b.StopTimer()
}

type floodResult struct {
	rss0, hwm, rss1           float64
	held, silent              int
	calm, during              stats
	duringFailed, ownFailed   int64
	duringErr, ownErr, silErr string
}

func (r floodResult) String() string {
	return fmt.Sprintf("RSS %.1f MiB before, peak %.1f MiB, %.1f after; alpha held %d streams to beta and opened %d silent ones (%s); gamma -> beta starts: median %.1f ms calm, %.1f ms during the flood, %d of %d failed %s; beta -> gamma: %d failed %s",
		r.rss0, r.hwm, r.rss1, r.held, r.silent, r.silErr, benchfig.Ms(r.calm.Pct(50)), benchfig.Ms(r.during.Pct(50)), r.duringFailed, len(r.during), r.duringErr, r.ownFailed, r.ownErr)
}

// runFlood runs one control plane with bin and three machines.
func runFlood(b *testing.B, bin string) floodResult {
	dir, err := os.MkdirTemp("", "st-cp-flood")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	p := startCP(b, bin, dir)
	defer p.stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ms := map[string]*simMachine{}
	for _, name := range []string{"alpha", "beta", "gamma"} {
		m, err := signIn(ctx, p, dir, name)
		if err != nil {
			b.Fatal(err)
		}
		// alpha's relay connection is the attacker's own (rawRelay): a
		// second one of alpha's would replace it.
		if name != "alpha" {
			m.connect()
			if err := m.serve(); err != nil {
				b.Fatal(err)
			}
		}
		defer m.close()
		ms[name] = m
	}
	waitRelays(b, []*simMachine{ms["beta"], ms["gamma"]})
	for _, m := range ms {
		m.id.Heartbeat(ctx, "", true, true)
	}
	ms["gamma"].id.Access(ctx, "beta")
	ms["beta"].id.Access(ctx, "gamma")
	var r floodResult
	calm := startsTo(ctx, ms["gamma"], "beta", 20)
	r.calm = calm.stats()
	r.rss0, _ = p.mem()

	sess := rawRelay(b, ctx, p, filepath.Join(dir, "alpha"))
	defer sess.Close()
	var kept []io.Closer
	defer func() {
		for _, c := range kept {
			c.Close()
		}
	}()
	r.held, kept = holdStreams(sess, "beta", 128, kept)
	flood := make(chan struct{})
	go func() {
		defer close(flood)
		r.silent, r.silErr, kept = silentStreams(sess, 8*time.Second, kept)
	}()
	time.Sleep(time.Second) // the flood under way
	during := startsTo(ctx, ms["gamma"], "beta", 20)
	own := startsTo(ctx, ms["beta"], "gamma", 5)
	<-flood
	r.during, r.duringFailed, r.duringErr = during.stats(), during.failed.Load(), during.firstErr()
	r.ownFailed, r.ownErr = own.failed.Load(), own.firstErr()
	r.rss1, r.hwm = p.mem()
	return r
}

// startsTo relays n starts from m to slug, one after another, each on a
// new connection, and times them.
func startsTo(ctx context.Context, m *simMachine, slug string, n int) *sample {
	s := &sample{}
	for i := 0; i < n; i++ {
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		d, err := m.post(c, slug, api.PeerPrefix+"start", startBody)
		cancel()
		s.add(d, err)
	}
	return s
}

// rawRelay is alpha's own relay connection, driven by hand as an
// attacker with alpha's key would: the websocket and yamux st's relay
// client uses, with streams it opens as it likes.
func rawRelay(b *testing.B, ctx context.Context, p *cpProc, home string) *yamux.Session {
	cert, err := tls.LoadX509KeyPair(filepath.Join(home, "machine.crt"), filepath.Join(home, "machine.key"))
	if err != nil {
		b.Fatal(err)
	}
	caPEM, err := os.ReadFile(p.ca)
	if err != nil {
		b.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool}}}
	c, _, err := websocket.Dial(ctx, "wss"+strings.TrimPrefix(p.url, "https")+"/v1/relay", &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		b.Fatalf("alpha's raw relay connection: %v", err)
	}
	conf := yamux.DefaultConfig()
	conf.LogOutput = io.Discard
	sess, err := yamux.Client(websocket.NetConn(ctx, c, websocket.MessageBinary), conf)
	if err != nil {
		b.Fatal(err)
	}
	return sess
}

// holdStreams opens up to max streams to slug that the relay splices,
// and keeps them open; it stops at the first refusal.
func holdStreams(sess *yamux.Session, slug string, max int, kept []io.Closer) (int, []io.Closer) {
	held := 0
	for held < max {
		st, err := sess.OpenStream()
		if err != nil {
			break
		}
		fmt.Fprintf(st, `{"to":%q}`+"\n", slug)
		st.SetReadDeadline(time.Now().Add(10 * time.Second))
		line, err := bufio.NewReader(st).ReadString('\n')
		var rep struct {
			OK bool `json:"ok"`
		}
		if err != nil || json.Unmarshal([]byte(line), &rep) != nil || !rep.OK {
			st.Close()
			break
		}
		st.SetReadDeadline(time.Time{})
		kept = append(kept, st)
		held++
	}
	return held, kept
}

// silentStreams opens streams that never end their first line, as fast
// as it can for d, and keeps them open.
func silentStreams(sess *yamux.Session, d time.Duration, kept []io.Closer) (int, string, []io.Closer) {
	n := 0
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		st, err := sess.OpenStream()
		if err != nil {
			return n, err.Error(), kept
		}
		st.Write([]byte(`{"to":`))
		kept = append(kept, st)
		n++
	}
	return n, "", kept
}
