package orch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/attention"
)

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
