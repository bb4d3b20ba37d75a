package fakemodel

import (
	"net/http"
	"strconv"
	"time"
)

// A plan's usage limit, as the real services answer it (reference §13).
// The answer names the exact reset; a client shows it rounded to the
// minute and writes it exactly in its records.

// limitResets is when the usage limit of a LIMIT: script resets: d after
// the first request that carried it (keyed by the marker's line, so that
// a conversation's later requests share its reset: measured, Claude
// 2.1.332 sends a tool result again in another form, and a reset keyed by
// the whole text moved at its continue).
func (s *Server) limitResets(key string, d time.Duration) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limits == nil {
		s.limits = map[string]time.Time{}
	}
	at, ok := s.limits[key]
	if !ok {
		at = time.Now().Add(d)
		s.limits[key] = at
	}
	return at
}

// epochCeil is a reset as the services send it, whole seconds since the
// epoch, rounded up so that it is never before the true reset.
func epochCeil(t time.Time) int64 {
	n := t.Unix()
	if t.After(time.Unix(n, 0)) {
		n++
	}
	return n
}

// anthropicLimit answers as the Anthropic API answers a subscriber (a
// claude.ai plan, CLAUDE_CODE_OAUTH_TOKEN) at its 5-hour limit: a 429
// whose anthropic-ratelimit-unified-* headers say the limiter rejected
// the request and when it resets. Claude Code 2.1.332 reads
// -status, -reset (epoch seconds) and -representative-claim, and then
// says "You've hit your 5-hour limit · resets 3:54am" and fires
// StopFailure rate_limit.
func anthropicLimit(w http.ResponseWriter, resets time.Time) {
	at := strconv.FormatInt(epochCeil(resets), 10)
	h := w.Header()
	h.Set("anthropic-ratelimit-unified-status", "rejected")
	h.Set("anthropic-ratelimit-unified-reset", at)
	h.Set("anthropic-ratelimit-unified-representative-claim", "five_hour")
	h.Set("anthropic-ratelimit-unified-5h-status", "rejected")
	h.Set("anthropic-ratelimit-unified-5h-reset", at)
	h.Set("anthropic-ratelimit-unified-5h-utilization", "1.0")
	h.Set("anthropic-ratelimit-unified-fallback", "unavailable")
	h.Set("x-should-retry", "false")
	writeJSON(w, http.StatusTooManyRequests, map[string]any{
		"type":  "error",
		"error": map[string]any{"type": "rate_limit_error", "message": "This request would exceed your account's rate limit. Please try again later."},
	})
}

// openAILimit answers as the ChatGPT backend answers Codex at a plan's
// usage limit: a 429 usage_limit_reached with the reset (epoch seconds),
// and the x-codex-primary-* headers Codex takes its rate_limits from.
func openAILimit(w http.ResponseWriter, resets time.Time) {
	at := epochCeil(resets)
	h := w.Header()
	h.Set("x-codex-primary-used-percent", "100")
	h.Set("x-codex-primary-window-minutes", "300")
	h.Set("x-codex-primary-reset-at", strconv.FormatInt(at, 10))
	h.Set("x-codex-secondary-used-percent", "40")
	h.Set("x-codex-secondary-window-minutes", "10080")
	h.Set("x-codex-secondary-reset-at", strconv.FormatInt(at+6*24*3600, 10))
	writeJSON(w, http.StatusTooManyRequests, map[string]any{
		"error": map[string]any{
			"type": "usage_limit_reached", "message": "The usage limit has been reached",
			"plan_type": "plus", "resets_at": at, "resets_in_seconds": max(0, int64(time.Until(resets).Seconds())),
		},
	})
}

// Used is how much of a claude.ai subscriber's limits is used: the
// 5-hour window's and the 7-day one's share (0-1) and resets.
type Used struct {
	FiveHour, SevenDay             float64
	FiveHourResets, SevenDayResets time.Time
}

// SetUsed makes every answer of the Anthropic API carry the
// anthropic-ratelimit-unified-* headers of a subscriber with u of their
// limits used (Claude Code shows them in its status line's rate_limits,
// and warns from a share on), and every answer of the Responses API the
// x-codex-primary-* (5 hours) and x-codex-secondary-* (7 days) headers
// Codex writes into its rollout's rate_limits.
func (s *Server) SetUsed(u Used) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.near = &u
}

// usedHeaders writes SetUsed's headers, when it was called.
func (s *Server) usedHeaders(w http.ResponseWriter) {
	s.mu.Lock()
	u := s.near
	s.mu.Unlock()
	if u == nil {
		return
	}
	h := w.Header()
	h.Set("anthropic-ratelimit-unified-status", "allowed")
	h.Set("anthropic-ratelimit-unified-representative-claim", "five_hour")
	h.Set("anthropic-ratelimit-unified-reset", strconv.FormatInt(epochCeil(u.FiveHourResets), 10))
	h.Set("anthropic-ratelimit-unified-5h-status", "allowed")
	h.Set("anthropic-ratelimit-unified-5h-reset", strconv.FormatInt(epochCeil(u.FiveHourResets), 10))
	h.Set("anthropic-ratelimit-unified-5h-utilization", strconv.FormatFloat(u.FiveHour, 'f', -1, 64))
	h.Set("anthropic-ratelimit-unified-7d-status", "allowed")
	h.Set("anthropic-ratelimit-unified-7d-reset", strconv.FormatInt(epochCeil(u.SevenDayResets), 10))
	h.Set("anthropic-ratelimit-unified-7d-utilization", strconv.FormatFloat(u.SevenDay, 'f', -1, 64))
	h.Set("anthropic-ratelimit-unified-fallback", "unavailable")
}

// usedHeadersOpenAI writes SetUsed's headers as the ChatGPT backend sends
// them to Codex, when it was called.
func (s *Server) usedHeadersOpenAI(w http.ResponseWriter) {
	s.mu.Lock()
	u := s.near
	s.mu.Unlock()
	if u == nil {
		return
	}
	h := w.Header()
	h.Set("x-codex-primary-used-percent", strconv.FormatFloat(u.FiveHour*100, 'f', -1, 64))
	h.Set("x-codex-primary-window-minutes", "300")
	h.Set("x-codex-primary-reset-at", strconv.FormatInt(epochCeil(u.FiveHourResets), 10))
	h.Set("x-codex-secondary-used-percent", strconv.FormatFloat(u.SevenDay*100, 'f', -1, 64))
	h.Set("x-codex-secondary-window-minutes", "10080")
	h.Set("x-codex-secondary-reset-at", strconv.FormatInt(epochCeil(u.SevenDayResets), 10))
}
