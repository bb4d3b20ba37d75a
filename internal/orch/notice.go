package orch

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/syncs"
)

// noticer types short notices into agents' panes between their turns:
// "worker X is done" to a coordinator, "you are no one's worker now" to a
// released worker. Only panes where an agent runs (st has seen its hooks)
// get notices; a plain shell gets nothing typed into it.
//
// A notice is typed once (issue 32, item 9): each has a key that names
// what it tells, and a key typed is never typed again. A done notice's
// key is its worker's report (reportKey), kept by the registry once
// typed (registry.noticed), so that a worker whose state passes through done
// again with the same report (a notice typed into it, a turn that is
// not new work) is not announced twice; a plain line's key is its
// event's, kept here.
//
// The noticer has its own lock (mu), taken alone: it asks the registry
// (doneDue, toldByNotice) with it let go. Its loops run in the manager's
// group.
type noticer struct {
	m       *Manager
	mu      sync.Mutex
	pending map[string][]notice
	kicks   map[string]chan struct{}
	// typed holds the keys of the plain lines typed, per pane.
	typed map[string]map[string]bool
}

type notice struct {
	text   string
	worker *Worker // for "done" notices: dropped once the parent has seen the report
	// key names what it tells: a plain line's event; for a done notice,
	// the report it names (set by take, from the registry).
	key string
}

// same reports whether a and b are one notice: the same worker's done
// notice (whichever report), or the same plain line.
func (a notice) same(b notice) bool {
	if a.worker != nil || b.worker != nil {
		return a.worker == b.worker
	}
	return a.key == b.key && a.text == b.text
}

func newNoticer(m *Manager) *noticer {
	return &noticer{m: m, pending: map[string][]notice{}, kicks: map[string]chan struct{}{}, typed: map[string]map[string]bool{}}
}

// queueDone queues "w is done" for its coordinator in pane parent, once
// (take drops it if the report was announced already).
func (n *noticer) queueDone(parent string, w *Worker) { n.add(parent, notice{worker: w}) }

// queue queues a plain line for pane; key names the event it tells of,
// and a line of a key typed already into pane is not queued again.
func (n *noticer) queue(pane, key, text string) { n.add(pane, notice{text: text, key: key}) }

// add queues nt for pane unless the same notice waits there, or was typed
// there already: the look and the queueing under one hold of the lock, so
// that two changes that each ask for it at once queue it once.
func (n *noticer) add(pane string, nt notice) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if nt.worker == nil && n.typed[pane][nt.key] {
		return
	}
	for _, p := range n.pending[pane] {
		if p.same(nt) {
			return
		}
	}
	n.pending[pane] = append(n.pending[pane], nt)
	if _, running := n.kicks[pane]; running {
		n.kickLocked(pane)
		return
	}
	n.kicks[pane] = make(chan struct{}, 1)
	n.m.bg.Go(func(ctx context.Context) { n.loop(ctx, pane) })
}

// kick wakes the loop of a pane after one of its hook events.
func (n *noticer) kick(pane string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.kickLocked(pane)
}

func (n *noticer) kickLocked(pane string) {
	syncs.AssertLocked(&n.mu)
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
	n.mu.Lock()
	pending := append([]notice(nil), n.pending[pane]...)
	n.mu.Unlock()
	var ws []*Worker
	for _, nt := range pending {
		if nt.worker != nil {
			ws = append(ws, nt.worker)
		}
	}
	due := n.m.doneDue(ws)
	n.mu.Lock()
	var keep []notice
	rest := n.pending[pane][:0]
	for _, nt := range n.pending[pane] {
		looked := containsNotice(pending, nt)
		if looked && nt.worker != nil && due[nt.worker] == nil {
			continue // seen, announced, no longer done, or no longer a worker here
		}
		rest = append(rest, nt)
		if looked {
			if nt.worker != nil {
				nt.key = due[nt.worker].report // the report this line names
			}
			keep = append(keep, nt)
		}
	}
	n.pending[pane] = rest
	n.mu.Unlock()
	if len(keep) == 0 {
		return "", nil
	}
	var done []string
	for _, nt := range keep {
		if nt.worker == nil {
			return nt.text, []notice{nt} // a plain line goes alone, first
		}
		done = append(done, fmt.Sprintf("%s (%s%s)", due[nt.worker].name, due[nt.worker].id, withSpent(", ", due[nt.worker].spent)))
	}
	st := n.m.cfg.STBin
	if len(done) == 1 {
		// What it spent comes with its report (issue 35).
		d := due[keep[0].worker]
		return fmt.Sprintf("st: worker %s (%s) is done%s. Read its report with: %s worker read %s", d.name, d.id, withSpent(" having spent ", d.spent), st, d.id), keep
	}
	return fmt.Sprintf("st: %d workers are done: %s. Read each report with: %s worker read ID", len(done), strings.Join(done, ", "), st), keep
}

// dueWorker is a done worker a notice still names: its name and id as
// the registry has them now, and the key of its report.
type dueWorker struct{ name, id, report, spent string }

// reportKey names w's report: the key of the done notice that announces
// it. A new report (st worker done again) has a new key.
func reportKey(w *Worker) string {
	if w.ReportedAt == nil {
		return "report none"
	}
	return fmt.Sprintf("report %d", w.ReportedAt.UnixNano())
}

// doneDue says which of ws a done notice still holds for: each that is
// done, still a worker here, and whose report its coordinator has
// neither seen nor been told of by a notice.
func (m *Manager) doneDue(ws []*Worker) map[*Worker]*dueWorker {
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	out := map[*Worker]*dueWorker{}
	for _, w := range ws {
		if !w.Told && m.reg.workers[w.ID] == w && w.State == api.Done && m.reg.noticed[w] != reportKey(w) {
			out[w] = &dueWorker{name: w.Name, id: w.ID, report: reportKey(w), spent: spentNote(w.Tokens)}
		}
	}
	return out
}

// toldByNotice records that the coordinators of the done notices sent
// saw the reports they named: each report's key is kept on its worker,
// so that it is never announced again, and the report is seen.
func (m *Manager) toldByNotice(sent []notice) {
	m.settleChange(func(c *change) {
		for _, nt := range sent {
			if nt.worker == nil {
				continue
			}
			m.reg.noticed[nt.worker] = nt.key
			if reportKey(nt.worker) == nt.key {
				c.markToldLocked(nt.worker, nt.worker.Parent)
			}
		}
	})
}

func (n *noticer) finish(pane string, sent []notice) {
	n.m.toldByNotice(sent)
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, nt := range sent {
		if nt.worker == nil {
			if n.typed[pane] == nil {
				n.typed[pane] = map[string]bool{}
			}
			n.typed[pane][nt.key] = true
		}
	}
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
		if n.same(x) {
			return true
		}
	}
	return false
}

func (n *noticer) loop(ctx context.Context, pane string) {
	n.mu.Lock()
	kick := n.kicks[pane]
	n.mu.Unlock()
	stop := func() {
		n.mu.Lock()
		delete(n.kicks, pane)
		n.mu.Unlock()
	}
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
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
			if n.ended(pane) {
				return
			}
			continue
		}
		if n.m.coordPaused(pane) {
			// A coordinator at its usage limit: its notices wait until it
			// goes on (coordlimit.go), which kicks this loop.
			if !wait(2 * time.Second) {
				stop()
				return
			}
			continue
		}
		kind, inTurn := n.m.facts.agentIn(pane)
		ad, err := agent.Lookup(kind)
		if err != nil {
			// Not an agent: st types nothing into a shell. The report
			// stays for st worker wait and st worker read.
			n.finishDrop(pane, covers)
			continue
		}
		if inTurn {
			// Claude's Esc ends a turn with no hook, so a turn that the
			// screen has shown as over for a while is over.
			if v, err := n.m.screen(ctx, pane, ad); err == nil && v.Screen == agent.ScreenReady {
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
		if n.send(ctx, pane, ad, line, covers) {
			continue
		}
		if !wait(time.Second) {
			stop()
			return
		}
	}
}

// ended ends the loop of pane when nothing is pending for it (under one
// lock with add, so that add never kicks a loop that has stopped).
func (n *noticer) ended(pane string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.pending[pane]) > 0 {
		return false
	}
	delete(n.pending, pane)
	delete(n.kicks, pane)
	return true
}

// send types line into pane as a notice covering covers. It reports
// false when it should be tried again later.
func (n *noticer) send(ctx context.Context, pane string, ad *agent.Kind, line string, covers []notice) bool {
	n.m.facts.markNotice(pane, line)
	d := delivery{pane: pane, adapter: ad, text: line, blockedTimeout: 2 * time.Second, hookTimeout: 10 * time.Second}
	err := n.m.deliver(ctx, &d)
	if err == nil {
		n.m.logf("notice to %s: %s", pane, line)
		n.finish(pane, covers)
		return true
	}
	if oe, ok := err.(*api.Error); ok && oe.Kind == api.KindNotFound {
		n.finishDrop(pane, covers) // the pane closed
		return true
	}
	return false
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
