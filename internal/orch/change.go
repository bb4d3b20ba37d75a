package orch

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/syncs"
)

// A change of the registry's state, and what it sets going.
//
// Whoever changes runs or workers does so under the registry's lock and
// records it in a change: the runs it touched, and the effects that must
// wait until those runs are on disk (a coordinator's notice that its
// worker is done, the start of a task that became ready). stageLocked
// marks each run touched for the saver, whose writer takes one snapshot
// a write (saver.go); settle and keep's finish wait for the disk with no
// lock held, and only then wake the waiters and run the effects. A report is one
// change: one write of its run, whatever it moved (report.go counts the
// writes of a whole report).
//
// Most changes stand whatever the disk says (what a hook or tmux showed
// happened): settleChange takes the lock, lets a function fill the change,
// lets the lock go and settles it, all in one function, so that no lock
// is let go in a function other than the one that took it. A change that
// is undone when it cannot be kept (a report, a new task) goes through
// keep (keep.go): staged under the lock, written with the lock let go,
// undone under it when the write failed.

// change gathers one change. Made and filled with m.reg.mu held: its methods
// are …Locked.
type change struct {
	m *Manager
	// runs are the runs touched: true, a change that must be on disk
	// before it counts; false, only soft ones (saver.go: a report seen).
	runs   map[*Run]bool
	done   []doneNotice // "worker X is done", for coordinators here
	kicks  []string     // panes whose notice loops look again
	starts []taskStart  // tasks whose workers start now
	held   []*Worker    // reports in flight until it is kept (keep.go)
	attn   []attnOp     // attention items to open and close (attention.go)
	lines  []noticeLine // plain notices to queue once on disk (budget.go)
	pauses []string     // panes paused at a usage limit: st looks again at its reset
	// gates: a gate was added in memory (a budget's): gates.json is
	// written with the effects, with no lock held (gatebook.go).
	gates bool
}

// noticeLine is a plain notice for an agent's pane (noticer.queue).
type noticeLine struct{ pane, key, text string }

type doneNotice struct {
	parent string
	worker *Worker
}

type taskStart struct {
	run  *Run
	task *Task
}

func (m *Manager) newChange() *change { return &change{m: m, runs: map[*Run]bool{}} }

// touchLocked marks run r as changed.
func (c *change) touchLocked(r *Run) {
	syncs.AssertLocked(&c.m.reg.mu)
	if r != nil {
		c.runs[r] = true
	}
}

// setStateLocked moves w to s, and with it what follows from it: its
// task, the tasks that waited on that task, its coordinator's notice once
// the change is on disk.
func (c *change) setStateLocked(w *Worker, s api.State) bool {
	syncs.AssertLocked(&c.m.reg.mu)
	m := c.m
	if w.State == s {
		return false
	}
	m.logf("worker %s (%s): %s -> %s", w.ID, w.Name, w.State, s)
	prev := w.State
	w.State = s
	if s != api.Paused {
		w.Pause = nil // it went on, or ended otherwise
	}
	w.Since = m.cfg.Now()
	c.touchLocked(m.reg.runOf[w.ID])
	c.workerStateAttnLocked(w, prev, s)
	if s == api.Done && m.reg.noticed[w] == reportKey(w) {
		// Back to done with the report its coordinator's notice named (a
		// turn of a notice typed into it in between): seen already.
		c.markToldLocked(w, w.Parent)
	}
	if s == api.Done && w.Parent != "" && !w.Told && !api.IsRemote(w.Parent) {
		// (A coordinator on another machine is told by its own st.)
		c.done = append(c.done, doneNotice{w.Parent, w})
	}
	c.followTaskLocked(w)
	return true
}

// markToldLocked records that w's coordinator has seen its report (a
// wait, a read or a notice showed it). It is the one place that sets
// Told. The mark is soft: it rides with the run's next write (saver.go),
// since what a crash loses of it is a report shown twice.
func (c *change) markToldLocked(w *Worker, caller string) {
	syncs.AssertLocked(&c.m.reg.mu)
	if w.State == api.Done && w.Parent == caller && !w.Told && !c.m.reg.unsureLocked(w) {
		w.Told = true
		if r := c.m.reg.runOf[w.ID]; r != nil && !c.runs[r] {
			c.runs[r] = false
		}
	}
}

// commit is a change staged for the disk.
type commit struct {
	c        *change
	versions map[string]uint64
}

// stageLocked records every run c touched as changed, for the saver,
// and returns the versions to wait for (the hard ones); the disk is not
// waited for. The saver's writer takes each run's snapshot when it
// writes it (snap), under this lock: one snapshot a write, whatever
// number of changes it carries. (Each change took its own before: a
// hundred reports at once encoded the whole run a hundred times under
// the lock, a third of the daemon's time in the burst, for six to
// twenty writes; and every wait's answer, which marks its reports seen,
// encoded it once more for a soft change no one waits for.)
func (reg *registry) stageLocked(c *change) *commit {
	syncs.AssertLocked(&reg.mu)
	cm := &commit{c: c, versions: map[string]uint64{}}
	for r, hard := range c.runs {
		if !reg.writableLocked(r) {
			continue
		}
		v := reg.saver.mark(r.ID, !hard)
		if hard {
			cm.versions[r.ID] = v // (a soft one is waited for by no one)
		}
	}
	return cm
}

// writableLocked reports whether run r is still st's to write: not
// dropped in the meantime, and not a newer st's.
func (reg *registry) writableLocked(r *Run) bool {
	syncs.AssertLocked(&reg.mu)
	if reg.runs[r.ID] != r {
		return false // a run dropped in the meantime
	}
	if reg.frozen[r.ID] {
		// A newer st's run.json is never overwritten (load).
		reg.logf("run %s is not written: its run.json is a newer st's", r.ID)
		return false
	}
	return true
}

// snapshot is the saver's snap: run id's record as it is now, handed to
// the saver (put), with every change marked so far in it. It reports
// false for a run that is no longer st's to write. The writer calls it
// with its write lock held; it takes the registry's.
func (reg *registry) snapshot(id string) bool {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	r := reg.runs[id]
	if r == nil || !reg.writableLocked(r) {
		return false
	}
	reg.saver.put(id, reg.recordLocked(r))
	return true
}

// recordLocked is run r's record (run.json) as it is now.
func (reg *registry) recordLocked(r *Run) []byte {
	syncs.AssertLocked(&reg.mu)
	r.Format = api.RunFormat
	// Compact, not indented: this runs under the registry's lock, and
	// at 100 workers indenting took 0.36 ms of it against 0.13 ms (st
	// orch show, or jq, reads it for a person).
	data, err := json.Marshal(r)
	if err != nil {
		// A Run is plain data; this would be a bug.
		panic(fmt.Sprintf("orch: encode run %s: %v", r.ID, err))
	}
	return append(data, '\n')
}

// settle waits until the change is on disk, then wakes the waiters and
// sets its effects going, for a change that stands whatever the disk
// says (what a hook or tmux showed happened): its effects run either
// way, and a write that failed is tried again by the saver until it
// holds. (A change undone when it cannot be kept ends in keep's finish.)
// The caller holds no lock of the registry: the writer takes it for
// the snapshot it writes.
func (cm *commit) settle() {
	if err := cm.wait(); err != nil {
		cm.c.m.logf("%v (st keeps trying)", err)
	}
	cm.effects()
}

func (cm *commit) wait() error {
	for id, v := range cm.versions {
		if err := cm.c.m.reg.saver.wait(id, v); err != nil {
			return errorf(api.KindInternal, "free some disk space and try again", "st could not keep run %s: %v", id, err)
		}
	}
	return nil
}

func (cm *commit) effects() {
	c, m := cm.c, cm.c.m
	if c.gates {
		if err := m.gates.save(); err != nil {
			m.logf("%v (the next write of the gates carries it)", err)
		}
	}
	m.runAttn(c.attn) // before the wake-up: the web UI's snapshot shows them
	m.reg.notify()
	for _, d := range c.done {
		m.notices.queueDone(d.parent, d.worker)
	}
	for _, p := range c.kicks {
		m.notices.kick(p)
	}
	for _, l := range c.lines {
		if l.pane != "" && !api.IsRemote(l.pane) {
			m.notices.queue(l.pane, l.key, l.text)
		}
	}
	for _, s := range c.starts {
		s := s
		m.bg.Go(func(ctx context.Context) { m.startTask(ctx, s.run, s.task) })
	}
	for _, p := range c.pauses {
		p := p
		m.bg.Go(func(ctx context.Context) { m.goOnAfterLimit(ctx, p) })
	}
}

// settleChange takes the registry's lock, lets f change the registry and
// record it in c, stages c and lets the lock go, then settles c: written
// once (not waited for under the lock, so that changes side by side share
// a write), and its effects set going, the waiters woken among them.
func (m *Manager) settleChange(f func(c *change)) { m.settle(f, false) }

// settleIfChanged is settleChange for what may find nothing to change (a
// watch's answer, a list of panes, a refused hook): a change that touched
// no run and sets nothing going writes nothing and wakes no one.
func (m *Manager) settleIfChanged(f func(c *change)) { m.settle(f, true) }

func (m *Manager) settle(f func(c *change), quiet bool) {
	m.reg.mu.Lock()
	// A panic in f (a bug) lets the lock go before it goes on up: the
	// request that met it fails (the HTTP server recovers it), where a
	// lock held for ever would hang every later request of the daemon.
	// What f changed before it panicked is not staged; the run's next
	// write carries it.
	held := true
	defer func() {
		if held {
			m.reg.mu.Unlock()
		}
	}()
	c := m.newChange()
	f(c)
	if quiet && len(c.runs) == 0 && len(c.done) == 0 && len(c.kicks) == 0 && len(c.starts) == 0 && len(c.attn) == 0 && len(c.lines) == 0 && len(c.pauses) == 0 && !c.gates {
		return
	}
	cm := m.reg.stageLocked(c)
	// Its snapshot carries the changes in flight of its runs (keep.go):
	// its effects wait until those are kept or undone.
	ahead := m.reg.flyingLocked(c)
	held = false
	m.reg.mu.Unlock()
	for _, d := range ahead {
		<-d.resolved
	}
	cm.settle()
}

// Sync waits until every change made so far is on disk. The daemon
// calls it before it answers a request: a change may become visible (to
// a wait woken by another change) before its write lands, and what st
// answers must already be on disk. A write that failed is logged; the
// saver keeps trying it.
func (m *Manager) Sync() {
	if err := m.reg.saver.sync(); err != nil {
		m.logf("%v (st keeps trying)", err)
	}
}
