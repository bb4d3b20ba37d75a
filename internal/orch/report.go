package orch

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/syncs"
)

// Reports: a worker's st worker done (Done), and its coordinator's
// st worker wait and st worker read, which show reports and mark them
// seen.

// Done records a worker's report, on disk before it returns. The report
// and all it moves (the worker's state, its task, the tasks that waited
// on it) are one change: one write of the run. Only once that is on disk
// does the coordinator's notice go and the tasks it made ready start; a
// report that could not be kept is undone and tells no one.
func (m *Manager) Done(ctx context.Context, req api.DoneRequest) (*api.WorkerView, error) {
	if strings.TrimSpace(req.Summary) == "" {
		return nil, errorf(api.KindUsage, `st worker done --summary "<what you did, and how you checked it>"`, "the report needs a summary")
	}
	if err := checkText("summary", req.Summary); err != nil {
		return nil, err
	}
	var w *Worker
	err := m.keep(func(c *change) (func(), error) {
		w = m.reg.workers[req.Pane]
		if w == nil || (!w.State.Live() && w.State != api.Failed) {
			return nil, errorf(api.KindNotFound, "run st worker done in the pane of a worker that st started or adopted",
				"pane %s is not a worker of any run", orNone(req.Pane))
		}
		r := m.reg.runOf[w.ID]
		old, oldTasks := *w, keepTasks(r.Tasks)
		now := m.cfg.Now()
		summary := req.Summary
		switch {
		case !w.Reported || w.State != api.Done || w.Summary == "":
		case strings.HasSuffix(w.Summary, req.Summary):
			summary = w.Summary // the same report again (a retry) adds nothing
		default:
			// A second report in one turn adds to the first: the
			// coordinator may have read that one already, and neither is
			// lost.
			summary = w.Summary + "\n\n" + reportedAgain + req.Summary
		}
		w.Summary, w.ReportedAt, w.Reported, w.Told, w.Error = summary, &now, true, false, ""
		w.ReportAnswer = ""
		m.facts.reported(w.ID)
		if _, inTurn := m.facts.agentIn(w.ID); !inTurn {
			// Reported between turns (by hand): the answer it stands on is
			// the one already given.
			w.ReportAnswer = w.LastAnswer
		}
		c.touchLocked(r)
		// Until the report is on disk no one acts on it (keep.go).
		c.holdLocked(w)
		if !c.setStateLocked(w, api.Done) {
			w.Since = now
		}
		after, afterTasks := *w, keepTasks(r.Tasks)
		return func() {
			if reflect.DeepEqual(*w, after) {
				*w = old
			} else {
				// Changed since by what stands whatever the disk says (its
				// turn's end): only the report goes.
				w.Summary, w.ReportedAt, w.Reported, w.Told, w.Error = old.Summary, old.ReportedAt, old.Reported, old.Told, old.Error
				w.ReportAnswer = old.ReportAnswer
				if w.State == api.Done {
					w.State, w.Since = old.State, old.Since
				}
			}
			undoTasks(oldTasks, afterTasks)
		}, nil
	})
	if err != nil {
		return nil, err
	}
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	v := m.viewLocked(w)
	return &v, nil
}

// keepTasks copies the tasks of a run, by task, to undo a change of them
// (undoTasks).
func keepTasks(ts []*Task) map[*Task]Task {
	out := make(map[*Task]Task, len(ts))
	for _, t := range ts {
		out[t] = *t
	}
	return out
}

// undoTasks puts back the tasks a change moved from old to after, those
// that no change moved since (keep.go undoes the changes staged later
// first).
func undoTasks(old, after map[*Task]Task) {
	for t, o := range old {
		if a, ok := after[t]; ok && reflect.DeepEqual(*t, a) {
			*t = o
		}
	}
}

// reportedAgain begins a second report of one turn, after the first.
const reportedAgain = "Reported again: "

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// Wait blocks until every named worker (or every worker of the pane)
// has settled, or the timeout passes. Hook events wake it at once. A task
// of the caller's run that has no worker yet (waiting on its
// dependencies, or its worker starting) is waited for too: until its
// worker starts and settles, or until it can never start (a dependency
// failed or was cancelled), which ends the wait with that reason.
func (m *Manager) Wait(ctx context.Context, req api.WaitRequest) (*api.WaitResult, error) {
	ws, pend, err := m.waitFor(ctx, req)
	if err != nil {
		return nil, err
	}
	m.waits.Add(1)
	defer m.waits.Add(-1)
	var deadline <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		deadline = t.C
	}
	for {
		ch := m.reg.Changed()
		m.reg.mu.Lock()
		var all bool
		ws, pend, all = m.reg.waitSettledLocked(ws, pend)
		m.reg.mu.Unlock()
		if all {
			return m.waitResult(req.Pane, ws, pend, false), nil
		}
		select {
		case <-ch:
		case <-deadline:
			return m.waitResult(req.Pane, ws, pend, true), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// pendingTask is a task a wait is for that had no worker when looked at.
type pendingTask struct {
	run  *Run
	task *Task
}

// waitSettledLocked moves the pending tasks that have a worker now to the
// workers, and says whether everything waited for has settled: each worker
// settled, and each task still without a worker never to start.
func (reg *registry) waitSettledLocked(ws []*Worker, pend []pendingTask) ([]*Worker, []pendingTask, bool) {
	syncs.AssertLocked(&reg.mu)
	all := true
	var still []pendingTask
	for _, p := range pend {
		if w := reg.workers[p.task.Worker]; w != nil {
			ws = append(ws, w)
			continue
		}
		still = append(still, p)
		if taskPending(p.task) {
			all = false
		}
	}
	for _, w := range ws {
		// A report in flight could still be undone (keep.go).
		if !w.State.Settled() || reg.unsureLocked(w) {
			all = false
		}
	}
	return ws, still, all
}

// taskPending says whether task t may still get a worker: it waits on its
// dependencies, or its worker is starting.
func taskPending(t *Task) bool {
	return t.Worker == "" && (t.State == api.TaskWaiting || t.State == api.TaskRunning)
}

// waitFor finds the workers a wait is for, oldest first, and the tasks
// of the caller's run it names (or, with no ids, that the caller made)
// that have no worker yet.
func (m *Manager) waitFor(ctx context.Context, req api.WaitRequest) ([]*Worker, []pendingTask, error) {
	// Ids of workers on other machines name this machine's records of them.
	remote := map[string]string{}
	ids := append([]string(nil), req.IDs...)
	for i, id := range ids {
		if !api.IsRemote(id) {
			continue
		}
		rm, err := m.remote()
		if err != nil {
			return nil, nil, err
		}
		local, record, err := rm.Resolve(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		if local != "" { // it named this machine
			ids[i] = local
			continue
		}
		remote[id] = record
	}
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	var ws []*Worker
	var pend []pendingTask
	var err error
	if len(req.IDs) == 0 {
		ws, pend, err = m.reg.paneWaitLocked(req.Pane)
	} else {
		ws, pend, err = m.reg.namedWaitLocked(req.Pane, ids, remote)
	}
	if err != nil {
		return nil, nil, err
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].StartedAt.Before(ws[j].StartedAt) })
	return ws, pend, nil
}

// paneWaitLocked is what a wait with no ids is for: the pane's live workers
// and those whose report it has not seen, and the tasks it made that have
// no worker yet.
func (reg *registry) paneWaitLocked(pane string) ([]*Worker, []pendingTask, error) {
	syncs.AssertLocked(&reg.mu)
	if pane == "" {
		return nil, nil, errorf(api.KindUsage, "name the workers, or run it in the coordinator's pane", "st worker wait with no ids waits for this pane's workers, and there is no pane ($TMUX_PANE is empty)")
	}
	var ws []*Worker
	var pend []pendingTask
	for _, w := range reg.workers {
		if w.Parent == pane && (w.State.Live() || !w.Told) {
			ws = append(ws, w)
		}
	}
	if r := reg.paneRunLocked(pane, ""); r != nil {
		for _, t := range r.Tasks {
			if t.Parent == pane && taskPending(t) {
				pend = append(pend, pendingTask{r, t})
			}
		}
	}
	if len(ws) == 0 && len(pend) == 0 {
		return nil, nil, errorf(api.KindNotFound, "st worker start --agent AGENT --task FILE starts one", "pane %s has no workers to wait for", pane)
	}
	return ws, pend, nil
}

// namedWaitLocked resolves the ids of a wait: workers, here or (by their
// records) on other machines, and tasks of the caller's run that have no
// worker yet.
func (reg *registry) namedWaitLocked(pane string, ids []string, remote map[string]string) ([]*Worker, []pendingTask, error) {
	syncs.AssertLocked(&reg.mu)
	var ws []*Worker
	var pend []pendingTask
	for _, id := range ids {
		if record, ok := remote[id]; ok {
			w := reg.workers[record]
			if w == nil {
				return nil, nil, errorf(api.KindNotFound, "st worker list --all shows the workers this machine's runs have elsewhere",
					"%s is not a worker of any run on this machine (it may work for another machine)", id)
			}
			ws = append(ws, w)
			continue
		}
		// A task of the run named before its worker starts (or one that
		// never will) is the task, not an older worker of that name.
		if r := reg.paneRunLocked(pane, ""); r != nil {
			if t := runTask(r, id); t != nil && reg.workers[t.Worker] == nil {
				pend = append(pend, pendingTask{r, t})
				continue
			}
		}
		w, err := reg.resolveLocked(pane, id)
		if err != nil {
			return nil, nil, err
		}
		ws = append(ws, w)
	}
	return ws, pend, nil
}

// waitResult builds the answer and marks reports the caller has now seen.
// A task still without a worker is shown as a task: why it never started,
// or (past the timeout) what it waits on.
func (m *Manager) waitResult(caller string, ws []*Worker, pend []pendingTask, timedOut bool) *api.WaitResult {
	res := &api.WaitResult{TimedOut: timedOut}
	m.settleChange(func(c *change) {
		for _, w := range ws {
			c.markToldLocked(w, caller)
			res.Workers = append(res.Workers, m.viewLocked(w))
		}
		for _, p := range pend {
			res.Tasks = append(res.Tasks, m.taskViewLocked(p.run, p.task))
		}
	})
	return res
}

// Read returns a worker's record: its summary and last answer. A worker
// reports before its turn ends, so a read right after the report waits a
// few seconds for the turn's last answer.
func (m *Manager) Read(ctx context.Context, req api.IDRequest) (*api.WorkerView, error) {
	if api.IsRemote(req.ID) {
		return m.remoteOp(ctx, "read", req)
	}
	deadline := time.NewTimer(m.cfg.ReadWait)
	defer deadline.Stop()
	m.reg.mu.Lock()
	w, err := m.reg.resolveLocked(req.Pane, req.ID)
	m.reg.mu.Unlock()
	if err != nil {
		return nil, err
	}
	for waiting := true; waiting; {
		ch := m.reg.Changed()
		m.reg.mu.Lock()
		done := w.State == api.Done
		id := w.ID
		m.reg.mu.Unlock()
		if _, inTurn := m.facts.agentIn(id); !done || !inTurn {
			break
		}
		select {
		case <-ch:
		case <-deadline.C:
			waiting = false
		case <-ctx.Done():
			waiting = false
		}
	}
	var v api.WorkerView
	m.settleChange(func(c *change) {
		c.markToldLocked(w, req.Pane)
		v = m.viewLocked(w)
	})
	return &v, nil
}

// DefaultReadWait bounds how long st worker read waits for a reporting
// worker's turn to end.
const DefaultReadWait = 5 * time.Second
