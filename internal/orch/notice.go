package orch

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sophonz/st/internal/agent"
)

// noticer types short notices into agents' panes between their turns:
// "worker X is done" to a coordinator, "you are no one's worker now" to a
// released worker. Only panes where an agent runs (st has seen its hooks)
// get notices; a plain shell gets nothing typed into it.
type noticer struct {
	m       *Manager
	mu      sync.Mutex
	pending map[string][]notice
	kicks   map[string]chan struct{}
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

type notice struct {
	text   string
	worker *Worker // for "done" notices: dropped once the parent has seen the report
}

func newNoticer(m *Manager) *noticer {
	ctx, cancel := context.WithCancel(context.Background())
	return &noticer{m: m, pending: map[string][]notice{}, kicks: map[string]chan struct{}{}, ctx: ctx, cancel: cancel}
}

func (n *noticer) stop() {
	n.cancel()
	n.wg.Wait()
}

// queueDone queues "w is done" for w's parent, once. Called with m.mu held.
func (n *noticer) queueDone(w *Worker) {
	n.mu.Lock()
	for _, nt := range n.pending[w.Parent] {
		if nt.worker == w {
			n.mu.Unlock()
			return
		}
	}
	n.mu.Unlock()
	n.add(w.Parent, notice{worker: w})
}

// queue queues a plain line for pane.
func (n *noticer) queue(pane, text string) { n.add(pane, notice{text: text}) }

func (n *noticer) add(pane string, nt notice) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pending[pane] = append(n.pending[pane], nt)
	if _, running := n.kicks[pane]; running {
		n.kickLocked(pane)
		return
	}
	n.kicks[pane] = make(chan struct{}, 1)
	n.wg.Add(1)
	go n.loop(pane)
}

// kick wakes the loop of a pane after one of its hook events.
func (n *noticer) kick(pane string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.kickLocked(pane)
}

func (n *noticer) kickLocked(pane string) {
	if ch, ok := n.kicks[pane]; ok {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// take returns the line to type for pane now, and the notices it covers;
// notices that no longer matter are dropped.
func (n *noticer) take(pane string) (string, []notice) {
	n.m.mu.Lock()
	defer n.m.mu.Unlock()
	n.mu.Lock()
	defer n.mu.Unlock()
	var keep []notice
	for _, nt := range n.pending[pane] {
		if nt.worker != nil && (nt.worker.Told || n.m.workers[nt.worker.ID] != nt.worker || nt.worker.State != Done) {
			continue
		}
		keep = append(keep, nt)
	}
	n.pending[pane] = keep
	if len(keep) == 0 {
		return "", nil
	}
	var done, plain []string
	for _, nt := range keep {
		if nt.worker != nil {
			done = append(done, fmt.Sprintf("%s (%s)", nt.worker.Name, nt.worker.ID))
		} else {
			plain = append(plain, nt.text)
		}
	}
	if len(plain) > 0 {
		for _, nt := range keep {
			if nt.worker == nil {
				return nt.text, []notice{nt}
			}
		}
	}
	st := n.m.cfg.STBin
	if len(done) == 1 {
		return fmt.Sprintf("st: worker %s is done. Read its report with: %s worker read %s", done[0], st, keep[0].worker.ID), keep
	}
	return fmt.Sprintf("st: %d workers are done: %s. Read each report with: %s worker read ID", len(done), strings.Join(done, ", "), st), keep
}

func (n *noticer) finish(pane string, sent []notice) {
	n.m.mu.Lock()
	for _, nt := range sent {
		if nt.worker != nil && !nt.worker.Told {
			nt.worker.Told = true
			n.m.save(n.m.runOf[nt.worker.ID])
		}
	}
	n.m.mu.Unlock()
	n.mu.Lock()
	defer n.mu.Unlock()
	rest := n.pending[pane][:0]
	for _, nt := range n.pending[pane] {
		if !containsNotice(sent, nt) {
			rest = append(rest, nt)
		}
	}
	n.pending[pane] = rest
}

func containsNotice(ns []notice, x notice) bool {
	for _, n := range ns {
		if n == x {
			return true
		}
	}
	return false
}

// agentIn says which agent runs in pane and whether it is in a turn.
func (n *noticer) agentIn(pane string) (kind string, inTurn bool) {
	n.m.mu.Lock()
	defer n.m.mu.Unlock()
	pi := n.m.panes[pane]
	if pi == nil {
		return "", false
	}
	return pi.agent, pi.inTurn
}

func (n *noticer) loop(pane string) {
	defer n.wg.Done()
	n.mu.Lock()
	kick := n.kicks[pane]
	n.mu.Unlock()
	// The loop's end (deleting pending and kicks together) happens under
	// one lock below, so that add never kicks a loop that has stopped.
	stop := func() {
		n.mu.Lock()
		delete(n.kicks, pane)
		n.mu.Unlock()
	}
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-n.ctx.Done():
			return false
		case <-kick:
		case <-t.C:
		}
		return true
	}
	readySeen := 0
	for {
		line, covers := n.take(pane)
		if line == "" {
			n.mu.Lock()
			if len(n.pending[pane]) == 0 {
				delete(n.pending, pane)
				delete(n.kicks, pane)
				n.mu.Unlock()
				return
			}
			n.mu.Unlock()
			continue
		}
		kind, inTurn := n.agentIn(pane)
		if kind == "" {
			// Not an agent: st types nothing into a shell. The report
			// stays for st worker wait and st worker read.
			n.finishDrop(pane, covers)
			continue
		}
		ad, err := agent.Lookup(kind)
		if err != nil {
			n.finishDrop(pane, covers)
			continue
		}
		if inTurn {
			// Claude's Esc ends a turn with no hook, so a turn that the
			// screen has shown as over for a while is over.
			if v, err := n.m.screen(n.ctx, pane, ad); err == nil && v.Screen == agent.ScreenReady {
				readySeen++
			} else {
				readySeen = 0
			}
			if readySeen < 3 {
				if !wait(2 * time.Second) {
					stop()
					return
				}
				continue
			}
		}
		readySeen = 0
		n.m.markNotice(pane, line)
		d := delivery{pane: pane, adapter: ad, text: line, blockedTimeout: 2 * time.Second, hookTimeout: 10 * time.Second}
		err = n.m.deliver(n.ctx, &d)
		if err == nil {
			n.m.logf("notice to %s: %s", pane, line)
			n.finish(pane, covers)
			continue
		}
		if oe, ok := err.(*Error); ok && oe.Kind == KindNotFound {
			n.finishDrop(pane, covers) // the pane closed
			continue
		}
		if !wait(time.Second) {
			stop()
			return
		}
	}
}

// finishDrop forgets notices without marking reports as seen.
func (n *noticer) finishDrop(pane string, covers []notice) {
	n.mu.Lock()
	defer n.mu.Unlock()
	rest := n.pending[pane][:0]
	for _, nt := range n.pending[pane] {
		if !containsNotice(covers, nt) {
			rest = append(rest, nt)
		}
	}
	n.pending[pane] = rest
}
