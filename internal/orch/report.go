package orch

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/sophonz/st/internal/api"
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
		w = m.workers[req.Pane]
		if w == nil || (!w.State.Live() && w.State != api.Failed) {
			return nil, errorf(api.KindNotFound, "run st worker done in the pane of a worker that st started or adopted",
				"pane %s is not a worker of any run", orNone(req.Pane))
		}
		r := m.runOf[w.ID]
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
	m.mu.Lock()
	defer m.mu.Unlock()
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
// has settled, or the timeout passes. Hook events wake it at once.
func (m *Manager) Wait(ctx context.Context, req api.WaitRequest) (*api.WaitResult, error) {
	ws, err := m.waitFor(ctx, req)
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
		ch := m.Changed()
		m.mu.Lock()
		all := true
		for _, w := range ws {
			// A report in flight could still be undone (keep.go).
			if !w.State.Settled() || m.unsureLocked(w) {
				all = false
			}
		}
		m.mu.Unlock()
		if all {
			return m.waitResult(req.Pane, ws, false), nil
		}
		select {
		case <-ch:
		case <-deadline:
			return m.waitResult(req.Pane, ws, true), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// waitFor finds the workers a wait is for, oldest first.
func (m *Manager) waitFor(ctx context.Context, req api.WaitRequest) ([]*Worker, error) {
	// Ids of workers on other machines name this machine's records of them.
	remote := map[string]string{}
	ids := append([]string(nil), req.IDs...)
	for i, id := range ids {
		if !api.IsRemote(id) {
			continue
		}
		rm, err := m.remote()
		if err != nil {
			return nil, err
		}
		local, record, err := rm.Resolve(ctx, id)
		if err != nil {
			return nil, err
		}
		if local != "" { // it named this machine
			ids[i] = local
			continue
		}
		remote[id] = record
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var ws []*Worker
	if len(req.IDs) == 0 {
		if req.Pane == "" {
			return nil, errorf(api.KindUsage, "name the workers, or run it in the coordinator's pane", "st worker wait with no ids waits for this pane's workers, and there is no pane ($TMUX_PANE is empty)")
		}
		for _, w := range m.workers {
			if w.Parent == req.Pane && (w.State.Live() || !w.Told) {
				ws = append(ws, w)
			}
		}
		if len(ws) == 0 {
			return nil, errorf(api.KindNotFound, "st worker start --agent AGENT --task FILE starts one", "pane %s has no workers to wait for", req.Pane)
		}
	} else {
		for _, id := range ids {
			if record, ok := remote[id]; ok {
				w := m.workers[record]
				if w == nil {
					return nil, errorf(api.KindNotFound, "st worker list --all shows the workers this machine's runs have elsewhere",
						"%s is not a worker of any run on this machine (it may work for another machine)", id)
				}
				ws = append(ws, w)
				continue
			}
			w, err := m.resolveLocked(req.Pane, id)
			if err != nil {
				return nil, err
			}
			ws = append(ws, w)
		}
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].StartedAt.Before(ws[j].StartedAt) })
	return ws, nil
}

// waitResult builds the answer and marks reports the caller has now seen.
func (m *Manager) waitResult(caller string, ws []*Worker, timedOut bool) *api.WaitResult {
	res := &api.WaitResult{TimedOut: timedOut}
	m.settleChange(func(c *change) {
		for _, w := range ws {
			c.markToldLocked(w, caller)
			res.Workers = append(res.Workers, m.viewLocked(w))
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
	m.mu.Lock()
	w, err := m.resolveLocked(req.Pane, req.ID)
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	for waiting := true; waiting; {
		ch := m.Changed()
		m.mu.Lock()
		done := w.State == api.Done
		id := w.ID
		m.mu.Unlock()
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
