package daemon

import (
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/tmux"
)

// Another machine's graph is checked like this machine's hooks: a
// teammate or subagent whose names Claude would not write is left out,
// and a teammate's pane here gets its session and window.
func TestWebAside(t *testing.T) {
	now := time.Now()
	a := api.GraphAgent{Pane: "%2",
		Teammates: []api.Teammate{
			{Name: "alpha", Team: "session-0702c391", Pane: "%5", State: "working", Since: now, Started: now},
			{Name: "<img src=x onerror=alert(1)>", Team: "session-0702c391", State: "idle"},
			{Name: "beta", Team: "session-0702c391", Color: "\x1b[31m", State: "idle"},
		},
		Subagents: []api.Subagent{
			{ID: "a2cbef72153bff3a8", Type: "general-purpose", State: "working"},
			{ID: "a1", Type: "Explore\x1b]0;x\x07", State: "done"},
		},
	}
	subs, mates := webAside(a, map[string]tmux.Pane{"%5": {ID: "%5", SessionID: "$1", WindowID: "@2"}})
	if len(mates) != 1 || mates[0].Name != "alpha" || mates[0].Session != "$1" || mates[0].Window != "@2" {
		t.Errorf("teammates %+v", mates)
	}
	if len(subs) != 1 || subs[0].Type != "general-purpose" {
		t.Errorf("subagents %+v", subs)
	}
}
