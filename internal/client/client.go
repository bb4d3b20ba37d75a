// Package client is the typed client of the st daemon's API, spoken as
// HTTP over the unix socket $ST_HOME/st.sock. Errors that the daemon
// sends as {kind, error, hint} come back as *api.Error, so the CLI can
// print what went wrong and what to do.
package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/tmuxenv"
)

// ErrDown means no daemon answers on the socket.
var ErrDown = errors.New("st is not running")

// DownError says that the daemon is down and how to start it.
type DownError struct {
	Socket string
	Cause  error
}

func (e *DownError) Error() string {
	return fmt.Sprintf("st is not running (nothing answers on %s)\nTry: st up", e.Socket)
}

func (e *DownError) Unwrap() error { return ErrDown }

// StoppedError says that the daemon went away after it took a call and
// before it answered (killed, crashed, st down meanwhile): whether what
// was asked happened is not known here. It is not an answer of st, so a
// call that is safe to make again is (cli's keepTrying).
type StoppedError struct {
	Route string // the call, as api.Route*
	Cause error
}

func (e *StoppedError) Error() string {
	return fmt.Sprintf("st's daemon stopped before it answered (%s): what was asked may or may not have been done\n"+
		"Try: st up (any st command starts it again); st then settles what was under way, and st worker list shows where each worker stands", e.what())
}

// what names the call in words: /v1/worker/start is "worker start".
func (e *StoppedError) what() string {
	return strings.ReplaceAll(strings.TrimPrefix(strings.TrimPrefix(e.Route, "/"), "v1/"), "/", " ")
}

func (e *StoppedError) Unwrap() error { return e.Cause }

// stopped tells a connection that the daemon ended midway (it closed or
// reset the connection before its answer was whole) from other failures.
func stopped(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// Client talks to one daemon.
type Client struct {
	Socket string
	// Tmux is the caller's $TMUX, sent so the daemon can refuse a pane of
	// another tmux server.
	Tmux string
	// OnDown, when set, is called the first time a call finds no daemon,
	// with that call's error: it may start the daemon (and return nil, so
	// that the call is made again) or return an error for the call. It
	// is called once per Client, and never once a daemon has answered: a
	// command that loses its daemon midway (st down, a restart) waits for
	// it to come back rather than start another.
	OnDown  func(ctx context.Context, cause error) error
	hc      *http.Client
	once    sync.Once
	started bool // OnDown started the daemon
	reached atomic.Bool
}

// New returns a client of the daemon of home, over its unix socket.
func New(home, tmuxEnv string) *Client { return NewHTTP(home, tmuxEnv, nil) }

// NewHTTP returns a client of the daemon of home whose requests go out
// through hc; nil is SocketHTTP of home's socket. (A test gives one that
// a sandbox refuses, as cli/cli's commands take their HttpClient.)
func NewHTTP(home, tmuxEnv string, hc *http.Client) *Client {
	sock := api.SocketPath(home)
	if hc == nil {
		hc = SocketHTTP(sock)
	}
	return &Client{Socket: sock, Tmux: tmuxEnv, hc: hc}
}

// SocketHTTP is an HTTP client that dials the unix socket sock for each
// request: no connection is kept between commands' calls.
func SocketHTTP(sock string) *http.Client {
	return &http.Client{Transport: socketTransport{sock}}
}

// socketTransport carries each request on a connection of its own to the
// unix socket, written and read on the caller's goroutine with net/http's
// own Request.Write and ReadResponse. net/http's Transport would start
// a connection pool and two goroutines per connection: a command makes
// one call, and every agent hook, report and list is a command, so that
// was a tenth of its start.
type socketTransport struct{ sock string }

func (t socketTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", t.sock)
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	// A call ended by its context (Ctrl-C on st worker wait) ends its
	// connection, which the daemon sees.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	fail := func(err error) (*http.Response, error) {
		stop()
		conn.Close()
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	if err := req.Write(conn); err != nil {
		return fail(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return fail(err)
	}
	res.Body = &connBody{ReadCloser: res.Body, conn: conn, stop: stop}
	return res, nil
}

// connBody is an answer's body, whose Close ends its connection.
type connBody struct {
	io.ReadCloser
	conn net.Conn
	stop func() bool
}

func (b *connBody) Close() error {
	err := b.ReadCloser.Close()
	b.stop()
	b.conn.Close()
	return err
}

// isDown tells a daemon that is not there from other failures.
func isDown(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, os.ErrNotExist)
}

// Call posts req to path and decodes the answer into resp. When no daemon
// answers, OnDown (once) may start one, and the call is made again.
func (c *Client) Call(ctx context.Context, path string, req, resp any) error {
	err := c.call(ctx, path, req, resp)
	var down *DownError
	if !errors.As(err, &down) || c.OnDown == nil || c.reached.Load() {
		return err
	}
	c.once.Do(func() {
		if e := c.OnDown(ctx, err); e != nil {
			err = e // this call's answer; later calls get their own
		} else {
			c.started = true
		}
	})
	if c.started {
		return c.call(ctx, path, req, resp)
	}
	return err
}

func (c *Client) call(ctx context.Context, path string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://st"+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Type", "application/json")
	if c.Tmux != "" {
		hr.Header.Set(api.TmuxHeader, tmuxenv.Socket(c.Tmux))
	}
	raw, isRaw := resp.(*IndentedJSON)
	if isRaw {
		hr.Header.Set(api.IndentHeader, "1")
	}
	res, err := c.hc.Do(hr)
	if err != nil {
		if isDown(err) {
			return &DownError{Socket: c.Socket, Cause: err}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if stopped(err) {
			return &StoppedError{Route: path, Cause: err}
		}
		return fmt.Errorf("talk to st on %s: %w", c.Socket, err)
	}
	defer res.Body.Close()
	c.reached.Store(true)
	data, err := io.ReadAll(res.Body)
	if err != nil {
		if stopped(err) && ctx.Err() == nil {
			return &StoppedError{Route: path, Cause: err}
		}
		return fmt.Errorf("read st's answer: %w", err)
	}
	if res.StatusCode != http.StatusOK {
		var oe api.Error
		if json.Unmarshal(data, &oe) == nil && oe.Message != "" {
			return &oe
		}
		return fmt.Errorf("st answered %s: %s", res.Status, bytes.TrimSpace(data))
	}
	if resp == nil {
		return nil
	}
	if isRaw {
		if res.Header.Get(api.IndentHeader) == "" {
			// An st from before the header: indent here.
			if data, err = Indent(data); err != nil {
				return err
			}
		}
		*raw = data
		return nil
	}
	if err := json.Unmarshal(data, resp); err != nil {
		return fmt.Errorf("decode st's answer: %w", err)
	}
	return nil
}

// IndentedJSON is an answer as the daemon wrote it, indented by two
// spaces and ending in a newline: what --json prints, taken as it comes
// (a list of a hundred workers decoded and encoded again, or indented
// here, was a quarter of st worker list --json).
type IndentedJSON []byte

// Indent indents JSON as IndentedJSON holds it.
func Indent(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	if err := json.Indent(&buf, bytes.TrimSpace(data), "", "  "); err != nil {
		return nil, fmt.Errorf("st's answer is not JSON: %w", err)
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// Status asks the daemon how it is.
func (c *Client) Status(ctx context.Context) (*api.StatusInfo, error) {
	var s api.StatusInfo
	return &s, c.Call(ctx, api.RouteStatus, struct{}{}, &s)
}

// WaitUp polls until the daemon answers or the deadline passes.
func (c *Client) WaitUp(ctx context.Context, timeout time.Duration) (*api.StatusInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		s, err := c.Status(ctx)
		if err == nil {
			return s, nil
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(20 * time.Millisecond):
		}
	}
}
