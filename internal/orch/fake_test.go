package orch

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/testutil/faketmux"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(enterHelperEnv); dir != "" {
		enterHelper(dir) // run as another user by TestRefusesAFolderTheUserCannotEnter; exits
	}
	goleak.VerifyTestMain(m)
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
	tm   *faketmux.Server
	home string
}

// newHarness makes a Manager whose run (run-t1, coordinator %1) has one
// worker, %2 "w1" of agent sim, in state. It is put there the way a
// restarted daemon finds it: run.json on disk and the panes carrying
// @st_run. edit may change the fake's panes before the Manager loads.
func newHarness(t *testing.T, state api.State, edit func(*faketmux.Server)) *harness {
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
	tm := &faketmux.Server{Panes: []*faketmux.Pane{
		{ID: coord, Window: "@1", Index: "0", Session: "$0", SessName: "main", WinName: "coord", Cmd: "sim", Path: "/tmp", PID: 1,
			Opts: map[string]string{"@st_run": testRun, "@st_role": "coordinator"}},
		{ID: workerID, Window: "@2", Index: "1", Session: "$0", SessName: "main", WinName: "w1", Cmd: "st", Path: "/tmp", PID: 2,
			Opts: map[string]string{"@st_run": testRun, "@st_role": "worker", "@st_parent": coord, "@st_name": "w1"}},
		{ID: shell, Window: "@9", Index: "2", Session: "$0", SessName: "main", WinName: "bash", Cmd: "bash", Path: "/tmp", PID: 9,
			Opts: map[string]string{}},
	}}
	if edit != nil {
		edit(tm)
	}
	m, err := NewManager(context.Background(), Config{Home: home, STBin: "/bin/st", Tmux: tm.Client(), ReadWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.Close()
		tm.Check(t)
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
