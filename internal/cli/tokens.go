package cli

import (
	"fmt"
	"strings"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/tokens"
)

// tokensCell is a worker's TOKENS column: its total in human units, with
// its estimated cost when one is known ("-" before any record was read).
func tokensCell(t *api.Tokens) string {
	if t == nil {
		return "-"
	}
	s := tokens.Human(t.Total)
	if t.CostUSD != nil {
		s += " ~" + tokens.USD(*t.CostUSD)
	}
	return s
}

// tokensLine is the tokens of a worker or a run by kind, for st worker
// read and st orch show.
func tokensLine(t *api.Tokens) string {
	if t == nil {
		return "none read yet"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (input %s, output %s, cache read %s, cache write %s", tokens.Human(t.Total), tokens.Human(t.Input),
		tokens.Human(t.Output), tokens.Human(t.CacheRead), tokens.Human(t.CacheWrite))
	if t.Reasoning > 0 {
		fmt.Fprintf(&b, ", reasoning %s", tokens.Human(t.Reasoning))
	}
	b.WriteString(")")
	if t.CostUSD != nil {
		fmt.Fprintf(&b, ", ~%s estimated (prices of %s)", tokens.USD(*t.CostUSD), t.PriceDate)
	}
	return b.String()
}

// budgetLine is a run's budget and how much of it is spent.
func budgetLine(b *api.BudgetView) string {
	s := b.Text
	if b.UsedKnown {
		s += fmt.Sprintf(", %.0f%% used", b.Used*100)
	} else {
		s += ", use unknown (no cost known yet)"
	}
	if b.Held {
		s += " - spent: no new worker starts until gate " + b.Gate + " is answered"
	}
	return s
}
