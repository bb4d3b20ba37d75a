package tokens

import (
	"math"
	"testing"
)

func TestHuman(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 950: "950", 1000: "1k", 12345: "12.3k", 999999: "999k", 99_990: "99.9k", 4_560_000: "4.5M", 150_000_000: "150M", 2_100_000_000: "2.1B"} {
		if got := Human(n); got != want {
			t.Errorf("Human(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestEstimate(t *testing.T) {
	p := Prices{Date: "2026-12-01", Models: map[string]Price{
		"claude-sonnet":     {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
		"claude-sonnet-4-5": {Input: 4, Output: 16},
		"gpt-5":             {Input: 1.25, Output: 10, CacheRead: 0.125},
	}}
	usd, ok := p.Estimate(map[string]Counts{
		"claude-sonnet-4-5-20250929": {Input: 1_000_000, Output: 1_000_000},      // the longer prefix: 4 + 16
		"gpt-5-codex":                {CacheRead: 1_000_000, Reasoning: 100_000}, // 0.125 + 1.0 (reasoning at output's price)
	})
	if !ok || math.Abs(usd-21.125) > 1e-9 {
		t.Fatalf("Estimate = %v, %v; want 21.125", usd, ok)
	}
	if _, ok := p.Estimate(map[string]Counts{"gemini-2.5-pro": {Input: 1}}); ok {
		t.Fatal("a model with no price gave a cost")
	}
	if _, ok := p.Estimate(map[string]Counts{}); ok {
		t.Fatal("no tokens gave a cost")
	}
}

func TestPricesCheck(t *testing.T) {
	if err := (Prices{Models: map[string]Price{"x": {Input: 1}}}).Check(); err == nil {
		t.Error("a table with no date was taken")
	}
	if err := (Prices{Date: "2026-12-01", Models: map[string]Price{"x": {Input: -1}}}).Check(); err == nil {
		t.Error("a price below zero was taken")
	}
	if err := (Prices{Date: "2026-12-01", Models: map[string]Price{"x": {Input: 1}}}).Check(); err != nil {
		t.Error(err)
	}
}

func TestParseBudget(t *testing.T) {
	for in, want := range map[string]Budget{"500000": {Tokens: 500000}, "500k": {Tokens: 500000}, "2.5M": {Tokens: 2500000}, "$5": {USD: 5}, "$12.50": {USD: 12.5}} {
		got, err := ParseBudget(in)
		if err != nil || got != want {
			t.Errorf("ParseBudget(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-5", "$", "$-1", "five", "1e30", "$NaN", "0.0001"} {
		if b, err := ParseBudget(in); err == nil {
			t.Errorf("ParseBudget(%q) = %+v, want an error", in, b)
		}
	}
}
