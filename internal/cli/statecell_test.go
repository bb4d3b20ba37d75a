package cli

import (
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
)

// A paused worker's state says its reset and who goes on: for an agent
// that goes on by itself, when it is expected to and when st types
// continue if it did not.
func TestStateCellPaused(t *testing.T) {
	at := time.Date(2026, 12, 7, 13, 54, 13, 0, time.Local)
	for _, c := range []struct {
		p    api.Pause
		want string
	}{
		{api.Pause{Reason: "usage limit", Resets: at, Exact: true, By: "st"}, "paused (usage limit, resets 13:54)"},
		{api.Pause{Reason: "usage limit", Resets: at, By: "st"}, "paused (usage limit, resets ~13:54)"},
		{api.Pause{Reason: "usage limit", Resets: at, Exact: true, By: "agent", GoesOnBy: at.Add(2 * time.Minute),
			ItselfFrom: at.Add(30 * time.Second), ItselfBy: at.Add(90 * time.Second)},
			"paused (usage limit, resets 13:54; claude goes on by itself 13:54:43-13:55:43, st types continue at 13:56:13 if not)"},
		{api.Pause{Reason: "usage limit", Resets: at, Exact: true, By: "agent", GoesOnBy: at.Add(10 * time.Second)},
			"paused (usage limit, resets 13:54; claude goes on by itself, st types continue at 13:54:23 if not)"},
		{api.Pause{Reason: "usage limit", Resets: at, Exact: true, By: "agent", Typed: true}, "paused (usage limit, resets 13:54; st typed continue)"},
	} {
		if got := stateCell(api.Worker{Agent: "claude", State: api.Paused, Pause: &c.p}); got != c.want {
			t.Errorf("%+v:\n got %s\nwant %s", c.p, got, c.want)
		}
	}
}
