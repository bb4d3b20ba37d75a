package peer

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/authz"
	"github.com/sophonz/st/internal/orch"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/testutil/faketmux"
)

// The hub's tests run it with the real manager (internal/orch) over a
// fake tmux server (internal/testutil/faketmux), the other machines
// answered by a fakeAccount: this machine is alpha, and what it asks of
// another machine goes to answer.

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	testRun  = "run-t1"
	coord    = "%1"
	workerID = "%2"
	shell    = "%9" // a pane with no part in any run
	agentSes = "3f1c0a52-7d1e-4c55-9a0e-5b2d6f0e8a11"
)

// fakeAccount stands for the account's other machines: this machine is
// alpha, machines are named by their slugs in any case, and every Call
// but a watch is answered by answer. A watch (the watch loop's long
// poll) sees nothing change there.
type fakeAccount struct {
	answer func(slug, op string, req any) (any, error)
	// watching, when set, hears the slug of each watch as it parks.
	watching chan string
	mu       sync.Mutex
	calls    []string
}

func (p *fakeAccount) Self() (string, error) { return "alpha", nil }

func (p *fakeAccount) Machine(ctx context.Context, name string) (api.MachineRef, error) {
	return api.MachineRef{Slug: strings.ToLower(name), Name: name}, nil
}

func (p *fakeAccount) Call(ctx context.Context, slug, op string, req, resp any) error {
	if op == api.PeerRouteWatch {
		if p.watching != nil {
			select {
			case p.watching <- slug:
			default:
			}
		}
		<-ctx.Done()
		return ctx.Err()
	}
	p.mu.Lock()
	p.calls = append(p.calls, slug+" "+op)
	p.mu.Unlock()
	v, err := p.answer(slug, op, req)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(v)
	return json.Unmarshal(b, resp)
}

type harness struct {
	t    *testing.T
	m    *orch.Manager
	hub  *Hub
	tm   *faketmux.Server
	home string
}

// setup is what a harness finds as a restarted daemon would: the runs on
// disk (runs[0] is run-t1, coordinator %1, with worker %2 "w1") and the
// panes of the tmux server.
type setup struct {
	runs []*orch.Run
	tm   *faketmux.Server
	// onAttention gets each item handed to the push (orch's OnAttention).
	onAttention func(api.Attention)
}

// worker is run-t1's worker %2.
func (s *setup) worker() *orch.Worker { return s.runs[0].Workers[0] }

// newHarness makes the manager and the hub over run-t1, its worker in
// state; edit changes the setup first. acc reaches the other machines
// (nil: none).
func newHarness(t *testing.T, state api.State, acc *fakeAccount, edit func(*setup)) *harness {
	t.Helper()
	home := t.TempDir()
	now := time.Now()
	s := &setup{runs: []*orch.Run{{
		ID: testRun, Objective: "test the other machines", Coordinator: coord, Session: "$0", Created: now,
		Workers: []*orch.Worker{{
			ID: workerID, Name: "w1", Agent: "sim", Parent: coord, Level: 1, State: state, Since: now,
			Task: "/tmp/tasks/w1.md", Cwd: "/tmp", Window: "@2", Session: "$0", StartedAt: now,
		}},
	}}, tm: &faketmux.Server{Panes: []*faketmux.Pane{
		{ID: coord, Window: "@1", Index: "0", Session: "$0", SessName: "main", WinName: "coord", Cmd: "sim", Path: "/tmp", PID: 1,
			Opts: map[string]string{"@st_run": testRun, "@st_role": "coordinator"}},
		{ID: workerID, Window: "@2", Index: "1", Session: "$0", SessName: "main", WinName: "w1", Cmd: "st", Path: "/tmp", PID: 2,
			Opts: map[string]string{"@st_run": testRun, "@st_role": "worker", "@st_parent": coord, "@st_name": "w1"}},
		{ID: shell, Window: "@9", Index: "2", Session: "$0", SessName: "main", WinName: "bash", Cmd: "bash", Path: "/tmp", PID: 9,
			Opts: map[string]string{}},
	}}}
	if edit != nil {
		edit(s)
	}
	for _, r := range s.runs {
		if err := store.WriteJSON(filepath.Join(home, "orch", r.ID, "run.json"), r, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := Config{Home: home, Tmux: s.tm.Client()}
	if acc != nil {
		cfg.Account = acc
	}
	hub := NewHub(cfg)
	m, err := orch.NewManager(context.Background(), orch.Config{Home: home, STBin: "/bin/st", Tmux: s.tm.Client(), ReadWait: 50 * time.Millisecond, Remote: hub,
		OnAttention: s.onAttention})
	if err != nil {
		t.Fatal(err)
	}
	hub.Attach(m)
	t.Cleanup(func() {
		m.Close()
		s.tm.Check(t)
	})
	return &harness{t: t, m: m, hub: hub, tm: s.tm, home: home}
}

// peerHarness is newHarness with accept-remote on and the account set.
func peerHarness(t *testing.T, acc *fakeAccount, edit func(*setup)) *harness {
	h := newHarness(t, api.Working, acc, edit)
	if err := h.hub.SetAcceptRemote(true); err != nil {
		t.Fatal(err)
	}
	return h
}

// peerAsks is what the peer routes ask internal/authz before they call
// the hub (routes.go), with this hub's facts.
func peerAsks(h *harness, from string, act authz.Action, id string) error {
	return authz.Decide(authz.Actor{Kind: authz.Machine, Machine: from}, act, authz.Target{ID: id}, h.hub).Err()
}

// hookFrom sends a hook event of the sim agent in pane, Claude-shaped.
func (h *harness) hookFrom(pane, event string, kv ...any) error {
	p := map[string]any{"session_id": agentSes, "cwd": "/tmp", "hook_event_name": event}
	for i := 0; i+1 < len(kv); i += 2 {
		p[kv[i].(string)] = kv[i+1]
	}
	b, _ := json.Marshal(p)
	_, err := h.m.Hook(context.Background(), api.HookRequest{Agent: "sim", Event: event, Pane: pane, Payload: b})
	return err
}

// worker reads run-t1's worker %2 as commands see it (by a caller that
// is not its parent, so that reading marks nothing as seen).
func (h *harness) worker() api.Worker {
	h.t.Helper()
	v, err := h.m.Read(context.Background(), api.IDRequest{ID: workerID})
	if err != nil {
		h.t.Fatal(err)
	}
	return v.Worker
}

// lookAtTmux has the manager look at the tmux server (st worker list
// does), as it does whenever it acts: which panes live.
func (h *harness) lookAtTmux() {
	h.t.Helper()
	if _, err := h.m.List(context.Background(), api.IDRequest{All: true}); err != nil {
		h.t.Fatal(err)
	}
}

// records are the workers of run-t1 as st orch show shows them (no look
// at tmux, nothing asked of other machines).
func (h *harness) records() []api.WorkerView {
	h.t.Helper()
	v, err := h.m.Show(context.Background(), "", testRun)
	if err != nil {
		h.t.Fatal(err)
	}
	return v.Views
}

// record is the worker id of run-t1 as st orch show shows it.
func (h *harness) record(id string) api.WorkerView {
	h.t.Helper()
	for _, v := range h.records() {
		if v.ID == id {
			return v
		}
	}
	h.t.Fatalf("run %s has no worker %s", testRun, id)
	return api.WorkerView{}
}
