package orch

import (
	"testing"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
)

// TestScreenStatesMoveTheWorker: the looks st takes at the screen of an
// agent without hooks move its worker as its hooks would have: work seen
// is working, a question is waiting, work again after an answer is
// working, and the box back ends the turn only on a second look in a row
// (one look can fall between two steps of a turn).
func TestScreenStatesMoveTheWorker(t *testing.T) {
	h := newHarness(t, api.Starting, nil)
	ad, err := agent.Describe("toy", agent.Description{Program: "/bin/cat", Ready: []string{"> "}})
	if err != nil {
		t.Fatal(err)
	}
	for i, step := range []struct {
		screen agent.Screen
		want   api.State
	}{
		{agent.ScreenUnknown, api.Starting},
		{agent.ScreenReady, api.Starting}, // its box is up: it started, no turn yet
		{agent.ScreenWorking, api.Working},
		{agent.ScreenPrompt, api.Waiting},
		{agent.ScreenPrompt, api.Waiting},
		{agent.ScreenWorking, api.Working},
		{agent.ScreenReady, api.Working}, // once: between two steps, maybe
		{agent.ScreenWorking, api.Working},
		{agent.ScreenReady, api.Working},
		{agent.ScreenTyped, api.Idle}, // twice in a row: the turn is over
		{agent.ScreenReady, api.Idle},
	} {
		h.m.screenLook(workerID, ad, agent.View{Screen: step.screen})
		if got := h.worker().State; got != step.want {
			t.Fatalf("look %d (%s): the worker is %s, want %s", i, step.screen, got, step.want)
		}
	}
	if kind, _ := h.m.facts.agentOf(workerID); kind != "toy" {
		t.Errorf("the pane's agent = %q, want toy (st keeps it on the pane for a restart)", kind)
	}
}
