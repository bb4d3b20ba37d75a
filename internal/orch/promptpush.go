package orch

import (
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/attention"
)

// One push per thing that needs a person (issue 34): an agent at a
// permission prompt st can answer through its hook (Claude's and Codex's
// PermissionRequest) is one attention item, and its one push, by the
// attention quiet rules, carries the prompt's answer links. The item
// opens from the hook event; the prompt from the same hook's wait a
// moment later (or, when the two requests cross, before it). So the
// item's push is held until its prompt opens and goes with the prompt's
// id; a prompt st cannot offer (readPrompt refused it) lets it go at once
// without; a prompt that never comes (the hook died between its two
// requests) lets it go after promptHold. Either order meets under the
// promptBook's lock: whichever comes second sends. A prompt whose event
// opened no item (the event did not reach st within the hook's second)
// opens its own, so that it too is pushed, once, with its links.
//
// A gate's item is the other way round: its own push (pushGate) carries
// it, and the attention push leaves gates out.

// promptHold bounds how long an item waits for its prompt: the hook asks
// for its wait right after its event is answered, in milliseconds.
const promptHold = 3 * time.Second

// heldItem is a new item whose push waits for its prompt.
type heldItem struct {
	a     api.Attention
	timer *time.Timer
}

// holdForPrompt sends new item a once pane's prompt is open: at once if
// it is open already.
func (m *Manager) holdForPrompt(a api.Attention) {
	b := m.prompts
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, pw := range b.prompts {
		if pw.p.Pane == a.Pane {
			a.Prompt = pw.p.ID
			m.pushAttn(a)
			return
		}
	}
	if old := b.held[a.Pane]; old != nil {
		// A new prompt of the pane superseded the held one's item: that
		// item is closed, and pushes nothing.
		old.timer.Stop()
	}
	h := &heldItem{a: a}
	h.timer = time.AfterFunc(b.hold, func() { m.releaseHeldItem(a.Pane, a.ID, "") })
	b.held[a.Pane] = h
}

// releaseHeld sends pane's held item, if any, with prompt's id ("": none,
// st cannot answer it), and reports whether one was held.
func (m *Manager) releaseHeld(pane, prompt string) bool { return m.releaseHeldItem(pane, "", prompt) }

// releaseHeldItem sends pane's held item (item id, when id is not "")
// with prompt's id. An item closed meanwhile pushes nothing.
func (m *Manager) releaseHeldItem(pane, id, prompt string) bool {
	b := m.prompts
	b.mu.Lock()
	h := b.held[pane]
	if h == nil || (id != "" && h.a.ID != id) {
		b.mu.Unlock()
		return false
	}
	delete(b.held, pane)
	h.timer.Stop()
	b.mu.Unlock()
	if cur, ok := m.attn.Get(h.a.ID); !ok || !cur.Open() {
		return true
	}
	a := h.a
	a.Prompt = prompt
	if prompt == "" {
		m.logf("attention %s: no prompt of %s st can answer; pushed without answer links", a.ID, pane)
	}
	m.pushAttn(a)
	return true
}

// promptItem opens the item of the prompt that pane's hook event ev
// asks (what the event would have opened), when that event held none: it
// did not reach st, or was about another agent than the pane's own. An
// open item of the pane's prompt stands (it was pushed, once).
func (m *Manager) promptItem(pane string, ev agent.Event) {
	key := attention.PaneKey(pane, attention.Prompt)
	if ev.Kind != agent.EvWaiting || m.attn.IsOpen(key) {
		return
	}
	ask := ev.Ask
	if ask == nil {
		ask = &agent.Ask{Tool: ev.Tool}
	}
	m.settleIfChanged(func(c *change) {
		c.attnLocked(attnOp{key: key, open: m.askItemLocked(pane, ask), prompt: true})
	})
}
