package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/sophonz/st/internal/tmux"
)

// Windows of the account's other machines open in this page too: the
// page's socket, /term?machine=beta&pane=%7, is bridged here to a socket
// of beta's st over the two machines' peer connection (mutual TLS,
// directly or through the control plane's relay; Config.PeerTerm makes
// it). beta decides what may open (ServePeerTerm): only an agent's
// window that this machine sees in beta's graph, only while beta takes
// workers from other machines, and typing only as the page's read-only
// switch allows, checked at both ends.

// PeerTermOpts are what a page asks of another machine's window.
type PeerTermOpts struct {
	ReadOnly   bool
	Cols, Rows int
}

// serveRemoteTerm bridges the page's socket c to the window of pane on
// machine.
func (s *Server) serveRemoteTerm(ctx context.Context, c *websocket.Conn, machine, pane string, o PeerTermOpts) {
	// The machine is found (or not) by this machine's st among the
	// account's; the pane is checked here and again there.
	if !tmux.ValidPaneID(pane) {
		c.Close(closeBadTarget, "name a machine and a pane (%7) of it")
		return
	}
	if s.cfg.PeerTerm == nil {
		c.Close(closeRefused, "this st does not open windows of other machines")
		return
	}
	peer, err := s.cfg.PeerTerm(ctx, machine, pane, o)
	if err != nil {
		s.logf("term on %s: %v", machine, err)
		code := websocket.StatusCode(closeRefused)
		var un interface{ Unreachable() bool }
		if errors.As(err, &un) && un.Unreachable() {
			code = closeNoPeer
		}
		c.Close(code, reason(firstLine(err.Error())))
		return
	}
	defer peer.CloseNow()
	peer.SetReadLimit(4 << 20)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			typ, data, err := peer.Read(ctx)
			if err != nil {
				// The other machine's reason (a refusal, the window gone)
				// reaches the page as it was given.
				code, why := websocket.CloseStatus(err), ""
				var ce websocket.CloseError
				if errors.As(err, &ce) {
					why = ce.Reason
				}
				switch {
				case code == -1:
					code, why = closeNoPeer, "the connection to "+machine+" ended"
				case code >= 4000 && why != "":
					why = machine + " says: " + why
				}
				c.Close(code, reason(why))
				return
			}
			wctx, cancel := context.WithTimeout(ctx, writeWait)
			werr := c.Write(wctx, typ, data)
			cancel()
			if werr != nil {
				return
			}
		}
	}()
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			break
		}
		if typ == websocket.MessageBinary && o.ReadOnly {
			continue // the other machine refuses it too
		}
		wctx, cancel := context.WithTimeout(ctx, writeWait)
		werr := peer.Write(wctx, typ, data)
		cancel()
		if werr != nil {
			break
		}
	}
	peer.Close(websocket.StatusNormalClosure, "the page closed")
	<-done
}

// firstLine is an error's message without its "Try:" line: a close
// reason has room for a sentence.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// PeerTermConfig is what ServePeerTerm needs: the window to show and
// the rules it is shown by, as the machine that serves it checked them.
type PeerTermConfig struct {
	Tmux *tmux.Client
	// Pane is the agent whose window is shown and typed into.
	Pane       tmux.Pane
	ReadOnly   bool
	Cols, Rows int
	// Allowed says whether the asking machine may still see the window;
	// it is asked every second. MayType says whether it may type into it;
	// it is asked before each input (nil: as Allowed).
	Allowed, MayType func() error
	// Base ends every such terminal (the daemon's stop).
	Base context.Context
	Log  io.Writer
}

// recheckEvery is how often a terminal of another machine checks that it
// may still be open (accept-remote turned off closes it within this).
const recheckEvery = time.Second

// ServePeerTerm serves another machine's page a window of this machine,
// over the peer API (the caller has checked the asking machine's
// certificate and that it may open cfg.Pane).
//
// Unlike a page of this machine, which gets a tmux client of a session
// grouped with the window's (it may switch windows there: it is this
// machine's person), the other machine's page must see that one window
// only. So the window gets a session of its own that holds nothing else,
// the tmux client is read-only and is never typed into (its key bindings
// could switch sessions or run commands), and what the page types goes to
// the agent's pane as bytes (send-keys -H), after Allowed.
func ServePeerTerm(w http.ResponseWriter, r *http.Request, cfg PeerTermConfig) {
	logf := func(format string, args ...any) {
		if cfg.Log != nil {
			io.WriteString(cfg.Log, "peer term: "+fmt.Sprintf(format, args...)+"\n")
		}
	}
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true}) // st, not a browser
	if err != nil {
		logf("%v", err)
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(4 << 20)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if cfg.Base != nil {
		stop := context.AfterFunc(cfg.Base, cancel)
		defer stop()
	}
	t := cfg.Tmux
	name, p, err := openWindowSession(ctx, t, cfg, logf)
	if err != nil {
		closeTmuxErr(c, err, logf)
		return
	}
	defer killWebSession(t, name, logf)
	defer p.Close()

	var once sync.Once
	refuse := func(err error) {
		once.Do(func() {
			c.Close(closeRefused, reason(firstLine(err.Error())))
			cancel()
		})
	}
	go func() {
		tick := time.NewTicker(recheckEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if err := cfg.Allowed(); err != nil {
					refuse(err)
					return
				}
			}
		}
	}()
	mayType := cfg.MayType
	if mayType == nil {
		mayType = cfg.Allowed
	}
	bridge(ctx, cancel, c, p, func(b []byte) error {
		if cfg.ReadOnly {
			return nil
		}
		if err := mayType(); err != nil {
			refuse(err)
			return err
		}
		return t.SendBytes(ctx, cfg.Pane.ID, b)
	})
}

// openWindowSession makes the window's own session and attaches a
// read-only client to it, with no other web session being made or
// closed meanwhile (webSessions): in CI, beta's tmux 3.3a server exited
// ("server exited unexpectedly") when a page switched to read-only and
// back within 400 ms, the new session linking the window while the old
// one, holding the same window, was killed.
func openWindowSession(ctx context.Context, t *tmux.Client, cfg PeerTermConfig, logf func(string, ...any)) (string, *tmux.PTY, error) {
	webSessions.Lock() // lockio: it orders the making of web sessions, tmux commands and all (above), and is taken with no other lock held
	defer webSessions.Unlock()
	if err := t.KillStaleWebSessions(ctx, staleAge); err != nil {
		logf("clear old sessions: %v", err)
	}
	name := tmux.NewWebSessionName()
	if err := t.NewWindowSession(ctx, name, cfg.Pane.WindowID); err != nil {
		return "", nil, err
	}
	p, err := t.AttachPTY(ctx, tmux.AttachOpts{Session: name, ReadOnly: true, Cols: cfg.Cols, Rows: cfg.Rows})
	if err != nil {
		killWebSessionLocked(t, name, logf)
		return "", nil, err
	}
	return name, p, nil
}

// PeerTermQuery is the query of a peer's terminal request.
func PeerTermQuery(pane string, o PeerTermOpts) string {
	ro := "0"
	if o.ReadOnly {
		ro = "1"
	}
	return "pane=" + url.QueryEscape(pane) + "&ro=" + ro + "&cols=" + strconv.Itoa(o.Cols) + "&rows=" + strconv.Itoa(o.Rows)
}

// PeerTermOptsOf reads a peer's terminal request.
func PeerTermOptsOf(r *http.Request) (pane string, o PeerTermOpts) {
	q := r.URL.Query()
	o.ReadOnly = q.Get("ro") == "1"
	o.Cols, _ = strconv.Atoi(q.Get("cols"))
	o.Rows, _ = strconv.Atoi(q.Get("rows"))
	return q.Get("pane"), o
}
