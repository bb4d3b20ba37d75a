package client

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/testutil"
)

// A daemon that ends while it works on a call (kill -9 during st worker
// start) is said in st's words, with what to do, never as Go's
// "unexpected EOF"; the error is no answer of st (api.Error), so a call
// that is safe to repeat is made again.
func TestDaemonStoppedMidCall(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer string // what the daemon wrote before it ended
	}{
		{"before the answer", ""},
		{"midway through the answer", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"id\":"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := testutil.ShortTempDir(t)
			ln, err := net.Listen("unix", api.SocketPath(home))
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				http.ReadRequest(bufio.NewReader(conn)) // the call, taken
				conn.Write([]byte(tc.answer))
				conn.Close() // and the daemon is gone
			}()
			err = New(home, "").Call(context.Background(), api.RouteWorkerStart, struct{}{}, &api.WorkerView{})
			var se *StoppedError
			if !errors.As(err, &se) {
				t.Fatalf("got %v (%T), want a StoppedError", err, err)
			}
			msg := err.Error()
			for _, want := range []string{"st's daemon stopped before it answered (worker start)", "\nTry: st up"} {
				if !strings.Contains(msg, want) {
					t.Errorf("the message %q lacks %q", msg, want)
				}
			}
			if strings.Contains(msg, "EOF") {
				t.Errorf("the message %q is in Go's words", msg)
			}
			var ae *api.Error
			if errors.As(err, &ae) {
				t.Errorf("a daemon gone midway came back as an answer of st (%v): no retry would make the call again", ae)
			}
		})
	}
}
