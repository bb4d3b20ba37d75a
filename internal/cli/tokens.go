package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/tokens"
)

// tokensCell is a worker's TOKENS column: its total in human units, with
// its cost when one is known ("-" before any record was read): "~$0.42"
// for st's estimate, "$0.42" for the agent's own figure.
func tokensCell(t *api.Tokens) string {
	if t == nil {
		return "-"
	}
	s := tokens.Human(t.Total)
	if t.CostUSD != nil {
		s += " " + costMark(t) + tokens.USD(*t.CostUSD)
	}
	return s
}

// costMark is "~" before a cost st estimated, nothing before the agent's.
func costMark(t *api.Tokens) string {
	if t.CostEstimated {
		return "~"
	}
	return ""
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
	switch {
	case t.CostUSD != nil && t.CostEstimated:
		fmt.Fprintf(&b, ", ~%s estimated (prices of %s)", tokens.USD(*t.CostUSD), t.PriceDate)
	case t.CostUSD != nil:
		fmt.Fprintf(&b, ", %s (the agent's own figure)", tokens.USD(*t.CostUSD))
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

// printNearLimits says which agent accounts are near a usage limit, as
// the agents themselves said it, one line each: "near a limit: claude
// (ann@example.com): 5-hour limit 92 % used, resets 03:54".
func printNearLimits(w io.Writer, indent string, ls []api.AgentLimit) {
	for _, l := range ls {
		if l.Near {
			fmt.Fprintf(w, "%snear a limit: %s\n", indent, limitText(l))
		}
	}
}

// limitText is one limit as a person reads it.
func limitText(l api.AgentLimit) string {
	who := l.Agent
	if l.Account != "" {
		who += " (" + l.Account + ")"
	}
	s := fmt.Sprintf("%s: %s limit %.0f %% used", who, l.Window, l.UsedPercent)
	if !l.Resets.IsZero() {
		s += ", resets " + l.Resets.Local().Format("15:04")
	}
	return s
}
