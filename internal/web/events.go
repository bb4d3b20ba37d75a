package web

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/coder/websocket"
)

// How /api/events keeps a page current. A change reaches the page as soon
// as the Backend says so; the poll (Server.pollEvery, 2s) catches what it
// does not announce (a window opened by hand), and the ping finds pages
// that went away.
const (
	defaultPoll = 2 * time.Second
	pingEvery   = 30 * time.Second
	writeWait   = 10 * time.Second
)

// event is a message on /api/events. Now lets the page count "for how
// long" from the server's clock, which a phone's may not match.
type event struct {
	Type     string          `json:"type"` // snapshot or error
	Now      time.Time       `json:"now"`
	Snapshot json.RawMessage `json:"snapshot,omitempty"`
	Error    string          `json:"error,omitempty"`
}

// serveEvents sends the whole Snapshot at once and again after every
// change. The page sends nothing; closing the socket ends it.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	if s.refuseOrigin(w, r) {
		return
	}
	base, done, ok := s.socket(r)
	if !ok {
		http.Error(w, "st's web UI is stopping", http.StatusServiceUnavailable)
		return
	}
	defer done()
	// The Origin was checked above, against the UI's own origin and the
	// configured ones; the library's own check knows only the former.
	c, err := websocket.Accept(w, r, acceptOptions())
	if err != nil {
		s.logf("events: %v", err)
		return
	}
	defer c.CloseNow()
	ctx := c.CloseRead(base)

	poll := time.NewTicker(s.pollEvery)
	defer poll.Stop()
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	var last []byte
	lastErr := ""
	for {
		// Take the channel before reading the state, so that a change in
		// between is not lost.
		changed := s.cfg.Backend.Changed()
		ev := event{Type: "snapshot", Now: time.Now().UTC()}
		snap, err := s.snapshot(ctx)
		if err == nil {
			ev.Snapshot, err = json.Marshal(snap)
		}
		send := false
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			ev = event{Type: "error", Now: ev.Now, Error: err.Error()}
			send = err.Error() != lastErr
			lastErr = err.Error()
			last = nil
		} else {
			send = !bytes.Equal(ev.Snapshot, last)
			last, lastErr = ev.Snapshot, ""
		}
		if send {
			if err := writeEvent(ctx, c, ev); err != nil {
				return
			}
		}
		select {
		case <-ctx.Done():
			c.Close(websocket.StatusGoingAway, "")
			return
		case <-changed:
		case <-poll.C:
		case <-ping.C:
			pctx, cancel := context.WithTimeout(ctx, writeWait)
			err := c.Ping(pctx)
			cancel()
			if err != nil {
				return
			}
		}
	}
}

func writeEvent(ctx context.Context, c *websocket.Conn, ev event) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, writeWait)
	defer cancel()
	return c.Write(ctx, websocket.MessageText, b)
}
