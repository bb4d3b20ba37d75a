package orch

import (
	"math"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/syncs"
	"github.com/sophonz/st/internal/tokens"
)

// Claude's status line (reference §13) is the one place where an agent
// gives its own cost and its account's usage-limit percentages: Claude
// runs its statusLine command with them on stdin at its start and after
// each response, and st statusline hands them here (the daemon checked
// that it runs in the pane it names). The cost becomes the worker's, as
// the agent's own figure (not an estimate); the percentages go into the
// limit book (nearlimit.go), by account.

// statusLineInfo is what st takes from one status-line payload.
type statusLineInfo struct {
	session string
	// transcript is the conversation file it names (its account's).
	transcript string
	cost       *float64
	limits     []api.AgentLimit
}

// parseStatusLine reads a status-line payload, which is untrusted: it
// must be a JSON object no larger than api.MaxStatusLineBytes; a cost is taken only
// when it is a finite number in [0, 1e6) dollars, a limit only with a
// percentage in [0, 100] and a reset, when given, within a year of now.
// What is wrong is left out, never guessed.
func parseStatusLine(payload []byte, now time.Time) (statusLineInfo, bool) {
	var in statusLineInfo
	if len(payload) > api.MaxStatusLineBytes || !gjson.ValidBytes(payload) {
		return in, false
	}
	r := gjson.ParseBytes(payload)
	if !r.IsObject() {
		return in, false
	}
	if s := r.Get("session_id"); s.Type == gjson.String && agent.ValidSession("claude", s.String()) {
		in.session = s.String()
	}
	if tp := r.Get("transcript_path"); tp.Type == gjson.String {
		in.transcript = transcriptPath(tp.Str)
	}
	if c := r.Get("cost.total_cost_usd"); c.Type == gjson.Number {
		if v := c.Float(); !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 && v < 1e6 {
			in.cost = &v
		}
	}
	for _, w := range []struct{ key, name string }{{"five_hour", "5-hour"}, {"seven_day", "7-day"}} {
		l := r.Get("rate_limits." + w.key)
		if !l.IsObject() {
			continue
		}
		pct := l.Get("used_percentage")
		if pct.Type != gjson.Number {
			continue
		}
		at, _ := resetTime(l.Get("resets_at"))
		if al, ok := limitOf("claude", w.name, pct.Float(), at, now); ok {
			in.limits = append(in.limits, al)
		}
	}
	return in, true
}

// limitOf checks one window's percentage (in [0, 100]) and reset (kept
// only within a year of now) as an AgentLimit.
func limitOf(kind, window string, pct float64, resets, now time.Time) (api.AgentLimit, bool) {
	if math.IsNaN(pct) || pct < 0 || pct > 100 {
		return api.AgentLimit{}, false
	}
	al := api.AgentLimit{Agent: kind, Window: window, UsedPercent: pct, Seen: now}
	if resets.After(now.AddDate(-1, 0, 0)) && resets.Before(now.AddDate(1, 0, 0)) {
		al.Resets = resets
	}
	return al, true
}

// resetTime reads a reset as the agents write one: epoch seconds (Codex,
// Claude's status line), epoch milliseconds, or an RFC 3339 time.
func resetTime(v gjson.Result) (time.Time, bool) {
	switch v.Type {
	case gjson.Number:
		f := v.Float()
		if math.IsNaN(f) || f <= 0 || f > 1e15 {
			return time.Time{}, false
		}
		if f > 1e11 { // milliseconds
			return time.UnixMilli(int64(f)), true
		}
		return time.Unix(int64(f), 0), true
	case gjson.String:
		t, err := time.Parse(time.RFC3339, v.String())
		return t, err == nil
	}
	return time.Time{}, false
}

// StatusLine takes what Claude's status line said in pane (req.Payload):
// its account's limits, and, for a live worker of this machine in that
// pane whose conversation it is, its cost. A payload st cannot read is
// refused whole.
func (m *Manager) StatusLine(req api.HookRequest) error {
	in, ok := parseStatusLine(req.Payload, m.cfg.Now())
	if !ok {
		return errorf(api.KindUsage, "", "st statusline: the status line's JSON is not an object st can read (at most %d bytes)", api.MaxStatusLineBytes)
	}
	changed := false
	var account string
	if len(in.limits) > 0 {
		ad, _ := agent.Lookup("claude")
		account = accountOf(ad, in.transcript)
	}
	for _, l := range in.limits {
		l.Pane, l.Account = req.Pane, account
		changed = m.limits.note(l) || changed
	}
	if changed {
		m.reg.notify() // (the web UI shows it)
	}
	if in.cost == nil {
		return nil
	}
	m.settleIfChanged(func(c *change) {
		w := m.reg.workers[req.Pane]
		if w == nil || w.Remote() || !w.State.Live() || !claudeRecords(w.Agent) {
			return // (a status line is Claude's: the sim's, which mimics it, too)
		}
		if in.session != "" && w.AgentSession != "" && in.session != w.AgentSession {
			return // another conversation's, in the worker's pane
		}
		m.noteAgentCostLocked(c, w, *in.cost)
	})
	return nil
}

// claudeRecords reports whether agent kind writes Claude's records, and
// so may run Claude's status line: Claude, and the sim, which mimics it.
func claudeRecords(kind string) bool {
	ad, err := agent.Lookup(kind)
	return err == nil && ad.Records.TokenFormat == tokens.FormatClaude
}

// noteAgentCostLocked makes cost the agent's own figure of what w spent,
// in place of an estimate, and checks its run's budget.
func (m *Manager) noteAgentCostLocked(c *change, w *Worker, cost float64) {
	syncs.AssertLocked(&m.reg.mu)
	if w.AgentCost != nil && *w.AgentCost == cost {
		return
	}
	if w.AgentCost == nil && cost == 0 && w.Tokens == nil {
		// Claude's first status line, before any answer: nothing spent,
		// and the TOKENS column stays "-" until something is.
		return
	}
	w.AgentCost = &cost
	w.Tokens = withAgentCost(w.Tokens, w.AgentCost)
	c.touchLocked(m.reg.runOf[w.ID])
	m.checkBudgetLocked(c, m.reg.runOf[w.ID])
}

// withAgentCost is t with the agent's own cost in place of any estimate
// (t itself when the agent gave none).
func withAgentCost(t *api.Tokens, cost *float64) *api.Tokens {
	if cost == nil {
		return t
	}
	var out api.Tokens
	if t != nil {
		out = *t
	}
	v := *cost
	out.CostUSD, out.CostEstimated, out.PriceDate, out.CostBy = &v, false, "", api.CostByAgent
	return &out
}
