package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/controlplane"
	_ "github.com/sophonz/st/internal/controlplane/cpserver" // the SQLite driver, as st-control-plane links it
	"github.com/sophonz/st/internal/cpconfig"
	"github.com/sophonz/st/internal/remote"
	"github.com/sophonz/st/internal/testutil"
)

// TestPeerRequestDuringStartUp (issue 24, item 4): the daemon served
// other machines (through the relay, before its heartbeat gave anyone an
// address) before its manager existed, and set the manager later without
// a lock: a peer request in that window reached a nil manager (a panic
// the HTTP server turned into a dropped connection) and raced. The
// manager's start is held back here by a tmux server stopped with
// SIGSTOP (a busy one), and another machine asks meanwhile: its request
// must wait for the manager and get a true answer. Under -race.
func TestPeerRequestDuringStartUp(t *testing.T) {
	dir := testutil.ShortTempDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	homeA, homeB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	ids := signedIn(t, ctx, filepath.Join(dir, "cp"), map[string]string{"alpha": homeA, "beta": homeB})
	alpha, beta := ids["alpha"], ids["beta"]

	// alpha's tmux server, stopped: its st waits for it as it starts.
	tm := testutil.NewTmux(t, filepath.Join(dir, "t"))
	os.MkdirAll(filepath.Dir(tm.Socket), 0o700)
	if _, err := tm.Run("-f", "/dev/null", "new-session", "-d", "-s", "main", "sh"); err != nil {
		t.Fatal(err)
	}
	out, _ := tm.Run("display-message", "-p", "#{pid}")
	pid, _ := strconv.Atoi(strings.TrimSpace(out))
	if pid <= 1 {
		t.Fatalf("tmux pid %q", out)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			syscall.Kill(pid, syscall.SIGCONT)
			resumed = true
		}
	}
	defer resume()

	env := map[string]string{"ST_TMUX_SOCKET": tm.Socket, "ST_WEB_PORT": "auto", "ST_PEER_LISTEN": "off", "ST_HEARTBEAT": "1s"}
	dctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(dctx, Options{Home: homeA, STBin: "/nonexistent/st", Log: io.Discard, Getenv: func(k string) string { return env[k] }})
	}()
	defer func() {
		resume()
		stop()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Errorf("alpha's st did not stop")
		}
	}()

	// beta asks alpha through the relay as soon as alpha's relay is there.
	relay := beta.StartRelay(nil)
	defer relay.Close()
	client := remote.NewNet(beta, relay, nil).Client(alpha.Slug)
	body, _ := jsonBody(api.IDRequest{ID: "%0"})
	var code int
	var answer string
	testutil.WaitFor(t, time.Minute, func() (bool, string) {
		rctx, rcancel := context.WithTimeout(ctx, 40*time.Second)
		defer rcancel()
		req, _ := http.NewRequestWithContext(rctx, http.MethodPost, "https://"+alpha.Slug+api.PeerPrefix+api.PeerRoutePane, bytes.NewReader(body))
		// The manager cannot exist until tmux answers: let it, once the
		// request is on its way.
		go func() { time.Sleep(2 * time.Second); syscall.Kill(pid, syscall.SIGCONT) }()
		res, err := client.Do(req)
		if err != nil {
			if strings.Contains(err.Error(), "offline") || strings.Contains(err.Error(), "not connected") {
				return false, "alpha's relay is not up yet: " + err.Error()
			}
			code, answer = -1, err.Error()
			return true, ""
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		code, answer = res.StatusCode, string(b)
		return true, ""
	})
	// The refusal is authz's, from the manager's facts (CoordinatesFor):
	// an answer only a manager that exists can give.
	if code != http.StatusForbidden || !strings.Contains(answer, "is not a coordinator of workers on "+beta.Slug) {
		t.Errorf("beta's question while alpha's st started: %d %s, want alpha's refusal from its manager's facts (403, not a coordinator of beta's workers)", code, answer)
	}
}

// signedIn starts a control plane with its data in data and an account,
// and signs in a machine of it at each home (name -> home).
func signedIn(t *testing.T, ctx context.Context, data string, homes map[string]string) map[string]*remote.Identity {
	t.Helper()
	cp, err := controlplane.StartControlPlane(cpconfig.ServerOptions{Data: data}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cp.Close() })
	key, err := controlplane.AddAccount(data, "acme")
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]*remote.Identity{}
	for name, home := range homes {
		id, err := remote.Login(ctx, home, remote.LoginOptions{URL: cp.URL(), CAFile: cp.CAFile(), Account: "acme", Key: key, Name: name, Host: name})
		if err != nil {
			t.Fatalf("login %s: %v", name, err)
		}
		ids[name] = id
	}
	return ids
}

func jsonBody(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return b, nil
}
