package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/guard"
	"github.com/sophonz/st/internal/testutil"
)

// startOnTmux runs a daemon on home that drives the tmux server tm.
func startOnTmux(t testing.TB, home string, tm *testutil.Tmux) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	env := map[string]string{"ST_TMUX_SOCKET": tm.Socket, "ST_WEB_PORT": "auto"}
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Home: home, STBin: "/nonexistent/st", Getenv: func(k string) string { return env[k] }})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("the daemon did not stop within 10s")
		}
	})
	sock := api.SocketPath(home)
	testutil.WaitFor(t, 15*time.Second, func() (bool, string) {
		code, _, err := postUnix(sock, api.RouteStatus)
		return err == nil && code == 200, "the daemon never answered"
	})
	return sock
}

// askGuard posts the guard's question for socket.
func askGuard(t testing.TB, sock, socket string) (int, api.GuardServer, string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	body := fmt.Sprintf(`{"socket":%q}`, socket)
	res, err := c.Post("http://st"+api.RouteGuardServer, "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var g api.GuardServer
	if res.StatusCode == 200 {
		if err := json.Unmarshal(b, &g); err != nil {
			t.Fatal(err)
		}
	}
	return res.StatusCode, g, string(b)
}

// The guard's question: st answers for the tmux server it drives (every
// pane, the server's pid and command line, as guard.ParseServer reads
// them), and refuses to answer for another, saying why, so the hook's
// guard refuses what only an answer could let through.
func TestGuardServerAnswersForItsOwnServer(t *testing.T) {
	dir := testutil.ShortTempDir(t)
	tm := newGuardTmux(t, dir, 3)
	sock := startOnTmux(t, filepath.Join(dir, "home"), tm)

	code, g, body := askGuard(t, sock, tm.Socket)
	if code != 200 {
		t.Fatalf("st's own server: %d %s", code, body)
	}
	srv, err := guard.ParseServer(g.Panes)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := tm.Run("list-panes", "-a", "-F", "#{pane_id}")
	var got []string
	for _, p := range srv.Panes {
		got = append(got, p.ID)
		if p.SessionName != "solo" {
			t.Errorf("pane %s is in session %q, want solo", p.ID, p.SessionName)
		}
	}
	sort.Strings(got)
	if w := strings.Fields(want); strings.Join(got, " ") != strings.Join(sortedCopy(w), " ") {
		t.Errorf("panes %v, want %v", got, w)
	}
	pid, _ := tm.Run("display-message", "-p", "#{pid}")
	if fmt.Sprint(srv.Pid) != strings.TrimSpace(pid) || !strings.Contains(g.Args, "tmux") {
		t.Errorf("server pid %d args %q, want %s and tmux's command line", srv.Pid, g.Args, strings.TrimSpace(pid))
	}

	other := filepath.Join(dir, "tmux-other", "default")
	if code, _, body := askGuard(t, sock, other); code == 200 || !strings.Contains(body, "cannot tell what that one holds") {
		t.Errorf("another server: %d %s, want a refusal that says st cannot tell", code, body)
	}
}

// newGuardTmux is a tmux server with a session solo of n windows.
func newGuardTmux(t testing.TB, dir string, n int) *testutil.Tmux {
	t.Helper()
	tm := testutil.NewTmux(t, dir)
	if err := os.MkdirAll(filepath.Dir(tm.Socket), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := tm.Run("-f", "/dev/null", "new-session", "-d", "-s", "solo", "sleep 600"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < n; i++ {
		if _, err := tm.Run("new-window", "-d", "-t", "solo:", "sleep 600"); err != nil {
			t.Fatal(err)
		}
	}
	return tm
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}

// BenchmarkGuardServer prints what the guard's question costs the hook,
// which asks it only for a kill of a session, window, pane or pid: the
// median of 30 asks of st about a server of 20 panes, as a ratio to a
// floor measured in the same run (starting the program `true`).
//
//	go test -run '^$' -bench GuardServer -benchtime 1x ./internal/daemon/
func BenchmarkGuardServer(b *testing.B) {
	dir := testutil.ShortTempDir(b)
	tm := newGuardTmux(b, dir, 20)
	sock := startOnTmux(b, filepath.Join(dir, "home"), tm)
	timeOf := func(fn func()) time.Duration {
		var ds []time.Duration
		for i := 0; i < 30; i++ {
			t0 := time.Now()
			fn()
			ds = append(ds, time.Since(t0))
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	floor := timeOf(func() { exec.Command("true").Run() })
	ask := timeOf(func() {
		if code, _, body := askGuard(b, sock, tm.Socket); code != 200 {
			b.Fatal(body)
		}
	})
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(ask), "ask_ms")
	fmt.Printf("the guard asking st about its server (20 panes): median %.2f ms, %.1fx the floor (starting `true`, %.2f ms)\n",
		ms(ask), float64(ask)/float64(floor), ms(floor))
	fmt.Printf("FIGURE guard_ask_st %.2f ms\n", ms(ask))
}
