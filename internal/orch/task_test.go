package orch

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/testutil"
)

// Tasks on the fake tmux server: a task whose worker would start fails
// its start before any tmux command (its task file is gone, or was never
// there), so the schedule can be followed to its end without a server.

// createTask makes a task from the coordinator's pane, for the sim agent.
func (h *harness) createTask(name string, deps ...string) (*api.TaskView, error) {
	return h.m.CreateTask(context.Background(), api.TaskRequest{Pane: coord, Name: name, File: h.taskFile(name), Agent: "sim", Deps: deps})
}

// createWaitingTask makes a task that waits, then takes its file away, so
// that its start, once it is ready, fails at its first check.
func (h *harness) createWaitingTask(name string, deps ...string) api.TaskView {
	h.t.Helper()
	v, err := h.createTask(name, deps...)
	if err != nil {
		h.t.Fatalf("create task %s: %v", name, err)
	}
	if v.State != api.TaskWaiting {
		h.t.Fatalf("task %s is %s, want waiting", name, v.State)
	}
	if err := os.Remove(v.File); err != nil {
		h.t.Fatal(err)
	}
	return *v
}

// noFileReason is why a task whose file is gone did not start.
func noFileReason(v api.TaskView) string {
	return "its worker did not start: cannot read the task file " + v.File + ": no such file"
}

func TestTaskScheduleFollowsItsDependencies(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	h.addTasks(&Task{Name: "a", State: api.TaskRunning, Worker: workerID})
	b := h.createWaitingTask("b", "a")
	if b.Reason != "waiting on a" {
		t.Errorf("b: %q, want waiting on a", b.Reason)
	}
	c := h.createWaitingTask("c", "b")
	if c.Reason != "waiting on b" {
		t.Errorf("c: %q, want waiting on b", c.Reason)
	}
	h.wantTask("b", api.TaskWaiting, "waiting on a")

	// a's worker reports: a is done, b is ready and its start is tried
	// (and fails, its file being gone); c, which waits on b, cannot start.
	if _, err := h.m.Done(context.Background(), api.DoneRequest{Pane: workerID, Summary: "did a"}); err != nil {
		t.Fatal(err)
	}
	h.wantTask("a", api.TaskDone, "")
	h.waitTask("b", api.TaskFailed)
	h.wantTask("b", api.TaskFailed, noFileReason(b))
	h.waitTask("c", api.TaskFailed)
	h.wantTask("c", api.TaskFailed, "did not start: its dependency b failed")
	if got := h.tasks()["b"].Worker; got != "" {
		t.Errorf("b has worker %q after a start that failed", got)
	}
}

// A task's worker that ends without a report fails the task, and with it
// every task that waits on it.
func TestTaskFollowsItsWorker(t *testing.T) {
	tests := []struct {
		name   string
		end    func(h *harness)
		state  api.TaskState
		reason string
	}{
		{"done", func(h *harness) {
			if _, err := h.m.Done(context.Background(), api.DoneRequest{Pane: workerID, Summary: "did a"}); err != nil {
				h.t.Fatal(err)
			}
		}, api.TaskDone, ""},
		{"failed", func(h *harness) {
			// What a start that did not take does (deliverTask).
			h.m.settleChange(func(c *change) {
				w := h.m.reg.workers[workerID]
				w.Error = "its agent exited"
				c.setStateLocked(w, api.Failed)
			})
		}, api.TaskFailed, "its worker " + workerID + " failed: its agent exited"},
		{"gone", func(h *harness) {
			h.closePane(workerID)
			h.m.reconcile(context.Background())
		}, api.TaskFailed, "its worker " + workerID + " is gone (its pane closed) before it reported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, api.Working, nil)
			h.addTasks(&Task{Name: "a", State: api.TaskRunning, Worker: workerID},
				&Task{Name: "other", State: api.TaskRunning, Worker: "%44"})
			b := h.createWaitingTask("b", "a")
			tt.end(h)
			h.wantTask("a", tt.state, tt.reason)
			if tt.state == api.TaskFailed {
				h.wantTask("b", api.TaskFailed, "did not start: its dependency a failed")
			} else {
				h.waitTask("b", api.TaskFailed)
				h.wantTask("b", api.TaskFailed, noFileReason(b))
			}
			// A task of another worker is left alone.
			h.wantTask("other", api.TaskRunning, "")
		})
	}
}

// d waits on b2 and c2: it starts once both are done, and once.
func TestTaskDiamondStartsOnceBothAreDone(t *testing.T) {
	h := newHarness(t, api.Done, nil)
	log := h.captureLog()
	h.addWorker(localWorker("%3", "b2", api.Working))
	h.addWorker(localWorker("%4", "c2", api.Working))
	h.addTasks(&Task{Name: "a", State: api.TaskDone, Worker: workerID},
		&Task{Name: "b2", Deps: []string{"a"}, State: api.TaskRunning, Worker: "%3"},
		&Task{Name: "c2", Deps: []string{"a"}, State: api.TaskRunning, Worker: "%4"})
	d := h.createWaitingTask("d", "b2", "c2")
	if d.Reason != "waiting on b2, c2" {
		t.Errorf("d: %q", d.Reason)
	}
	const started = "task d of run " + testRun + ": starting its worker"

	if _, err := h.m.Done(context.Background(), api.DoneRequest{Pane: "%3", Summary: "did b2"}); err != nil {
		t.Fatal(err)
	}
	h.wantTask("b2", api.TaskDone, "")
	h.wantTask("d", api.TaskWaiting, "waiting on c2")
	if n := log.count(started); n != 0 {
		t.Fatalf("d started %d times with c2 still running", n)
	}

	if _, err := h.m.Done(context.Background(), api.DoneRequest{Pane: "%4", Summary: "did c2"}); err != nil {
		t.Fatal(err)
	}
	h.wantTask("c2", api.TaskDone, "")
	h.waitTask("d", api.TaskFailed)
	h.wantTask("d", api.TaskFailed, noFileReason(d))
	if n := log.count(started); n != 1 {
		t.Errorf("d's start was tried %d times, want once", n)
	}
	// A report again of a worker already done moves nothing.
	if _, err := h.m.Done(context.Background(), api.DoneRequest{Pane: "%3", Summary: "did b2 again"}); err != nil {
		t.Fatal(err)
	}
	if n := log.count(started); n != 1 {
		t.Errorf("d's start was tried %d times after a second report of b2, want once", n)
	}
}

func TestCreateTaskRefusals(t *testing.T) {
	tests := []struct {
		name string
		pane string // who creates it (the shell has no run: one is made for it)
		task string
		deps []string
		kind string
		msg  string
	}{
		{"unknown dependency", coord, "x", []string{"nosuch"}, api.KindNotFound, `depends on "nosuch", which run ` + testRun + ` does not have`},
		{"unknown dependency from a pane with no run", shell, "x", []string{"nosuch"}, api.KindNotFound, `depends on "nosuch"`},
		{"itself", coord, "x", []string{"x"}, api.KindUsage, `task "x" would wait on itself`},
		{"itself from a pane with no run", shell, "x", []string{"x"}, api.KindUsage, "would wait on itself"},
		{"a cycle", coord, "q", []string{"p"}, api.KindUsage, "the dependencies form a cycle: q → p → q"},
		{"a failed dependency", coord, "x", []string{"f"}, api.KindConflict, `depends on "f", which failed, so it could never start`},
		{"a cancelled dependency", coord, "x", []string{"k"}, api.KindConflict, `depends on "k", which was cancelled`},
		{"a name taken", coord, "p", nil, api.KindConflict, `already has a task named "p"`},
		{"a bad name", coord, "x y", nil, api.KindUsage, "characters that tmux or a shell would misread"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, api.Working, nil)
			// p waits on q, which a run.json edited by hand lost: a new q
			// depending on p would close a cycle.
			h.addTasks(&Task{Name: "p", Deps: []string{"q"}, State: api.TaskWaiting, Reason: "waiting on q"},
				&Task{Name: "f", State: api.TaskFailed, Reason: "its worker %7 failed"},
				&Task{Name: "k", State: api.TaskCancelled, Reason: "cancelled before it started"})
			before, err := os.ReadFile(filepath.Join(h.home, "orch", testRun, "run.json"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = h.m.CreateTask(context.Background(), api.TaskRequest{Pane: tt.pane, Name: tt.task, File: h.taskFile("t"), Agent: "sim", Deps: tt.deps})
			wantKind(t, err, tt.kind)
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("refusal %q, want it to say %q", err, tt.msg)
			}
			if len(h.tasks()) != 3 {
				t.Errorf("tasks after a refusal: %v", h.tasks())
			}
			after, _ := os.ReadFile(filepath.Join(h.home, "orch", testRun, "run.json"))
			if string(after) != string(before) {
				t.Error("a refused task changed run.json")
			}
			// No run is left for the pane that had none: not in memory,
			// not on disk, not on its pane.
			if s := h.m.Status(); s.Runs != 1 {
				t.Errorf("%d runs after a refusal, want 1", s.Runs)
			}
			h.m.reg.saver.writeAll(true, true) // anything still staged would be written now
			dirs, _ := os.ReadDir(filepath.Join(h.home, "orch"))
			if len(dirs) != 1 || dirs[0].Name() != testRun {
				t.Errorf("run folders after a refusal: %v", dirs)
			}
			if got := h.tm.Option(shell, "@st_run"); got != "" {
				t.Errorf("the shell pane was made a coordinator (@st_run %q)", got)
			}
		})
	}
}

// A task whose run had to be made for it, and that could not be written,
// leaves nothing behind: not the run, and not a run.json once the disk
// mends.
func TestCreateTaskUnwrittenLeavesNoRun(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	h.breakSaves()
	_, err := h.m.CreateTask(context.Background(), api.TaskRequest{Pane: shell, Name: "x", File: h.taskFile("x"), Agent: "sim"})
	wantKind(t, err, api.KindInternal)
	if s := h.m.Status(); s.Runs != 1 {
		t.Errorf("%d runs after a task that could not be kept, want 1", s.Runs)
	}
	h.fixSaves()
	h.m.reg.saver.writeAll(true, true) // the retry, now
	dirs, _ := os.ReadDir(filepath.Join(h.home, "orch"))
	if len(dirs) != 1 || dirs[0].Name() != testRun {
		t.Errorf("run folders once the disk mended: %v", dirs)
	}
	if _, err := h.m.ListTasks(context.Background(), api.IDRequest{Pane: shell}); err == nil {
		t.Error("the shell pane has a run with tasks")
	}
}

// A task that waits on nothing starts at once; a start that fails is the
// answer of st task create, and the task says why.
func TestCreateTaskStartsAtOnce(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	_, err := h.m.CreateTask(context.Background(), api.TaskRequest{Pane: coord, Name: "now", File: h.taskFile("now"), Agent: "sim",
		Cwd: filepath.Join(h.home, "no-such-folder")})
	wantKind(t, err, api.KindUsage)
	h.wantTask("now", api.TaskFailed, "its worker did not start: the worker's folder "+filepath.Join(h.home, "no-such-folder")+" does not exist")
}

func TestCancelTaskFailsItsDependents(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	h.addTasks(&Task{Name: "a", State: api.TaskRunning, Worker: workerID})
	h.createWaitingTask("x", "a")
	h.createWaitingTask("y", "x")
	h.createWaitingTask("z", "a")
	v, err := h.m.CancelTask(context.Background(), api.IDRequest{Pane: coord, ID: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if v.State != api.TaskCancelled {
		t.Errorf("CancelTask = %+v", v)
	}
	h.wantTask("x", api.TaskCancelled, "cancelled before it started")
	h.wantTask("y", api.TaskFailed, "did not start: its dependency x was cancelled")
	h.wantTask("z", api.TaskWaiting, "waiting on a")

	// A running task's worker goes on; cancelling again is refused.
	v, err = h.m.CancelTask(context.Background(), api.IDRequest{Pane: coord, ID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	goesOn := "cancelled; its worker " + workerID + " goes on (st worker stop " + workerID + " --yes closes it)"
	if v.Name != "a" || v.State != api.TaskCancelled || v.Reason != goesOn {
		t.Errorf("CancelTask of a running task answered %+v, want a cancelled, %q (what st task cancel prints)", v, goesOn)
	}
	h.wantTask("a", api.TaskCancelled, goesOn)
	h.wantTask("z", api.TaskFailed, "did not start: its dependency a was cancelled")
	if w := h.worker(); w.State != api.Working {
		t.Errorf("the cancelled task's worker is %s, want working", w.State)
	}
	_, err = h.m.CancelTask(context.Background(), api.IDRequest{Pane: coord, ID: "a"})
	wantKind(t, err, api.KindConflict)
	_, err = h.m.CancelTask(context.Background(), api.IDRequest{Pane: coord, ID: "nosuch"})
	wantKind(t, err, api.KindNotFound)
	// The worker reports after all: its task stays cancelled.
	if _, err := h.m.Done(context.Background(), api.DoneRequest{Pane: workerID, Summary: "did a anyway"}); err != nil {
		t.Fatal(err)
	}
	h.wantTask("a", api.TaskCancelled, "cancelled; its worker "+workerID+" goes on (st worker stop "+workerID+" --yes closes it)")
}

// A cancel that cannot be written is undone: the task and its dependents
// are as they were, and once the disk mends it does not come back.
func TestCancelTaskUnwrittenIsUndone(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	h.addTasks(&Task{Name: "a", State: api.TaskRunning, Worker: workerID})
	h.createWaitingTask("x", "a")
	h.createWaitingTask("y", "x")
	writes := h.m.reg.saver.writes.Load()
	h.breakSaves()
	_, err := h.m.CancelTask(context.Background(), api.IDRequest{Pane: coord, ID: "x"})
	wantKind(t, err, api.KindInternal)
	h.wantTask("x", api.TaskWaiting, "waiting on a")
	h.wantTask("y", api.TaskWaiting, "waiting on x")
	h.fixSaves()
	testutil.WaitFor(t, 10*time.Second, func() (bool, string) {
		return h.m.reg.saver.writes.Load() > writes, "the saver did not write run-t1 again once the disk mended"
	})
	h.wantTask("x", api.TaskWaiting, "waiting on a")
	h.wantTask("y", api.TaskWaiting, "waiting on x")
}

// A start cut short by a crash of st (a running task with no worker) is
// tried again when st starts; a task still waiting on its dependencies
// goes back to waiting.
func TestTaskStartCutShortIsTriedAgain(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	h.addTasks(&Task{Name: "a", State: api.TaskDone, Worker: workerID},
		&Task{Name: "b", Deps: []string{"a"}, State: api.TaskRunning},
		&Task{Name: "x", State: api.TaskRunning, Worker: "%44"},
		&Task{Name: "c", Deps: []string{"x"}, State: api.TaskRunning})
	b := h.tasks()["b"]
	h.m.Close()
	m2, err := NewManager(context.Background(), Config{Home: h.home, STBin: "/bin/st", Tmux: h.m.cfg.Tmux})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	h.m = m2
	h.waitTask("b", api.TaskFailed)
	h.wantTask("b", api.TaskFailed, noFileReason(b))
	h.wantTask("c", api.TaskWaiting, "waiting on x")
	h.wantTask("x", api.TaskRunning, "")
}

// A task's worker starts as st worker start would have started it for the
// task's creator, with every field of the task: the start's timeouts too,
// which st task create takes from its environment (ST_HOOK_TIMEOUT,
// ST_BLOCKED_TIMEOUT) and which a task that waits on others kept.
func TestTaskStartRequestCarriesTheTask(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	h.addTasks(&Task{Name: "a", State: api.TaskRunning, Worker: workerID})
	req := api.TaskRequest{Pane: coord, Name: "b", File: h.taskFile("b"), Agent: "sim", Deps: []string{"a"},
		Owns: []string{"docs/**"}, Worktree: true, Cwd: t.TempDir(), Env: map[string]string{"PATH": "/bin"},
		BlockedTimeout: 4 * time.Minute, HookTimeout: 2 * time.Minute}
	if _, err := h.m.CreateTask(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	h.m.reg.mu.Lock()
	task := runTask(h.m.reg.runs[testRun], "b")
	h.m.reg.mu.Unlock()
	if task == nil {
		t.Fatal("no task b")
	}
	want := api.StartRequest{Pane: coord, Agent: "sim", Task: req.File, Name: "b", Cwd: req.Cwd, Env: req.Env,
		Owns: req.Owns, Worktree: true, BlockedTimeout: 4 * time.Minute, HookTimeout: 2 * time.Minute}
	if got := task.startRequest(); !reflect.DeepEqual(got, want) {
		t.Errorf("task b's worker would start with\n%+v\nwant\n%+v", got, want)
	}
}
