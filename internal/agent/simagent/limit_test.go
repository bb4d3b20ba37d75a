package simagent

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/tidwall/gjson"
)

// limitTask is a task that reaches the usage limit between two answers.
func limitHarness(t *testing.T, auto bool) *harness {
	cfg := testConfig()
	cfg.autoContinue, cfg.continueAfter = auto, time.Second
	cfg.fs = mapFS{fstest.MapFS{"w/task.md": {Data: []byte("limit: 90s\nanswer: finished after the limit\n")}}}
	h := newHarness(t, cfg)
	h.typ("Please do /w/task.md.\r")
	return h
}

func TestLimitStopsTheTurn(t *testing.T) {
	h := limitHarness(t, false)
	sf := h.lastHook("StopFailure")
	text, _ := sf.payload["last_assistant_message"].(string)
	if sf.payload["error"] != "rate_limit" || !strings.Contains(text, "resets 7:50am (UTC)") {
		t.Fatalf("StopFailure %+v", sf.payload)
	}
	rec := pending[appendRecord](h)
	at := gjson.GetBytes(rec.line, "apiErrorParams.rate_limit_info.resetsAt").Float()
	if rec.path != "/tmp/st-sim/sess-1.jsonl" || int64(at) != t0.Add(90*time.Second).Unix() {
		t.Fatalf("record %s at %s", rec.line, rec.path)
	}
	// st reads it the way it reads Claude's.
	ev, err := agent.Sim.MapEvent("StopFailure", mustJSON(t, sf.payload))
	if err != nil || !ev.Failed || ev.FailReason != "rate_limit" {
		t.Fatalf("mapped %+v %v", ev, err)
	}
	if v := h.view(); v.Screen != agent.ScreenReady {
		t.Fatalf("at the limit the box is up: %v", v.Screen)
	}
	// A line before the reset: the limit again, no work.
	h.at(10 * time.Second).typ("continue\r")
	if got := h.hooks(); strings.Count(strings.Join(got, " "), "StopFailure") != 2 || h.m.limited == nil {
		t.Fatalf("before the reset: %v", got)
	}
	// After it: the stopped turn goes on and ends with its answer.
	h.at(90 * time.Second).typ("continue\r")
	stop := h.lastHook("Stop")
	if stop.payload["last_assistant_message"] != "finished after the limit" {
		t.Fatalf("after the reset: %v %+v", h.hooks(), stop.payload)
	}
	if h.m.limited != nil || h.m.turn != nil {
		t.Fatal("still stopped")
	}
}

func TestLimitGoesOnByItself(t *testing.T) {
	h := limitHarness(t, true)
	tm := pending[startTimer](h)
	if tm.after != 91*time.Second {
		t.Fatalf("goes on %v after", tm.after)
	}
	h.at(91 * time.Second).send(timerMsg{tag: tm.tag})
	ups := 0
	for _, e := range h.eff {
		if f, ok := e.(fireHook); ok && f.event == "UserPromptSubmit" {
			ups++
		}
	}
	if ups != 2 || h.lastHook("Stop").payload["last_assistant_message"] != "finished after the limit" {
		t.Fatalf("its own going on: %v", h.hooks())
	}
	// A line typed after it went on is a new prompt, not a second go.
	h.typ("continue\r")
	if h.lastHook("Stop").payload["last_assistant_message"] != "Received: continue" {
		t.Fatalf("%v", h.hooks())
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
