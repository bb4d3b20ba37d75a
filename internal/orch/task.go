package orch

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/syncs"
)

// CreateTask keeps a named task in the calling pane's run. A task with
// nothing left to wait for starts its worker at once (and CreateTask
// returns once that worker's turn started); one that waits starts the
// moment its last dependency is reported done.
func (m *Manager) CreateTask(ctx context.Context, req api.TaskRequest) (*api.TaskView, error) {
	if err := checkTask(req); err != nil {
		return nil, err
	}
	p, err := m.callerPane(ctx, req.Pane)
	if err != nil {
		return nil, err
	}
	var r *Run
	var t *Task
	var created, startNow bool
	err = m.keep(func(c *change) (func(), error) {
		var err error
		if r, _, created, err = m.reg.placementLocked(p, nil); err != nil {
			return nil, err
		}
		if t, err = m.reg.addTaskLocked(r, req, p.ID); err != nil {
			if created {
				m.reg.dropRunLocked(r)
			}
			return nil, err
		}
		// Started here only when it waits on nothing now: one that
		// waits is started by the report it waits for, which may come
		// while this write is under way.
		startNow = t.State == api.TaskRunning
		// The run (when made for it) and the task: one write.
		c.touchLocked(r)
		return func() {
			for i, x := range r.Tasks {
				if x == t {
					r.Tasks = append(r.Tasks[:i:i], r.Tasks[i+1:]...)
					break
				}
			}
			if created {
				m.reg.dropRunLocked(r)
			}
		}, nil
	})
	if err != nil {
		return nil, err
	}
	if created {
		m.markCoordinator(ctx, p.ID, r.ID)
	}
	if startNow {
		if err := m.startTask(ctx, r, t); err != nil {
			return nil, err
		}
	}
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	v := m.taskViewLocked(r, t)
	return &v, nil
}

// checkTask checks what a task asks for, before it is placed.
func checkTask(req api.TaskRequest) error {
	if req.Machine != "" {
		return errorf(api.KindRemote, "start that part with st worker start --machine "+req.Machine+" and wait for it before what depends on it",
			"refused: ordered tasks cannot run on other machines yet")
	}
	if err := CheckName("the task name", req.Name, "st task create api-tests ..."); err != nil {
		return err
	}
	if _, err := agent.Lookup(req.Agent); err != nil {
		return errorf(api.KindUsage, "--agent "+strings.Join(agent.Kinds(), "|"), "%v", err)
	}
	if err := checkCwd(req.Cwd); err != nil {
		return err
	}
	if !filepath.IsAbs(req.File) {
		return errorf(api.KindUsage, "give the task file's path", "the task file must be an absolute path, not %q", req.File)
	}
	if err := checkTaskFile(req.File); err != nil {
		return err
	}
	return nil
}

// addTaskLocked adds the task req asks for to run r, running when it waits on
// nothing (its start is the caller's).
func (reg *registry) addTaskLocked(r *Run, req api.TaskRequest, parent string) (*Task, error) {
	syncs.AssertLocked(&reg.mu)
	if runTask(r, req.Name) != nil {
		return nil, errorf(api.KindConflict, "pick another name; st task list shows the run's tasks", "run %s already has a task named %q", r.ID, req.Name)
	}
	if err := reg.nameFreeLocked(r, nil, req.Name); err != nil {
		return nil, err
	}
	waitOn, err := reg.checkDepsLocked(r, req.Name, req.Deps)
	if err != nil {
		return nil, err
	}
	now := reg.now()
	t := &Task{Name: req.Name, File: req.File, Agent: req.Agent, Deps: dedupe(req.Deps), Owns: req.Owns, Worktree: req.Worktree,
		Cwd: req.Cwd, Parent: parent, State: api.TaskRunning, Since: now, Created: now, Env: req.Env,
		BlockedTimeout: req.BlockedTimeout, HookTimeout: req.HookTimeout}
	if len(waitOn) > 0 {
		t.State, t.Reason = api.TaskWaiting, "waiting on "+strings.Join(waitOn, ", ")
	}
	r.Tasks = append(r.Tasks, t)
	return t, nil
}

// checkDepsLocked checks a new task's dependencies in run r, and returns those
// it waits on.
func (reg *registry) checkDepsLocked(r *Run, name string, deps []string) ([]string, error) {
	syncs.AssertLocked(&reg.mu)
	var waitOn []string
	seen := map[string]bool{}
	for _, d := range deps {
		d = strings.TrimSpace(d)
		if d == "" || seen[d] {
			continue
		}
		seen[d] = true
		if d == name {
			return nil, errorf(api.KindUsage, "leave "+d+" out of --deps", "refused: task %q would wait on itself (a cycle)", d)
		}
		dt := runTask(r, d)
		if dt == nil {
			return nil, errorf(api.KindNotFound, "create "+d+" first (tasks can only wait on tasks that exist), or check the name with st task list",
				"refused: task %q depends on %q, which run %s does not have", name, d, r.ID)
		}
		switch dt.State {
		case api.TaskFailed, api.TaskCancelled:
			return nil, errorf(api.KindConflict, "create the dependency again under a new name, or leave it out",
				"refused: task %q depends on %q, which %s, so it could never start", name, d, pastTense(dt.State))
		case api.TaskDone:
		default:
			waitOn = append(waitOn, d)
		}
	}
	if cyc := reg.cycleLocked(r, name, deps); cyc != "" {
		return nil, errorf(api.KindUsage, "remove one of the dependencies", "refused: the dependencies form a cycle: %s", cyc)
	}
	return waitOn, nil
}

func pastTense(s api.TaskState) string {
	if s == api.TaskCancelled {
		return "was cancelled"
	}
	return "failed"
}

func dedupe(ss []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range ss {
		s = strings.TrimSpace(s)
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// cycleLocked returns a spelled-out cycle that adding name with deps would
// make, or "".
func (reg *registry) cycleLocked(r *Run, name string, deps []string) string {
	syncs.AssertLocked(&reg.mu)
	graph := map[string][]string{name: dedupe(deps)}
	for _, t := range r.Tasks {
		if t.Name != name {
			graph[t.Name] = t.Deps
		}
	}
	var path []string
	state := map[string]int{} // 1 on the path, 2 finished
	var visit func(n string) string
	visit = func(n string) string {
		switch state[n] {
		case 1:
			i := 0
			for path[i] != n {
				i++
			}
			return strings.Join(append(append([]string{}, path[i:]...), n), " → ")
		case 2:
			return ""
		}
		state[n] = 1
		path = append(path, n)
		for _, d := range graph[n] {
			if c := visit(d); c != "" {
				return c
			}
		}
		path = path[:len(path)-1]
		state[n] = 2
		return ""
	}
	return visit(name)
}

// startTask starts the worker of a task that is ready. A start that
// fails fails the task, and the tasks that wait on it.
func (m *Manager) startTask(ctx context.Context, r *Run, t *Task) error {
	m.logf("task %s of run %s: starting its worker", t.Name, r.ID)
	v, err := m.startWorker(ctx, startPlan{StartRequest: t.startRequest(), run: r})
	m.settleChange(func(c *change) {
		c.touchLocked(r)
		t.Since = m.cfg.Now()
		if err != nil {
			t.State = api.TaskFailed
			// One line: st task list shows it in a table. (The error's hint,
			// on a line of its own, is the answer of st task create.)
			msg := err.Error()
			var oe *api.Error
			if errors.As(err, &oe) {
				msg = oe.Message
			}
			t.Reason = "its worker did not start: " + msg
			c.scheduleLocked(r)
			return
		}
		t.Worker = v.ID
		// The worker may have reported already (a very quick one).
		if w := m.reg.workers[v.ID]; w != nil {
			c.followTaskLocked(w)
		}
	})
	return err
}

// startRequest is the start of the task's worker: what st worker start
// would have asked for, had the task's creator run it.
func (t *Task) startRequest() api.StartRequest {
	return api.StartRequest{Pane: t.Parent, Agent: t.Agent, Task: t.File, Name: t.Name, Cwd: t.Cwd, Env: t.Env,
		Owns: t.Owns, Worktree: t.Worktree, BlockedTimeout: t.BlockedTimeout, HookTimeout: t.HookTimeout}
}

func (m *Manager) taskViewLocked(r *Run, t *Task) api.TaskView {
	syncs.AssertLocked(&m.reg.mu)
	v := api.TaskView{Task: t.wire(), Run: r.ID, For: roundDur(m.cfg.Now().Sub(t.Since))}
	v.Env = nil
	if w := m.reg.workers[t.Worker]; w != nil {
		v.WorkerName = w.Name
	}
	return v
}

// ListTasks returns the tasks of the calling pane's run.
func (m *Manager) ListTasks(ctx context.Context, req api.IDRequest) ([]api.TaskView, error) {
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	r := m.reg.paneRunLocked(req.Pane, req.ID)
	if r == nil {
		return nil, errorf(api.KindNotFound, "st task create NAME --task FILE --agent A makes one", "this pane has no run, so no tasks")
	}
	out := []api.TaskView{}
	for _, t := range r.Tasks {
		out = append(out, m.taskViewLocked(r, t))
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, nil
}

// CancelTask cancels a task that has not finished. A running task's
// worker goes on; st worker stop closes it.
func (m *Manager) CancelTask(ctx context.Context, req api.IDRequest) (*api.TaskView, error) {
	var r *Run
	var t *Task
	err := m.keep(func(c *change) (func(), error) {
		r = m.reg.paneRunLocked(req.Pane, "")
		t = nil
		if r != nil {
			t = runTask(r, req.ID)
		}
		if t == nil {
			return nil, errorf(api.KindNotFound, "st task list shows this run's tasks", "there is no task %q in this pane's run", req.ID)
		}
		switch t.State {
		case api.TaskDone, api.TaskFailed, api.TaskCancelled:
			return nil, errorf(api.KindConflict, "", "task %q is already %s", t.Name, t.State)
		}
		old := keepTasks(r.Tasks)
		t.State, t.Since = api.TaskCancelled, m.cfg.Now()
		if t.Worker != "" {
			t.Reason = "cancelled; its worker " + t.Worker + " goes on (st worker stop " + t.Worker + " --yes closes it)"
		} else {
			t.Reason = "cancelled before it started"
		}
		c.touchLocked(r)
		c.scheduleLocked(r)
		after := keepTasks(r.Tasks)
		return func() { undoTasks(old, after) }, nil
	})
	if err != nil {
		return nil, err
	}
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	v := m.taskViewLocked(r, t)
	return &v, nil
}

// followTaskLocked moves the task of worker w along with w's state, and
// starts what that makes ready.
func (c *change) followTaskLocked(w *Worker) {
	syncs.AssertLocked(&c.m.reg.mu)
	m := c.m
	r := m.reg.runOf[w.ID]
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
		c.touchLocked(r)
		c.scheduleLocked(r)
	}
}

// scheduleLocked starts every waiting task of r whose dependencies are
// all done (once the change is on disk), and fails those whose
// dependency failed or was cancelled.
func (c *change) scheduleLocked(r *Run) {
	syncs.AssertLocked(&c.m.reg.mu)
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
				c.touchLocked(r)
			case len(waitOn) == 0 && c.m.budgetHeldLocked(r) != "":
				t.Reason = "held: the run's budget is spent (gate " + r.BudgetGate + ")"
			case len(waitOn) == 0:
				t.State, t.Reason, t.Since = api.TaskRunning, "", now
				c.touchLocked(r)
				c.starts = append(c.starts, taskStart{r, t})
			default:
				t.Reason = "waiting on " + strings.Join(waitOn, ", ")
			}
		}
	}
}
