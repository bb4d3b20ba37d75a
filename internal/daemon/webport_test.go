package daemon

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sophonz/st/internal/web"
)

// holdPort listens on a free port of 127.0.0.1 for the test's length: the
// test's own "default" port, taken by someone else.
func holdPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

func portOf(wl webListener) int { return wl.ln.Addr().(*net.TCPAddr).Port }

// The default port gives way to a free one, which st keeps in
// $ST_HOME/web.port and takes first next time; once the kept port is
// taken too and the default is free, st is back on the default and
// forgets the kept one. A port set on purpose that is taken is an error
// that says what to do.
func TestWebPortFallback(t *testing.T) {
	home := t.TempDir()
	kept := filepath.Join(home, "web.port")
	held := holdPort(t)
	cfg := Config{WebPort: held} // the default, not set on purpose

	wl := listenWeb(home, cfg)
	if wl.err != nil {
		t.Fatalf("default taken: %s", wl.err.Message)
	}
	got := portOf(wl)
	if got == held || !strings.Contains(wl.note, strconv.Itoa(held)+" was taken") {
		t.Fatalf("default taken: listening on %d (held %d), note %q", got, held, wl.note)
	}
	if b, err := os.ReadFile(kept); err != nil || string(b) != strconv.Itoa(got)+"\n" {
		t.Fatalf("web.port holds %q (%v), want %d", b, err, got)
	}
	wl.ln.Close()

	// The next start takes the kept port first.
	wl = listenWeb(home, cfg)
	if wl.err != nil || portOf(wl) != got || !strings.Contains(wl.note, "kept in "+kept) {
		t.Fatalf("next start: %+v, want the kept port %d", wl, got)
	}
	wl.ln.Close()

	// A port set on purpose that is taken: no listener, and what to do.
	set := Config{WebPort: held, WebPortSet: true}
	wl = listenWeb(home, set)
	if wl.ln != nil || wl.err == nil || !strings.Contains(wl.err.Message, strconv.Itoa(held)) || !strings.Contains(wl.err.Hint, "web_port") {
		t.Fatalf("set port taken: %+v", wl)
	}

	// The kept port is taken and the default is free: back on the
	// default, and the kept port forgotten.
	os.WriteFile(kept, []byte(strconv.Itoa(held)+"\n"), 0o600)
	spare, _ := net.Listen("tcp", "127.0.0.1:0")
	def := spare.Addr().(*net.TCPAddr).Port
	spare.Close()
	wl = listenWeb(home, Config{WebPort: def})
	if wl.err != nil || wl.note != "" || portOf(wl) != def {
		t.Fatalf("kept port taken, default free: %+v", wl)
	}
	wl.ln.Close()
	if _, err := os.Stat(kept); !os.IsNotExist(err) {
		t.Errorf("web.port is still there once st is on its default port: %v", err)
	}
}

// The web UI's links are made for a port (web.LinkToken). The secret
// they are made from is kept with that port; when st's web UI comes up on
// another port, the secret is made anew, so that no link made before
// opens st anywhere: not where st is now, and not on the old port either,
// should st come back to it after another program there got one.
func TestWebSecretFollowsThePort(t *testing.T) {
	home := t.TempDir()
	var log strings.Builder
	ws, err := loadWebSecret(home)
	if err != nil || len(ws.secret) < 32 || ws.port != 0 {
		t.Fatalf("a new secret: %+v %v", ws, err)
	}
	first, moved, err := ws.forPort(home, 7766, &log)
	if err != nil || moved != 0 || first.secret != ws.secret || first.port != 7766 {
		t.Fatalf("the first port: %+v moved %d %v", first, moved, err)
	}
	// Kept across restarts on that port: the printed link still works.
	again, _ := loadWebSecret(home)
	if again != first {
		t.Fatalf("after a restart: %+v, want %+v", again, first)
	}
	if same, moved, _ := again.forPort(home, 7766, &log); same != first || moved != 0 {
		t.Fatalf("the same port again: %+v moved %d", same, moved)
	}
	oldLink := web.LinkToken(first.secret, 7766)

	// st moves: a new secret, and the port it moved from.
	second, moved, err := again.forPort(home, 40123, &log)
	if err != nil || moved != 7766 || second.secret == first.secret || second.port != 40123 {
		t.Fatalf("moved: %+v moved %d %v", second, moved, err)
	}
	if kept, _ := loadWebSecret(home); kept != second {
		t.Fatalf("the new secret is not kept: %+v", kept)
	}
	// Back on 7766: the link made for it before opens nothing there.
	third, moved, _ := second.forPort(home, 7766, &log)
	if moved != 40123 || web.LinkToken(third.secret, 7766) == oldLink {
		t.Fatalf("back on 7766: moved %d, and the old link works: %v", moved, web.LinkToken(third.secret, 7766) == oldLink)
	}
	// A secret an older st kept (no port): taken for the port st is on.
	os.WriteFile(filepath.Join(home, "web.token"), []byte(first.secret+"\n"), 0o600)
	old, _ := loadWebSecret(home)
	if got, moved, _ := old.forPort(home, 9999, &log); got.secret != first.secret || moved != 0 || got.port != 9999 {
		t.Fatalf("an older st's secret: %+v moved %d", got, moved)
	}
	if fi, _ := os.Stat(filepath.Join(home, "web.token")); fi.Mode().Perm() != 0o600 {
		t.Errorf("web.token mode %v", fi.Mode())
	}
}
