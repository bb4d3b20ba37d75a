package orch

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/tokens"
)

// Near a usage limit (issue 35 item 3): the agents say how much of their
// account's limits is used, Claude in its status line's rate_limits,
// Codex in its rollout's token_count rate_limits (primary, secondary). A
// limit is the account's, not a worker's, so the book keeps the last word
// of each agent account and window, whichever pane said it (the account
// named from the agent's own files, agent/account.go: two Claude logins
// on one machine are two accounts); st status, st ls and
// the web UI say when one is at or above the threshold (config.toml's
// [tokens] near_limit). A window whose reset has passed is dropped: its
// share began again.

// DefaultNearLimit is the share of a limit (percent) from which st says
// an account is near it.
const DefaultNearLimit = 80

// limitBook holds the last known limits, by agent kind, account and
// window. Its lock is taken alone.
type limitBook struct {
	mu sync.Mutex
	by map[string]api.AgentLimit
}

func newLimitBook() *limitBook { return &limitBook{by: map[string]api.AgentLimit{}} }

// note keeps l unless the book knows a later word of its window, and
// reports whether what the book shows of it changed (its share, its
// reset), not only when it was said.
func (b *limitBook) note(l api.AgentLimit) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := l.Agent + "\x00" + l.Account + "\x00" + l.Window
	old, ok := b.by[k]
	if ok && old.Seen.After(l.Seen) {
		return false
	}
	b.by[k] = l
	return !ok || old.UsedPercent != l.UsedPercent || !old.Resets.Equal(l.Resets) || old.Pane != l.Pane
}

// list is every limit whose window has not reset by now, with Near set
// from near (percent), sorted by agent and window.
func (b *limitBook) list(now time.Time, near float64) []api.AgentLimit {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []api.AgentLimit
	for k, l := range b.by {
		if !l.Resets.IsZero() && !l.Resets.After(now) {
			delete(b.by, k)
			continue
		}
		l.Near = l.UsedPercent >= near
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Agent != out[j].Agent {
			return out[i].Agent < out[j].Agent
		}
		if out[i].Account != out[j].Account {
			return out[i].Account < out[j].Account
		}
		return out[i].Window < out[j].Window
	})
	return out
}

// nearLimit is the configured threshold, or the default.
func (m *Manager) nearLimit() float64 {
	if v := m.cfg.NearLimit; v > 0 && v <= 100 {
		return v
	}
	return DefaultNearLimit
}

// Limits are the agents' accounts' usage limits as last said, for st
// status and the web UI.
func (m *Manager) Limits() []api.AgentLimit {
	return m.limits.list(m.cfg.Now(), m.nearLimit())
}

// noteRolloutLimits keeps the limits a Codex rollout's last token_count
// said (read with its tokens), as the account's whose rollout it is.
func (m *Manager) noteRolloutLimits(pane string, ad *agent.Kind, rl *tokens.RateLimits) {
	if rl == nil {
		return
	}
	account := accountOf(ad, rl.File)
	now := m.cfg.Now()
	for _, w := range []tokens.RateWindow{rl.Primary, rl.Secondary} {
		if w.WindowMinutes <= 0 && w.UsedPercent == 0 {
			continue
		}
		var resets time.Time
		if w.ResetsAt > 0 && w.ResetsAt < 1e11 {
			resets = time.Unix(w.ResetsAt, 0)
		}
		if l, ok := limitOf(ad.Name, windowName(w.WindowMinutes), w.UsedPercent, resets, now); ok {
			l.Pane, l.Account = pane, account
			if m.limits.note(l) {
				m.reg.notify() // (the web UI shows it)
			}
		}
	}
}

// accountOf names the account of the records file at transcript (a
// path its hook named), as ad's own files say it: "" when st cannot.
// It reads the agent's files: never under a lock of the registry.
func accountOf(ad *agent.Kind, transcript string) string {
	path := transcriptPath(transcript)
	if ad == nil || ad.Records.Account == nil || path == "" {
		return ""
	}
	return ad.Records.Account(path).Label()
}

// windowName says a limit's window as a person does: 300 minutes is the
// 5-hour limit, 10080 the 7-day one.
func windowName(minutes int64) string {
	switch {
	case minutes <= 0:
		return "usage"
	case minutes%(24*60) == 0:
		return fmt.Sprintf("%d-day", minutes/(24*60))
	case minutes%60 == 0:
		return fmt.Sprintf("%d-hour", minutes/60)
	}
	return fmt.Sprintf("%d-minute", minutes)
}
