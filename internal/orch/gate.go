package orch

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/attention"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/syncs"
)

// gateBook keeps the gates: questions only a person answers, asked by
// agents (st gate ask), with their answers, in gates.json. It has its own
// lock; the registry's may be held when it is taken (a gate moves its
// asker's state), never the other way.
type gateBook struct {
	path string
	now  func() time.Time
	logf func(format string, args ...any)
	// write is store.WriteJSON (a test's slow disk instead).
	write func(path string, v any, mode os.FileMode) error

	mu    sync.Mutex
	gates map[string]*api.Gate
}

func newGateBook(home string, now func() time.Time, logf func(string, ...any)) *gateBook {
	return &gateBook{path: filepath.Join(home, "gates.json"), now: now, logf: logf, write: store.WriteJSON, gates: map[string]*api.Gate{}}
}

// load reads gates.json. A file that does not decode is copied aside and
// left out.
func (b *gateBook) load() {
	var gs []*api.Gate
	err := store.ReadJSON(b.path, &gs)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		cp, _ := store.KeepCopy(b.path)
		b.logf("skipping the gates: %v (a copy is kept at %s)", err, cp)
		return
	}
	for _, g := range gs {
		b.gates[g.ID] = g
	}
}

// saveLocked writes every gate.
func (b *gateBook) saveLocked() error {
	syncs.AssertLocked(&b.mu)
	gs := make([]*api.Gate, 0, len(b.gates))
	for _, g := range b.gates {
		gs = append(gs, g)
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].Asked.Before(gs[j].Asked) })
	if err := b.write(b.path, gs, 0o600); err != nil {
		return errorf(api.KindInternal, "free some disk space and try again", "st could not keep the gates: %v", err)
	}
	return nil
}

// expireLocked closes gates whose deadline passed, and says which.
func (b *gateBook) expireLocked() []string {
	syncs.AssertLocked(&b.mu)
	now := b.now()
	var closed []string
	for _, g := range b.gates {
		if g.State == api.GateOpen && g.Deadline != nil && now.After(*g.Deadline) {
			g.State = api.GateTimedOut
			closed = append(closed, g.ID)
		}
	}
	if len(closed) > 0 {
		b.saveLocked()
	}
	return closed
}

// retire renames the askers' panes after a restart of the tmux server,
// in memory: it is called under the registry's lock (the gates move with
// the workers, in one step), and the caller writes gates.json after it
// has let that lock go (save).
func (b *gateBook) retire(follow func(string) (string, bool)) (renamed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, g := range b.gates {
		if n, ok := follow(g.Pane); ok && n != g.Pane {
			g.Pane, renamed = n, true
		}
	}
	return renamed
}

// save writes every gate, under the gates' own lock only.
func (b *gateBook) save() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.saveLocked()
}

// expire closes the gates whose deadline passed, and says which.
func (b *gateBook) expire() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.expireLocked()
}

// open keeps the new gate g on disk, or not at all.
func (b *gateBook) open(g *api.Gate) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gates[g.ID] = g
	err := b.saveLocked()
	if err != nil {
		delete(b.gates, g.ID)
	}
	return err
}

// get is the gate id as people see it, if there is one.
func (b *gateBook) get(id string) (api.Gate, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	g := b.gates[id]
	if g == nil {
		return api.Gate{}, false
	}
	return publicGate(g), true
}

// answer records the first answer of an open gate (answerLocked).
func (b *gateBook) answer(req api.GateRequest, valued string) (api.Gate, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.answerLocked(req, valued)
}

// expireNow closes the gates whose deadline passed, waking waiters.
func (m *Manager) expireNow() {
	if closed := m.gates.expire(); len(closed) > 0 {
		for _, id := range closed {
			m.attn.CloseKey(attention.GateKey(id), "timed out")
		}
		m.reg.notify()
	}
}

// AskGate opens a gate and returns it; the asker then waits with WaitGate.
func (m *Manager) AskGate(ctx context.Context, req api.GateRequest) (*api.Gate, error) {
	q := strings.TrimSpace(req.Question)
	if q == "" {
		return nil, errorf(api.KindUsage, `st gate ask "QUESTION" --option A --option B`, "a gate needs a question")
	}
	if err := checkText("question", q+strings.Join(req.Options, "")); err != nil {
		return nil, err
	}
	var opts []string
	seen := map[string]bool{}
	for _, o := range req.Options {
		o = strings.TrimSpace(o)
		if o == "" || seen[strings.ToLower(o)] {
			continue
		}
		seen[strings.ToLower(o)] = true
		opts = append(opts, o)
	}
	if len(opts) < 2 {
		return nil, errorf(api.KindUsage, `st gate ask "QUESTION" --option A --option B`, "a gate needs at least two different options")
	}
	m.reg.mu.Lock()
	now := m.cfg.Now()
	g := &api.Gate{ID: newID("gate-"), Question: q, Options: opts, Pane: req.Pane, State: api.GateOpen, Asked: now}
	if r := m.reg.runOf[req.Pane]; r != nil {
		g.Run = r.ID
	} else if r := m.reg.currentRunLocked(req.Pane); r != nil {
		g.Run = r.ID
	}
	m.reg.mu.Unlock()
	if req.Timeout > 0 {
		d := now.Add(req.Timeout)
		g.Deadline = &d
	}
	// gates.json is written under the gates' own lock, not the
	// manager's (no disk under m.reg.mu).
	if err := m.gates.open(g); err != nil {
		return nil, err
	}
	c := publicGate(g)
	m.logf("gate %s opened by %s: %s", g.ID, orNone(req.Pane), q)
	m.settleChange(func(ch *change) {
		// An answer that came in between found the asker not waiting
		// yet: it is not made to wait for an answered gate.
		if cur, ok := m.gates.get(g.ID); !ok || cur.State != api.GateOpen {
			return
		}
		if w := m.reg.workers[req.Pane]; w != nil && w.State.Live() && w.State != api.Waiting {
			ch.setStateLocked(w, api.Waiting)
		}
		a := m.itemOfLocked(req.Pane, api.AttnGate, "")
		ch.attnLocked(attnOp{key: attention.GateKey(g.ID), open: gateAttn(c, a.Name, a.Agent)})
	})
	if m.cfg.OnGate != nil {
		m.bg.Go(func(context.Context) { m.cfg.OnGate(c) })
	}
	return &c, nil
}

// WaitGate blocks until the gate is answered or timed out, or until
// req.Timeout passes (then the gate is returned still open).
func (m *Manager) WaitGate(ctx context.Context, req api.GateRequest) (*api.Gate, error) {
	var until <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		until = t.C
	}
	tick := time.NewTicker(time.Second) // for deadlines
	defer tick.Stop()
	for {
		ch := m.reg.Changed()
		m.expireNow()
		c, ok := m.gates.get(req.ID)
		if !ok {
			return nil, errorf(api.KindNotFound, "st gate list shows the gates", "there is no gate %q", req.ID)
		}
		if c.State != api.GateOpen {
			return &c, nil
		}
		select {
		case <-ch:
		case <-tick.C:
		case <-until:
			return &c, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// AnswerGate answers an open gate; the first answer wins.
func (m *Manager) AnswerGate(ctx context.Context, req api.GateRequest) (*api.Gate, error) {
	m.expireNow()
	valued, err := m.valueAnswer(req)
	if err != nil {
		return nil, err
	}
	c, err := m.gates.answer(req, valued)
	if err != nil {
		return nil, err
	}
	m.logf("gate %s answered %q by %s", c.ID, c.Answer, c.AnsweredBy)
	m.settleChange(func(ch *change) {
		ch.attnLocked(attnOp{key: attention.GateKey(c.ID), by: "answered"})
		if w := m.reg.workers[c.Pane]; w != nil && w.State == api.Waiting {
			ch.setStateLocked(w, api.Working)
		}
		m.budgetAnsweredLocked(ch, c)
	})
	return &c, nil
}

// WithdrawGate closes an open gate with no answer, at its asker's word
// (Ctrl-C on st gate ask): it leaves st gate list and the web UI, and its
// push's answer links answer nothing, as an answered gate's. authz let
// only the pane that asked it, or a person, ask for it.
func (m *Manager) WithdrawGate(ctx context.Context, req api.GateRequest) (*api.Gate, error) {
	m.expireNow()
	c, err := m.gates.withdraw(req.ID)
	if err != nil {
		return nil, err
	}
	m.logf("gate %s withdrawn by its asker (%s)", c.ID, orNone(req.Pane))
	m.settleChange(func(ch *change) {
		ch.attnLocked(attnOp{key: attention.GateKey(c.ID), by: "withdrawn"})
		if w := m.reg.workers[c.Pane]; w != nil && w.State == api.Waiting {
			ch.setStateLocked(w, api.Working)
		}
	})
	return &c, nil
}

// withdraw closes the open gate id as withdrawn, if it is still open.
func (b *gateBook) withdraw(id string) (api.Gate, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	g := b.gates[id]
	if g == nil {
		return api.Gate{}, errorf(api.KindNotFound, "st gate list shows the gates", "there is no gate %q", id)
	}
	if err := closedGate(g); err != nil {
		return api.Gate{}, err
	}
	now := b.now()
	keys := g.AnswerKeys
	g.State, g.AnsweredAt, g.AnswerKeys = api.GateWithdrawn, &now, nil
	if err := b.saveLocked(); err != nil {
		g.State, g.AnsweredAt, g.AnswerKeys = api.GateOpen, nil, keys
		return api.Gate{}, err
	}
	return publicGate(g), nil
}

// closedGate is the refusal of an answer or a withdrawal of g once it is
// closed (nil while it is open).
func closedGate(g *api.Gate) error {
	switch g.State {
	case api.GateAnswered:
		return errorf(api.KindConflict, "", "refused: gate %s was already answered %q (by %s)", g.ID, g.Answer, g.AnsweredBy)
	case api.GateTimedOut:
		return errorf(api.KindConflict, "", "refused: gate %s timed out before an answer came", g.ID)
	case api.GateWithdrawn:
		return errorf(api.KindConflict, "", "refused: gate %s was withdrawn by its asker, who no longer waits for an answer", g.ID)
	}
	return nil
}

// answerLocked records the first answer of an open gate: one of its
// options, or valued, its value option with an amount st checked
// (valueAnswer), when it has one.
func (b *gateBook) answerLocked(req api.GateRequest, valued string) (api.Gate, error) {
	syncs.AssertLocked(&b.mu)
	g := b.gates[req.ID]
	if g == nil {
		return api.Gate{}, errorf(api.KindNotFound, "st gate list shows the gates", "there is no gate %q", req.ID)
	}
	if err := closedGate(g); err != nil {
		return api.Gate{}, err
	}
	var pick string
	for _, o := range g.Options {
		if strings.EqualFold(o, strings.TrimSpace(req.Option)) {
			pick = o
		}
	}
	if pick == "" && valued != "" && g.Value != nil && strings.HasPrefix(valued, g.Value.Prefix) {
		pick = valued
	}
	if pick == "" {
		hint := "answer with one of: " + strings.Join(g.Options, ", ")
		if g.Value != nil {
			hint += "; or set the amount: st gate answer " + g.ID + " --value AMOUNT (" + g.Value.Hint + ")"
		}
		return api.Gate{}, errorf(api.KindUsage, hint, "%q is not an option of gate %s", req.Option, g.ID)
	}
	now := b.now()
	keys := g.AnswerKeys
	g.State, g.Answer, g.AnsweredAt, g.AnsweredBy = api.GateAnswered, pick, &now, orDefaultStr(req.By, "cli")
	g.AnswerKeys = nil // the push's other tokens answer nothing now
	if err := b.saveLocked(); err != nil {
		g.State, g.Answer, g.AnsweredAt, g.AnsweredBy, g.AnswerKeys = api.GateOpen, "", nil, "", keys
		return api.Gate{}, err
	}
	return publicGate(g), nil
}

// public is a copy of g to show: without the answer tokens' hashes.
func publicGate(g *api.Gate) api.Gate {
	c := *g
	c.AnswerKeys = nil
	return c
}

// MintAnswerTokens makes one answer token per option of an open gate, for
// a push's actions: each answers the gate with its option once, and none
// works once the gate is answered or closed. It returns option -> token.
func (m *Manager) MintAnswerTokens(id string) (map[string]string, error) { return m.gates.mint(id) }

// mint is MintAnswerTokens.
func (b *gateBook) mint(id string) (map[string]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	g := b.gates[id]
	if g == nil || g.State != api.GateOpen {
		return nil, errorf(api.KindNotFound, "", "gate %s is not open", id)
	}
	out := map[string]string{}
	if g.AnswerKeys == nil {
		g.AnswerKeys = map[string]string{}
	}
	for _, o := range g.Options {
		raw := make([]byte, 32)
		if _, err := rand.Read(raw); err != nil {
			return nil, err
		}
		tok := hex.EncodeToString(raw)
		out[o] = tok
		g.AnswerKeys[answerKey(tok)] = o
	}
	if err := b.saveLocked(); err != nil {
		return nil, err
	}
	return out, nil
}

func answerKey(tok string) string {
	sum := sha256.Sum256([]byte("st-gate-answer\x00" + tok))
	return hex.EncodeToString(sum[:])
}

// ErrBadAnswerToken is what an answer token that answers nothing gets:
// the same words whatever the reason, so a guess learns nothing.
var ErrBadAnswerToken = errorf(api.KindNotFound, "", "this answer link is not valid (it was used, its gate is closed, or it never was)")

// AnswerGateByToken answers the gate whose push carried tok with tok's
// option (the push service's action, by a person on their phone).
func (m *Manager) AnswerGateByToken(ctx context.Context, tok string) (*api.Gate, error) {
	if len(tok) != 64 {
		return nil, ErrBadAnswerToken
	}
	id, option := m.gates.byToken(answerKey(tok))
	if id == "" {
		return nil, ErrBadAnswerToken
	}
	return m.AnswerGate(ctx, api.GateRequest{ID: id, Option: option, By: "push"})
}

// byToken is the open gate and option an answer token's key answers.
func (b *gateBook) byToken(key string) (id, option string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, g := range b.gates {
		if o, ok := g.AnswerKeys[key]; ok && g.State == api.GateOpen {
			id, option = g.ID, o
		}
	}
	return id, option
}

func orDefaultStr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Gates lists the gates, open ones first.
func (m *Manager) Gates(ctx context.Context, all bool) []api.Gate {
	m.expireNow()
	return m.gates.list(all)
}

// list is the gates (all, or the open ones), open ones first.
func (b *gateBook) list(all bool) []api.Gate {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []api.Gate
	for _, g := range b.gates {
		if all || g.State == api.GateOpen {
			out = append(out, publicGate(g))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if (out[i].State == api.GateOpen) != (out[j].State == api.GateOpen) {
			return out[i].State == api.GateOpen
		}
		return out[i].Asked.Before(out[j].Asked)
	})
	return out
}
