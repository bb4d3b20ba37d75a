package orch

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/sophonz/st/internal/store"
)

func (m *Manager) gatesPath() string { return filepath.Join(m.cfg.Home, "gates.json") }

func (m *Manager) loadGates() error {
	var gs []*Gate
	err := store.ReadJSON(m.gatesPath(), &gs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		cp, _ := store.KeepCopy(m.gatesPath())
		m.logf("skipping the gates: %v (a copy is kept at %s)", err, cp)
		return nil
	}
	m.gates = map[string]*Gate{}
	for _, g := range gs {
		m.gates[g.ID] = g
	}
	return nil
}

// saveGates writes every gate. Called with m.mu held.
func (m *Manager) saveGates() error {
	gs := make([]*Gate, 0, len(m.gates))
	for _, g := range m.gates {
		gs = append(gs, g)
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].Asked.Before(gs[j].Asked) })
	if err := store.WriteJSON(m.gatesPath(), gs, 0o600); err != nil {
		return errorf(KindInternal, "free some disk space and try again", "st could not keep the gates: %v", err)
	}
	return nil
}

// expire closes gates whose deadline passed. Called with m.mu held.
func (m *Manager) expire() {
	now := m.cfg.Now()
	changed := false
	for _, g := range m.gates {
		if g.State == GateOpen && g.Deadline != nil && now.After(*g.Deadline) {
			g.State = GateTimedOut
			changed = true
		}
	}
	if changed {
		m.saveGates()
		m.notify()
	}
}

// AskGate opens a gate and returns it; the asker then waits with WaitGate.
func (m *Manager) AskGate(ctx context.Context, req GateRequest) (*Gate, error) {
	q := strings.TrimSpace(req.Question)
	if q == "" {
		return nil, errorf(KindUsage, `st gate ask "QUESTION" --option A --option B`, "a gate needs a question")
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
		return nil, errorf(KindUsage, `st gate ask "QUESTION" --option A --option B`, "a gate needs at least two different options")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.cfg.Now()
	g := &Gate{ID: newID("gate-"), Question: q, Options: opts, Pane: req.Pane, State: GateOpen, Asked: now}
	if r := m.runOf[req.Pane]; r != nil {
		g.Run = r.ID
	} else if r := m.currentRun(req.Pane); r != nil {
		g.Run = r.ID
	}
	if req.Timeout > 0 {
		d := now.Add(req.Timeout)
		g.Deadline = &d
	}
	if m.gates == nil {
		m.gates = map[string]*Gate{}
	}
	m.gates[g.ID] = g
	if err := m.saveGates(); err != nil {
		delete(m.gates, g.ID)
		return nil, err
	}
	if w := m.workers[req.Pane]; w != nil && w.State.Live() && w.State != Waiting {
		m.setState(w, Waiting)
		m.save(m.runOf[w.ID])
	}
	m.logf("gate %s opened by %s: %s", g.ID, orNone(req.Pane), q)
	m.notify()
	if m.cfg.OnGate != nil {
		cp := *g
		go m.cfg.OnGate(cp)
	}
	c := publicGate(g)
	return &c, nil
}

// WaitGate blocks until the gate is answered or timed out, or until
// req.Timeout passes (then the gate is returned still open).
func (m *Manager) WaitGate(ctx context.Context, req GateRequest) (*Gate, error) {
	var until <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		until = t.C
	}
	tick := time.NewTicker(time.Second) // for deadlines
	defer tick.Stop()
	for {
		m.mu.Lock()
		m.expire()
		g := m.gates[req.ID]
		if g == nil {
			m.mu.Unlock()
			return nil, errorf(KindNotFound, "st gate list shows the gates", "there is no gate %q", req.ID)
		}
		c := publicGate(g)
		ch := m.changed
		m.mu.Unlock()
		if c.State != GateOpen {
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
func (m *Manager) AnswerGate(ctx context.Context, req GateRequest) (*Gate, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expire()
	g := m.gates[req.ID]
	if g == nil {
		return nil, errorf(KindNotFound, "st gate list shows the gates", "there is no gate %q", req.ID)
	}
	switch g.State {
	case GateAnswered:
		return nil, errorf(KindConflict, "", "refused: gate %s was already answered %q (by %s)", g.ID, g.Answer, g.AnsweredBy)
	case GateTimedOut:
		return nil, errorf(KindConflict, "", "refused: gate %s timed out before an answer came", g.ID)
	}
	var pick string
	for _, o := range g.Options {
		if strings.EqualFold(o, strings.TrimSpace(req.Option)) {
			pick = o
		}
	}
	if pick == "" {
		return nil, errorf(KindUsage, "answer with one of: "+strings.Join(g.Options, ", "), "%q is not an option of gate %s", req.Option, g.ID)
	}
	now := m.cfg.Now()
	keys := g.AnswerKeys
	g.State, g.Answer, g.AnsweredAt, g.AnsweredBy = GateAnswered, pick, &now, orDefaultStr(req.By, "cli")
	g.AnswerKeys = nil // the push's other tokens answer nothing now
	if err := m.saveGates(); err != nil {
		g.State, g.Answer, g.AnsweredAt, g.AnsweredBy, g.AnswerKeys = GateOpen, "", nil, "", keys
		return nil, err
	}
	if w := m.workers[g.Pane]; w != nil && w.State == Waiting {
		m.setState(w, Working)
		m.save(m.runOf[w.ID])
	}
	m.logf("gate %s answered %q by %s", g.ID, pick, g.AnsweredBy)
	m.notify()
	c := publicGate(g)
	return &c, nil
}

// public is a copy of g to show: without the answer tokens' hashes.
func publicGate(g *Gate) Gate {
	c := *g
	c.AnswerKeys = nil
	return c
}

// MintAnswerTokens makes one answer token per option of an open gate, for
// a push's actions: each answers the gate with its option once, and none
// works once the gate is answered or closed. It returns option -> token.
func (m *Manager) MintAnswerTokens(id string) (map[string]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.gates[id]
	if g == nil || g.State != GateOpen {
		return nil, errorf(KindNotFound, "", "gate %s is not open", id)
	}
	out := map[string]string{}
	if g.AnswerKeys == nil {
		g.AnswerKeys = map[string]string{}
	}
	for _, o := range g.Options {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		tok := hex.EncodeToString(b)
		out[o] = tok
		g.AnswerKeys[answerKey(tok)] = o
	}
	if err := m.saveGates(); err != nil {
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
var ErrBadAnswerToken = errorf(KindNotFound, "", "this answer link is not valid (it was used, its gate is closed, or it never was)")

// AnswerGateByToken answers the gate whose push carried tok with tok's
// option (the push service's action, by a person on their phone).
func (m *Manager) AnswerGateByToken(ctx context.Context, tok string) (*Gate, error) {
	if len(tok) != 64 {
		return nil, ErrBadAnswerToken
	}
	key := answerKey(tok)
	m.mu.Lock()
	var id, option string
	for _, g := range m.gates {
		if o, ok := g.AnswerKeys[key]; ok && g.State == GateOpen {
			id, option = g.ID, o
		}
	}
	m.mu.Unlock()
	if id == "" {
		return nil, ErrBadAnswerToken
	}
	return m.AnswerGate(ctx, GateRequest{ID: id, Option: option, By: "push"})
}

func orDefaultStr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Gates lists the gates, open ones first.
func (m *Manager) Gates(ctx context.Context, all bool) []Gate {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expire()
	var out []Gate
	for _, g := range m.gates {
		if all || g.State == GateOpen {
			out = append(out, publicGate(g))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if (out[i].State == GateOpen) != (out[j].State == GateOpen) {
			return out[i].State == GateOpen
		}
		return out[i].Asked.Before(out[j].Asked)
	})
	return out
}
