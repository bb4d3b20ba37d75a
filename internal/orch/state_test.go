package orch

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/testutil/faketmux"
	"github.com/sophonz/st/internal/tmux"
)

// step is one hook event, or with done set one st worker done, and the
// state it leaves the worker in.
type step struct {
	event string
	kv    []any
	done  string
	want  api.State
}

func ev(event string, want api.State, kv ...any) step { return step{event: event, kv: kv, want: want} }
func done(summary string, want api.State) step        { return step{done: summary, want: want} }

var noTasks = []any{}

// stateCases are the state machine's cases: each a worker in state from,
// the steps (hook events and reports) and what they leave.
const stateTask = "Your task is in the file /tmp/tasks/w1.md - read it and do it."

var stateBg = []any{map[string]any{"id": "a1", "type": "subagent", "status": "running"}}

var stateCases = []struct {
	name         string
	from         api.State
	steps        []step
	wantLast     string
	wantSummary  string
	wantReported bool
}{
	{
		name:  "a prompt starts the turn",
		steps: []step{ev("UserPromptSubmit", api.Working, "prompt", stateTask)},
	},
	{
		name: "session start alone changes nothing",
		steps: []step{
			ev("SessionStart", api.Starting, "source", "startup"),
			ev("UserPromptSubmit", api.Working, "prompt", stateTask),
		},
	},
	{
		name: "a permission request waits",
		steps: []step{
			ev("UserPromptSubmit", api.Working, "prompt", stateTask),
			ev("PreToolUse", api.Working, "tool_name", "Bash"),
			ev("PermissionRequest", api.Waiting, "tool_name", "Bash"),
		},
	},
	{
		name: "the tool runs once the prompt is answered",
		steps: []step{
			ev("UserPromptSubmit", api.Working, "prompt", stateTask),
			ev("PermissionRequest", api.Waiting, "tool_name", "Bash"),
			ev("PostToolUse", api.Working, "tool_name", "Bash"),
		},
	},
	{
		name: "a permission notification waits",
		steps: []step{
			ev("UserPromptSubmit", api.Working, "prompt", stateTask),
			ev("Notification", api.Waiting, "notification_type", "permission_prompt", "message", "Claude needs your permission"),
		},
	},
	{
		name: "a stop with no report is idle",
		steps: []step{
			ev("UserPromptSubmit", api.Working, "prompt", stateTask),
			ev("Stop", api.Idle, "last_assistant_message", "I could not find the file.", "background_tasks", noTasks),
			ev("Notification", api.Idle, "notification_type", "idle_prompt"),
		},
		wantLast: "I could not find the file.",
	},
	{
		name: "a report then a stop is done, with the last answer",
		steps: []step{
			ev("UserPromptSubmit", api.Working, "prompt", stateTask),
			ev("PostToolUse", api.Working, "tool_name", "Bash"),
			done("added the test; go test passes", api.Done),
			ev("Stop", api.Done, "last_assistant_message", "Reported.", "background_tasks", noTasks),
		},
		wantLast: "Reported.", wantSummary: "added the test; go test passes", wantReported: true,
	},
	{
		name: "tools after the report keep it done",
		steps: []step{
			ev("UserPromptSubmit", api.Working, "prompt", stateTask),
			done("did it", api.Done),
			ev("PreToolUse", api.Done, "tool_name", "Bash"),
			ev("PostToolUse", api.Done, "tool_name", "Bash"),
			ev("Stop", api.Done, "last_assistant_message", "ok"),
		},
		wantLast: "ok", wantSummary: "did it", wantReported: true,
	},
	{
		name: "a report while waiting is done at the stop",
		steps: []step{
			ev("UserPromptSubmit", api.Working, "prompt", stateTask),
			ev("PermissionRequest", api.Waiting, "tool_name", "Bash"),
			done("did it", api.Done),
			ev("Stop", api.Done, "last_assistant_message", "bye"),
		},
		wantLast: "bye", wantSummary: "did it", wantReported: true,
	},
	{
		name: "a stop with background tasks does not end the turn",
		steps: []step{
			ev("UserPromptSubmit", api.Working, "prompt", stateTask),
			ev("Stop", api.Working, "last_assistant_message", "Waiting for the subagent.", "background_tasks", stateBg),
			ev("SubagentStop", api.Working, "agent_id", "a1", "agent_type", "claude", "background_tasks", noTasks),
			ev("UserPromptSubmit", api.Working, "prompt", "<task-notification>\n<task-id>a1</task-id>"),
			ev("Stop", api.Idle, "last_assistant_message", "The subagent finished.", "background_tasks", noTasks),
		},
		wantLast: "The subagent finished.",
	},
	{
		// Claude's own turn after a background subagent ends is no new
		// prompt: a report made before it stands.
		name: "a report stands through the turn a subagent's end starts",
		steps: []step{
			ev("UserPromptSubmit", api.Working, "prompt", stateTask),
			done("started a subagent", api.Done),
			ev("Stop", api.Done, "last_assistant_message", "It runs.", "background_tasks", stateBg),
			ev("SubagentStop", api.Done, "agent_id", "a1", "agent_type", "claude", "background_tasks", noTasks),
			ev("UserPromptSubmit", api.Done, "prompt", "<task-notification>\n<task-id>a1</task-id>"),
			ev("Stop", api.Done, "last_assistant_message", "The subagent finished.", "background_tasks", noTasks),
		},
		wantLast: "The subagent finished.", wantSummary: "started a subagent", wantReported: true,
	},
	{
		name: "a stop with background tasks while waiting is working",
		steps: []step{
			ev("UserPromptSubmit", api.Working, "prompt", stateTask),
			ev("PermissionRequest", api.Waiting, "tool_name", "Bash"),
			ev("Stop", api.Working, "background_tasks", stateBg),
		},
	},
	{
		name: "a stop failure ends the turn with the error",
		steps: []step{
			ev("UserPromptSubmit", api.Working, "prompt", stateTask),
			ev("StopFailure", api.Idle, "error", "unknown", "last_assistant_message", "API Error: 400 fake server: forced 400"),
		},
		wantLast: "API Error: 400 fake server: forced 400",
	},
	{
		name: "a stop failure with only an error",
		steps: []step{
			ev("UserPromptSubmit", api.Working, "prompt", stateTask),
			ev("StopFailure", api.Idle, "error", "rate_limit"),
		},
		wantLast: "rate_limit",
	},
	{
		// The watcher decides from tmux whether the pane closed (gone)
		// or the whole server went down (st brings it back).
		name: "session end alone leaves the state to the watcher",
		steps: []step{
			ev("UserPromptSubmit", api.Working, "prompt", stateTask),
			ev("SessionEnd", api.Working, "reason", "other"),
		},
	},
	{
		name: "a new prompt after done works again",
		steps: []step{
			ev("UserPromptSubmit", api.Working, "prompt", stateTask),
			done("first part", api.Done),
			ev("Stop", api.Done, "last_assistant_message", "first"),
			ev("UserPromptSubmit", api.Working, "prompt", "now the second part"),
			ev("Stop", api.Idle, "last_assistant_message", "second"),
		},
		wantLast: "second", wantSummary: "first part",
	},
	{
		name: "a failed start may still report",
		from: api.Failed,
		steps: []step{
			done("it started after all", api.Done),
		},
		wantSummary: "it started after all", wantReported: true,
	},
	{
		name: "an idle worker's next prompt works",
		from: api.Idle,
		steps: []step{
			ev("UserPromptSubmit", api.Working, "prompt", "go on"),
		},
	},
	{
		name: "unknown events change nothing",
		steps: []step{
			ev("UserPromptSubmit", api.Working, "prompt", stateTask),
			ev("PreCompact", api.Working),
			ev("SubagentStart", api.Working, "agent_id", "a2"),
			ev("NoSuchEvent", api.Working),
		},
	},
}

func TestStateMachine(t *testing.T) {
	tests := stateCases
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			from := tt.from
			if from == "" {
				from = api.Starting
			}
			h := newHarness(t, from, nil)
			for i, s := range tt.steps {
				if s.done != "" {
					v, err := h.m.Done(context.Background(), api.DoneRequest{Pane: workerID, Summary: s.done})
					if err != nil {
						t.Fatalf("step %d: done: %v", i, err)
					}
					if v.State != api.Done {
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
	h := newHarness(t, api.Starting, nil)
	h.hook("UserPromptSubmit", "prompt", "go")
	if got := h.worker().AgentSession; got != agentSes {
		t.Errorf("agent session %q, want %q", got, agentSes)
	}
	testutil.WaitFor(t, 5*time.Second, func() (bool, string) {
		a, s := h.tm.Option(workerID, "@st_agent"), h.tm.Option(workerID, "@st_agent_session")
		return a == "sim" && s == agentSes, "pane options @st_agent=" + a + " @st_agent_session=" + s
	})
	if got := h.m.AgentPanes()[workerID]; got != "sim" {
		t.Errorf("AgentPanes()[%s] = %q, want sim", workerID, got)
	}
}

func TestHookRefusals(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	ctx := context.Background()
	tests := []struct {
		name string
		req  api.HookRequest
		kind string // "" = accepted
	}{
		{"unknown agent", api.HookRequest{Agent: "nosuch", Event: "Stop", Pane: workerID, Payload: payload("Stop")}, api.KindUsage},
		{"payload not JSON", api.HookRequest{Agent: "sim", Event: "Stop", Pane: workerID, Payload: []byte("Stop")}, api.KindUsage},
		{"payload empty", api.HookRequest{Agent: "sim", Event: "Stop", Pane: workerID}, api.KindUsage},
		{"payload an array", api.HookRequest{Agent: "sim", Event: "Stop", Pane: workerID, Payload: []byte(`[{}]`)}, api.KindUsage},
		{"agent outside tmux", api.HookRequest{Agent: "sim", Event: "Stop", Pane: "", Payload: payload("Stop")}, ""},
		{"pane not an id", api.HookRequest{Agent: "sim", Event: "Stop", Pane: "main:1", Payload: payload("Stop")}, ""},
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
			if got := h.worker().State; got != api.Working {
				t.Errorf("worker state %s after a refused or foreign hook, want working", got)
			}
		})
	}
}

func TestDoneRefusals(t *testing.T) {
	tests := []struct {
		name    string
		from    api.State
		pane    string
		summary string
		kind    string
	}{
		{"a pane that is not a worker", api.Working, shell, "did it", api.KindNotFound},
		{"the coordinator", api.Working, coord, "did it", api.KindNotFound},
		{"no pane", api.Working, "", "did it", api.KindNotFound},
		{"a pane that does not exist", api.Working, "%77", "did it", api.KindNotFound},
		{"a gone worker", api.Gone, workerID, "did it", api.KindNotFound},
		{"an empty summary", api.Working, workerID, "", api.KindUsage},
		{"a blank summary", api.Working, workerID, " \n\t ", api.KindUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.from, nil)
			before := h.onDisk()
			v, err := h.m.Done(context.Background(), api.DoneRequest{Pane: tt.pane, Summary: tt.summary})
			if err == nil {
				t.Fatalf("Done = %+v, want a refusal", v)
			}
			wantKind(t, err, tt.kind)
			var oe *api.Error
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
	h := newHarness(t, api.Working, nil)
	v, err := h.m.Done(context.Background(), api.DoneRequest{Pane: workerID, Summary: "fixed the bug; go test ./... passes"})
	if err != nil {
		t.Fatal(err)
	}
	if v.State != api.Done || v.Run != testRun || v.ReportedAt == nil {
		t.Errorf("Done returned %+v", v)
	}
	d := h.onDisk()
	if d.State != api.Done || d.Summary != "fixed the bug; go test ./... passes" || !d.Reported || d.ReportedAt == nil || d.Told {
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

func TestLoadReconcilesPanes(t *testing.T) {
	tests := []struct {
		name string
		edit func(*faketmux.Server)
		want api.State
	}{
		{"pane still there", nil, api.Working},
		{"pane closed", func(f *faketmux.Server) { f.Panes = []*faketmux.Pane{f.Find(coord), f.Find(shell)} }, api.Gone},
		{"pane id reused by another run", func(f *faketmux.Server) { f.Find(workerID).Opts["@st_run"] = "run-other" }, api.Gone},
		{"pane id reused outside st", func(f *faketmux.Server) { f.Find(workerID).Opts = map[string]string{} }, api.Gone},
		{"pane dead", func(f *faketmux.Server) { f.Find(workerID).Dead = true }, api.Gone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, api.Working, tt.edit)
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
	h := newHarness(t, api.Working, nil)
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
	h := newHarness(t, api.Working, nil)
	// The coordinator is an agent in a turn, so the notice waits.
	if err := h.hookFrom(coord, "UserPromptSubmit", "prompt", "start a worker"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.m.Done(context.Background(), api.DoneRequest{Pane: workerID, Summary: "done"}); err != nil {
		t.Fatal(err)
	}
	h.hook("Stop", "last_assistant_message", "bye")
	h.m.Close()
	goleak.VerifyNone(t, ignore)
}

// TestDoneTwiceKeepsBothSummaries: a second st worker done in one turn
// adds to the first report rather than putting it out of sight, on disk
// too; the same summary again changes nothing.
func TestDoneTwiceKeepsBothSummaries(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	for _, s := range []string{"first: fixed the bug", "second: and the docs", "second: and the docs"} {
		if _, err := h.m.Done(context.Background(), api.DoneRequest{Pane: workerID, Summary: s}); err != nil {
			t.Fatal(err)
		}
	}
	want := "first: fixed the bug\n\nReported again: second: and the docs"
	if w := h.worker(); w.Summary != want {
		t.Errorf("summary after two reports = %q, want %q", w.Summary, want)
	}
	if d := h.onDisk(); d.Summary != want {
		t.Errorf("run.json's summary after two reports = %q, want %q", d.Summary, want)
	}
}

// geminiHook sends one of Gemini CLI's hook events from the worker's pane.
func (h *harness) geminiHook(event string, kv ...any) {
	h.t.Helper()
	p := map[string]any{"session_id": "8f1c2d3e-0000-4000-8000-000000000001", "transcript_path": "/tmp/chats/session.jsonl",
		"cwd": "/tmp", "hook_event_name": event}
	for i := 0; i+1 < len(kv); i += 2 {
		p[kv[i].(string)] = kv[i+1]
	}
	b, err := json.Marshal(p)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.m.Hook(context.Background(), api.HookRequest{Agent: "gemini", Event: event, Pane: workerID, Payload: b}); err != nil {
		h.t.Fatalf("hook %s: %v", event, err)
	}
}

// A Gemini worker that reported, then runs a turn no one asked for (its
// BeforeAgent carries no prompt: a request of its own, a tool's result,
// fires it again once its turn's hook state is gone), stays done with its
// report: no "ended its turn without a report". A prompt typed into it
// afterwards is new work, and makes a new report due.
func TestATurnAfterTheReportWithNoNewPromptKeepsItDone(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	h.geminiHook("BeforeAgent", "prompt", "Your task is in the file /tmp/tasks/w1.md")
	h.geminiHook("AfterAgent", "prompt_response", "working on it")
	if got := h.worker().State; got != api.Idle {
		t.Fatalf("after its turn: %s, want idle", got)
	}
	if _, err := h.m.Done(context.Background(), api.DoneRequest{Pane: workerID, Summary: "did it"}); err != nil {
		t.Fatal(err)
	}
	h.geminiHook("BeforeAgent", "prompt", "")
	if got := h.worker().State; got != api.Done {
		t.Fatalf("a turn with no prompt after the report: %s, want done", got)
	}
	h.geminiHook("AfterAgent", "prompt_response", "all done")
	w := h.worker()
	if w.State != api.Done || !w.Reported || w.Summary != "did it" {
		t.Fatalf("after that turn's end: %+v, want done with its report", w)
	}
	for _, a := range h.openItems() {
		if a.Kind == api.AttnNoReport {
			t.Fatalf("a no-report item after a report: %+v", a)
		}
	}
	// A new prompt is new work.
	h.geminiHook("BeforeAgent", "prompt", "now the docs")
	h.geminiHook("AfterAgent", "prompt_response", "docs?")
	if got := h.worker().State; got != api.Idle {
		t.Fatalf("a new prompt's turn with no report: %s, want idle", got)
	}
}
