package orch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/syncs"
	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/testutil/faketmux"
)

// Helpers for the tests of one concept each (tasks, reports, gates,
// notices, restore, peers): they build on newHarness (state_test.go),
// whose run run-t1 has coordinator %1 and worker %2 "w1", and add what
// a concept needs to the Manager the way st itself would have left it.

// localWorker is a worker of run-t1 under the coordinator, in pane id.
func localWorker(id, name string, state api.State) *Worker {
	now := time.Now()
	return &Worker{ID: id, Name: name, Agent: "sim", Parent: coord, Level: 1, State: state, Since: now,
		Task: "/tmp/tasks/" + name + ".md", Cwd: "/tmp", Window: "@" + strings.TrimPrefix(id, "%"), Session: "$0", StartedAt: now}
}

// addWorkerLocked puts w in run-t1 and writes the run. A worker of this
// machine gets a pane of its own on the fake, carrying st's relations.
func (h *harness) addWorker(w *Worker) *Worker {
	h.t.Helper()
	if !w.Remote() {
		h.addPane(w.ID, map[string]string{"@st_run": testRun, "@st_role": "worker", "@st_parent": w.Parent, "@st_name": w.Name})
	}
	h.m.reg.mu.Lock()
	r := h.m.reg.runs[testRun]
	h.m.reg.addWorkerLocked(r, w)
	err := h.m.saveLocked(r)
	h.m.reg.mu.Unlock()
	if err != nil {
		h.t.Fatal(err)
	}
	return w
}

// addPane opens a pane on the fake with the given options.
func (h *harness) addPane(id string, opts map[string]string) {
	h.tm.Lock()
	defer h.tm.Unlock()
	h.tm.Panes = append(h.tm.Panes, &faketmux.Pane{ID: id, Window: "@" + strings.TrimPrefix(id, "%"), Index: "3", Session: "$0",
		SessName: "main", WinName: "p" + id, Cmd: "st", Path: "/tmp", PID: 3, Opts: opts})
}

// closePane takes a pane off the fake, as if it closed.
func (h *harness) closePane(id string) {
	h.tm.Lock()
	defer h.tm.Unlock()
	for i, p := range h.tm.Panes {
		if p.ID == id {
			h.tm.Panes = append(h.tm.Panes[:i:i], h.tm.Panes[i+1:]...)
			return
		}
	}
	h.t.Fatalf("the fake has no pane %s", id)
}

// addTasks puts tasks in run-t1 as st task create would have left them
// (made by the coordinator, for the sim agent) and writes the run. A task
// with no file is given one that does not exist: its start fails before
// any tmux command.
func (h *harness) addTasks(ts ...*Task) {
	h.t.Helper()
	now := time.Now()
	for _, t := range ts {
		t.Parent, t.Agent, t.Created, t.Since = coord, "sim", now, now
		if t.File == "" {
			t.File = filepath.Join(h.home, "no-such-task-"+t.Name+".md")
		}
	}
	h.m.reg.mu.Lock()
	r := h.m.reg.runs[testRun]
	r.Tasks = append(r.Tasks, ts...)
	err := h.m.saveLocked(r)
	h.m.reg.mu.Unlock()
	if err != nil {
		h.t.Fatal(err)
	}
}

// taskFile writes a task file and returns its path.
func (h *harness) taskFile(name string) string {
	h.t.Helper()
	p := filepath.Join(h.t.TempDir(), name+".md")
	if err := os.WriteFile(p, []byte("do "+name+"\n"), 0o600); err != nil {
		h.t.Fatal(err)
	}
	return p
}

// tasks reads run-t1's tasks as st task list shows them, by name.
func (h *harness) tasks() map[string]api.TaskView {
	h.t.Helper()
	vs, err := h.m.ListTasks(context.Background(), api.IDRequest{ID: testRun})
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]api.TaskView{}
	for _, v := range vs {
		out[v.Name] = v
	}
	return out
}

// runOnDisk reads run-t1 back from run.json.
func (h *harness) runOnDisk() Run {
	h.t.Helper()
	var r Run
	if err := store.ReadJSON(filepath.Join(h.home, "orch", testRun, "run.json"), &r); err != nil {
		h.t.Fatal(err)
	}
	return r
}

// taskOnDisk reads one task of run-t1 back from run.json.
func (h *harness) taskOnDisk(name string) Task {
	h.t.Helper()
	r := h.runOnDisk()
	if t := runTask(&r, name); t != nil {
		return *t
	}
	h.t.Fatalf("run.json has no task %s", name)
	return Task{}
}

// waitTask polls until task name is in state, in st task list and in
// run.json, and returns it as listed.
func (h *harness) waitTask(name string, state api.TaskState) api.TaskView {
	h.t.Helper()
	var v api.TaskView
	testutil.WaitFor(h.t, 10*time.Second, func() (bool, string) {
		v = h.tasks()[name]
		d := h.taskOnDisk(name)
		return v.State == state && d.State == state && d.Reason == v.Reason,
			"task " + name + " is " + string(v.State) + " (" + v.Reason + "), " + string(d.State) + " in run.json; want " + string(state)
	})
	return v
}

// wantTask checks a task's state and reason, as listed and on disk.
func (h *harness) wantTask(name string, state api.TaskState, reason string) {
	h.t.Helper()
	v, d := h.tasks()[name], h.taskOnDisk(name)
	if v.State != state || v.Reason != reason {
		h.t.Errorf("task %s: %s (%q), want %s (%q)", name, v.State, v.Reason, state, reason)
	}
	if d.State != v.State || d.Reason != v.Reason {
		h.t.Errorf("task %s in run.json: %s (%q); st task list shows %s (%q)", name, d.State, d.Reason, v.State, v.Reason)
	}
}

// breakSaves makes every write of a run fail the way a full or broken
// disk would: its folder would lie under a regular file. (Swapped under
// the saver's write lock, which every write holds.)
func (h *harness) breakSaves() {
	h.t.Helper()
	blocker := filepath.Join(h.t.TempDir(), "a-file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		h.t.Fatal(err)
	}
	h.m.reg.saver.wmu.Lock()
	h.m.reg.saver.path = func(id string) string { return filepath.Join(blocker, id, "run.json") }
	h.m.reg.saver.wmu.Unlock()
}

// fixSaves undoes breakSaves.
func (h *harness) fixSaves() {
	h.m.reg.saver.wmu.Lock()
	h.m.reg.saver.path = h.m.reg.runPath
	h.m.reg.saver.wmu.Unlock()
}

// holdTmux holds every tmux command of the fake (a slow server) until
// the returned func lets them go.
func (h *harness) holdTmux() (release func()) {
	h.tm.Lock()
	var once sync.Once
	return func() { once.Do(h.tm.Unlock) }
}

// pendingNotices lists what the noticer has waiting for pane: the done
// workers' ids and the plain lines.
func (h *harness) pendingNotices(pane string) []string {
	n := h.m.notices
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, nt := range n.pending[pane] {
		if nt.worker != nil {
			out = append(out, "done "+nt.worker.ID)
		} else {
			out = append(out, nt.text)
		}
	}
	return out
}

// logBuffer is the manager's log, for what only the log shows.
type logBuffer struct{ testutil.SyncBuffer }

// count is how many lines of the log hold s.
func (l *logBuffer) count(s string) int { return strings.Count(l.String(), s) }

// captureLog sends the manager's log to a buffer. Called before the test
// sets anything going.
func (h *harness) captureLog() *logBuffer {
	l := &logBuffer{}
	h.m.reg.mu.Lock()
	h.m.cfg.Log = l
	h.m.reg.mu.Unlock()
	return l
}

// runGuarded runs f, and fails the test when it has not returned within
// a long bound (a deadlock would otherwise hang the whole package).
func runGuarded(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not return", what)
	}
}

// fakeRemote stands for internal/peer's Hub in the manager's own tests:
// a machine/... id names this machine's record of that id (machines are
// named by their slugs), nothing is started or told anywhere, and what
// the manager asks of it is recorded.
type fakeRemote struct {
	mu     sync.Mutex
	kicked []string
}

func (f *fakeRemote) Start(context.Context, RemoteStart) (*api.WorkerView, error) {
	return nil, errors.New("fakeRemote starts nothing")
}

func (f *fakeRemote) Op(context.Context, string, api.IDRequest) (*api.WorkerView, error) {
	return nil, errors.New("fakeRemote reaches no machine")
}

func (f *fakeRemote) Adopt(context.Context, api.IDRequest) (*api.WorkerView, error) {
	return nil, errors.New("fakeRemote adopts nothing")
}

func (f *fakeRemote) Resolve(_ context.Context, id string) (string, string, error) {
	return "", id, nil
}

func (f *fakeRemote) Kick(slug string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.kicked = append(f.kicked, slug)
}

func (f *fakeRemote) kicks() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.kicked...)
}

func (f *fakeRemote) TellDepths(context.Context)                   {}
func (f *fakeRemote) ParentsNow(context.Context, []api.WorkerView) {}
func (f *fakeRemote) PanesListed(map[string]int, time.Time)        {}

// remoteHarness is newHarness with a fakeRemote for the other machines.
func remoteHarness(t *testing.T) *harness {
	h := newHarness(t, api.Working, nil)
	h.m.cfg.Remote = &fakeRemote{}
	return h
}

// remoteFake is the harness's fakeRemote.
func (h *harness) remoteFake() *fakeRemote { return h.m.cfg.Remote.(*fakeRemote) }

// seenOnDisk is onDisk once what the saver holds back is written: a
// report seen is a soft mark (saver.go), which st writes with the run's
// next write, after softLinger at the latest, and when it stops.
func (h *harness) seenOnDisk() Worker {
	h.t.Helper()
	h.m.reg.saver.writeAll(false, true)
	return h.onDisk()
}

// seenRunOnDisk is runOnDisk once what the saver holds back is written.
func (h *harness) seenRunOnDisk() Run {
	h.t.Helper()
	h.m.reg.saver.writeAll(false, true)
	return h.runOnDisk()
}

// saveLocked writes run r and waits for the disk, under the registry's
// lock: for a test's setup only (st itself writes with the lock let go,
// keep.go).
func (m *Manager) saveLocked(r *Run) error {
	syncs.AssertLocked(&m.reg.mu)
	// Staged with its snapshot, taken here: the writer would take the
	// lock this holds for it (registry.snapshot).
	return m.reg.saver.wait(r.ID, m.reg.saver.stage(r.ID, m.reg.recordLocked(r), false))
}
