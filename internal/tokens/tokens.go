// Package tokens is st's token ledger: what each worker's agent spent,
// read from the agent's own records (never its screen) and summed per
// worker and per run, with a cost where one is known.
//
// The records are the agents' conversation files, which their hooks name
// in transcript_path: Claude Code's transcript (message.usage on each
// assistant record, one response's usage repeated on each of its content
// blocks, so counted once per message.id; its subagents' files beside it
// counted to it), Codex's rollout (token_count events, whose
// total_token_usage is the session's running total), Gemini CLI's chat
// file (tokens on each reply), the file st's opencode plugin writes of
// opencode's own message tokens (opencode keeps them in SQLite, which st
// does not link) and the sim's transcript (Claude's form).
// A File is read incrementally: from the offset where the last read
// stopped, never from its start again; its state (offset, the ids seen
// lately, the counts) is plain data that run.json keeps, so that a
// restart of st goes on from where it was.
//
// Counts are kept by model, so that a cost can be estimated from a price
// table (Prices, config.toml's [tokens.prices], with the date its prices
// were read); no agent writes a cost into its records, so every cost here
// is an estimate and says so.
package tokens

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Counts are tokens by kind. Input is the prompt tokens read fresh (not
// from a cache); CacheRead the prompt tokens read from the cache;
// CacheWrite the tokens written to it; Output the answer's tokens other
// than reasoning, Reasoning the model's hidden thinking where the agent
// counts it apart (Codex, Gemini; Claude counts thinking in output). So
// that one sum means the same for every agent, each reader takes its
// agent's counts apart into these five (Codex's input_tokens holds its
// cached ones, its output_tokens its reasoning ones).
type Counts struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cache_read"`
	CacheWrite int64 `json:"cache_write"`
	Reasoning  int64 `json:"reasoning"`
}

// Total is every token of every kind.
func (c Counts) Total() int64 {
	return c.Input + c.Output + c.CacheRead + c.CacheWrite + c.Reasoning
}

// Add returns c plus d.
func (c Counts) Add(d Counts) Counts {
	return Counts{Input: c.Input + d.Input, Output: c.Output + d.Output, CacheRead: c.CacheRead + d.CacheRead,
		CacheWrite: c.CacheWrite + d.CacheWrite, Reasoning: c.Reasoning + d.Reasoning}
}

// Less returns c minus d, each kind at least zero: what was spent since
// counts d, from counts c of the same records read further.
func (c Counts) Less(d Counts) Counts {
	sub := func(a, b int64) int64 { return max(a-b, 0) }
	return Counts{Input: sub(c.Input, d.Input), Output: sub(c.Output, d.Output), CacheRead: sub(c.CacheRead, d.CacheRead),
		CacheWrite: sub(c.CacheWrite, d.CacheWrite), Reasoning: sub(c.Reasoning, d.Reasoning)}
}

// Valid reports whether every count is at or above zero: what st takes
// from another machine's report.
func (c Counts) Valid() bool {
	return c.Input >= 0 && c.Output >= 0 && c.CacheRead >= 0 && c.CacheWrite >= 0 && c.Reasoning >= 0 &&
		c.Total() >= 0 // (no overflow)
}

// Human writes n in short human units: 950, 12.3k, 4.5M, 1.2B.
func Human(n int64) string {
	f := float64(n)
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10)
	case n < 1_000_000:
		return trimUnit(f/1e3, "k")
	case n < 1_000_000_000:
		return trimUnit(f/1e6, "M")
	}
	return trimUnit(f/1e9, "B")
}

func trimUnit(v float64, unit string) string {
	if v >= 100 {
		return strconv.FormatFloat(math.Floor(v), 'f', 0, 64) + unit
	}
	// One decimal, rounded down, so that 999.96k is not shown as 1000.0k.
	s := strconv.FormatFloat(math.Floor(v*10)/10, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + unit
}

// USD writes a cost in dollars, with cents (a fraction of a cent as
// "<$0.01").
func USD(v float64) string {
	if v > 0 && v < 0.01 {
		return "<$0.01"
	}
	return fmt.Sprintf("$%.2f", v)
}
