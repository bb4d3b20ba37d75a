package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"testing"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/testutil"
)

// OnDown is called once, on the first call that finds no daemon; when it
// starts one, that call is made again and answers; when it declines,
// each call gets its own error, and a daemon that comes later answers.
func TestOnDown(t *testing.T) {
	home := testutil.ShortTempDir(t)
	var lastServer *http.Server
	serve := func() {
		ln, err := net.Listen("unix", api.SocketPath(home))
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"pid":42}`)) })}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		lastServer = srv
	}

	c := New(home, "")
	calls := 0
	c.OnDown = func(ctx context.Context, cause error) error {
		calls++
		if !errors.Is(cause, ErrDown) {
			t.Errorf("OnDown got %v, want a DownError", cause)
		}
		serve()
		return nil
	}
	if s, err := c.Status(context.Background()); err != nil || s.PID != 42 || calls != 1 {
		t.Fatalf("status after OnDown started the daemon: %+v %v, %d calls", s, err, calls)
	}

	home = testutil.ShortTempDir(t)
	c = New(home, "")
	declined := errors.New("not here")
	calls = 0
	c.OnDown = func(context.Context, error) error { calls++; return declined }
	if _, err := c.Status(context.Background()); !errors.Is(err, declined) {
		t.Fatalf("first call: %v, want OnDown's error", err)
	}
	if _, err := c.Status(context.Background()); !errors.Is(err, ErrDown) || calls != 1 {
		t.Fatalf("second call: %v after %d OnDown calls, want its own DownError and one call", err, calls)
	}
	serve()
	if s, err := c.Status(context.Background()); err != nil || s.PID != 42 {
		t.Fatalf("a daemon that came later: %+v %v", s, err)
	}

	// A client that reached its daemon and lost it does not start one.
	home = testutil.ShortTempDir(t)
	c = New(home, "")
	calls = 0
	c.OnDown = func(context.Context, error) error { calls++; return nil }
	serve()
	srv := lastServer
	if _, err := c.Status(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	os.Remove(api.SocketPath(home))
	if _, err := c.Status(context.Background()); !errors.Is(err, ErrDown) || calls != 0 {
		t.Fatalf("after losing its daemon: %v, %d OnDown calls, want its DownError and none", err, calls)
	}
}
