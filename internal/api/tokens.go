package api

import "time"

// Tokens is what a worker's agent spent (or a run's workers together), as
// st's token ledger read it from the agent's own records
// (internal/tokens), by kind. Total is every kind summed. CostUSD is the
// cost where one is known: the agent's own figure where the agent gives
// one (Claude's status line, CostBy "agent", CostEstimated false), else
// estimated from the price table of config.toml ([tokens.prices], read on
// PriceDate), so CostEstimated is set with it; nil when some model that
// spent tokens has no price there. A sum holding any estimate is an
// estimate.
type Tokens struct {
	Input         int64    `json:"input"`
	Output        int64    `json:"output"`
	CacheRead     int64    `json:"cache_read"`
	CacheWrite    int64    `json:"cache_write"`
	Reasoning     int64    `json:"reasoning"`
	Total         int64    `json:"total"`
	CostUSD       *float64 `json:"cost_usd,omitempty"`
	CostEstimated bool     `json:"cost_estimated,omitempty"`
	PriceDate     string   `json:"price_date,omitempty"`
	// CostBy is CostByAgent when the cost is the agent's own figure (for
	// a sum: every part of it is), "" for an estimate or none.
	CostBy string `json:"cost_by,omitempty"`
}

// CostByAgent marks a cost the agent gave itself.
const CostByAgent = "agent"

// Valid reports whether every count is at or above zero and adds up: what
// st takes from another machine's view of its workers.
func (t *Tokens) Valid() bool {
	if t == nil {
		return true
	}
	if t.Input < 0 || t.Output < 0 || t.CacheRead < 0 || t.CacheWrite < 0 || t.Reasoning < 0 {
		return false
	}
	sum := t.Input + t.Output + t.CacheRead + t.CacheWrite + t.Reasoning
	if sum < 0 || sum != t.Total {
		return false
	}
	return t.CostUSD == nil || (*t.CostUSD >= 0 && *t.CostUSD < 1e12)
}

// Add sums two workers' tokens: a cost only where both have one.
func (t *Tokens) Add(o *Tokens) *Tokens {
	if o == nil {
		return t
	}
	if t == nil {
		c := *o
		return &c
	}
	s := &Tokens{Input: t.Input + o.Input, Output: t.Output + o.Output, CacheRead: t.CacheRead + o.CacheRead,
		CacheWrite: t.CacheWrite + o.CacheWrite, Reasoning: t.Reasoning + o.Reasoning, Total: t.Total + o.Total,
		CostEstimated: t.CostEstimated || o.CostEstimated, PriceDate: t.PriceDate}
	if t.CostBy == CostByAgent && o.CostBy == CostByAgent {
		s.CostBy = CostByAgent
	}
	if s.PriceDate == "" {
		s.PriceDate = o.PriceDate
	}
	if (t.CostUSD == nil) == (o.CostUSD == nil) && t.CostUSD != nil {
		v := *t.CostUSD + *o.CostUSD
		s.CostUSD = &v
	} else if t.Total == 0 || o.Total == 0 {
		// The one that spent nothing costs nothing.
		if t.CostUSD != nil {
			s.CostUSD, s.CostBy = t.CostUSD, t.CostBy
		} else {
			s.CostUSD, s.CostBy = o.CostUSD, o.CostBy
		}
	}
	return s
}

// Budget is a run's budget, as st orch start --budget or config.toml's
// [tokens] budget gave it: tokens, or US dollars of estimated cost.
type Budget struct {
	Tokens int64   `json:"tokens,omitempty"`
	USD    float64 `json:"usd,omitempty"`
}

// BudgetView is a run's budget and how much of it is spent.
type BudgetView struct {
	Budget
	// Text is the budget as a person writes it (500k, $5).
	Text string `json:"text"`
	// Used is the fraction spent (1 = all of it); UsedKnown is false for
	// a dollar budget while no cost is known.
	Used      float64 `json:"used"`
	UsedKnown bool    `json:"used_known"`
	// Warned: the coordinator was told of 80 %; Gate is the gate opened
	// at 100 %, open while st holds back the run's new workers.
	Warned bool   `json:"warned,omitempty"`
	Gate   string `json:"gate,omitempty"`
	Held   bool   `json:"held,omitempty"`
}

// AgentLimit is how much of one usage-limit window of an agent account is
// used, as the agent itself last said it (Claude's status line
// rate_limits, Codex's rollout rate_limits): st status and the web UI say
// so when it is near (Near: at or above config.toml's [tokens]
// near_limit, 80 % unless set).
type AgentLimit struct {
	// Agent is the account's agent kind (claude, codex).
	Agent string `json:"agent"`
	// Account is the account, as the agent's own files name it: the
	// login's email or id, else the agent's settings folder the
	// records came from; "" when st could not tell. Two logins of one
	// kind are two accounts, each with its own limits.
	Account string `json:"account,omitempty"`
	// Window is the limit's window as a person says it: "5-hour",
	// "7-day", or "N-minute" for another length.
	Window string `json:"window"`
	// UsedPercent is how much of it is used (0-100).
	UsedPercent float64 `json:"used_percent"`
	// Resets is when the window starts again (zero: not said).
	Resets time.Time `json:"resets,omitzero"`
	// Seen is when the agent said it; Pane the pane it came from.
	Seen time.Time `json:"seen"`
	Pane string    `json:"pane,omitempty"`
	Near bool      `json:"near"`
}
