package orch

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/syncs"
	"github.com/sophonz/st/internal/tokens"
)

// A run's budget (issue 35, item 2): tokens or dollars, set by st orch
// start --budget or config.toml's default. Its workers' tokens (tokens.go;
// those on other machines as their machines report them) are checked
// against it at each count: at 80 % the coordinator is told, between its
// turns (a notice); at 100 % st opens a gate for a person and starts no
// new worker of the run (st worker start is refused, its tasks wait)
// until it is answered. Workers at work are left to finish their turn:
// st never cuts a turn short, and what one more turn spends is what the
// 20 % between the warning and the gate is for.

// budgetGoOn and budgetStop begin the gate's two options.
const (
	budgetGoOn = "go on with a budget of "
	budgetStop = "stop the run's workers"
)

// checkBudgetLocked tells r's coordinator, or opens r's gate, as its
// workers' tokens reach 80 % or 100 % of its budget.
func (m *Manager) checkBudgetLocked(c *change, r *Run) {
	syncs.AssertLocked(&m.reg.mu)
	if r == nil || r.Budget == nil || r.Budget.IsZero() {
		return
	}
	used, known := m.budgetUsedLocked(r)
	if !known {
		return
	}
	spent := m.runTokensLocked(r)
	if used >= 0.8 && !r.BudgetWarned {
		r.BudgetWarned = true
		c.touchLocked(r)
		c.lines = append(c.lines, noticeLine{pane: r.Coordinator, key: "budget80 " + r.ID + " " + r.Budget.String(),
			text: fmt.Sprintf("st: run %s has used %.0f%% of its budget (%s of %s). At 100%% st starts no new worker of it until a person answers; wrap up or ask for more.",
				r.ID, used*100, spentText(spent, *r.Budget), r.Budget.String())})
	}
	if used >= 1 && r.BudgetGate == "" {
		m.openBudgetGateLocked(c, r, spent)
	}
}

// budgetUsedLocked is how much of r's budget its workers spent.
func (m *Manager) budgetUsedLocked(r *Run) (float64, bool) {
	syncs.AssertLocked(&m.reg.mu)
	return m.usedOfLocked(r, *r.Budget)
}

// usedOfLocked is how much of budget b r's workers spent.
func (m *Manager) usedOfLocked(r *Run, b tokens.Budget) (float64, bool) {
	syncs.AssertLocked(&m.reg.mu)
	t := m.runTokensLocked(r)
	if t == nil {
		return 0, b.Tokens > 0
	}
	c := tokens.Counts{Input: t.Input, Output: t.Output, CacheRead: t.CacheRead, CacheWrite: t.CacheWrite, Reasoning: t.Reasoning}
	usd := 0.0
	if t.CostUSD != nil {
		usd = *t.CostUSD
	}
	return b.Used(c, usd, t.CostUSD != nil)
}

// spentText is what a run spent, in the budget's unit.
func spentText(t *api.Tokens, b tokens.Budget) string {
	if b.USD > 0 {
		if t == nil || t.CostUSD == nil {
			return "an unknown cost"
		}
		return "~" + tokens.USD(*t.CostUSD)
	}
	if t == nil {
		return "0"
	}
	return tokens.Human(t.Total)
}

// openBudgetGateLocked opens the gate of a run whose budget is spent.
func (m *Manager) openBudgetGateLocked(c *change, r *Run, spent *api.Tokens) {
	syncs.AssertLocked(&m.reg.mu)
	more := tokens.Budget{Tokens: r.Budget.Tokens * 2, USD: r.Budget.USD * 2}
	g := &api.Gate{ID: newID("gate-"), Run: r.ID, State: api.GateOpen, Asked: m.cfg.Now(),
		Question: fmt.Sprintf("Run %s (%s) has spent its budget: %s of %s. st starts no new worker of it until you answer; its workers at work finish their turn.",
			r.ID, orDash(r.Objective, "no objective"), spentText(spent, *r.Budget), r.Budget.String()),
		Options: []string{budgetGoOn + more.String(), budgetStop},
		Value:   &api.GateValue{Prefix: budgetGoOn, Hint: "tokens (5M) or dollars ($20), more than the run spent"}}
	// In memory now, under the registry's lock; gates.json is written
	// once that lock is let go (change.gates: no disk under m.reg.mu). The
	// gate stands whatever the disk says, as the tokens that opened it do.
	m.gates.add(g)
	c.gates = true
	r.BudgetGate = g.ID
	c.touchLocked(r)
	m.logf("run %s: budget %s spent; gate %s opened", r.ID, r.Budget.String(), g.ID)
	c.lines = append(c.lines, noticeLine{pane: r.Coordinator, key: "budget100 " + g.ID,
		text: fmt.Sprintf("st: run %s has spent its budget (%s). st starts no new worker of it until a person answers gate %s; your workers at work finish their turn.",
			r.ID, r.Budget.String(), g.ID)})
	if m.cfg.OnGate != nil {
		pub := publicGate(g)
		m.bg.Go(func(context.Context) { m.cfg.OnGate(pub) })
	}
}

func orDash(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// budgetHeldLocked is the gate that holds back r's new workers ("" for
// none).
func (m *Manager) budgetHeldLocked(r *Run) string {
	syncs.AssertLocked(&m.reg.mu)
	if r == nil {
		return ""
	}
	return r.BudgetGate
}

// checkBudgetHold refuses a new worker of a run whose budget is spent,
// while its gate is open.
func (m *Manager) checkBudgetHold(pane string) error {
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	r := m.reg.runOf[pane]
	if w := m.reg.workers[pane]; w == nil || !w.State.Live() {
		r = m.reg.currentRunLocked(pane)
	}
	if g := m.budgetHeldLocked(r); g != "" {
		return errorf(api.KindConflict, "a person answers it: st gate answer "+g+" OPTION (st gate list shows it)",
			"refused: run %s has spent its budget (%s), and st starts no new worker of it until gate %s is answered", r.ID, r.Budget.String(), g)
	}
	return nil
}

// budgetAnsweredLocked acts on the answer of a run's budget gate: a new
// budget and the run's held tasks started, or its workers stopped.
func (m *Manager) budgetAnsweredLocked(c *change, g api.Gate) {
	syncs.AssertLocked(&m.reg.mu)
	if g.State != api.GateAnswered {
		return
	}
	r := m.reg.runs[g.Run]
	if r == nil || r.BudgetGate != g.ID {
		return
	}
	r.BudgetGate = ""
	c.touchLocked(r)
	if b, ok := strings.CutPrefix(g.Answer, budgetGoOn); ok {
		if nb, err := tokens.ParseBudget(b); err == nil {
			r.Budget, r.BudgetWarned = &nb, false
			m.logf("run %s: budget raised to %s by %s", r.ID, nb.String(), g.AnsweredBy)
		}
		c.scheduleLocked(r)
		m.checkBudgetLocked(c, r)
		return
	}
	var ids []string
	for _, w := range r.Workers {
		if w.State.Live() && !w.Remote() {
			ids = append(ids, w.ID)
		}
	}
	m.logf("run %s: its budget's gate answered %q: stopping %d workers", r.ID, g.Answer, len(ids))
	m.bg.Go(func(ctx context.Context) {
		for _, id := range ids {
			if _, err := m.Stop(ctx, api.IDRequest{ID: id}); err != nil {
				m.logf("run %s: stop worker %s: %v", r.ID, id, err)
			}
		}
	})
}

// budgetView is r's budget as the API shows it (nil for none).
func (m *Manager) budgetViewLocked(r *Run) *api.BudgetView {
	syncs.AssertLocked(&m.reg.mu)
	if r.Budget == nil || r.Budget.IsZero() {
		return nil
	}
	used, known := m.budgetUsedLocked(r)
	return &api.BudgetView{Budget: api.Budget{Tokens: r.Budget.Tokens, USD: r.Budget.USD}, Text: r.Budget.String(),
		Used: used, UsedKnown: known, Warned: r.BudgetWarned, Gate: r.BudgetGate, Held: r.BudgetGate != ""}
}

// valueAnswer checks the amount of an answer to a gate's value option
// (a budget gate's "go on with a budget of 5M", or --value 5M) and
// returns the option as it is taken; "" when req answers with a plain
// option. A budget must be one the run has not spent already: a smaller
// one would open the gate again at once.
func (m *Manager) valueAnswer(req api.GateRequest) (string, error) {
	g, ok := m.gates.get(req.ID)
	if !ok {
		return "", nil // (the answer says there is no such gate)
	}
	amount := strings.TrimSpace(req.Value)
	if g.Value == nil {
		if amount != "" {
			return "", errorf(api.KindUsage, "answer with one of: "+strings.Join(g.Options, ", "), "gate %s takes no amount (--value %s)", g.ID, amount)
		}
		return "", nil
	}
	opt := strings.TrimSpace(req.Option)
	if amount == "" {
		rest, ok := cutPrefixFold(opt, strings.TrimSpace(g.Value.Prefix))
		if !ok || slices.ContainsFunc(g.Options, func(o string) bool { return strings.EqualFold(o, opt) }) {
			return "", nil // a plain option, or not this one: answerLocked says which
		}
		amount = strings.TrimSpace(rest)
	} else if opt != "" && !strings.HasPrefix(strings.ToLower(opt), strings.ToLower(strings.TrimSpace(g.Value.Prefix))) {
		return "", errorf(api.KindUsage, "give --value alone, or with the option it sets ("+strings.TrimSpace(g.Value.Prefix)+")",
			"option %q of gate %s takes no amount", opt, g.ID)
	}
	nb, err := tokens.ParseBudget(amount)
	if err != nil {
		return "", errorf(api.KindUsage, "st gate answer "+g.ID+" --value AMOUNT: "+g.Value.Hint, "gate %s: %v", g.ID, err)
	}
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	if r := m.reg.runs[g.Run]; r != nil && r.BudgetGate == g.ID {
		if used, known := m.usedOfLocked(r, nb); known && used >= 1 {
			return "", errorf(api.KindUsage, "give more than the run spent ("+spentText(m.runTokensLocked(r), nb)+")",
				"refused: run %s has spent %s already, so a budget of %s would be spent at once", r.ID, spentText(m.runTokensLocked(r), nb), nb.String())
		}
	}
	return g.Value.Prefix + nb.String(), nil
}

// cutPrefixFold is strings.CutPrefix, with the prefix's case ignored.
func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}
