package orch

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sophonz/st/internal/api"
)

// A change of the registry's state, and what it sets going.
//
// Whoever changes runs or workers does so under the registry's lock and
// records it in a change: the runs it touched, and the effects that must
// wait until those runs are on disk (a coordinator's notice that its
// worker is done, the start of a task that became ready). stage takes one
// snapshot of each run touched; land waits for the disk and only then
// wakes the waiters and runs the effects. A report is one change: one
// write of its run, whatever it moved.

// change gathers one change. Made and filled with m.mu held.
type change struct {
	m      *Manager
	runs   map[*Run]bool
	done   []doneNotice // "worker X is done", for coordinators here
	lines  []paneLine   // plain lines to type into agents as notices
	kicks  []string     // panes whose notice loops look again
	starts []taskStart  // tasks whose workers start now
}

type doneNotice struct {
	parent string
	worker *Worker
}

type paneLine struct{ pane, text string }

type taskStart struct {
	run  *Run
	task *Task
}

func (m *Manager) newChange() *change { return &change{m: m, runs: map[*Run]bool{}} }

// touch marks run r as changed.
func (c *change) touch(r *Run) {
	if r != nil {
		c.runs[r] = true
	}
}

// setState moves w to s, and with it what follows from it: its task, the
// tasks that waited on that task, its coordinator's notice once the
// change is on disk. Called with m.mu held.
func (c *change) setState(w *Worker, s api.State) bool {
	m := c.m
	if w.State == s {
		return false
	}
	m.logf("worker %s (%s): %s -> %s", w.ID, w.Name, w.State, s)
	w.State = s
	w.Since = m.cfg.Now()
	c.touch(m.runOf[w.ID])
	if s == api.Done && w.Parent != "" && !w.Told && !api.IsRemote(w.Parent) {
		// (A coordinator on another machine is told by its own st.)
		c.done = append(c.done, doneNotice{w.Parent, w})
	}
	c.followTask(w)
	return true
}

// markTold records that w's coordinator has seen its report (a wait, a
// read or a notice showed it). It is the one place that sets Told.
// Called with m.mu held.
func (c *change) markTold(w *Worker, caller string) {
	if w.State == api.Done && w.Parent == caller && !w.Told {
		w.Told = true
		c.touch(c.m.runOf[w.ID])
	}
}

// commit is a change staged for the disk.
type commit struct {
	c        *change
	versions map[string]uint64
}

// stage takes one snapshot of every run c touched for the saver. Called
// with m.mu held; the disk is not waited for.
func (m *Manager) stage(c *change) *commit {
	cm := &commit{c: c, versions: map[string]uint64{}}
	for r := range c.runs {
		if m.runs[r.ID] != r {
			continue // a run dropped in the meantime
		}
		if m.frozen[r.ID] {
			// A newer st's run.json is never overwritten (load).
			m.logf("run %s is not written: its run.json is a newer st's", r.ID)
			continue
		}
		r.Format = api.RunFormat
		data, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			// A Run is plain data; this would be a bug.
			panic(fmt.Sprintf("orch: encode run %s: %v", r.ID, err))
		}
		cm.versions[r.ID] = m.saver.stage(r.ID, append(data, '\n'))
	}
	return cm
}

// land waits until the change is on disk, then wakes the waiters and
// sets its effects going. A change that could not be kept sets nothing
// going: the caller undoes it (undo). It takes no lock of the registry:
// called with m.mu held, the lock stays held while the disk works.
func (cm *commit) land() error {
	if err := cm.wait(); err != nil {
		return err
	}
	cm.effects()
	return nil
}

// settle is land for a change that stands whatever the disk says (what a
// hook or tmux showed happened): its effects run either way, and a write
// that failed is tried again by the saver until it holds.
func (cm *commit) settle() {
	if err := cm.wait(); err != nil {
		cm.c.m.logf("%v (st keeps trying)", err)
	}
	cm.effects()
}

func (cm *commit) wait() error {
	for id, v := range cm.versions {
		if err := cm.c.m.saver.wait(id, v); err != nil {
			return errorf(api.KindInternal, "free some disk space and try again", "st could not keep run %s: %v", id, err)
		}
	}
	return nil
}

func (cm *commit) effects() {
	c, m := cm.c, cm.c.m
	m.notify()
	for _, d := range c.done {
		m.notices.queueDone(d.parent, d.worker)
	}
	for _, l := range c.lines {
		m.notices.queue(l.pane, l.text)
	}
	for _, p := range c.kicks {
		m.notices.kick(p)
	}
	for _, s := range c.starts {
		s := s
		m.bg.Go(func(ctx context.Context) { m.startTask(ctx, s.run, s.task) })
	}
}

// settleUnlock stages c, lets m.mu go and settles c: the end of a change
// that stands whatever the disk says. Called with m.mu held.
func (m *Manager) settleUnlock(c *change) {
	cm := m.stage(c)
	m.mu.Unlock()
	cm.settle()
}

// Sync waits until every change made so far is on disk. The daemon
// calls it before it answers a request: a change may become visible (to
// a wait woken by another change) before its write lands, and what st
// answers must already be on disk. A write that failed is logged; the
// saver keeps trying it.
func (m *Manager) Sync() {
	if err := m.saver.sync(); err != nil {
		m.logf("%v (st keeps trying)", err)
	}
}

// save writes run r and waits for the disk: for a change that is undone
// when it cannot be kept. Called with m.mu held.
func (m *Manager) save(r *Run) error {
	c := m.newChange()
	c.touch(r)
	return m.stage(c).land()
}

// restage stages runs again as they are now, after a change of them was
// undone: the saver must not go on trying to write the undone snapshot.
// Called with m.mu held.
func (m *Manager) restage(rs ...*Run) {
	c := m.newChange()
	for _, r := range rs {
		c.touch(r)
	}
	m.stage(c)
}

// followTask moves the task of worker w along with w's state, and starts
// what that makes ready. Called with m.mu held.
func (c *change) followTask(w *Worker) {
	m := c.m
	r := m.runOf[w.ID]
	if r == nil {
		return
	}
	for _, t := range r.Tasks {
		if t.Worker != w.ID || t.State != api.TaskRunning {
			continue
		}
		switch w.State {
		case api.Done:
			t.State, t.Reason = api.TaskDone, ""
		case api.Failed:
			t.State, t.Reason = api.TaskFailed, "its worker "+w.ID+" failed: "+w.Error
		case api.Gone:
			t.State, t.Reason = api.TaskFailed, "its worker "+w.ID+" is gone (its pane closed) before it reported"
		default:
			continue
		}
		t.Since = m.cfg.Now()
		c.touch(r)
		c.schedule(r)
	}
}

// schedule starts every waiting task of r whose dependencies are all done
// (once the change is on disk), and fails those whose dependency failed
// or was cancelled. Called with m.mu held.
func (c *change) schedule(r *Run) {
	now := c.m.cfg.Now()
	for changed := true; changed; {
		changed = false
		for _, t := range r.Tasks {
			if t.State != api.TaskWaiting {
				continue
			}
			var waitOn []string
			blocked := ""
			for _, d := range t.Deps {
				dt := runTask(r, d)
				switch {
				case dt == nil:
					blocked = fmt.Sprintf("its dependency %s no longer exists", d)
				case dt.State == api.TaskFailed || dt.State == api.TaskCancelled:
					blocked = fmt.Sprintf("its dependency %s %s", d, pastTense(dt.State))
				case dt.State != api.TaskDone:
					waitOn = append(waitOn, d)
				}
			}
			switch {
			case blocked != "":
				t.State, t.Reason, t.Since = api.TaskFailed, "did not start: "+blocked, now
				changed = true
				c.touch(r)
			case len(waitOn) == 0:
				t.State, t.Reason, t.Since = api.TaskRunning, "", now
				c.touch(r)
				c.starts = append(c.starts, taskStart{r, t})
			default:
				t.Reason = "waiting on " + strings.Join(waitOn, ", ")
			}
		}
	}
}
