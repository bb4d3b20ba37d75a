package tokens

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Price is what a model charges, in US dollars per million tokens of each
// kind. Reasoning tokens are charged as output where Reasoning is 0.
type Price struct {
	Input      float64 `toml:"input" json:"input"`
	Output     float64 `toml:"output" json:"output"`
	CacheRead  float64 `toml:"cache_read" json:"cache_read"`
	CacheWrite float64 `toml:"cache_write" json:"cache_write"`
	Reasoning  float64 `toml:"reasoning" json:"reasoning,omitempty"`
}

// Prices is config.toml's price table ([tokens.prices]): the date its
// prices were read off the providers' pages, and a price per model name
// prefix ("claude-sonnet-4" prices claude-sonnet-4-5-20250929). st has
// no prices of its own: they change, and a stale built-in price would be
// a wrong cost that looks right.
type Prices struct {
	Date   string           `toml:"date" json:"date"`
	Models map[string]Price `toml:"models" json:"models,omitempty"`
}

// Check refuses a table st would misread: no date, a date that is no
// date, a price below zero.
func (p Prices) Check() error {
	if len(p.Models) == 0 {
		return nil
	}
	if _, err := time.Parse(time.DateOnly, p.Date); err != nil {
		return errors.New("[tokens.prices] needs date = \"YYYY-MM-DD\", the day its prices were read")
	}
	for m, pr := range p.Models {
		for _, v := range []float64{pr.Input, pr.Output, pr.CacheRead, pr.CacheWrite, pr.Reasoning} {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("[tokens.prices.models.%q]: a price is below zero or not a number", m)
			}
		}
	}
	return nil
}

// find is the price of a model: its table entry with the longest prefix
// of its name.
func (p Prices) find(model string) (Price, bool) {
	best, found := -1, Price{}
	for prefix, pr := range p.Models {
		if strings.HasPrefix(model, prefix) && len(prefix) > best {
			best, found = len(prefix), pr
		}
	}
	return found, best >= 0
}

// Estimate is the cost of counts by model at these prices. ok is false
// when a model that spent tokens has no price: a cost that leaves some
// out would read as the whole, so there is none.
func (p Prices) Estimate(byModel map[string]Counts) (usd float64, ok bool) {
	any := false
	for model, c := range byModel {
		if c.Total() == 0 {
			continue
		}
		pr, found := p.find(model)
		if !found {
			return 0, false
		}
		any = true
		reason := pr.Reasoning
		if reason == 0 {
			reason = pr.Output
		}
		usd += (float64(c.Input)*pr.Input + float64(c.Output)*pr.Output + float64(c.CacheRead)*pr.CacheRead +
			float64(c.CacheWrite)*pr.CacheWrite + float64(c.Reasoning)*reason) / 1e6
	}
	return usd, any
}

// Budget is a run's budget: tokens (every kind summed), or US dollars
// (of estimated cost). Zero is no budget.
type Budget struct {
	Tokens int64   `json:"tokens,omitempty"`
	USD    float64 `json:"usd,omitempty"`
}

// IsZero reports whether there is no budget.
func (b Budget) IsZero() bool { return b.Tokens <= 0 && b.USD <= 0 }

// String writes the budget as ParseBudget reads it.
func (b Budget) String() string {
	switch {
	case b.USD > 0:
		return "$" + strconv.FormatFloat(b.USD, 'f', -1, 64)
	case b.Tokens > 0:
		return Human(b.Tokens)
	}
	return "none"
}

// Used is how much of the budget spent is: a fraction (1 = all of it).
// A dollar budget with no cost known uses nothing that st can tell:
// known is false then.
func (b Budget) Used(c Counts, usd float64, costKnown bool) (frac float64, known bool) {
	switch {
	case b.USD > 0:
		if !costKnown {
			return 0, false
		}
		return usd / b.USD, true
	case b.Tokens > 0:
		return float64(c.Total()) / float64(b.Tokens), true
	}
	return 0, false
}

// ParseBudget reads a budget as a person writes it: tokens ("500000",
// "500k", "2.5M") or dollars ("$5", "$12.50").
func ParseBudget(s string) (Budget, error) {
	s = strings.TrimSpace(s)
	bad := fmt.Errorf("budget %q: write tokens (500k, 2M, 800000) or dollars ($5, $12.50)", s)
	if s == "" {
		return Budget{}, bad
	}
	if d, ok := strings.CutPrefix(s, "$"); ok {
		v, err := strconv.ParseFloat(d, 64)
		if err != nil || v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return Budget{}, bad
		}
		return Budget{USD: v}, nil
	}
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "k") || strings.HasSuffix(s, "K"):
		mult, s = 1e3, s[:len(s)-1]
	case strings.HasSuffix(s, "M") || strings.HasSuffix(s, "m"):
		mult, s = 1e6, s[:len(s)-1]
	case strings.HasSuffix(s, "B") || strings.HasSuffix(s, "b"):
		mult, s = 1e9, s[:len(s)-1]
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v <= 0 || math.IsNaN(v) || v*mult > math.MaxInt64/2 {
		return Budget{}, bad
	}
	n := int64(math.Round(v * mult))
	if n <= 0 {
		return Budget{}, bad
	}
	return Budget{Tokens: n}, nil
}
