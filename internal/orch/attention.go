package orch

import (
	"context"
	"strings"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/attention"
	"github.com/sophonz/st/internal/syncs"
)

// When an agent needs a person (issue 34): this file decides when an
// attention item opens and closes; internal/attention keeps them. A change
// gathers its attention ops (attnOp) under the registry's lock, and they
// run with the change's other effects, after its runs are on disk and
// with no lock of the registry held (the book writes its own file).
//
// Opened by: an agent's own hook asking a person (PermissionRequest,
// Notification permission_prompt, AskUserQuestion, Codex's
// PermissionRequest, Gemini's Notification ToolPermission), in any pane
// with st's hooks; a gate; a worker's turn that ends without a report, in
// an error, or paused at a usage limit; a run whose workers are all done.
// Closed by: the same agent's next hook of its own (it moved on), its
// report, its pane going, a gate answered, withdrawn or timed out, a
// person's dismissal (st attention dismiss, the web UI).

// attnOp is one thing to do to the attention book.
type attnOp struct {
	key  string
	open *api.Attention // nil: close key
	by   string         // why it closes
	// under: close every open item whose key starts with key (the items
	// of a worker on another machine, remoteattn.go).
	under bool
	// prompt: the item is of a prompt st may answer through the agent's
	// hook; its push waits for that prompt (promptpush.go), to carry its
	// answer links.
	prompt bool
}

// attnLocked records op in c. A later op of the same key replaces an
// earlier one of this change: a turn that ends in an error is one item,
// not a "no report" closed at once by a "failed".
func (c *change) attnLocked(op attnOp) {
	syncs.AssertLocked(&c.m.reg.mu)
	for i, o := range c.attn {
		if o.key == op.key {
			c.attn[i] = op
			return
		}
	}
	c.attn = append(c.attn, op)
}

// runAttn carries out a change's attention ops; a new item goes to the
// daemon's OnAttention (the push), in the background: at once, or, for a
// prompt st may answer, with that prompt (holdForPrompt).
func (m *Manager) runAttn(ops []attnOp) {
	if len(ops) > 0 {
		defer m.attnCounted()
	}
	for _, op := range ops {
		if op.open == nil && op.under {
			if m.attn.CloseUnder(op.key, op.by) {
				m.logf("attention of %s closed: %s", op.key, op.by)
			}
			continue
		}
		if op.open == nil {
			if a, ok := m.attn.CloseKey(op.key, op.by); ok {
				m.logf("attention %s (%s, %s) closed: %s", a.ID, a.Kind, orNone(a.Pane), op.by)
			}
			continue
		}
		a, isNew := m.attn.Open(op.key, *op.open)
		if !isNew {
			continue
		}
		m.logf("attention %s opened: %s of %s: %.80q", a.ID, a.Kind, orNone(a.Pane), a.Text)
		if op.prompt {
			m.holdForPrompt(a)
			continue
		}
		m.pushAttn(a)
	}
}

// pushAttn hands new item a to the daemon's OnAttention, in the
// background: the one push of every item (a gate's excepted, which its
// own push carries).
func (m *Manager) pushAttn(a api.Attention) {
	if m.cfg.OnAttention != nil {
		m.bg.Go(func(context.Context) { m.cfg.OnAttention(a) })
	}
}

// attnCounted tells the daemon that the open count may have changed.
func (m *Manager) attnCounted() {
	if m.cfg.OnAttentionCount != nil {
		m.cfg.OnAttentionCount()
	}
}

// itemOfLocked is an item about pane's agent, with what the registry
// knows of it (its worker's name, run and machine).
func (m *Manager) itemOfLocked(pane string, kind api.AttentionKind, text string) *api.Attention {
	syncs.AssertLocked(&m.reg.mu)
	a := &api.Attention{Kind: kind, Pane: pane, Text: text}
	if w := m.reg.workers[pane]; w != nil {
		a.Name, a.Agent, a.Machine = w.Name, w.Agent, w.Machine
	} else {
		a.Agent, _ = m.facts.agentOf(pane)
	}
	if r := m.reg.runOf[pane]; r != nil {
		a.Run = r.ID
	} else if r := m.reg.currentRunLocked(pane); r != nil {
		a.Run = r.ID
	}
	return a
}

// hookAttnLocked is what a hook event of pane's own agent does to its
// items: a question or a permission prompt opens one; any other event of
// its own closes it (the agent moved on); new work closes how its last
// turn ended. answers: ev is the event whose hook may answer the prompt
// (the kind's Hear.Answers), so a prompt st can answer follows it.
func (m *Manager) hookAttnLocked(c *change, pane string, ev agent.Event, hf hookFacts, answers bool) {
	syncs.AssertLocked(&m.reg.mu)
	if hf.aside || ev.Kind == agent.EvIgnore || ev.Kind == agent.EvSubagent || ev.Kind == agent.EvTeammateIdle {
		return
	}
	prompt := attention.PaneKey(pane, attention.Prompt)
	if ev.Kind == agent.EvWaiting {
		ask := ev.Ask
		if ask == nil {
			ask = &agent.Ask{Tool: ev.Tool}
		}
		if ask.Tool == "" && !ask.Question && m.attn.IsOpen(prompt) {
			// Claude's Notification, 6 s after the PermissionRequest it
			// is about, says less than the item already open.
			return
		}
		c.attnLocked(attnOp{key: prompt, open: m.askItemLocked(pane, ask), prompt: answers})
		return
	}
	c.attnLocked(attnOp{key: prompt, by: "agent"})
	if ev.Kind == agent.EvTurnStart || (ev.Kind == agent.EvTool && m.reg.workers[pane] == nil) {
		c.attnLocked(attnOp{key: attention.PaneKey(pane, attention.Turn), by: "agent"})
	}
}

// askItemLocked is the item of pane's agent asking ask.
func (m *Manager) askItemLocked(pane string, ask *agent.Ask) *api.Attention {
	syncs.AssertLocked(&m.reg.mu)
	kind := api.AttnPermission
	if ask.Question {
		kind = api.AttnQuestion
	}
	a := m.itemOfLocked(pane, kind, ask.Text)
	a.Tool, a.Command, a.Options = ask.Tool, ask.Command, ask.Options
	if a.Text == "" {
		a.Text = ask.Tool
	}
	return a
}

// workerStateAttnLocked is what worker w's move from prev to s does to
// its items. Idle opens "no report" only at the end of a turn (from
// working or waiting): a worker that comes back idle after a restore of
// tmux, or from a machine that was unreachable, ended no turn.
func (c *change) workerStateAttnLocked(w *Worker, prev, s api.State) {
	syncs.AssertLocked(&c.m.reg.mu)
	m := c.m
	turn := attention.PaneKey(w.ID, attention.Turn)
	if w.Remote() {
		// Its machine opens its items, and pushes them (remoteattn.go):
		// here they are what that machine sends, never a second push.
		switch s {
		case api.Gone:
			c.remoteGoneAttnLocked(w)
		case api.Done:
			c.runDoneAttnLocked(m.reg.runOf[w.ID])
		}
		return
	}
	switch s {
	case api.Idle:
		if prev == api.Working || prev == api.Waiting {
			c.attnLocked(attnOp{key: turn, open: m.itemOfLocked(w.ID, api.AttnNoReport, firstLine(w.LastAnswer))})
		}
	case api.Failed:
		c.attnLocked(attnOp{key: turn, open: m.itemOfLocked(w.ID, api.AttnFailed, firstLine(orDefaultStr(w.Error, w.LastAnswer)))})
	case api.Paused:
		c.attnLocked(attnOp{key: turn, open: m.itemOfLocked(w.ID, api.AttnPaused, firstLine(orDefaultStr(w.Error, w.LastAnswer)))})
	case api.Gone:
		c.attnLocked(attnOp{key: turn, by: "gone"})
		c.attnLocked(attnOp{key: attention.PaneKey(w.ID, attention.Prompt), by: "gone"})
	case api.Done:
		c.attnLocked(attnOp{key: turn, by: "reported"})
		c.runDoneAttnLocked(m.reg.runOf[w.ID])
	case api.Working, api.Starting:
		c.attnLocked(attnOp{key: turn, by: "agent"})
		if r := m.reg.runOf[w.ID]; r != nil {
			c.attnLocked(attnOp{key: attention.RunKey(r.ID), by: "agent"})
		}
	}
}

// failedTurnAttnLocked makes the item of worker w's turn that ended in
// an error (Claude's StopFailure) a "failed" one.
func (c *change) failedTurnAttnLocked(w *Worker, answer string) {
	syncs.AssertLocked(&c.m.reg.mu)
	c.attnLocked(attnOp{key: attention.PaneKey(w.ID, attention.Turn), open: c.m.itemOfLocked(w.ID, api.AttnFailed, firstLine(answer))})
}

// runDoneAttnLocked opens run r's "finished" item once every worker of
// it is done and no task waits.
func (c *change) runDoneAttnLocked(r *Run) {
	syncs.AssertLocked(&c.m.reg.mu)
	if r == nil || len(r.Workers) == 0 || r.CoordinatorMachine != "" {
		// (A run hosted here for a coordinator on another machine ends
		// there: that machine's run opens the item, and pushes it.)
		return
	}
	done := 0
	for _, w := range r.Workers {
		switch w.State {
		case api.Done:
			done++
		case api.Gone, api.Failed:
		default:
			return
		}
	}
	for _, t := range r.Tasks {
		if t.State == api.TaskWaiting || t.State == api.TaskRunning {
			return
		}
	}
	if done == 0 {
		return
	}
	a := &api.Attention{Kind: api.AttnRunDone, Pane: r.Coordinator, Run: r.ID, Text: firstLine(r.Objective)}
	a.Agent, _ = c.m.facts.agentOf(r.Coordinator)
	c.attnLocked(attnOp{key: attention.RunKey(r.ID), open: a})
}

// gateAttn is the item of an open gate.
func gateAttn(g api.Gate, name, agentKind string) *api.Attention {
	return &api.Attention{Kind: api.AttnGate, Pane: g.Pane, Name: name, Agent: agentKind, Run: g.Run,
		Text: firstLine(g.Question), Options: g.Options, Gate: g.ID}
}

// firstLine is s as one line a person reads at a glance.
func firstLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 300 {
		s = string(r[:300]) + "…"
	}
	return s
}

// Attention lists the items (the open ones, or all that are kept), the
// newest first.
func (m *Manager) Attention(ctx context.Context, req api.AttentionRequest) (*api.AttentionList, error) {
	m.expireNow()
	l := m.attn.List(req.All)
	return &l, nil
}

// WaitAttention returns once an item opened after req.After (an item's
// id; "" for none) is open, or when req.Timeout passes (with none).
func (m *Manager) WaitAttention(ctx context.Context, req api.AttentionRequest) (*api.AttentionList, error) {
	var until <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		until = t.C
	}
	for {
		ch := m.attn.Changed()
		if items := m.attn.OpenedAfter(req.After); len(items) > 0 {
			return &api.AttentionList{Items: items, Open: m.attn.OpenCount()}, nil
		}
		select {
		case <-ch:
		case <-until:
			return &api.AttentionList{Items: []api.Attention{}, Open: m.attn.OpenCount()}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// DismissAttention closes an open item at a person's word.
func (m *Manager) DismissAttention(ctx context.Context, req api.AttentionRequest) (*api.Attention, error) {
	a, err := m.CloseAttention(req.ID, "dismissed")
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// AttentionCount is how many items are open (st status, st ls).
func (m *Manager) AttentionCount() int { return m.attn.OpenCount() }

// AttentionByPane is the open item of each pane of this machine, the
// newest: what the graph and the cards mark.
func (m *Manager) AttentionByPane() map[string]api.Attention { return m.attn.OpenByPane() }

// AttentionItem is item id.
func (m *Manager) AttentionItem(id string) (api.Attention, bool) { return m.attn.Get(id) }

// AttentionBook is the book itself, for the daemon's push (MarkPushed).
func (m *Manager) AttentionBook() *attention.Book { return m.attn }

// OpenPrompt is the open permission or question item of pane's agent, if
// any: what a PermissionRequest hook that waits for a person's answer
// (issue 34, item 3) waits on.
func (m *Manager) OpenPrompt(pane string) (api.Attention, bool) {
	for _, a := range m.attn.OpenedAfter("") {
		if a.Pane == pane && a.Machine == "" && (a.Kind == api.AttnPermission || a.Kind == api.AttnQuestion) {
			return a, true
		}
	}
	return api.Attention{}, false
}

// CloseAttention closes open item id with why ("answered", ...), waking
// the web UI's pages and the status line, as a dismissal does.
func (m *Manager) CloseAttention(id, why string) (api.Attention, error) {
	a, err := m.attn.Close(id, why)
	if err != nil {
		return api.Attention{}, errorf(api.KindNotFound, "st attention lists the open items", "%v", err)
	}
	m.logf("attention %s closed: %s", a.ID, why)
	m.reg.notify()
	m.attnCounted()
	return a, nil
}
