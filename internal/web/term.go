package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/sophonz/st/internal/syncs"
	"github.com/sophonz/st/internal/tmux"
)

// The terminal socket, /term?session=$1&window=@3 (or ?pane=%7), with
// ro=1 for read-only and cols, rows for the first size. Binary messages
// are bytes: typed ones from the page, drawn ones to it. Text messages
// from the page are JSON controls: {"type":"resize","cols":N,"rows":M}.
//
// Each socket gets a grouped session of its own, so that choosing a window
// in the browser moves nobody else's, and a tmux client attached to it
// with ignore-size in a pty (see tmux.AttachPTY), so that the browser's
// size never becomes the window's. A resize from the page resizes only
// that pty. The grouped session is killed when the socket closes.

// Close codes the page shows as the reason (4000-4999 are the
// application's own).
const (
	closeBadTarget = 4400
	closeRefused   = 4403 // another machine would not open it (closeRefused, the reason says why)
	closeNoWindow  = 4404
	closeTmux      = 4500
	closeNoPeer    = 4502 // another machine could not be reached
)

var (
	sessionIDRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\$[0-9]{1,9}$`) })
	windowIDRe  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^@[0-9]{1,9}$`) })
)

// staleAge is how old an unattached grouped session must be before a new
// connection clears it up: older than any connection takes to attach.
const staleAge = time.Minute

type termControl struct {
	Type string `json:"type"`
	Cols int    `json:"cols"`
	Rows int    `json:"rows"`
}

func (s *Server) serveTerm(w http.ResponseWriter, r *http.Request) {
	if s.refuseOrigin(w, r) {
		return
	}
	q := r.URL.Query()
	remote := q.Get("machine") != ""
	if s.cfg.Tmux == nil && !remote {
		http.Error(w, "no tmux server", http.StatusServiceUnavailable)
		return
	}
	base, done, ok := s.socket(r)
	if !ok {
		http.Error(w, "st's web UI is stopping", http.StatusServiceUnavailable)
		return
	}
	defer done()
	c, err := websocket.Accept(w, r, acceptOptions())
	if err != nil {
		s.logf("term: %v", err)
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(4 << 20) // a large paste is one message
	ctx, cancel := context.WithCancel(base)
	defer cancel()

	session, window, pane := q.Get("session"), q.Get("window"), q.Get("pane")
	readOnly := q.Get("ro") == "1"
	cols, _ := strconv.Atoi(q.Get("cols"))
	rows, _ := strconv.Atoi(q.Get("rows"))
	if remote {
		s.serveRemoteTerm(ctx, c, q.Get("machine"), pane, PeerTermOpts{ReadOnly: readOnly, Cols: cols, Rows: rows})
		return
	}
	if pane != "" {
		p, ok := paneOutsideWebSessions(ctx, s.cfg.Tmux, pane)
		if !ok {
			c.Close(closeNoWindow, "no such pane: "+pane)
			return
		}
		session, window = p.SessionID, p.WindowID
	}
	if !sessionIDRe().MatchString(session) || (window != "" && !windowIDRe().MatchString(window)) {
		c.Close(closeBadTarget, "name a session ($1) and window (@3), or a pane (%7)")
		return
	}

	t := s.cfg.Tmux
	if err := t.KillStaleWebSessions(ctx, staleAge); err != nil {
		s.logf("term: clear old sessions: %v", err)
	}
	name := tmux.NewWebSessionName()
	if err := t.NewGroupedSession(ctx, session, name); err != nil {
		closeTmuxErr(c, err, s.logf)
		return
	}
	defer killWebSession(t, name, s.logf)
	if window != "" {
		if err := t.SelectWindow(ctx, name, window); err != nil {
			closeTmuxErr(c, err, s.logf)
			return
		}
	}
	p, err := t.AttachPTY(ctx, tmux.AttachOpts{Session: name, ReadOnly: readOnly, Cols: cols, Rows: rows})
	if err != nil {
		closeTmuxErr(c, err, s.logf)
		return
	}
	// Registered after the kill above, so it runs first: the clients go
	// before their session does.
	defer p.Close()
	bridge(ctx, cancel, c, p, func(b []byte) error {
		if readOnly {
			return nil // tmux refuses it too; this keeps it off the pty
		}
		_, err := p.Write(b)
		return err
	})
}

// paneOutsideWebSessions finds pane in a session that is not a web
// terminal's: tmux names a pane's session as any of a group's, and a
// terminal's grouped session that is being closed would leave the new
// terminal nothing to show (seen: "select-window: can't find window").
func paneOutsideWebSessions(ctx context.Context, t *tmux.Client, pane string) (tmux.Pane, bool) {
	panes, err := t.ListPanes(ctx) // it leaves the web terminals' sessions out
	if err != nil {
		return tmux.Pane{}, false
	}
	for _, p := range panes {
		if p.ID == pane {
			return p, true
		}
	}
	return tmux.Pane{}, false
}

// killWebSession closes a terminal's own session (only it; its windows
// live on in their sessions).
func killWebSession(t *tmux.Client, name string, logf func(string, ...any)) {
	webSessions.Lock() // lockio: it orders the making and killing of web sessions, tmux commands and all (openWindowSession)
	defer webSessions.Unlock()
	killWebSessionLocked(t, name, logf)
}

// webSessions keeps the web terminals' sessions from being made and
// killed at the same moment (see openWindowSession).
var webSessions sync.Mutex

// killWebSessionLocked kills the session called name; webSessions is
// held.
func killWebSessionLocked(t *tmux.Client, name string, logf func(string, ...any)) {
	syncs.AssertLocked(&webSessions) // lockio: it orders the making and killing of web sessions (openWindowSession)
	kctx, kcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer kcancel()
	if err := t.KillSession(kctx, name); err != nil && !errors.Is(err, tmux.ErrNoPane) {
		logf("term: %v", err)
	}
}

// bridge carries a terminal: what the tmux client in p draws goes to the
// page as it comes; what the page types goes to input, and its resizes
// to p. It returns when either side ends.
func bridge(ctx context.Context, cancel context.CancelFunc, c *websocket.Conn, p *tmux.PTY, input func([]byte) error) {
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		defer cancel()
		buf := make([]byte, 32<<10)
		for {
			n, err := p.Read(buf)
			if n > 0 {
				wctx, wcancel := context.WithTimeout(ctx, writeWait)
				werr := c.Write(wctx, websocket.MessageBinary, buf[:n])
				wcancel()
				if werr != nil {
					return
				}
			}
			if err != nil {
				// The client ended: detached, or its windows went.
				c.Close(websocket.StatusNormalClosure, "the tmux client ended")
				return
			}
		}
	}()

	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			break
		}
		switch typ {
		case websocket.MessageBinary:
			if err := input(data); err != nil {
				cancel()
			}
		case websocket.MessageText:
			var m termControl
			if json.Unmarshal(data, &m) == nil && m.Type == "resize" {
				p.Resize(m.Cols, m.Rows)
			}
		}
	}
	cancel()
	p.Close()
	<-outDone
}

func closeTmuxErr(c *websocket.Conn, err error, logf func(string, ...any)) {
	logf("term: %v", err)
	code := websocket.StatusCode(closeTmux)
	if errors.Is(err, tmux.ErrNoPane) {
		code = closeNoWindow
	}
	c.Close(code, reason(err.Error()))
}

// reason fits a text into a close frame's reason (123 bytes at most),
// cut at a character's start.
func reason(msg string) string {
	if len(msg) <= 120 {
		return msg
	}
	i := 117
	for i > 0 && !utf8.RuneStart(msg[i]) {
		i--
	}
	return msg[:i] + "..."
}
