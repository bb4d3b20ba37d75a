package orch

import (
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/syncs"
)

// Attention items of workers on other machines (issue 34, item 3). A
// worker on another machine keeps its notifications on that machine (the
// spec's rule): its st opens the worker's items and pushes them, once.
// That machine carries the open ones to the coordinator's machine with
// the workers' states (api.PeerWatchResult.Attention); the coordinator's
// st keeps them in its book under keys of their own (remoteKey), marked
// with the machine, and pushes none of them: they go into the book
// directly, never through runAttn and OnAttention. An item that closes
// there is gone from the next answer, and closes here.

// carried are the kinds that machine carries: what its worker asks of a
// person and how its turn ended. A gate asked there is answered there
// (its own push), and a run's end is the coordinator's own item.
var carried = map[api.AttentionKind]bool{
	api.AttnPermission: true, api.AttnQuestion: true,
	api.AttnNoReport: true, api.AttnFailed: true, api.AttnPaused: true,
}

// Attention is the open items of machine from's workers here (those
// Workers(from) lists), each with its worker's pane here.
func (h *Hosted) Attention(from string) []api.Attention {
	m := h.m
	m.reg.mu.Lock()
	panes := map[string]bool{}
	for _, w := range m.reg.workers {
		if owner, _, ok := api.SplitRemote(w.Parent); ok && owner == from && w.Ref != "" && !w.Remote() {
			panes[w.ID] = true
		}
	}
	m.reg.mu.Unlock()
	var out []api.Attention
	for _, a := range m.attn.OpenedAfter("") {
		if a.Machine == "" && panes[a.Pane] && carried[a.Kind] {
			// What a hook may answer here is answered here: no prompt
			// travels, and the push state is this machine's.
			a.Prompt, a.Pushed, a.Run = "", nil, ""
			out = append(out, a)
		}
	}
	return out
}

// remoteKey is the key here of item id of the worker whose record here
// is rec (machine/%N); remotePrefix(rec) is the start of all of them.
func remoteKey(rec, id string) string { return remotePrefix(rec) + id }

func remotePrefix(rec string) string { return "remote:" + rec + ":" }

// machinePrefix is the start of the keys of every item of machine slug.
func machinePrefix(slug string) string { return "remote:" + slug + "/" }

// MirrorAttention brings the items here of machine slug's workers in
// step with what it sent (items, checked by internal/peer: kinds, sizes,
// texts): each item of a worker of this machine's runs there, not gone, is
// kept, marked with the machine and named by this machine's record
// (machine/%N), and pushed by no one here; an item not sent any more is
// closed ("closed there"). Items of panes that are not such workers are
// left out: that machine speaks only of the workers this one handed it.
func (r *Remotes) MirrorAttention(slug string, items []api.Attention) {
	m := r.m
	m.reg.mu.Lock()
	keep := map[string]api.Attention{}
	for _, a := range items {
		w := m.reg.workers[slug+"/"+a.Pane]
		// (A failed worker is no live one, and its item is what it
		// failed of.)
		if w == nil || w.Machine != slug || w.State == api.Gone || !carried[a.Kind] {
			continue
		}
		a.Pane, a.Machine, a.Name, a.Agent = w.ID, slug, w.Name, w.Agent
		if run := m.reg.runOf[w.ID]; run != nil {
			a.Run = run.ID
		}
		keep[remoteKey(w.ID, a.ID)] = a
	}
	m.reg.mu.Unlock()
	opened, closed := m.attn.Mirror(machinePrefix(slug), keep)
	for _, a := range opened {
		m.logf("attention %s opened on %s: %s of %s: %.80q (that machine pushes it)", a.ID, slug, a.Kind, a.Pane, a.Text)
	}
	for _, a := range closed {
		m.logf("attention %s (%s, %s) closed on %s", a.ID, a.Kind, a.Pane, slug)
	}
	if len(opened)+len(closed) > 0 {
		m.reg.notify()
		m.attnCounted()
	}
}

// remoteGoneAttnLocked closes the items here of worker w on another
// machine once it is gone or out of this machine's runs: no answer from
// that machine may come to close them.
func (c *change) remoteGoneAttnLocked(w *Worker) {
	syncs.AssertLocked(&c.m.reg.mu)
	c.attnLocked(attnOp{key: remotePrefix(w.ID), under: true, by: "gone"})
}
