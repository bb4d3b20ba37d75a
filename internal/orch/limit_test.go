package orch

import (
	"testing"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
)

// An agent that goes on by itself (Claude: 30-90 s after the reset) is
// given its whole window before st types: from the exact reset, or, when
// only the screen's minute is known, from that minute's end, since the
// true reset may be up to a minute after the minute shown. A grace
// counted from the minute's start would end inside Claude's own window,
// and st's continue would come on top of Claude's.
func TestSetItselfLeavesTheAgentItsWindow(t *testing.T) {
	lim := agent.Claude.Limits
	at := time.Date(2026, 12, 7, 13, 54, 13, 0, time.UTC)
	p := api.Pause{Resets: at, Exact: true}
	setItself(&p, lim)
	if want := at.Add(120 * time.Second); !p.GoesOnBy.Equal(want) {
		t.Errorf("exact: st types at %s, want %s", p.GoesOnBy, want)
	}
	if !p.ItselfFrom.Equal(at.Add(30*time.Second)) || !p.ItselfBy.Equal(at.Add(90*time.Second)) {
		t.Errorf("exact: Claude goes on %s-%s", p.ItselfFrom, p.ItselfBy)
	}
	minute := at.Truncate(time.Minute) // the screen's "resets 1:54pm"
	p = api.Pause{Resets: minute}
	setItself(&p, lim)
	latest := minute.Add(59 * time.Second).Add(lim.Itself[1]) // a true reset at the minute's last second
	if !p.GoesOnBy.After(latest) {
		t.Errorf("to the minute: st types at %s, before Claude's latest own going on %s", p.GoesOnBy, latest)
	}
	if !p.ItselfBy.After(latest) || !p.ItselfFrom.Equal(minute.Add(30*time.Second)) {
		t.Errorf("to the minute: Claude goes on %s-%s", p.ItselfFrom, p.ItselfBy)
	}
}
