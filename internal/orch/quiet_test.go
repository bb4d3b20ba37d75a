package orch

import (
	"testing"
	"time"

	"github.com/sophonz/st/internal/agent"
)

// A turn whose hooks went quiet is looked at each tick at first (an Esc
// fires no hook), then less often while its screen shows work, so that
// a hundred workers in long silent turns do not keep tmux capturing
// their screens: the look that finds no work is confirmed at the next
// tick, and any event starts the eager looks again.
func TestQuietTurnsAreLookedAtLessOftenWhileAtWork(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	f := newPaneFacts(func() time.Time { return now }, func(string, ...any) {})
	all := func(string) bool { return true }
	due := func() bool {
		_, ok := f.quietTurns(quietAfter, all)["%1"]
		return ok
	}
	// Each look runs a little after its tick (the capture takes time).
	tick := func() { now = now.Add(quietEvery) }
	look := func(noWork bool) bool {
		now = now.Add(20 * time.Millisecond)
		ended, _ := f.quietLook("%1", noWork)
		now = now.Add(-20 * time.Millisecond)
		return ended
	}
	f.event("%1", "claude", agent.Event{Kind: agent.EvTurnStart}, nil, func(string) (bool, bool) { return true, true })
	now = now.Add(quietAfter)
	for i := 0; i < quietEager; i++ {
		if !due() {
			t.Fatalf("look %d of a quiet turn not due at its tick", i+1)
		}
		look(false)
		tick()
	}
	// At work since: looked at once each quietSlow.
	for waited := quietEvery; waited < quietSlow; waited += quietEvery {
		if due() {
			t.Fatalf("a quiet turn at work looked at again %s after its last look, want %s", waited, quietSlow)
		}
		tick()
	}
	if !due() {
		t.Fatalf("a quiet turn at work not looked at after %s", quietSlow)
	}
	// Its screen lost the signs of work (an Esc): the confirming look
	// comes at the next tick, and ends the turn.
	if look(true) {
		t.Fatal("one look without work ended the turn")
	}
	tick()
	if !due() {
		t.Fatal("the look that confirms an end is not due at the next tick")
	}
	if !look(true) {
		t.Fatal("two looks without work in a row did not end the turn")
	}
	// A new turn: eager again.
	f.event("%1", "claude", agent.Event{Kind: agent.EvTurnStart}, nil, func(string) (bool, bool) { return true, true })
	for i := 0; i < quietEager; i++ {
		f.quietLook("%1", false)
	}
	f.event("%1", "claude", agent.Event{Kind: agent.EvTool}, nil, func(string) (bool, bool) { return true, true })
	now = now.Add(quietAfter)
	if !due() {
		t.Fatal("a hook did not make the next quiet look eager again")
	}
}
