package orch

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/testutil/faketmux"
)

// The hooks below follow what Claude Code 2.1.332 fired with agent teams
// on (docs/agent-teams.md): the lead is worker %2 (conversation agentSes,
// team session-3f1c0a52), its teammates alpha and beta run in panes %3
// and %4 of the worker's window, with their own conversations.
const (
	teamName = "session-3f1c0a52"
	alphaSes = "eb7b2902-47fe-4a90-8456-dc4c6e1277ef"
	betaSes  = "9edc2de6-c251-42fb-b82c-cce2309ce673"
	mateA    = "%3"
	mateB    = "%4"
)

// teamHarness is newHarness with the teammates' panes split off the
// worker's window.
func teamHarness(t *testing.T, state api.State) *harness {
	return newHarness(t, state, func(f *faketmux.Server) {
		for _, id := range []string{mateA, mateB} {
			f.Panes = append(f.Panes, &faketmux.Pane{ID: id, Window: "@2", Index: "1", Session: "$0", SessName: "main", WinName: "w1",
				Cmd: "claude.exe", Path: "/tmp", PID: 30, Opts: map[string]string{}})
		}
	})
}

// claudeHook hands st a Claude hook from pane, as st hook claude does;
// flags is the teammate's command line, for a teammate's own hooks.
func (h *harness) claudeHook(pane string, flags *agent.Teammate, event string, kv ...any) {
	h.t.Helper()
	if _, err := h.m.Hook(context.Background(), api.HookRequest{Agent: "claude", Event: event, Pane: pane, Payload: payload(event, kv...), Teammate: (*api.TeammateID)(flags)}); err != nil {
		h.t.Fatalf("hook %s from %s: %v", event, pane, err)
	}
}

func spawned(name, pane string) []any {
	return []any{"tool_name", "Agent", "tool_input", map[string]any{"name": name, "prompt": "Your task is in the file /tmp/" + name + ".md"},
		"tool_response", map[string]any{"status": "teammate_spawned", "name": name, "team_name": teamName, "tmux_pane_id": pane,
			"agent_id": name + "@" + teamName, "color": "blue"}}
}

func mates(h *harness, lead string) map[string]api.Teammate {
	h.t.Helper()
	vs, err := h.m.List(context.Background(), api.IDRequest{All: true})
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]api.Teammate{}
	for _, v := range vs {
		if v.ID == lead {
			for _, mt := range v.Teammates {
				out[mt.Name] = mt
			}
		}
	}
	return out
}

func TestTeammatesInPanesUnderAWorker(t *testing.T) {
	h := teamHarness(t, api.Working)
	alpha := &agent.Teammate{Name: "alpha", Team: teamName, LeadSession: agentSes, Color: "blue"}
	beta := &agent.Teammate{Name: "beta", Team: teamName, LeadSession: agentSes, Color: "green"}

	// The lead spawns alpha; beta is known only from its own hooks.
	h.claudeHook(workerID, nil, "PostToolUse", spawned("alpha", mateA)...)
	// st ls counts alpha's pane before any hook of alpha's own.
	if k := h.m.AgentPanes()[mateA]; k != "claude teammate" {
		t.Errorf("AgentPanes()[%s] right after the spawn = %q", mateA, k)
	}
	h.claudeHook(mateA, alpha, "SessionStart", "session_id", alphaSes, "source", "startup")
	h.claudeHook(mateB, beta, "SessionStart", "session_id", betaSes, "source", "startup")
	got := mates(h, workerID)
	if len(got) != 2 || got["alpha"].Pane != mateA || got["beta"].Pane != mateB || got["alpha"].State != "working" ||
		got["beta"].State != "working" || got["alpha"].Session != alphaSes || got["beta"].Color != "green" || got["alpha"].Started.IsZero() {
		t.Fatalf("teammates under the lead: %+v", got)
	}

	// The lead's Stop lists its live teammates; its turn is over all the same.
	mt := []any{map[string]any{"id": "tc5", "type": "teammate", "status": "running", "description": "teammate alpha"},
		map[string]any{"id": "tqz", "type": "teammate", "status": "running", "description": "teammate beta"}}
	h.claudeHook(workerID, nil, "Stop", "last_assistant_message", "team started", "background_tasks", mt)
	if w := h.worker(); w.State != api.Idle {
		t.Errorf("the lead after its Stop with two idle-or-busy teammates: %s, want idle", w.State)
	}

	// A teammate's turn: tools, Stop, TeammateIdle. No UserPromptSubmit.
	h.claudeHook(mateA, alpha, "PreToolUse", "session_id", alphaSes, "tool_name", "Bash", "tool_input", map[string]any{"command": "ls"})
	h.claudeHook(mateA, alpha, "Stop", "session_id", alphaSes, "last_assistant_message", "alpha finished", "background_tasks", []any{})
	if s := mates(h, workerID)["alpha"].State; s != "idle" {
		t.Errorf("alpha after its Stop: %s", s)
	}
	h.claudeHook(mateA, alpha, "TeammateIdle", "session_id", alphaSes, "teammate_name", "alpha", "team_name", teamName)
	h.claudeHook(mateB, nil, "TeammateIdle", "session_id", betaSes, "teammate_name", "beta", "team_name", teamName)
	got = mates(h, workerID)
	if got["alpha"].State != "idle" || got["beta"].State != "idle" {
		t.Errorf("after TeammateIdle: %+v", got)
	}
	if w := h.worker(); w.State != api.Idle {
		t.Errorf("the teammates' hooks moved the lead to %s", w.State)
	}
	// The lead sends alpha a message: alpha takes a turn.
	h.claudeHook(workerID, nil, "PostToolUse", "tool_name", "SendMessage", "tool_input", map[string]any{"to": "alpha", "message": "again"})
	if s := mates(h, workerID)["alpha"].State; s != "working" {
		t.Errorf("alpha after the lead's message: %s", s)
	}

	teammatesShownAndAdopted(t, h, alpha)
}

// teammatesShownAndAdopted: st ls and the graph show the teammates under
// their lead; only a person adopts one; a closed pane ends one.
func teammatesShownAndAdopted(t *testing.T, h *harness, alpha *agent.Teammate) {
	t.Helper()
	// st ls counts a teammate's pane as an agent, and says it is one.
	if k := h.m.AgentPanes()[mateA]; k != "claude teammate" {
		t.Errorf("AgentPanes()[%s] = %q", mateA, k)
	}
	// The graph draws them under the lead, not as agents of their own.
	h.m.reconcile(context.Background())
	for _, g := range h.m.Graph() {
		if g.Pane == mateA || g.Pane == mateB {
			t.Errorf("a teammate is an agent of its own in the graph: %+v", g)
		}
		if g.Pane == workerID && len(g.Teammates) != 2 {
			t.Errorf("the lead in the graph: %+v", g)
		}
	}

	// st never adopts a teammate unless a person drops it on a coordinator.
	_, err := h.m.Adopt(context.Background(), api.IDRequest{Pane: coord, ID: mateA})
	wantKind(t, err, api.KindConflict)
	if !strings.Contains(err.Error(), "teammate alpha") || !strings.Contains(err.Error(), "drops its card") {
		t.Errorf("refusal: %v", err)
	}
	v, err := h.m.AdoptDropped(context.Background(), api.IDRequest{Pane: coord, ID: mateB})
	if err != nil || v.ID != mateB {
		t.Fatalf("a person's drop: %+v %v", v, err)
	}
	// Under its own name, not its lead's window's (w1, made w1-2): issue
	// 25, item 5.
	if v.Name != "beta" {
		t.Errorf("the dropped teammate is worker %q, want beta", v.Name)
	}
	if got := mates(h, workerID); len(got) != 1 || got["alpha"].Pane != mateA {
		t.Errorf("after beta became a worker, the lead's teammates are %+v", got)
	}

	// A teammate's pane that closes takes it out of the team.
	h.claudeHook(mateA, alpha, "SessionEnd", "session_id", alphaSes, "reason", "other")
	if got := mates(h, workerID); len(got) != 0 {
		t.Errorf("after alpha's SessionEnd: %+v", got)
	}
}

func TestInProcessTeammatesAndSubagents(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	// The lead is an agent in no run, in the shell's pane; alpha runs in its process.
	h.claudeHook(shell, nil, "SessionStart", "source", "startup")
	h.claudeHook(shell, nil, "UserPromptSubmit", "prompt", "TEAMMATE: alpha ...")
	// Hooks run side by side: alpha's SubagentStart may reach st before
	// the spawn's PostToolUse.
	h.claudeHook(shell, nil, "SubagentStart", "agent_id", "aalpha-68e8d13170b687ef", "agent_type", "alpha")
	h.claudeHook(shell, nil, "PostToolUse", "tool_name", "Agent", "tool_response", map[string]any{"status": "teammate_spawned",
		"name": "alpha", "team_name": teamName, "tmux_pane_id": "in-process", "agent_id": "aalpha-68e8d13170b687ef", "color": "blue"})
	h.claudeHook(shell, nil, "Stop", "last_assistant_message", "team started",
		"background_tasks", []any{map[string]any{"id": "tpi", "type": "teammate", "status": "running"}})
	// alpha's tool calls fire in the lead's pane, with its agent_id.
	h.claudeHook(shell, nil, "PreToolUse", "agent_id", "aalpha-68e8d13170b687ef", "agent_type", "alpha", "tool_name", "Bash")
	// A subagent of the lead, also in the lead's pane.
	h.claudeHook(shell, nil, "SubagentStart", "agent_id", "a2cbef72153bff3a8", "agent_type", "general-purpose")
	h.claudeHook(shell, nil, "PreToolUse", "agent_id", "a2cbef72153bff3a8", "agent_type", "general-purpose", "tool_name", "Bash")

	h.m.reconcile(context.Background())
	lead := func() api.GraphAgent {
		for _, g := range h.m.Graph() {
			if g.Pane == shell {
				return g
			}
		}
		t.Fatalf("no graph entry for the lead %s: %+v", shell, h.m.Graph())
		return api.GraphAgent{}
	}
	g := lead()
	if g.State != "idle" {
		t.Errorf("the lead after its Stop, with its teammate and subagent at work: %s", g.State)
	}
	if len(g.Teammates) != 1 || g.Teammates[0].Name != "alpha" || !g.Teammates[0].InProcess || g.Teammates[0].Pane != "" || g.Teammates[0].State != "working" {
		t.Errorf("in-process teammate: %+v", g.Teammates)
	}
	if len(g.Subagents) != 1 || g.Subagents[0].ID != "a2cbef72153bff3a8" || g.Subagents[0].Type != "general-purpose" || g.Subagents[0].State != "working" {
		t.Errorf("subagents (alpha must not be one): %+v", g.Subagents)
	}
	h.claudeHook(shell, nil, "SubagentStop", "agent_id", "aalpha-68e8d13170b687ef", "agent_type", "alpha")
	h.claudeHook(shell, nil, "TeammateIdle", "teammate_name", "alpha", "team_name", teamName)
	h.claudeHook(shell, nil, "SubagentStop", "agent_id", "a2cbef72153bff3a8", "agent_type", "general-purpose")
	g = lead()
	if len(g.Teammates) != 1 || g.Teammates[0].State != "idle" || len(g.Subagents) != 1 || g.Subagents[0].State != "done" {
		t.Errorf("after their ends: teammates %+v, subagents %+v", g.Teammates, g.Subagents)
	}
	// The lead stops its teammate: its Stop lists none.
	h.claudeHook(shell, nil, "Stop", "last_assistant_message", "stopped", "background_tasks", []any{})
	if g = lead(); len(g.Teammates) != 0 {
		t.Errorf("after a Stop listing no teammate: %+v", g.Teammates)
	}
}

// A subagent's tool calls in a worker's pane do not make the worker work
// again after its own turn ended; a subagent of the coordinator shows in
// st orch show.
func TestSubagentCallsLeaveTheTurnAlone(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	h.claudeHook(workerID, nil, "SubagentStart", "agent_id", "a1", "agent_type", "Explore")
	h.claudeHook(workerID, nil, "Stop", "last_assistant_message", "waiting for it",
		"background_tasks", []any{map[string]any{"id": "a1", "type": "subagent", "status": "running"}})
	if w := h.worker(); w.State != api.Working {
		t.Fatalf("a Stop with a subagent running: %s", w.State)
	}
	h.claudeHook(workerID, nil, "Stop", "last_assistant_message", "done for now", "background_tasks", []any{})
	h.claudeHook(workerID, nil, "PostToolUse", "agent_id", "a1", "agent_type", "Explore", "tool_name", "Read")
	if w := h.worker(); w.State != api.Idle {
		t.Errorf("a subagent's tool call moved the idle worker to %s", w.State)
	}
	vs, _ := h.m.List(context.Background(), api.IDRequest{All: true})
	if len(vs) != 1 || len(vs[0].Subagents) != 1 || vs[0].Subagents[0].Type != "Explore" || vs[0].Subagents[0].Started.IsZero() {
		t.Errorf("worker list: %+v", vs)
	}

	h.claudeHook(coord, nil, "SubagentStart", "session_id", "c0ffee00-0000-4000-8000-000000000001", "agent_id", "a9", "agent_type", "general-purpose")
	rv, err := h.m.Show(context.Background(), coord, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(rv.Subagents) != 1 || rv.Subagents[0].ID != "a9" || len(rv.Views) != 1 || len(rv.Views[0].Subagents) != 1 {
		t.Errorf("orch show: coordinator's subagents %+v, worker views %+v", rv.Subagents, rv.Views)
	}
}

// Hooks decide how much st keeps: past subagents of a pane are few.
func TestFinishedSubagentsAreBounded(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	for i := range 3 * maxDoneSubs {
		id := "a" + strings.Repeat("x", i%5) + time.Duration(i).String()
		h.claudeHook(workerID, nil, "SubagentStart", "agent_id", id, "agent_type", "Explore")
		h.claudeHook(workerID, nil, "SubagentStop", "agent_id", id, "agent_type", "Explore")
	}
	vs, _ := h.m.List(context.Background(), api.IDRequest{All: true})
	if n := len(vs[0].Subagents); n > maxDoneSubs+1 {
		t.Errorf("%d subagents kept", n)
	}
}

// A teammate's pane gets none of st's options: after a tmux restart st
// does not relaunch it as an agent of its own.
func TestTeammatePaneKeepsNoAgentOption(t *testing.T) {
	h := teamHarness(t, api.Working)
	alpha := &agent.Teammate{Name: "alpha", Team: teamName, LeadSession: agentSes}
	h.claudeHook(workerID, nil, "UserPromptSubmit", "prompt", "go")
	h.claudeHook(mateA, alpha, "SessionStart", "session_id", alphaSes)
	h.claudeHook(mateB, nil, "SessionStart", "session_id", betaSes) // no teammate: a Claude of its own
	testutil.WaitFor(t, 5*time.Second, func() (bool, string) {
		return h.tm.Option(mateB, "@st_agent") == "claude" && h.tm.Option(workerID, "@st_agent") == "claude", "options of the other panes"
	})
	if o := h.tm.Option(mateA, "@st_agent"); o != "" {
		t.Errorf("the teammate's pane has @st_agent=%q", o)
	}
}

// A teammate's pane that is gone from tmux's list goes from its team, even
// when no SessionEnd came; one heard of after the list was made stays.
func TestClosedTeammatePaneIsDropped(t *testing.T) {
	h := teamHarness(t, api.Working)
	h.claudeHook(workerID, nil, "PostToolUse", spawned("alpha", mateA)...)
	h.claudeHook(workerID, nil, "PostToolUse", spawned("beta", mateB)...)
	h.tm.Lock()
	h.tm.Panes = h.tm.Panes[:len(h.tm.Panes)-1] // beta's pane closes
	h.tm.Unlock()
	listed := h.m.cfg.Now()
	panes, err := h.m.cfg.Tmux.ListPanes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h.m.reconcilePanes(panes, listed, 0)
	if got := mates(h, workerID); len(got) != 1 || got["alpha"].Pane != mateA {
		t.Errorf("after beta's pane closed: %+v", got)
	}
	// A list made before a teammate was heard of does not judge it.
	h.claudeHook(workerID, nil, "PostToolUse", spawned("beta", mateB)...)
	h.m.reconcilePanes(panes, listed.Add(-time.Second), 0)
	h.m.reg.mu.Lock()
	got := h.m.facts.teammatesOf(workerID, h.m.reg.workerAtLocked)
	h.m.reg.mu.Unlock()
	if len(got) != 2 {
		t.Errorf("a stale list dropped a teammate: %+v", got)
	}
}

// What reaches st's socket is checked there: a teammate's identity or a
// subagent's type that would act on the terminal of whoever runs st worker
// list is not kept.
func TestTeamInputIsChecked(t *testing.T) {
	h := teamHarness(t, api.Working)
	h.claudeHook(workerID, nil, "UserPromptSubmit", "prompt", "go")
	h.claudeHook(mateA, &agent.Teammate{Name: "al\x1b]0;pwned\x07", Team: teamName, LeadSession: agentSes}, "SessionStart", "session_id", alphaSes)
	h.claudeHook(mateB, &agent.Teammate{Name: "beta", Team: teamName, LeadSession: agentSes, Color: "\x1b[31m"}, "SessionStart", "session_id", betaSes)
	h.claudeHook(workerID, nil, "SubagentStart", "agent_id", "a1", "agent_type", "Explore\x1b[2J")
	vs, _ := h.m.List(context.Background(), api.IDRequest{All: true})
	if len(vs) != 1 || len(vs[0].Teammates) != 0 || len(vs[0].Subagents) != 0 {
		t.Errorf("kept: %+v", vs)
	}
}
