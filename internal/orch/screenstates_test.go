package orch

import (
	"context"
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

// A hookless agent whose whole turn is shorter than one look: st never saw
// it work, it reported, and a look then still shows the reported turn's
// busy line. That is no new turn: the worker stays done, with no "ended
// its turn without a report". Once its box is back, work seen again is a
// new turn (a person typed into it), and makes a new report due.
func TestScreenStatesAReportEndsTheTurn(t *testing.T) {
	h := newHarness(t, api.Starting, nil)
	ad, err := agent.Describe("toy", agent.Description{Program: "/bin/cat", Ready: []string{"> "}})
	if err != nil {
		t.Fatal(err)
	}
	look := func(s agent.Screen, want api.State) {
		t.Helper()
		h.m.screenLook(workerID, ad, agent.View{Screen: s})
		if got := h.worker().State; got != want {
			t.Fatalf("look (%s): the worker is %s, want %s", s, got, want)
		}
	}
	look(agent.ScreenReady, api.Starting)
	if _, err := h.m.Done(context.Background(), api.DoneRequest{Pane: workerID, Summary: "did it"}); err != nil {
		t.Fatal(err)
	}
	look(agent.ScreenWorking, api.Done)
	look(agent.ScreenReady, api.Done)
	look(agent.ScreenReady, api.Done)
	for _, a := range h.openItems() {
		if a.Kind == api.AttnNoReport {
			t.Fatalf("a no-report item after a report: %+v", a)
		}
	}
	if w := h.worker(); w.Summary != "did it" {
		t.Fatalf("summary = %q", w.Summary)
	}
	// Its box came back: work now is a new turn, and no report ends it.
	look(agent.ScreenWorking, api.Working)
	look(agent.ScreenReady, api.Working)
	look(agent.ScreenReady, api.Idle)
}
