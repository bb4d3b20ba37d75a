package orch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sophonz/st/internal/agent"
)

// CreateTask keeps a named task in the calling pane's run. A task with
// nothing left to wait for starts its worker at once (and CreateTask
// returns once that worker's turn started); one that waits starts the
// moment its last dependency is reported done.
func (m *Manager) CreateTask(ctx context.Context, req TaskRequest) (*TaskView, error) {
	if req.Machine != "" {
		return nil, errorf(KindRemote, "start that part with st worker start --machine "+req.Machine+" and wait for it before what depends on it",
			"refused: ordered tasks cannot run on other machines yet")
	}
	if !ValidName(req.Name) {
		return nil, errorf(KindUsage, "use letters, digits, '.', '_' and '-' (at most 40), e.g. st task create api-tests ...",
			"the task name %q has characters that tmux or a shell would misread", req.Name)
	}
	if _, err := agent.Lookup(req.Agent); err != nil {
		return nil, errorf(KindUsage, "--agent "+strings.Join(agent.Kinds(), "|"), "%v", err)
	}
	if fi, err := os.Stat(req.File); err != nil || fi.IsDir() || !filepath.IsAbs(req.File) {
		return nil, errorf(KindUsage, "write the task into a file and pass its path with --task", "cannot read the task file %s: %v", req.File, errNotFile(err))
	}
	p, err := m.callerPane(ctx, req.Pane)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	r, _, created, err := m.placement(p)
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	drop := func() {
		if created {
			delete(m.runs, r.ID)
		}
	}
	if runTask(r, req.Name) != nil {
		drop()
		m.mu.Unlock()
		return nil, errorf(KindConflict, "pick another name; st task list shows the run's tasks", "run %s already has a task named %q", r.ID, req.Name)
	}
	for _, w := range r.Workers {
		if w.Name == req.Name && w.State.Live() {
			drop()
			m.mu.Unlock()
			return nil, errorf(KindConflict, "pick another name", "run %s already has a worker named %q", r.ID, req.Name)
		}
	}
	var waitOn []string
	seen := map[string]bool{}
	for _, d := range req.Deps {
		d = strings.TrimSpace(d)
		if d == "" || seen[d] {
			continue
		}
		seen[d] = true
		if d == req.Name {
			drop()
			m.mu.Unlock()
			return nil, errorf(KindUsage, "leave "+d+" out of --deps", "refused: task %q would wait on itself (a cycle)", d)
		}
		dt := runTask(r, d)
		if dt == nil {
			drop()
			m.mu.Unlock()
			return nil, errorf(KindNotFound, "create "+d+" first (tasks can only wait on tasks that exist), or check the name with st task list",
				"refused: task %q depends on %q, which run %s does not have", req.Name, d, r.ID)
		}
		switch dt.State {
		case TaskFailed, TaskCancelled:
			drop()
			m.mu.Unlock()
			return nil, errorf(KindConflict, "create the dependency again under a new name, or leave it out",
				"refused: task %q depends on %q, which %s, so it could never start", req.Name, d, pastTense(dt.State))
		case TaskDone:
		default:
			waitOn = append(waitOn, d)
		}
	}
	if cyc := m.cycle(r, req.Name, req.Deps); cyc != "" {
		drop()
		m.mu.Unlock()
		return nil, errorf(KindUsage, "remove one of the dependencies", "refused: the dependencies form a cycle: %s", cyc)
	}
	now := m.cfg.Now()
	t := &Task{Name: req.Name, File: req.File, Agent: req.Agent, Deps: dedupe(req.Deps), Owns: req.Owns, Worktree: req.Worktree,
		Cwd: req.Cwd, Parent: p.ID, State: TaskWaiting, Since: now, Created: now, Env: req.Env}
	if len(waitOn) > 0 {
		t.Reason = "waiting on " + strings.Join(waitOn, ", ")
	}
	r.Tasks = append(r.Tasks, t)
	if err := m.save(r); err != nil {
		r.Tasks = r.Tasks[:len(r.Tasks)-1]
		drop()
		m.mu.Unlock()
		return nil, err
	}
	if created {
		go m.markCoordinator(p.ID, r.ID)
	}
	ready := len(waitOn) == 0
	if ready {
		t.State = TaskRunning
		t.Reason = ""
	}
	m.notify()
	m.mu.Unlock()
	if ready {
		if err := m.startTask(ctx, r, t); err != nil {
			return nil, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	v := m.taskView(r, t)
	return &v, nil
}

func (m *Manager) markCoordinator(pane, run string) {
	ctx := context.Background()
	m.cfg.Tmux.SetOption(ctx, pane, "@st_run", run)
	m.cfg.Tmux.SetOption(ctx, pane, "@st_role", "coordinator")
}

func pastTense(s TaskState) string {
	if s == TaskCancelled {
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

// cycle returns a spelled-out cycle that adding name with deps would
// make, or "". Called with m.mu held.
func (m *Manager) cycle(r *Run, name string, deps []string) string {
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

// startTask starts the worker of a task that is ready.
func (m *Manager) startTask(ctx context.Context, r *Run, t *Task) error {
	m.logf("task %s of run %s: starting its worker", t.Name, r.ID)
	v, err := m.startWorker(ctx, startPlan{StartRequest: StartRequest{
		Pane: t.Parent, Agent: t.Agent, Task: t.File, Name: t.Name, Cwd: t.Cwd, Env: t.Env,
		Owns: t.Owns, Worktree: t.Worktree,
	}, run: r})
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		t.State = TaskFailed
		t.Since = m.cfg.Now()
		t.Reason = "its worker did not start: " + err.Error()
		m.save(r)
		m.notify()
		m.schedule()
		return err
	}
	t.Worker = v.ID
	t.Since = m.cfg.Now()
	// The worker may have reported already (a very quick one).
	if w := m.workers[v.ID]; w != nil {
		m.followTask(w)
	}
	m.save(r)
	m.notify()
	return nil
}

// followTask moves the task of worker w along with w's state. Called with
// m.mu held; the caller saves.
func (m *Manager) followTask(w *Worker) {
	r := m.runOf[w.ID]
	if r == nil {
		return
	}
	for _, t := range r.Tasks {
		if t.Worker != w.ID || t.State != TaskRunning {
			continue
		}
		switch w.State {
		case Done:
			t.State, t.Reason = TaskDone, ""
		case Failed:
			t.State, t.Reason = TaskFailed, "its worker "+w.ID+" failed: "+w.Error
		case Gone:
			t.State, t.Reason = TaskFailed, "its worker "+w.ID+" is gone (its pane closed) before it reported"
		default:
			continue
		}
		t.Since = m.cfg.Now()
		m.schedule()
	}
}

// schedule starts every waiting task whose dependencies are all done, and
// fails those whose dependency failed or was cancelled. Called with m.mu
// held; the starts run in the background.
func (m *Manager) schedule() {
	for _, r := range m.runs {
		var start []*Task
		dirty := false
		changed := true
		for changed {
			changed = false
			for _, t := range r.Tasks {
				if t.State != TaskWaiting {
					continue
				}
				var waitOn []string
				blocked := ""
				for _, d := range t.Deps {
					dt := runTask(r, d)
					switch {
					case dt == nil:
						blocked = fmt.Sprintf("its dependency %s no longer exists", d)
					case dt.State == TaskFailed || dt.State == TaskCancelled:
						blocked = fmt.Sprintf("its dependency %s %s", d, pastTense(dt.State))
					case dt.State != TaskDone:
						waitOn = append(waitOn, d)
					}
				}
				switch {
				case blocked != "":
					t.State, t.Reason, t.Since = TaskFailed, "did not start: "+blocked, m.cfg.Now()
					changed, dirty = true, true
				case len(waitOn) == 0:
					t.State, t.Reason, t.Since = TaskRunning, "", m.cfg.Now()
					dirty = true
					start = append(start, t)
				default:
					t.Reason = "waiting on " + strings.Join(waitOn, ", ")
				}
			}
		}
		// One write for all that changed; then the starts, all at once.
		if dirty {
			m.save(r)
		}
		for _, t := range start {
			go m.startTask(m.bg, r, t)
		}
	}
	m.notify()
}

func (m *Manager) taskView(r *Run, t *Task) TaskView {
	v := TaskView{Task: *t, Run: r.ID, For: roundDur(m.cfg.Now().Sub(t.Since))}
	v.Env = nil
	if w := m.workers[t.Worker]; w != nil {
		v.WorkerName = w.Name
	}
	return v
}

// ListTasks returns the tasks of the calling pane's run.
func (m *Manager) ListTasks(ctx context.Context, req IDRequest) ([]TaskView, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.paneRun(req.Pane, req.ID)
	if r == nil {
		return nil, errorf(KindNotFound, "st task create NAME --task FILE --agent A makes one", "this pane has no run, so no tasks")
	}
	out := []TaskView{}
	for _, t := range r.Tasks {
		out = append(out, m.taskView(r, t))
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, nil
}

// paneRun is the run a pane coordinates or works in, or the run by id.
// Called with m.mu held.
func (m *Manager) paneRun(pane, id string) *Run {
	if id != "" {
		return m.runs[id]
	}
	if r := m.currentRun(pane); r != nil {
		return r
	}
	return m.runOf[pane]
}

// CancelTask cancels a task that has not finished. A running task's
// worker goes on; st worker stop closes it.
func (m *Manager) CancelTask(ctx context.Context, req IDRequest) (*TaskView, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.paneRun(req.Pane, "")
	var t *Task
	if r != nil {
		t = runTask(r, req.ID)
	}
	if t == nil {
		return nil, errorf(KindNotFound, "st task list shows this run's tasks", "there is no task %q in this pane's run", req.ID)
	}
	switch t.State {
	case TaskDone, TaskFailed, TaskCancelled:
		return nil, errorf(KindConflict, "", "task %q is already %s", t.Name, t.State)
	}
	t.State, t.Since = TaskCancelled, m.cfg.Now()
	if t.Worker != "" {
		t.Reason = "cancelled; its worker " + t.Worker + " goes on (st worker stop " + t.Worker + " --yes closes it)"
	} else {
		t.Reason = "cancelled before it started"
	}
	if err := m.save(r); err != nil {
		return nil, err
	}
	m.schedule()
	v := m.taskView(r, t)
	return &v, nil
}
