package fakemodel

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"
)

func TestParseLimit(t *testing.T) {
	s, ok := parseScript("LIMIT: 2.5 SAY: after")
	if !ok || s.limit != 2500*time.Millisecond || s.say != "after" {
		t.Errorf("got %+v %v", s, ok)
	}
	if s, _ := parseScript("LIMIT: soon"); s.limit != 0 {
		t.Errorf("LIMIT: soon gave %v", s.limit)
	}
}

// untilOK posts body until the server stops refusing it with 429, and
// returns that answer.
func untilOK(t *testing.T, url string, body any, limit time.Duration) *http.Response {
	t.Helper()
	deadline := time.Now().Add(limit + 10*time.Second)
	for {
		resp := post(t, url, body)
		if resp.StatusCode != http.StatusTooManyRequests {
			return resp
		}
		if time.Now().After(deadline) {
			t.Fatalf("still at the limit %v after it", time.Since(deadline.Add(-limit-10*time.Second)))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestClaudeSubscriberLimit: a LIMIT: prompt gets a subscriber's 429
// with the unified headers Claude Code reads (status rejected, the reset
// in epoch seconds, the claim), the same reset on each request until
// then, and the script's answer after it.
func TestClaudeSubscriberLimit(t *testing.T) {
	s := Start(t)
	url := s.URL() + "/v1/messages?beta=true"
	body := claudeBody(false, userText("LIMIT: 2 SAY: after the reset"), systemMsg)
	before := time.Now()
	resp := post(t, url, body)
	h := resp.Header
	if resp.StatusCode != 429 || h.Get("anthropic-ratelimit-unified-status") != "rejected" ||
		h.Get("anthropic-ratelimit-unified-representative-claim") != "five_hour" || h.Get("x-should-retry") != "false" {
		t.Fatalf("status %d, headers %v", resp.StatusCode, h)
	}
	reset, err := strconv.ParseInt(h.Get("anthropic-ratelimit-unified-reset"), 10, 64)
	if err != nil || reset < before.Add(2*time.Second).Unix() || reset > time.Now().Add(3*time.Second).Unix() {
		t.Fatalf("reset %q (%v), want 2 s after %v", h.Get("anthropic-ratelimit-unified-reset"), err, before)
	}
	var e struct {
		Type  string
		Error struct{ Type string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || e.Type != "error" || e.Error.Type != "rate_limit_error" {
		t.Errorf("body %+v, %v", e, err)
	}
	// A request of the same conversation before the reset: the same reset.
	if again := post(t, url, body); again.StatusCode == 429 && again.Header.Get("anthropic-ratelimit-unified-reset") != h.Get("anthropic-ratelimit-unified-reset") {
		t.Errorf("reset moved: %s, then %s", h.Get("anthropic-ratelimit-unified-reset"), again.Header.Get("anthropic-ratelimit-unified-reset"))
	}
	// A side request (no tools) is not refused.
	side := map[string]any{"model": "m", "max_tokens": 10, "messages": []any{userText("LIMIT: 2 SAY: title")}}
	if r := post(t, url, side); r.StatusCode != 200 {
		t.Errorf("side request at the limit: %d", r.StatusCode)
	}
	ok := untilOK(t, url, body, 2*time.Second)
	if time.Now().Unix() < reset-1 {
		t.Errorf("answered at %v, before the reset %d", time.Now(), reset)
	}
	var m struct{ Content []struct{ Text string } }
	if err := json.NewDecoder(ok.Body).Decode(&m); err != nil || ok.StatusCode != 200 || len(m.Content) != 1 || m.Content[0].Text != "after the reset" {
		t.Errorf("after the reset: status %d, %+v, %v", ok.StatusCode, m, err)
	}
	var limited int
	for _, l := range s.Requests() {
		if !l.Limited.IsZero() {
			limited++
		}
	}
	if limited < 2 {
		t.Errorf("%d requests logged as limited, want 2 or more", limited)
	}
}

// TestCodexUsageLimit: Codex gets a 429 usage_limit_reached with
// resets_at, and the x-codex-primary-* headers at 100 %.
func TestCodexUsageLimit(t *testing.T) {
	s := Start(t)
	url := s.URL() + "/v1/responses"
	body := codexBody(codexTools, codexUser("LIMIT: 1 SAY: after"))
	resp := post(t, url, body)
	var e struct {
		Error struct {
			Type     string
			ResetsAt int64 `json:"resets_at"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || resp.StatusCode != 429 || e.Error.Type != "usage_limit_reached" {
		t.Fatalf("status %d, %+v, %v", resp.StatusCode, e, err)
	}
	h := resp.Header
	if h.Get("x-codex-primary-used-percent") != "100" || h.Get("x-codex-primary-reset-at") != strconv.FormatInt(e.Error.ResetsAt, 10) {
		t.Errorf("headers %v, resets_at %d", h, e.Error.ResetsAt)
	}
	if d := time.Until(time.Unix(e.Error.ResetsAt, 0)); d < 0 || d > 2*time.Second {
		t.Errorf("resets_at %d is %v away, want about 1 s", e.Error.ResetsAt, d)
	}
	ok := untilOK(t, url, body, time.Second)
	events, _ := readSSE(t, ok.Body)
	if ok.StatusCode != 200 || len(events) == 0 {
		t.Errorf("after the reset: status %d, events %v", ok.StatusCode, names(events))
	}
}

// TestContinueGoesOn: "continue" after a limit goes on with the script
// where it stopped, whether it comes as a prompt of its own (Codex) or
// merged with the failed turn's (Claude); any other prompt starts anew.
func TestContinueGoesOn(t *testing.T) {
	script := "LIMIT: 1 RUN: echo a SAY: all done"
	if p := decide([]event{{text: script}, {text: "continue"}}); p.run != "echo a" {
		t.Errorf("continue as its own prompt: %+v", p)
	}
	if p := decide([]event{{text: "cat task.md"}, {toolResult: true, text: script}, {text: " Continue\n"}}); p.run != "echo a" {
		t.Errorf("continue after a task file: %+v", p)
	}
	if p := decide([]event{{text: script}, {toolResult: true, text: "a"}, {text: "continue"}}); p.say != "all done" {
		t.Errorf("continue after the step: %+v", p)
	}
	if p := decide([]event{{text: script}, {text: "something else"}}); p.run != "" || p.say != defaultAnswer {
		t.Errorf("a new prompt: %+v", p)
	}
	if p := decide([]event{{text: "continue"}}); p.say != defaultAnswer {
		t.Errorf("continue with nothing before: %+v", p)
	}
	req := &anthropicRequest{}
	if err := json.Unmarshal(mustJSON(map[string]any{"messages": []any{userText(script, "<system-reminder>x</system-reminder>", "continue")}}), req); err != nil {
		t.Fatal(err)
	}
	if p := decide(anthropicEvents(req)); p.run != "echo a" {
		t.Errorf("continue merged with the failed turn: %+v", p)
	}
}
