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
// that went away. Messages are at least eventGap apart (Server.eventGap):
// the changes of many agents at once travel together, a few times a
// second, rather than one message each.
const (
	defaultPoll     = 2 * time.Second
	defaultEventGap = 100 * time.Millisecond
	pingEvery       = 30 * time.Second
	writeWait       = 10 * time.Second
)

// event is a message on /api/events. Now lets the page count "for how
// long" from the server's clock, which a phone's may not match.
//
// The first message is the whole Snapshot, and so is one after a change
// of which agents there are or of their order; any other change comes as
// a patch of the Snapshot the page has (the messages of one socket arrive
// all and in order; a page whose socket broke gets a whole Snapshot
// first on the next). With many agents, a change of a few is a few
// hundred bytes instead of the whole state.
type event struct {
	Type     string          `json:"type"` // snapshot, patch or error
	Now      time.Time       `json:"now"`
	Snapshot json.RawMessage `json:"snapshot,omitempty"`
	Patch    *patch          `json:"patch,omitempty"`
	Error    string          `json:"error,omitempty"`
}

// patch is what changed in a Snapshot since the last message: each agent
// that changed by its index in Agents, and any other field that changed,
// whole (a field left out did not change; null is a list now empty).
type patch struct {
	Agents   map[int]json.RawMessage `json:"agents,omitempty"`
	Machine  json.RawMessage         `json:"machine,omitempty"`
	Sessions json.RawMessage         `json:"sessions,omitempty"`
	Gates    json.RawMessage         `json:"gates,omitempty"`
	Machines json.RawMessage         `json:"machines,omitempty"`
	Prompts  json.RawMessage         `json:"prompts,omitempty"`
	// Attention is the open attention items.
	Attention json.RawMessage `json:"attention,omitempty"`
	// Limits are the agents' accounts' usage limits.
	Limits json.RawMessage `json:"limits,omitempty"`
}

// shown is a Snapshot as a page has it: each part encoded, and each
// agent's key (machine/pane), to tell which agents there are.
type shown struct {
	keys   []string
	agents []json.RawMessage
	// machine, sessions, gates, machines, attention, prompts and limits,
	// in patch's order.
	parts [7]json.RawMessage
}

func encodeShown(s Snapshot) (shown, error) {
	sh := shown{keys: make([]string, len(s.Agents)), agents: make([]json.RawMessage, len(s.Agents))}
	var err error
	for i, a := range s.Agents {
		sh.keys[i] = a.Machine + "/" + a.Pane
		if sh.agents[i], err = json.Marshal(a); err != nil {
			return shown{}, err
		}
	}
	for i, v := range []any{s.Machine, s.Sessions, s.Gates, s.Machines, s.Attention, s.Prompts, s.Limits} {
		if sh.parts[i], err = json.Marshal(v); err != nil {
			return shown{}, err
		}
	}
	return sh, nil
}

// diff is what a page that has old needs to have now: nothing (p nil and
// whole false), a patch, or the whole Snapshot. With old nil, the whole.
func diff(old *shown, now shown) (p *patch, whole bool) {
	if old == nil || len(old.keys) != len(now.keys) {
		return nil, true
	}
	for i := range now.keys {
		if old.keys[i] != now.keys[i] {
			return nil, true
		}
	}
	p = &patch{}
	changed := false
	for i := range now.agents {
		if !bytes.Equal(old.agents[i], now.agents[i]) {
			if p.Agents == nil {
				p.Agents = map[int]json.RawMessage{}
			}
			p.Agents[i] = now.agents[i]
			changed = true
		}
	}
	fields := []*json.RawMessage{&p.Machine, &p.Sessions, &p.Gates, &p.Machines, &p.Attention, &p.Prompts, &p.Limits}
	for i, f := range fields {
		if !bytes.Equal(old.parts[i], now.parts[i]) {
			*f = now.parts[i]
			changed = true
		}
	}
	if !changed {
		return nil, false
	}
	return p, false
}

// serveEvents sends the whole Snapshot at once, and after every change
// what changed. The page sends nothing; closing the socket ends it.
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
	s.streamEvents(ctx, c)
}

// streamEvents is serveEvents' loop, on an open socket.
func (s *Server) streamEvents(ctx context.Context, c *websocket.Conn) {
	poll := time.NewTicker(s.pollEvery)
	defer poll.Stop()
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	var last *shown // what the page has; nil: nothing, or an error
	lastErr := ""
	var sent time.Time
	for {
		// Take the channel before reading the state, so that a change in
		// between is not lost.
		changed := s.cfg.Backend.Changed()
		ev, now, err := s.nextEvent(ctx, last)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			ev = event{Type: "error", Now: time.Now().UTC(), Error: err.Error()}
			if err.Error() == lastErr {
				ev.Type = ""
			}
			last, lastErr = nil, err.Error()
		} else {
			last, lastErr = &now, ""
		}
		if ev.Type != "" {
			if err := writeEvent(ctx, c, ev); err != nil {
				return
			}
			sent = time.Now()
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
		// The changes until the gap is over go in the next message.
		if wait := s.eventGap - time.Since(sent); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				c.Close(websocket.StatusGoingAway, "")
				return
			case <-t.C:
			}
		}
	}
}

// nextEvent is the message for a page that has last (nil: nothing), and
// what it has after it; a message of Type "" sends nothing (no change).
func (s *Server) nextEvent(ctx context.Context, last *shown) (event, shown, error) {
	snap, err := s.snapshot(ctx)
	if err != nil {
		return event{}, shown{}, err
	}
	now, err := encodeShown(snap)
	if err != nil {
		return event{}, shown{}, err
	}
	ev := event{Now: time.Now().UTC()}
	p, whole := diff(last, now)
	switch {
	case whole:
		ev.Type = "snapshot"
		if ev.Snapshot, err = json.Marshal(snap); err != nil {
			return event{}, shown{}, err
		}
	case p != nil:
		ev.Type, ev.Patch = "patch", p
	}
	return ev, now, nil
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
