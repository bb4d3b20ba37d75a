package orch

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/tmux"
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
func newHarness(t *testing.T, state State, edit func(*fakeTmux)) *harness {
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
	_, err := h.m.Hook(context.Background(), HookRequest{Agent: "sim", Event: event, Pane: pane, Payload: payload(event, kv...)})
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
func (h *harness) worker() Worker {
	h.t.Helper()
	v, err := h.m.Read(context.Background(), IDRequest{ID: workerID})
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
	var oe *Error
	if !errors.As(err, &oe) {
		t.Fatalf("error = %v (%T), want an *orch.Error of kind %s", err, err, kind)
	}
	if oe.Kind != kind {
		t.Fatalf("error kind = %s (%v), want %s", oe.Kind, oe, kind)
	}
}

// step is one hook event, or with done set one st worker done, and the
// state it leaves the worker in.
type step struct {
	event string
	kv    []any
	done  string
	want  State
}

func ev(event string, want State, kv ...any) step { return step{event: event, kv: kv, want: want} }
func done(summary string, want State) step        { return step{done: summary, want: want} }

var noTasks = []any{}

func TestStateMachine(t *testing.T) {
	const task = "Your task is in the file /tmp/tasks/w1.md - read it and do it."
	bg := []any{map[string]any{"id": "a1", "type": "subagent", "status": "running"}}
	tests := []struct {
		name         string
		from         State
		steps        []step
		wantLast     string
		wantSummary  string
		wantReported bool
	}{
		{
			name:  "a prompt starts the turn",
			steps: []step{ev("UserPromptSubmit", Working, "prompt", task)},
		},
		{
			name: "session start alone changes nothing",
			steps: []step{
				ev("SessionStart", Starting, "source", "startup"),
				ev("UserPromptSubmit", Working, "prompt", task),
			},
		},
		{
			name: "a permission request waits",
			steps: []step{
				ev("UserPromptSubmit", Working, "prompt", task),
				ev("PreToolUse", Working, "tool_name", "Bash"),
				ev("PermissionRequest", Waiting, "tool_name", "Bash"),
			},
		},
		{
			name: "the tool runs once the prompt is answered",
			steps: []step{
				ev("UserPromptSubmit", Working, "prompt", task),
				ev("PermissionRequest", Waiting, "tool_name", "Bash"),
				ev("PostToolUse", Working, "tool_name", "Bash"),
			},
		},
		{
			name: "a permission notification waits",
			steps: []step{
				ev("UserPromptSubmit", Working, "prompt", task),
				ev("Notification", Waiting, "notification_type", "permission_prompt", "message", "Claude needs your permission"),
			},
		},
		{
			name: "a stop with no report is idle",
			steps: []step{
				ev("UserPromptSubmit", Working, "prompt", task),
				ev("Stop", Idle, "last_assistant_message", "I could not find the file.", "background_tasks", noTasks),
				ev("Notification", Idle, "notification_type", "idle_prompt"),
			},
			wantLast: "I could not find the file.",
		},
		{
			name: "a report then a stop is done, with the last answer",
			steps: []step{
				ev("UserPromptSubmit", Working, "prompt", task),
				ev("PostToolUse", Working, "tool_name", "Bash"),
				done("added the test; go test passes", Done),
				ev("Stop", Done, "last_assistant_message", "Reported.", "background_tasks", noTasks),
			},
			wantLast: "Reported.", wantSummary: "added the test; go test passes", wantReported: true,
		},
		{
			name: "tools after the report keep it done",
			steps: []step{
				ev("UserPromptSubmit", Working, "prompt", task),
				done("did it", Done),
				ev("PreToolUse", Done, "tool_name", "Bash"),
				ev("PostToolUse", Done, "tool_name", "Bash"),
				ev("Stop", Done, "last_assistant_message", "ok"),
			},
			wantLast: "ok", wantSummary: "did it", wantReported: true,
		},
		{
			name: "a report while waiting is done at the stop",
			steps: []step{
				ev("UserPromptSubmit", Working, "prompt", task),
				ev("PermissionRequest", Waiting, "tool_name", "Bash"),
				done("did it", Done),
				ev("Stop", Done, "last_assistant_message", "bye"),
			},
			wantLast: "bye", wantSummary: "did it", wantReported: true,
		},
		{
			name: "a stop with background tasks does not end the turn",
			steps: []step{
				ev("UserPromptSubmit", Working, "prompt", task),
				ev("Stop", Working, "last_assistant_message", "Waiting for the subagent.", "background_tasks", bg),
				ev("SubagentStop", Working, "agent_id", "a1", "agent_type", "claude", "background_tasks", noTasks),
				ev("UserPromptSubmit", Working, "prompt", "<task-notification>\n<task-id>a1</task-id>"),
				ev("Stop", Idle, "last_assistant_message", "The subagent finished.", "background_tasks", noTasks),
			},
			wantLast: "The subagent finished.",
		},
		{
			// Claude's own turn after a background subagent ends is no new
			// prompt: a report made before it stands.
			name: "a report stands through the turn a subagent's end starts",
			steps: []step{
				ev("UserPromptSubmit", Working, "prompt", task),
				done("started a subagent", Done),
				ev("Stop", Done, "last_assistant_message", "It runs.", "background_tasks", bg),
				ev("SubagentStop", Done, "agent_id", "a1", "agent_type", "claude", "background_tasks", noTasks),
				ev("UserPromptSubmit", Done, "prompt", "<task-notification>\n<task-id>a1</task-id>"),
				ev("Stop", Done, "last_assistant_message", "The subagent finished.", "background_tasks", noTasks),
			},
			wantLast: "The subagent finished.", wantSummary: "started a subagent", wantReported: true,
		},
		{
			name: "a stop with background tasks while waiting is working",
			steps: []step{
				ev("UserPromptSubmit", Working, "prompt", task),
				ev("PermissionRequest", Waiting, "tool_name", "Bash"),
				ev("Stop", Working, "background_tasks", bg),
			},
		},
		{
			name: "a stop failure ends the turn with the error",
			steps: []step{
				ev("UserPromptSubmit", Working, "prompt", task),
				ev("StopFailure", Idle, "error", "unknown", "last_assistant_message", "API Error: 400 fake server: forced 400"),
			},
			wantLast: "API Error: 400 fake server: forced 400",
		},
		{
			name: "a stop failure with only an error",
			steps: []step{
				ev("UserPromptSubmit", Working, "prompt", task),
				ev("StopFailure", Idle, "error", "rate_limit"),
			},
			wantLast: "rate_limit",
		},
		{
			// The watcher decides from tmux whether the pane closed (gone)
			// or the whole server went down (st brings it back).
			name: "session end alone leaves the state to the watcher",
			steps: []step{
				ev("UserPromptSubmit", Working, "prompt", task),
				ev("SessionEnd", Working, "reason", "other"),
			},
		},
		{
			name: "a new prompt after done works again",
			steps: []step{
				ev("UserPromptSubmit", Working, "prompt", task),
				done("first part", Done),
				ev("Stop", Done, "last_assistant_message", "first"),
				ev("UserPromptSubmit", Working, "prompt", "now the second part"),
				ev("Stop", Idle, "last_assistant_message", "second"),
			},
			wantLast: "second", wantSummary: "first part",
		},
		{
			name: "a failed start may still report",
			from: Failed,
			steps: []step{
				done("it started after all", Done),
			},
			wantSummary: "it started after all", wantReported: true,
		},
		{
			name: "an idle worker's next prompt works",
			from: Idle,
			steps: []step{
				ev("UserPromptSubmit", Working, "prompt", "go on"),
			},
		},
		{
			name: "unknown events change nothing",
			steps: []step{
				ev("UserPromptSubmit", Working, "prompt", task),
				ev("PreCompact", Working),
				ev("SubagentStart", Working, "agent_id", "a2"),
				ev("NoSuchEvent", Working),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			from := tt.from
			if from == "" {
				from = Starting
			}
			h := newHarness(t, from, nil)
			for i, s := range tt.steps {
				if s.done != "" {
					v, err := h.m.Done(context.Background(), DoneRequest{Pane: workerID, Summary: s.done})
					if err != nil {
						t.Fatalf("step %d: done: %v", i, err)
					}
					if v.State != Done {
						t.Errorf("step %d: done returned state %s", i, v.State)
					}
				} else {
					h.hook(s.event, s.kv...)
				}
				if got := h.worker().State; got != s.want {
					what := s.event
					if what == "" {
						what = "done"
					}
					t.Fatalf("step %d (%s): state %s, want %s", i, what, got, s.want)
				}
			}
			w := h.worker()
			if w.LastAnswer != tt.wantLast {
				t.Errorf("last answer %q, want %q", w.LastAnswer, tt.wantLast)
			}
			if w.Summary != tt.wantSummary {
				t.Errorf("summary %q, want %q", w.Summary, tt.wantSummary)
			}
			if w.Reported != tt.wantReported {
				t.Errorf("reported %v, want %v", w.Reported, tt.wantReported)
			}
			d := h.onDisk()
			if d.State != w.State || d.LastAnswer != w.LastAnswer || d.Summary != w.Summary || d.Reported != w.Reported {
				t.Errorf("run.json has state %s, last %q, summary %q, reported %v; memory has %s, %q, %q, %v",
					d.State, d.LastAnswer, d.Summary, d.Reported, w.State, w.LastAnswer, w.Summary, w.Reported)
			}
		})
	}
}

func TestHookRecordsTheAgentOnThePane(t *testing.T) {
	h := newHarness(t, Starting, nil)
	h.hook("UserPromptSubmit", "prompt", "go")
	if got := h.worker().AgentSession; got != agentSes {
		t.Errorf("agent session %q, want %q", got, agentSes)
	}
	testutil.WaitFor(t, 5*time.Second, func() (bool, string) {
		a, s := h.tm.option(workerID, "@st_agent"), h.tm.option(workerID, "@st_agent_session")
		return a == "sim" && s == agentSes, "pane options @st_agent=" + a + " @st_agent_session=" + s
	})
	if got := h.m.AgentPanes()[workerID]; got != "sim" {
		t.Errorf("AgentPanes()[%s] = %q, want sim", workerID, got)
	}
}

func TestHookRefusals(t *testing.T) {
	h := newHarness(t, Working, nil)
	ctx := context.Background()
	tests := []struct {
		name string
		req  HookRequest
		kind string // "" = accepted
	}{
		{"unknown agent", HookRequest{Agent: "nosuch", Event: "Stop", Pane: workerID, Payload: payload("Stop")}, KindUsage},
		{"payload not JSON", HookRequest{Agent: "sim", Event: "Stop", Pane: workerID, Payload: []byte("Stop")}, KindUsage},
		{"payload empty", HookRequest{Agent: "sim", Event: "Stop", Pane: workerID}, KindUsage},
		{"payload an array", HookRequest{Agent: "sim", Event: "Stop", Pane: workerID, Payload: []byte(`[{}]`)}, KindUsage},
		{"agent outside tmux", HookRequest{Agent: "sim", Event: "Stop", Pane: "", Payload: payload("Stop")}, ""},
		{"pane not an id", HookRequest{Agent: "sim", Event: "Stop", Pane: "main:1", Payload: payload("Stop")}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.m.Hook(ctx, tt.req)
			if tt.kind == "" {
				if err != nil {
					t.Fatalf("Hook: %v", err)
				}
			} else {
				wantKind(t, err, tt.kind)
			}
			if got := h.worker().State; got != Working {
				t.Errorf("worker state %s after a refused or foreign hook, want working", got)
			}
		})
	}
}

func TestDoneRefusals(t *testing.T) {
	tests := []struct {
		name    string
		from    State
		pane    string
		summary string
		kind    string
	}{
		{"a pane that is not a worker", Working, shell, "did it", KindNotFound},
		{"the coordinator", Working, coord, "did it", KindNotFound},
		{"no pane", Working, "", "did it", KindNotFound},
		{"a pane that does not exist", Working, "%77", "did it", KindNotFound},
		{"a gone worker", Gone, workerID, "did it", KindNotFound},
		{"an empty summary", Working, workerID, "", KindUsage},
		{"a blank summary", Working, workerID, " \n\t ", KindUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.from, nil)
			before := h.onDisk()
			v, err := h.m.Done(context.Background(), DoneRequest{Pane: tt.pane, Summary: tt.summary})
			if err == nil {
				t.Fatalf("Done = %+v, want a refusal", v)
			}
			wantKind(t, err, tt.kind)
			var oe *Error
			errors.As(err, &oe)
			if oe.Hint == "" {
				t.Errorf("refusal %q has no hint", oe.Message)
			}
			if w := h.worker(); w.State != tt.from || w.Summary != "" || w.Reported {
				t.Errorf("refused report changed the worker: %+v", w)
			}
			if after := h.onDisk(); after.State != before.State || after.Summary != "" {
				t.Errorf("refused report changed run.json: %+v", after)
			}
		})
	}
}

func TestDoneIsOnDiskWhenItReturns(t *testing.T) {
	h := newHarness(t, Working, nil)
	v, err := h.m.Done(context.Background(), DoneRequest{Pane: workerID, Summary: "fixed the bug; go test ./... passes"})
	if err != nil {
		t.Fatal(err)
	}
	if v.State != Done || v.Run != testRun || v.ReportedAt == nil {
		t.Errorf("Done returned %+v", v)
	}
	d := h.onDisk()
	if d.State != Done || d.Summary != "fixed the bug; go test ./... passes" || !d.Reported || d.ReportedAt == nil || d.Told {
		t.Errorf("run.json right after Done: %+v", d)
	}
	fi, err := os.Stat(filepath.Join(h.home, "orch", testRun, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("run.json mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestWaitReturnsAtOnceForSettledWorkers(t *testing.T) {
	for _, s := range []State{Idle, Waiting, Done, Blocked, Failed, Gone} {
		t.Run(string(s), func(t *testing.T) {
			h := newHarness(t, s, nil)
			start := time.Now()
			res, err := h.m.Wait(context.Background(), WaitRequest{Pane: coord, Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if el := time.Since(start); el > 5*time.Second {
				t.Errorf("Wait took %s for a %s worker", el, s)
			}
			if res.TimedOut || len(res.Workers) != 1 || res.Workers[0].State != s || res.Workers[0].Run != testRun {
				t.Errorf("Wait = %+v", res)
			}
			// The parent has now seen a report.
			if told := h.onDisk().Told; told != (s == Done) {
				t.Errorf("told on disk = %v after the parent waited for a %s worker", told, s)
			}
		})
	}
}

func TestWaitTimesOut(t *testing.T) {
	for _, s := range []State{Starting, Working} {
		t.Run(string(s), func(t *testing.T) {
			h := newHarness(t, s, nil)
			const timeout = 100 * time.Millisecond
			start := time.Now()
			res, err := h.m.Wait(context.Background(), WaitRequest{Pane: coord, IDs: []string{"w1"}, Timeout: timeout})
			if err != nil {
				t.Fatal(err)
			}
			if el := time.Since(start); el < timeout {
				t.Errorf("Wait returned after %s, before its timeout of %s", el, timeout)
			}
			if !res.TimedOut || len(res.Workers) != 1 || res.Workers[0].State != s {
				t.Errorf("Wait = %+v, want timed out with the worker %s", res, s)
			}
		})
	}
}

func TestWaitIsWokenByAHook(t *testing.T) {
	h := newHarness(t, Working, nil)
	type result struct {
		res *WaitResult
		err error
		el  time.Duration
	}
	ch := make(chan result, 1)
	start := time.Now()
	go func() {
		res, err := h.m.Wait(context.Background(), WaitRequest{Pane: coord, Timeout: 30 * time.Second})
		ch <- result{res, err, time.Since(start)}
	}()
	// Once Wait is parked in its select, it can only be the hook's
	// wake-up that ends it.
	testutil.WaitBlocked(t, 10*time.Second, "orch.(*Manager).Wait")
	select {
	case r := <-ch:
		t.Fatalf("Wait returned before the hook: %+v, %v", r.res, r.err)
	default:
	}
	h.hook("Stop", "last_assistant_message", "stopped", "background_tasks", noTasks)
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.el > 5*time.Second {
			t.Errorf("Wait took %s after the hook", r.el)
		}
		if r.res.TimedOut || r.res.Workers[0].State != Idle || r.res.Workers[0].LastAnswer != "stopped" {
			t.Errorf("Wait = %+v", r.res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait was not woken by the Stop hook")
	}
}

func TestWaitEndsWithItsContext(t *testing.T) {
	h := newHarness(t, Working, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := h.m.Wait(ctx, WaitRequest{Pane: coord}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait error = %v, want the context's", err)
	}
}

func TestWaitByNameFromAnotherPane(t *testing.T) {
	h := newHarness(t, Done, nil)
	res, err := h.m.Wait(context.Background(), WaitRequest{Pane: shell, IDs: []string{"w1"}, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Workers) != 1 || res.Workers[0].ID != workerID {
		t.Fatalf("Wait = %+v", res)
	}
	if h.onDisk().Told {
		t.Error("a pane that is not the parent marked the report as seen")
	}
}

func TestWaitRefusals(t *testing.T) {
	h := newHarness(t, Working, nil)
	tests := []struct {
		name string
		req  WaitRequest
		kind string
	}{
		{"no pane and no ids", WaitRequest{Timeout: time.Second}, KindUsage},
		{"a pane with no workers", WaitRequest{Pane: shell, Timeout: time.Second}, KindNotFound},
		{"an unknown name", WaitRequest{Pane: coord, IDs: []string{"nosuch"}, Timeout: time.Second}, KindNotFound},
		{"an unknown pane id", WaitRequest{Pane: coord, IDs: []string{"%77"}, Timeout: time.Second}, KindNotFound},
		{"an empty id", WaitRequest{Pane: coord, IDs: []string{""}, Timeout: time.Second}, KindUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.m.Wait(context.Background(), tt.req)
			wantKind(t, err, tt.kind)
		})
	}
}

func TestLoadReconcilesPanes(t *testing.T) {
	tests := []struct {
		name string
		edit func(*fakeTmux)
		want State
	}{
		{"pane still there", nil, Working},
		{"pane closed", func(f *fakeTmux) { f.panes = []*fakePane{f.pane(coord), f.pane(shell)} }, Gone},
		{"pane id reused by another run", func(f *fakeTmux) { f.pane(workerID).opts["@st_run"] = "run-other" }, Gone},
		{"pane id reused outside st", func(f *fakeTmux) { f.pane(workerID).opts = map[string]string{} }, Gone},
		{"pane dead", func(f *fakeTmux) { f.pane(workerID).dead = true }, Gone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Working, tt.edit)
			if got := h.worker().State; got != tt.want {
				t.Errorf("state after load %s, want %s", got, tt.want)
			}
			if got := h.onDisk().State; got != tt.want {
				t.Errorf("state in run.json after load %s, want %s", got, tt.want)
			}
		})
	}
}

func TestLoadKeepsACorruptRunAside(t *testing.T) {
	h := newHarness(t, Working, nil)
	// A second Manager on the same home, with one more run that does not decode.
	bad := filepath.Join(h.home, "orch", "run-bad", "run.json")
	if err := os.MkdirAll(filepath.Dir(bad), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`{"id": "run-bad", "workers": [`), 0o600); err != nil {
		t.Fatal(err)
	}
	m2, err := NewManager(context.Background(), Config{Home: h.home, STBin: "/bin/st", Tmux: tmux.NewWithRunner("/tmp/fake.sock", h.tm)})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if s := m2.Status(); s.Runs != 1 || s.Workers != 1 || s.Live != 1 {
		t.Errorf("Status = %+v, want the good run only", s)
	}
	if b, err := os.ReadFile(bad); err != nil || string(b) != `{"id": "run-bad", "workers": [` {
		t.Errorf("the corrupt file was changed: %q, %v", b, err)
	}
	if _, err := os.Stat(bad + ".corrupt-1"); err != nil {
		t.Errorf("no copy kept aside: %v", err)
	}
}

// TestCloseStopsNotices closes a Manager while a notice to an agent
// coordinator is pending: nothing may be left running.
func TestCloseStopsNotices(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	h := newHarness(t, Working, nil)
	// The coordinator is an agent in a turn, so the notice waits.
	if err := h.hookFrom(coord, "UserPromptSubmit", "prompt", "start a worker"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.m.Done(context.Background(), DoneRequest{Pane: workerID, Summary: "done"}); err != nil {
		t.Fatal(err)
	}
	h.hook("Stop", "last_assistant_message", "bye")
	h.m.Close()
	goleak.VerifyNone(t, ignore)
}

func TestTaskLine(t *testing.T) {
	tests := []struct{ stBin, task string }{
		{"/usr/local/bin/st", "/home/u/proj/tasks/api-tests.md"},
		{"/home/user name/bin/st", "/tmp/작업/task 1.md"},
		{"/bin/st", "/t"},
	}
	for _, tt := range tests {
		l := TaskLine(tt.stBin, tt.task)
		if len(l) >= 1000 {
			t.Errorf("TaskLine is %d characters", len(l))
		}
		if strings.HasPrefix(l, "/") || strings.HasPrefix(l, "$") {
			t.Errorf("TaskLine starts with a menu character: %q", l)
		}
		if !strings.Contains(l, tt.task) || !strings.Contains(l, tt.stBin+" worker done --summary") {
			t.Errorf("TaskLine does not name the task %s and %s worker done: %q", tt.task, tt.stBin, l)
		}
		if err := checkLine(l); err != nil {
			t.Errorf("checkLine(TaskLine) = %v", err)
		}
	}
}

func TestNameFromTask(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/home/u/tasks/api-tests.md", "api-tests"},
		{"/t/api_tests.txt", "api_tests"},
		{"/t/no-extension", "no-extension"},
		{"/t/two.dots.md", "two-dots"},
		{"/t/.hidden", "hidden"},
		{"/t/.hidden.md", "hidden"},
		{"/t/with space & more!.md", "with-space---more"},
		{"/t/작업.md", "worker"},
		{"/t/ab작업cd.md", "ab--cd"},
		{"/t/--x--.md", "x"},
		{"/t/__x__.md", "x"},
		{"/t/", "worker"},
		{"", "worker"},
		{"/t/" + strings.Repeat("a", 50) + ".md", strings.Repeat("a", 40)},
		{"relative.md", "relative"},
	}
	for _, tt := range tests {
		got := NameFromTask(tt.in)
		if got != tt.want {
			t.Errorf("NameFromTask(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if !ValidName(got) {
			t.Errorf("NameFromTask(%q) = %q, which ValidName refuses", tt.in, got)
		}
	}
}

func FuzzNameFromTask(f *testing.F) {
	for _, s := range []string{"/t/api.md", "/t/.x", "", "/", "/t/작업.md", "/t/" + strings.Repeat("-", 60) + "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		if n := NameFromTask(path); !ValidName(n) {
			t.Fatalf("NameFromTask(%q) = %q, which ValidName refuses", path, n)
		}
	})
}

func TestValidName(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"api", true},
		{"api-tests_2.b", true},
		{"_x", true},
		{"A9", true},
		{strings.Repeat("a", 40), true},
		{strings.Repeat("a", 41), false},
		{"", false},
		{"-x", false},
		{".x", false},
		{"a b", false},
		{"a/b", false},
		{"a:b", false},
		{"%1", false},
		{"a;b", false},
		{"a$b", false},
		{"a'b", false},
		{"작업", false},
		{"a\nb", false},
	}
	for _, tt := range tests {
		if got := ValidName(tt.in); got != tt.want {
			t.Errorf("ValidName(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestCheckLine(t *testing.T) {
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"a plain line", "please also run the linters", true},
		{"quotes and shell characters", `use "go test" and $HOME; ` + "`x`", true},
		{"unicode", "작업을 계속하세요 ✳", true},
		{"a slash inside", "look at /tmp/x", true},
		{"leading space before a slash", " /help", true},
		{"999 characters", strings.Repeat("a", 999), true},
		{"a newline", "one\ntwo", false},
		{"a carriage return", "one\rtwo", false},
		{"a trailing newline", "one\n", false},
		{"a tab", "a\tb", false},
		{"C1 CSI (U+009B)", "a\u009b[2Jb", false},
		{"C1 NEL (U+0085)", "a\u0085b", false},
		{"a raw CSI byte", "a\x9b[2Jb", false},
		{"escape", "a\x1b[Ab", false},
		{"ctrl-c", "a\x03", false},
		{"delete", "a\x7f", false},
		{"NUL", "a\x00", false},
		{"a leading slash", "/clear", false},
		{"a leading dollar", "$skill", false},
		{"1000 characters", strings.Repeat("a", 1000), false},
		{"far too long", strings.Repeat("ab ", 1000), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkLine(tt.in)
			if tt.ok {
				if err != nil {
					t.Errorf("checkLine: %v", err)
				}
				return
			}
			wantKind(t, err, KindUsage)
			var oe *Error
			errors.As(err, &oe)
			if oe.Hint == "" {
				t.Errorf("refusal %q has no hint", oe.Message)
			}
		})
	}
}
