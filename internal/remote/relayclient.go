package remote

import (
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
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/yamux"
)

// Relay is this machine's one connection to its control plane's relay
// (see relay.go): it opens streams to other machines through it (Dial),
// and takes the streams they open to this one (Listener). It connects
// again by itself when the connection breaks, until Close.
type Relay struct {
	id   *Identity
	logf func(format string, args ...any)

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	incoming chan net.Conn

	mu      sync.Mutex
	sess    *yamux.Session
	lastErr error
	up      chan struct{} // closed once connected; replaced when the connection goes
}

// Relay backoff between tries to connect.
const (
	relayRetryMin = 500 * time.Millisecond
	relayRetryMax = 15 * time.Second
)

// StartRelay connects this machine to its control plane's relay and keeps
// it connected until Close. logf gets a line when the connection comes
// and goes (nil: none).
func (id *Identity) StartRelay(logf func(format string, args ...any)) *Relay {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	r := &Relay{id: id, logf: logf, done: make(chan struct{}), incoming: make(chan net.Conn), up: make(chan struct{})}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	go r.run()
	return r
}

// Session is the relay connection's yamux session now, nil while not
// connected: for tests of the control plane's side that speak the relay's
// wire themselves.
func (r *Relay) Session() *yamux.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sess
}

// Close ends the connection and every stream through it.
func (r *Relay) Close() {
	r.cancel()
	r.mu.Lock()
	if r.sess != nil {
		r.sess.Close()
	}
	r.mu.Unlock()
	<-r.done
}

// Connected reports whether the relay connection is up now.
func (r *Relay) Connected() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sess != nil && !r.sess.IsClosed()
}

// WaitConnected waits until the relay connection is up, or ctx ends.
func (r *Relay) WaitConnected(ctx context.Context) error {
	r.mu.Lock()
	up := r.up
	r.mu.Unlock()
	select {
	case <-up:
		return nil
	case <-ctx.Done():
		return r.notConnected()
	}
}

func (r *Relay) run() {
	defer close(r.done)
	wait := relayRetryMin
	var said string
	for r.ctx.Err() == nil {
		sess, err := r.connect()
		if err != nil {
			r.mu.Lock()
			r.lastErr = err
			r.mu.Unlock()
			if s := err.Error(); s != said { // once per new reason, not every try
				r.logf("cannot connect to the control plane's relay (trying again): %v", err)
				said = s
			}
			select {
			case <-r.ctx.Done():
			case <-time.After(wait):
			}
			wait = min(2*wait, relayRetryMax)
			continue
		}
		wait, said = relayRetryMin, ""
		r.mu.Lock()
		r.sess, r.lastErr = sess, nil
		close(r.up)
		r.mu.Unlock()
		r.logf("connected to the control plane's relay")
		r.serve(sess)
		r.mu.Lock()
		r.sess, r.up = nil, make(chan struct{})
		r.lastErr = errors.New("the connection was lost")
		r.mu.Unlock()
		if r.ctx.Err() == nil {
			r.logf("the connection to the control plane's relay was lost (connecting again)")
		}
	}
}

// connect opens the websocket to the control plane and yamux over it.
func (r *Relay) connect() (*yamux.Session, error) {
	u := r.id.ControlPlane + "/v1/relay"
	u = "ws" + strings.TrimPrefix(u, "http") // https -> wss, http -> ws
	ctx, cancel := context.WithTimeout(r.ctx, 15*time.Second)
	defer cancel()
	hc := &http.Client{Transport: cpTransport(r.id.cpPool, r.id, false)}
	c, res, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: hc, CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		if res != nil && res.Body != nil {
			var ae APIError
			data, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
			if json.Unmarshal(data, &ae) == nil && ae.Error != "" {
				return nil, &Error{Message: "the control plane refused: " + ae.Error, Hint: ae.Hint, Status: res.StatusCode}
			}
		}
		return nil, unwrapURLError(err)
	}
	// The connection lives on after connect returns: its own context.
	sess, err := yamux.Client(websocket.NetConn(r.ctx, c, websocket.MessageBinary), YamuxConfig())
	if err != nil {
		c.Close(websocket.StatusInternalError, "relay")
		return nil, err
	}
	return sess, nil
}

// serve takes the streams that other machines open to this one, until
// the connection ends.
func (r *Relay) serve(sess *yamux.Session) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		st, err := sess.AcceptStream()
		if err != nil {
			sess.Close()
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			st.SetReadDeadline(time.Now().Add(10 * time.Second))
			line, err := ReadLine(st)
			st.SetReadDeadline(time.Time{})
			var in RelayIncoming
			if err != nil || json.Unmarshal(line, &in) != nil {
				st.Close()
				return
			}
			select {
			case r.incoming <- relayConn{st}:
			case <-time.After(10 * time.Second): // nobody serves: it is refused
				st.Close()
			case <-r.ctx.Done():
				st.Close()
			}
		}()
	}
}

func (r *Relay) notConnected() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	msg := "this machine is not connected to the control plane's relay"
	if r.lastErr != nil {
		msg += " (" + strings.SplitN(r.lastErr.Error(), "\nTry:", 2)[0] + ")"
	}
	// The control plane refused this machine (signed out, removed): a
	// refusal, not a machine out of reach.
	var e *Error
	refused := errors.As(r.lastErr, &e) && (e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden)
	hint := ""
	if refused {
		hint = e.Hint
	}
	return &RelayError{Message: msg, Hint: hint, Offline: !refused}
}

// RelayError is the relay's refusal to open a stream, or its absence.
type RelayError struct {
	Message string
	Hint    string
	// Offline means the machine (or this one) is not connected: it cannot
	// be reached now, as opposed to being refused.
	Offline bool
}

func (e *RelayError) Error() string { return e.Message }

// Dial opens a stream to machine slug through the relay. What it returns
// carries the two machines' bytes and nothing else; run TLS over it.
func (r *Relay) Dial(ctx context.Context, slug string) (net.Conn, error) {
	r.mu.Lock()
	sess := r.sess
	r.mu.Unlock()
	if sess == nil || sess.IsClosed() {
		return nil, r.notConnected()
	}
	st, err := sess.OpenStream()
	if err != nil {
		return nil, &RelayError{Message: "the connection to the control plane's relay failed: " + err.Error(), Offline: true}
	}
	deadline := time.Now().Add(dialTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	st.SetDeadline(deadline)
	if err := WriteLine(st, RelayOpen{To: slug}); err != nil {
		st.Close()
		return nil, &RelayError{Message: "the control plane's relay did not take the stream: " + err.Error(), Offline: true}
	}
	line, err := ReadLine(st)
	if err != nil {
		st.Close()
		return nil, &RelayError{Message: "the control plane's relay did not answer: " + err.Error(), Offline: true}
	}
	st.SetDeadline(time.Time{})
	var rep RelayReply
	if err := json.Unmarshal(line, &rep); err != nil || !rep.OK {
		st.Close()
		if err != nil || rep.Error == "" {
			return nil, &RelayError{Message: "the control plane's relay answered what this st does not know", Hint: "use the same st version on the control plane"}
		}
		return nil, &RelayError{Message: "the control plane's relay refused: " + rep.Error, Hint: rep.Hint, Offline: rep.Offline}
	}
	return relayConn{st}, nil
}

// relayConn is a relayed stream as a connection of the standard library.
// A deadline that passes is os.ErrDeadlineExceeded, as on a TCP
// connection: a temporary error, after which the connection goes on.
// (yamux's own is not temporary, so crypto/tls would take the connection
// as broken for good, and net/http's server, which cuts a pending read
// short with a deadline in the past after each request, would lose every
// kept-alive connection and every websocket.)
type relayConn struct{ *yamux.Stream }

func (c relayConn) Read(b []byte) (int, error) {
	n, err := c.Stream.Read(b)
	return n, deadlineErr(err)
}

func (c relayConn) Write(b []byte) (int, error) {
	n, err := c.Stream.Write(b)
	return n, deadlineErr(err)
}

func deadlineErr(err error) error {
	if errors.Is(err, yamux.ErrTimeout) {
		return os.ErrDeadlineExceeded
	}
	return err
}

// Listener is where the streams other machines open to this one arrive
// (before TLS). Closing it refuses further streams; the relay connection
// stays, for Dial.
func (r *Relay) Listener() net.Listener {
	l := &relayListener{r: r, closed: make(chan struct{})}
	return l
}

type relayListener struct {
	r      *Relay
	once   sync.Once
	closed chan struct{}
}

func (l *relayListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.r.incoming:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-l.r.ctx.Done():
		return nil, net.ErrClosed
	}
}

func (l *relayListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *relayListener) Addr() net.Addr { return relayAddr{} }

// String names the relay for logs.
func (r *Relay) String() string { return fmt.Sprintf("the relay of %s", r.id.ControlPlane) }

// relayListener hands the streams other machines open to this one to a
// server; relayAddr is its address.
type relayAddr struct{}

func (relayAddr) Network() string { return "st-relay" }
func (relayAddr) String() string  { return "relay" }

var _ net.Addr = relayAddr{}
