package daemon

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
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
