package orch

import (
	"path/filepath"
	"strings"
	"sync"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/syncs"
	"github.com/sophonz/st/internal/tokens"
)

// The token ledger of this machine's workers (issue 35): what each
// worker's agent spent, read from the agent's own records
// (internal/tokens), never from its screen.
//
// When to read: an agent writes a response into its transcript before
// the hook that follows it fires (Claude writes the assistant record,
// then PreToolUse or Stop; Codex its token_count before its Stop), so a
// read at each of its hooks sees every response as the turn goes, and
// the one at its turn's end sees them all. A watch on the files
// (fsnotify) would wake st at every line the agent writes, most of them
// tool output with no tokens on it, for numbers no one needs before the
// next hook; the hook costs nothing extra, since st hears it anyway. A
// read starts where the last stopped (an offset per file), so a hook's
// read costs what the agent wrote since the last.
//
// The read runs on the hook's way in, before its change and outside
// every lock, and what it read rides in the hook's own change: a turn's
// end writes run.json anyway, and the counts and offsets go with it at
// no write of their own (a hook that changes nothing keeps them in
// memory until the next write; what a crash loses of them is read again
// from the offsets that were written, which match the counts written
// with them).
//
// The tokenBook owns the live ledgers, one per worker, with its own lock
// (taken alone, never with m.reg.mu); one hook at a time reads a worker's
// ledger (its entry's lock), and the registry gets a copy.
type tokenBook struct {
	m  *Manager
	mu sync.Mutex
	// live are the ledgers being read, by worker id.
	live map[string]*tokenEntry
	// named is the record file each pane's hooks named last, with its
	// format: a coordinator's run counts its tokens from what that file
	// holds when the run starts (conversationSoFar).
	named map[string]namedFile
}

type namedFile struct{ path, format string }

type tokenEntry struct {
	mu     sync.Mutex // one read at a time
	ledger *tokens.Ledger
}

func newTokenBook(m *Manager) *tokenBook {
	return &tokenBook{m: m, live: map[string]*tokenEntry{}, named: map[string]namedFile{}}
}

// transcriptPath is the record file a hook named, if st reads it: an
// absolute, clean path of a .jsonl file. The hook came from a process in
// the worker's pane (the daemon checked), and the file must be a regular
// file of this user's when it is read (tokens.File.Read opens no
// symlink): a RAIL, since an agent of the same user could write any
// numbers into its own transcript anyway; what st shows of the file is
// five counts, never its text.
func transcriptPath(p string) string {
	if p == "" || !filepath.IsAbs(p) || filepath.Clean(p) != p || !strings.HasSuffix(p, ".jsonl") || len(p) > 4096 {
		return ""
	}
	return p
}

// tokenRead is what one read found: the ledger as it is now (a copy for
// the registry) and what it comes to.
type tokenRead struct {
	ledger *tokens.Ledger
	spent  *api.Tokens
	// limits are the rate limits the records said last (Codex's), if
	// this read found any.
	limits *tokens.RateLimits
}

// read reads worker id's records, adding the file a hook named
// (transcript, in the agent kind's format), and returns what changed
// (nil: nothing). Only a worker of this machine is read.
func (b *tokenBook) read(id string, ad *agent.Kind, transcript string) *tokenRead {
	format := ad.Records.TokenFormat
	path := transcriptPath(transcript)
	b.mu.Lock()
	e := b.live[id]
	if path != "" && format != "" {
		if e == nil {
			e = &tokenEntry{}
			b.live[id] = e
		}
		if len(b.named) >= 4096 {
			clear(b.named) // (panes come and go; a few hundred live)
		}
		b.named[id] = namedFile{path, format}
	}
	b.mu.Unlock()
	if e == nil {
		return nil // nothing to read yet
	}
	e.mu.Lock() // lockio: one worker's ledger, read in order (its offsets); taken with no other lock held, so only reads of this worker's tokens wait
	defer e.mu.Unlock()
	if e.ledger == nil {
		kept, ok := b.m.keptLedger(id)
		if !ok {
			b.forget(id, e)
			return nil // no worker of this machine
		}
		// The first read since st started: on from what run.json kept.
		e.ledger = kept
	}
	n := len(e.ledger.Files)
	if path != "" && format != "" {
		e.ledger.Watch(path, format)
	}
	changed, err := e.ledger.Read()
	if err != nil {
		b.m.logf("worker %s: tokens: %v", id, err)
	}
	limits := e.ledger.TakeLimits()
	if !changed && len(e.ledger.Files) == n {
		if limits != nil {
			return &tokenRead{limits: limits} // (no count changed)
		}
		return nil
	}
	return &tokenRead{ledger: e.ledger.Clone(), spent: b.m.spent(e.ledger), limits: limits}
}

// conversationSoFar reads the records of pane's agent to their end now
// and returns the ledger of its whole conversation so far: its live
// ledger (a coordinator of an earlier run), else the ledger its last run
// kept (st restarted since), read on, with the file its hooks named last;
// nil when nothing names a file of it. It reads files: never under the
// registry's lock.
func (b *tokenBook) conversationSoFar(pane string) *tokens.Ledger {
	b.mu.Lock()
	e, named := b.live[pane], b.named[pane]
	b.mu.Unlock()
	read := func(l *tokens.Ledger) *tokens.Ledger {
		l.Watch(named.path, named.format)
		if len(l.Files) == 0 {
			return nil
		}
		if _, err := l.Read(); err != nil {
			b.m.logf("%s: tokens: %v", pane, err)
		}
		return l.Clone()
	}
	if e != nil {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.ledger != nil {
			return read(e.ledger)
		}
	}
	return read(b.m.lastCoordLedger(pane))
}

// lastCoordLedger is a copy of what pane's latest run on this machine
// read of its coordinator's conversation (an empty ledger for none).
func (m *Manager) lastCoordLedger(pane string) *tokens.Ledger {
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	if r := m.coordRunLocked(pane); r != nil && r.CoordLedger != nil {
		return r.CoordLedger.Clone()
	}
	return &tokens.Ledger{}
}

// forget drops a live ledger (its counts stay in the worker's record).
func (b *tokenBook) forget(id string, e *tokenEntry) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.live[id] == e {
		delete(b.live, id)
	}
}

// keptLedger is a copy of the ledger run.json kept for worker id (an
// empty one for none); ok is false when id is no live worker of this
// machine.
func (m *Manager) keptLedger(id string) (l *tokens.Ledger, ok bool) {
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	w := m.reg.workers[id]
	if w == nil || !w.State.Live() {
		if r := m.coordRunLocked(id); r != nil {
			if r.CoordLedger != nil {
				return r.CoordLedger.Clone(), true
			}
			return &tokens.Ledger{}, true
		}
	}
	if w == nil || w.Remote() || !w.State.Live() {
		return nil, false
	}
	if w.Ledger != nil {
		return w.Ledger.Clone(), true
	}
	return &tokens.Ledger{}, true
}

// spent is what a ledger's counts come to, with their estimated cost at
// the configured prices.
func (m *Manager) spent(l *tokens.Ledger) *api.Tokens {
	c := l.Counts()
	t := &api.Tokens{Input: c.Input, Output: c.Output, CacheRead: c.CacheRead, CacheWrite: c.CacheWrite, Reasoning: c.Reasoning, Total: c.Total()}
	if usd, ok := m.cfg.Prices.Estimate(l.ByModel()); ok {
		t.CostUSD, t.CostEstimated, t.PriceDate = &usd, true, m.cfg.Prices.Date
	}
	return t
}

// coordRunLocked is the run pane coordinates on this machine, if any:
// the latest it made.
func (m *Manager) coordRunLocked(pane string) *Run {
	syncs.AssertLocked(&m.reg.mu)
	if r := m.reg.currentRunLocked(pane); r != nil && r.CoordinatorMachine == "" {
		return r
	}
	return nil
}

// noteCoordTokensLocked puts what was read of the records of pane, a
// coordinator and no worker, into its run: what the coordinator itself
// spent, shown by st orch show beside its workers' total.
func (m *Manager) noteCoordTokensLocked(c *change, pane string, tr *tokenRead) {
	syncs.AssertLocked(&m.reg.mu)
	r := m.coordRunLocked(pane)
	if tr == nil || tr.ledger == nil || r == nil {
		return // (a read that found limits alone changed no count)
	}
	r.CoordLedger = tr.ledger
	c.touchLocked(r)
	spent := m.spentSince(tr.ledger, r.CoordBase)
	if spent.Total == 0 && r.CoordTokens == nil {
		return
	}
	r.CoordTokens = spent
}

// spentSince is what a ledger's counts came to since base (counts by
// model of the same records, read earlier), with their estimated cost.
func (m *Manager) spentSince(l *tokens.Ledger, base map[string]tokens.Counts) *api.Tokens {
	if len(base) == 0 {
		return m.spent(l)
	}
	by := l.ByModel()
	var c tokens.Counts
	for model, n := range by {
		n = n.Less(base[model])
		by[model] = n
		c = c.Add(n)
	}
	t := &api.Tokens{Input: c.Input, Output: c.Output, CacheRead: c.CacheRead, CacheWrite: c.CacheWrite, Reasoning: c.Reasoning, Total: c.Total()}
	if usd, ok := m.cfg.Prices.Estimate(by); ok {
		t.CostUSD, t.CostEstimated, t.PriceDate = &usd, true, m.cfg.Prices.Date
	}
	return t
}

// noteTokensLocked puts what was read of w's records into its record (to
// be written with the change it rides in, or the next), and checks its
// run's budget.
func (m *Manager) noteTokensLocked(c *change, w *Worker, tr *tokenRead) {
	syncs.AssertLocked(&m.reg.mu)
	if tr == nil || tr.ledger == nil || w == nil || w.Remote() {
		return
	}
	w.Ledger = tr.ledger
	if tr.spent.Total == 0 && w.Tokens == nil {
		// A record with nothing counted yet (an agent that has written
		// no response, a sim with no usage: lines) shows no tokens, not 0.
		return
	}
	w.Tokens = withAgentCost(tr.spent, w.AgentCost)
	m.checkBudgetLocked(c, m.reg.runOf[w.ID])
}

// runTokensLocked sums the tokens of r's workers, those on other machines
// as their machines last reported them.
func (m *Manager) runTokensLocked(r *Run) *api.Tokens {
	syncs.AssertLocked(&m.reg.mu)
	var sum *api.Tokens
	for _, w := range r.Workers {
		sum = sum.Add(w.Tokens)
	}
	return sum
}

// spentNote is what a done notice says of a worker's tokens: "12k
// tokens (~$0.42)", or "" when none were read.
func spentNote(t *api.Tokens) string {
	if t == nil || t.Total == 0 {
		return ""
	}
	s := tokens.Human(t.Total) + " tokens"
	if t.CostUSD != nil {
		s += " (~" + tokens.USD(*t.CostUSD) + ")"
	}
	return s
}

// withSpent is spent after sep, or "" for none.
func withSpent(sep, spent string) string {
	if spent == "" {
		return ""
	}
	return sep + spent
}

// sameTokens reports whether a and b are the same counts and cost.
func sameTokens(a, b *api.Tokens) bool {
	if a == nil || b == nil {
		return a == b
	}
	ca, cb := *a, *b
	ca.CostUSD, cb.CostUSD = nil, nil
	if ca != cb || (a.CostUSD == nil) != (b.CostUSD == nil) {
		return false
	}
	return a.CostUSD == nil || *a.CostUSD == *b.CostUSD
}
