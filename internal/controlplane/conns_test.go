package controlplane

import (
	"bufio"
	"context"
	"io"
	"log"
	"net/http"
	"testing"
	"time"

	"github.com/sophonz/st/internal/cpconfig"
	"github.com/sophonz/st/internal/remote"
)

// holdingMachine is machine mac of account acme whose peer server's
// /hold answers a line and holds the request open until it ends; it
// returns mac, its Net and its direct address ("" relayed).
func holdingMachine(t *testing.T, cp *ControlPlane, key, listen string) (*remote.Identity, *remote.Net, string) {
	t.Helper()
	mac := login(t, cp, "acme", key, "mac", "mac")
	relay := mac.StartRelay(t.Logf)
	t.Cleanup(relay.Close)
	n := remote.NewNet(mac, relay, t.Logf)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := relay.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	ln, err := n.Listen(listen)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := n.PeerOf(r); !ok {
			http.Error(w, "refused", http.StatusForbidden)
			return
		}
		io.WriteString(w, "held\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}), ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	addr := ""
	if listen != remote.ListenOff {
		addr = ln.Addr().String()
	}
	if err := mac.Heartbeat(ctx, addr, true, true); err != nil {
		t.Fatal(err)
	}
	return mac, n, addr
}

// TestRevokedConnectionsClose (issue 23, item 3): a connection a machine
// had open before its key was revoked (it was removed, or signed out) (a long request in flight, as a web
// terminal or a watch is) went on after the heartbeat that told; only new
// requests were refused. CloseRevoked, which the daemon runs at each
// heartbeat, ends it, directly and through the relay; a machine still in
// the account keeps its connections.
func TestRevokedConnectionsClose(t *testing.T) {
	for _, way := range []string{"direct", "relayed"} {
		t.Run(way, func(t *testing.T) { revokedConnectionsClose(t, way) })
	}
}

func revokedConnectionsClose(t *testing.T, way string) {
	data := t.TempDir()
	cp := startCP(t, cpconfig.ServerOptions{Data: data}, "")
	key := addAccount(t, data, "acme")
	listen := "127.0.0.1:0"
	if way == "relayed" {
		listen = remote.ListenOff
	}
	mac, n, addr := holdingMachine(t, cp, key, listen)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	laptop := runRelayMachine(t, login(t, cp, "acme", key, "laptop", "laptop"), listen)
	desk := runRelayMachine(t, login(t, cp, "acme", key, "desk", "desk"), listen)
	tablet := runRelayMachine(t, login(t, cp, "acme", key, "tablet", "tablet"), listen)
	hold := func(m *relayMachine) *bufio.Reader {
		t.Helper()
		res, err := m.net.Client("mac").Get("https://mac/hold")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		br := bufio.NewReader(res.Body)
		if line, err := br.ReadString('\n'); err != nil || line != "held\n" {
			t.Fatalf("%s: %q %v", m.id.Slug, line, err)
		}
		return br
	}
	lost, kept, quit := hold(laptop), hold(desk), hold(tablet)
	if got := n.CloseRevoked(); got != 0 {
		t.Fatalf("CloseRevoked closed %d connections with no machine revoked", got)
	}
	// laptop is removed at the control plane; tablet signs out itself.
	if _, err := RemoveMachine(data, "acme", "laptop"); err != nil {
		t.Fatal(err)
	}
	if err := remote.Logout(ctx, tablet.id.Home()); err != nil {
		t.Fatal(err)
	}
	if err := mac.Heartbeat(ctx, addr, true, true); err != nil {
		t.Fatal(err)
	}
	if got := n.CloseRevoked(); got < 2 {
		t.Fatalf("CloseRevoked after laptop's removal and tablet's sign-out closed %d connections", got)
	}
	end := func(br *bufio.Reader) chan error {
		ch := make(chan error, 1)
		go func() {
			_, err := br.ReadByte()
			ch <- err
		}()
		return ch
	}
	lostEnd, keptEnd, quitEnd := end(lost), end(kept), end(quit)
	for who, ch := range map[string]chan error{"the removed laptop's": lostEnd, "the signed-out tablet's": quitEnd} {
		select {
		case err := <-ch:
			if err == nil {
				t.Fatalf("%s held request went on", who)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s request is still open 30s after CloseRevoked", who)
		}
	}
	select {
	case err := <-keptEnd:
		t.Fatalf("desk's request ended too (%v): only the revoked machine's go", err)
	case <-time.After(500 * time.Millisecond):
	}
}
