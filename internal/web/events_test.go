package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/web"
	"github.com/sophonz/st/internal/web/webtest"
)

// events opens /api/events of a UI on fake, with messages at least gap
// apart and no poll (only the fake's changes bring news).
func events(t *testing.T, fake *webtest.Backend, gap time.Duration) (context.Context, *websocket.Conn) {
	t.Helper()
	srv := web.New(web.Config{Secret: secret, Backend: fake})
	web.SetPollForTest(srv, time.Hour)
	web.SetEventGapForTest(srv, gap)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	conn, _, err := dial(ctx, t, ts.URL+"/api/events?token="+tok(t, ts.URL), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(websocket.StatusNormalClosure, "") })
	conn.SetReadLimit(1 << 20) // a hundred agents' snapshot is over the default 32 KB
	return ctx, conn
}

// differs says how the page's snapshot differs from st's ("" when it
// does not), both as JSON: the page is JavaScript, and sees nothing else.
func differs(t *testing.T, fake *webtest.Backend, page web.Snapshot) string {
	t.Helper()
	s, _ := fake.Snapshot(context.Background())
	if s.Gates == nil {
		s.Gates = []web.Gate{} // as the server sends it (normalize)
	}
	if s.Prompts == nil {
		s.Prompts = []web.Prompt{}
	}
	if s.Attention == nil {
		s.Attention = []web.Attention{}
	}
	// The server adds the agent kinds from their descriptions, whatever
	// the Backend says: the page draws each agent's kind by them.
	s.Kinds = []web.KindInfo{}
	for _, k := range agent.All() {
		s.Kinds = append(s.Kinds, web.KindInfo{Name: k.Name, Title: k.Title, Icon: k.Icon})
	}
	st, _ := json.Marshal(s)
	got, _ := json.Marshal(page)
	if string(st) == string(got) {
		return ""
	}
	return fmt.Sprintf("st:   %s\npage: %s", st, got)
}

// TestEventsSendWhatChanged: after the whole snapshot, a change of one
// agent of a hundred comes as a patch of that agent alone, a small part
// of the whole; a change of the gates, of the gates alone; a change of
// which agents there are, as the whole snapshot again. What the page
// makes of each is st's state.
func TestEventsSendWhatChanged(t *testing.T) {
	fake := webtest.New(webtest.Scale(time.Now(), 100))
	ctx, conn := events(t, fake, 0)
	first := readEvent(ctx, t, conn)
	if first.Type != "snapshot" || len(first.Snapshot.Agents) != 100 {
		t.Fatalf("first event: %s with %d agents, want the whole snapshot", first.Type, len(first.Snapshot.Agents))
	}
	have := first.Snapshot
	for _, c := range []struct {
		what   string
		change func(*web.Snapshot)
		typ    string
		fields []string // what the patch holds
	}{
		{"one agent's state", func(s *web.Snapshot) { webtest.Step(s, 42, time.Now()) }, "patch", []string{"agents:42"}},
		{"a gate answered", func(s *web.Snapshot) { s.Gates = s.Gates[1:] }, "patch", []string{"gates"}},
		{"an agent needs a person", func(s *web.Snapshot) {
			s.Attention = []web.Attention{{ID: "att-1", Kind: "permission", Pane: "%3", Text: "make deploy", Opened: time.Now()}}
		}, "patch", []string{"attention"}},
		{"two agents and a window's name", func(s *web.Snapshot) {
			s.Agents[3].Name, s.Agents[97].Summary = "renamed", "done: all of it"
			s.Sessions[0].Windows[3].Name = "renamed"
		}, "patch", []string{"agents:3", "agents:97", "sessions"}},
		{"an agent gone", func(s *web.Snapshot) { s.Agents = slices.Delete(s.Agents, 10, 11) }, "snapshot", nil},
		{"the last gate answered", func(s *web.Snapshot) { s.Gates = nil }, "patch", []string{"gates"}},
		{"a permission prompt opened", func(s *web.Snapshot) {
			s.Prompts = []web.Prompt{{ID: "prompt-1", Pane: "%3", Agent: "claude", Tool: "Bash", Command: "rm -rf build", Options: []string{}}}
		}, "patch", []string{"prompts"}},
	} {
		fake.Update(c.change)
		m := readEvent(ctx, t, conn)
		if m.Type != c.typ {
			t.Fatalf("%s: a %s, want a %s", c.what, m.Type, c.typ)
		}
		if m.Type == "patch" {
			var got []string
			for k := range m.Patch.Agents {
				got = append(got, "agents:"+k)
			}
			for f, raw := range map[string]json.RawMessage{"machine": m.Patch.Machine, "sessions": m.Patch.Sessions, "gates": m.Patch.Gates, "machines": m.Patch.Machines, "attention": m.Patch.Attention, "prompts": m.Patch.Prompts} {
				if raw != nil {
					got = append(got, f)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, c.fields) {
				t.Errorf("%s: the patch holds %v, want %v", c.what, got, c.fields)
			}
			if c.fields[0] == "agents:42" && m.Size*20 > first.Size {
				t.Errorf("%s: the patch is %d bytes, the whole snapshot %d: want it under a twentieth", c.what, m.Size, first.Size)
			}
		}
		have = m.apply(t, have)
		if d := differs(t, fake, have); d != "" {
			t.Errorf("%s: the page's snapshot differs from st's:\n%s", c.what, d)
		}
	}
}

// TestEventsGatherChanges: changes that come within the gap after a
// message go out together in the next one, which brings the page to
// the state after all of them.
func TestEventsGatherChanges(t *testing.T) {
	fake := webtest.New(webtest.Scale(time.Now(), 100))
	ctx, conn := events(t, fake, 2*time.Second)
	have := readEvent(ctx, t, conn).apply(t, web.Snapshot{})
	// The first change comes right after the first message: the gap
	// holds the next message back, and the other 59 join it.
	for i := 0; i < 60; i++ {
		fake.Update(func(s *web.Snapshot) { webtest.Step(s, i%30, time.Now()) })
	}
	m := readEvent(ctx, t, conn)
	have = m.apply(t, have)
	if d := differs(t, fake, have); d != "" {
		t.Errorf("after 60 changes, one message (a %s) leaves the page at:\n%s", m.Type, d)
	}
	if n := len(m.Patch.Agents); n != 30 {
		t.Errorf("the message patches %d agents, want the 30 that changed", n)
	}
}
