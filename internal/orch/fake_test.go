package orch

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/tmux"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakePane is a pane of fakeTmux.
type fakePane struct {
	id, window, index, session, sessName, winName, cmd, path string
	pid                                                      int
	dead                                                     bool
	opts                                                     map[string]string // pane user options, @st_*
}

// field is the value of one #{...} of a -F format, as tmux would print it.
// A missing pane prints every field empty (tmux 3.3a display-message).
func (p *fakePane) field(name string) (string, bool) {
	if p == nil {
		return "", true
	}
	switch name {
	case "pane_id":
		return p.id, true
	case "window_id":
		return p.window, true
	case "window_index":
		return p.index, true
	case "session_id":
		return p.session, true
	case "pane_pid":
		if p.pid == 0 {
			return "", true
		}
		return strconv.Itoa(p.pid), true
	case "pane_dead":
		if p.dead {
			return "1", true
		}
		return "0", true
	case "session_name":
		return p.sessName, true
	case "window_name":
		return p.winName, true
	case "pane_current_command":
		return p.cmd, true
	case "pane_current_path":
		return p.path, true
	}
	if strings.HasPrefix(name, "@") {
		return p.opts[name], true
	}
	return "", false
}

// fakeTmux answers the commands the Manager runs outside of typing:
// list-panes -a -F, display-message -p -t -F, set-option (and -u) and
// capture-pane. Any other command is recorded as unexpected and fails the
// test at its end (it may come from a goroutine that outlives the test).
type fakeTmux struct {
	mu         sync.Mutex
	panes      []*fakePane
	unexpected []string
}

func (f *fakeTmux) pane(id string) *fakePane {
	for _, p := range f.panes {
		if p.id == id {
			return p
		}
	}
	return nil
}

// option reads a pane user option, under the lock.
func (f *fakeTmux) option(pane, name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p := f.pane(pane); p != nil {
		return p.opts[name]
	}
	return ""
}

func (f *fakeTmux) render(format string, p *fakePane) string {
	parts := strings.Split(format, "\x1f")
	for i, part := range parts {
		name, ok := strings.CutPrefix(part, "#{")
		name, ok2 := strings.CutSuffix(name, "}")
		v, known := p.field(name)
		if !ok || !ok2 || !known {
			f.unexpected = append(f.unexpected, "format field "+part)
		}
		parts[i] = v
	}
	return strings.Join(parts, "\x1f")
}

func (f *fakeTmux) Run(ctx context.Context, args ...string) (string, error) {
	// Commands chained with ";" (SetOptions) run one after another.
	for i, a := range args {
		if a == ";" {
			if _, err := f.Run(ctx, args[:i]...); err != nil {
				return "", err
			}
			return f.Run(ctx, args[i+1:]...)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	is := func(want ...string) bool {
		if len(args) != len(want) {
			return false
		}
		for i, w := range want {
			if w != "*" && args[i] != w {
				return false
			}
		}
		return true
	}
	switch {
	case is("list-panes", "-a", "-F", "*"):
		var b strings.Builder
		for _, p := range f.panes {
			b.WriteString(f.render(args[3], p) + "\n")
		}
		return b.String(), nil
	case is("display-message", "-p", "-t", "*", "-F", "*"):
		return f.render(args[5], f.pane(args[3])) + "\n", nil
	case is("set-option", "-p", "-t", "*", "*", "*"):
		p := f.pane(args[3])
		if p == nil {
			return "", errors.New("no such pane: " + args[3])
		}
		p.opts[args[4]] = args[5]
		return "", nil
	case is("set-option", "-p", "-u", "-t", "*", "*"):
		p := f.pane(args[4])
		if p == nil {
			return "", errors.New("no such pane: " + args[4])
		}
		delete(p.opts, args[5])
		return "", nil
	case is("show-options", "-p", "-q", "-v", "-t", "*", "*"):
		p := f.pane(args[5])
		if p == nil {
			return "", errors.New("no such pane: " + args[5])
		}
		return p.opts[args[6]] + "\n", nil
	case is("capture-pane", "-p", "-t", "*"), is("capture-pane", "-p", "-e", "-t", "*"):
		return "", nil
	}
	f.unexpected = append(f.unexpected, strings.Join(args, " "))
	return "", errors.New("unexpected tmux command")
}

const (
	testRun  = "run-t1"
	coord    = "%1"
	workerID = "%2"
	shell    = "%9" // a pane with no part in any run
	agentSes = "3f1c0a52-7d1e-4c55-9a0e-5b2d6f0e8a11"
)

type harness struct {
	t    *testing.T
	m    *Manager
	tm   *fakeTmux
	home string
}

// newHarness makes a Manager whose run (run-t1, coordinator %1) has one
// worker, %2 "w1" of agent sim, in state. It is put there the way a
// restarted daemon finds it: run.json on disk and the panes carrying
// @st_run. edit may change the fake's panes before the Manager loads.
func newHarness(t *testing.T, state api.State, edit func(*fakeTmux)) *harness {
	t.Helper()
	home := t.TempDir()
	now := time.Now()
	r := Run{
		ID: testRun, Objective: "test the state machine", Coordinator: coord, Session: "$0", Created: now,
		Workers: []*Worker{{
			ID: workerID, Name: "w1", Agent: "sim", Parent: coord, Level: 1, State: state, Since: now,
			Task: "/tmp/tasks/w1.md", Cwd: "/tmp", Window: "@2", Session: "$0", StartedAt: now,
		}},
	}
	if err := store.WriteJSON(filepath.Join(home, "orch", testRun, "run.json"), &r, 0o600); err != nil {
		t.Fatal(err)
	}
	tm := &fakeTmux{panes: []*fakePane{
		{id: coord, window: "@1", index: "0", session: "$0", sessName: "main", winName: "coord", cmd: "sim", path: "/tmp", pid: 1,
			opts: map[string]string{"@st_run": testRun, "@st_role": "coordinator"}},
		{id: workerID, window: "@2", index: "1", session: "$0", sessName: "main", winName: "w1", cmd: "st", path: "/tmp", pid: 2,
			opts: map[string]string{"@st_run": testRun, "@st_role": "worker", "@st_parent": coord, "@st_name": "w1"}},
		{id: shell, window: "@9", index: "2", session: "$0", sessName: "main", winName: "bash", cmd: "bash", path: "/tmp", pid: 9,
			opts: map[string]string{}},
	}}
	if edit != nil {
		edit(tm)
	}
	m, err := NewManager(context.Background(), Config{Home: home, STBin: "/bin/st", Tmux: tmux.NewWithRunner("/tmp/fake.sock", tm), ReadWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.Close()
		tm.mu.Lock()
		defer tm.mu.Unlock()
		for _, u := range tm.unexpected {
			t.Errorf("unexpected tmux command: %s", u)
		}
	})
	return &harness{t: t, m: m, tm: tm, home: home}
}

// payload builds a Claude-shaped hook payload: the fields every event has,
// then kv pairs.
func payload(event string, kv ...any) []byte {
	p := map[string]any{
		"session_id":      agentSes,
		"transcript_path": "/home/u/.claude/projects/-tmp/" + agentSes + ".jsonl",
		"cwd":             "/tmp",
		"permission_mode": "default",
		"hook_event_name": event,
	}
	for i := 0; i+1 < len(kv); i += 2 {
		p[kv[i].(string)] = kv[i+1]
	}
	b, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	return b
}

func (h *harness) hookFrom(pane, event string, kv ...any) error {
	_, err := h.m.Hook(context.Background(), api.HookRequest{Agent: "sim", Event: event, Pane: pane, Payload: payload(event, kv...)})
	return err
}

func (h *harness) hook(event string, kv ...any) {
	h.t.Helper()
	if err := h.hookFrom(workerID, event, kv...); err != nil {
		h.t.Fatalf("hook %s: %v", event, err)
	}
}

// worker reads the worker as commands see it (by a caller that is not its
// parent, so that reading marks nothing as seen).
func (h *harness) worker() api.Worker {
	h.t.Helper()
	v, err := h.m.Read(context.Background(), api.IDRequest{ID: workerID})
	if err != nil {
		h.t.Fatal(err)
	}
	return v.Worker
}

// onDisk reads the worker back from run.json.
func (h *harness) onDisk() Worker {
	h.t.Helper()
	var r Run
	if err := store.ReadJSON(filepath.Join(h.home, "orch", testRun, "run.json"), &r); err != nil {
		h.t.Fatal(err)
	}
	for _, w := range r.Workers {
		if w.ID == workerID {
			return *w
		}
	}
	h.t.Fatalf("run.json has no worker %s", workerID)
	return Worker{}
}

func wantKind(t *testing.T, err error, kind string) {
	t.Helper()
	var oe *api.Error
	if !errors.As(err, &oe) {
		t.Fatalf("error = %v (%T), want an *api.Error of kind %s", err, err, kind)
	}
	if oe.Kind != kind {
		t.Fatalf("error kind = %s (%v), want %s", oe.Kind, oe, kind)
	}
}
