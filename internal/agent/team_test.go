package agent

import (
	"reflect"
	"strings"
	"testing"
)

// The payloads below are cut from what Claude Code 2.1.332 sent st's
// hooks with CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1 (docs/agent-teams.md).
const teamBase = `"session_id":"0702c391-a443-4834-b5f7-d2e1fad9f3cd","transcript_path":"/h/.claude/projects/-w/0702c391.jsonl","cwd":"/w"`

func TestMapTeamEvents(t *testing.T) {
	cases := []struct {
		name, event, payload string
		want                 Event
	}{
		{"teammate idle", "TeammateIdle",
			`{` + teamBase + `,"permission_mode":"default","hook_event_name":"TeammateIdle","teammate_name":"alpha","team_name":"session-0702c391"}`,
			Event{Kind: EvTeammateIdle, Teammate: &Teammate{Name: "alpha", Team: "session-0702c391"}}},
		{"teammate idle with a bad name", "TeammateIdle",
			`{` + teamBase + `,"teammate_name":"al pha; rm -rf","team_name":"session-0702c391"}`,
			Event{Kind: EvIgnore}},
		{"teammate idle with no team", "TeammateIdle", `{` + teamBase + `,"teammate_name":"alpha"}`, Event{Kind: EvIgnore}},
		{"a teammate spawned in a pane", "PostToolUse",
			`{` + teamBase + `,"hook_event_name":"PostToolUse","tool_name":"Agent","tool_input":{"description":"teammate alpha","prompt":"Your task is in the file /w/alpha.md","name":"alpha"},` +
				`"tool_response":{"status":"teammate_spawned","prompt":"Your task is in the file /w/alpha.md","agentId":"alpha@session-0702c391","teammate_id":"alpha@session-0702c391","agent_id":"alpha@session-0702c391","model":"claude-opus-5-5","name":"alpha","color":"blue","tmux_session_name":"current","tmux_window_name":"current","tmux_pane_id":"%1","team_name":"session-0702c391","is_splitpane":true,"plan_mode_required":false}}`,
			Event{Kind: EvTool, Tool: "Agent", Teammate: &Teammate{Name: "alpha", Team: "session-0702c391", Pane: "%1", AgentID: "alpha@session-0702c391", Color: "blue"}}},
		{"a teammate spawned in-process", "PostToolUse",
			`{` + teamBase + `,"tool_name":"Agent","tool_input":{"name":"alpha"},` +
				`"tool_response":{"status":"teammate_spawned","agentId":"aalpha-68e8d13170b687ef","teammate_id":"alpha@session-6ee62640","agent_id":"aalpha-68e8d13170b687ef","name":"alpha","color":"blue","tmux_session_name":"in-process","tmux_window_name":"in-process","tmux_pane_id":"in-process","team_name":"session-6ee62640","is_splitpane":false}}`,
			Event{Kind: EvTool, Tool: "Agent", Teammate: &Teammate{Name: "alpha", Team: "session-6ee62640", InProcess: true, AgentID: "aalpha-68e8d13170b687ef", Color: "blue"}}},
		{"a subagent launched is no teammate", "PostToolUse",
			`{` + teamBase + `,"tool_name":"Agent","tool_input":{"prompt":"x"},"tool_response":{"isAsync":true,"status":"async_launched","agentId":"a2cbef72153bff3a8"}}`,
			Event{Kind: EvTool, Tool: "Agent"}},
		{"a spawn with a pane that is no pane id", "PostToolUse",
			`{` + teamBase + `,"tool_name":"Agent","tool_response":{"status":"teammate_spawned","name":"alpha","team_name":"session-1","tmux_pane_id":"%1; kill","color":"Blue!"}}`,
			Event{Kind: EvTool, Tool: "Agent", Teammate: &Teammate{Name: "alpha", Team: "session-1"}}},
		{"the PreToolUse of a spawn tells nothing yet", "PreToolUse",
			`{` + teamBase + `,"tool_name":"Agent","tool_input":{"name":"alpha"},"tool_response":{"status":"teammate_spawned","name":"alpha","team_name":"session-1"}}`,
			Event{Kind: EvTool, Tool: "Agent", Before: true}},
		{"a message to a teammate", "PostToolUse",
			`{` + teamBase + `,"tool_name":"SendMessage","tool_input":{"to":"alpha","summary":"again","message":"Your task is in the file /w/again.md"},"tool_response":{}}`,
			Event{Kind: EvTool, Tool: "SendMessage", MessageTo: "alpha"}},
		{"a message to main is to no teammate", "PostToolUse",
			`{` + teamBase + `,"tool_name":"SendMessage","tool_input":{"to":"worker [3fa9c1]"}}`,
			Event{Kind: EvTool, Tool: "SendMessage"}},
		{"a subagent's tool call in its lead's pane", "PreToolUse",
			`{` + teamBase + `,"agent_id":"a2cbef72153bff3a8","agent_type":"general-purpose","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"cat /w/sub.md"}}`,
			Event{Kind: EvTool, Tool: "Bash", Before: true, SubagentID: "a2cbef72153bff3a8", SubagentType: "general-purpose"}},
		{"a lead's stop with idle teammates ends its turn", "Stop",
			`{` + teamBase + `,"hook_event_name":"Stop","last_assistant_message":"team started","background_tasks":[{"id":"tc5h1qkxn","type":"teammate","status":"running","description":"teammate alpha"},{"id":"tqz29w06e","type":"teammate","status":"running","description":"teammate beta"}],"session_crons":[]}`,
			Event{Kind: EvTurnEnd, LastAnswer: "team started", LiveTeammates: 2}},
		{"a lead's stop with a subagent running goes on", "Stop",
			`{` + teamBase + `,"last_assistant_message":"sub started","background_tasks":[{"id":"tpi0k6a4f","type":"teammate","status":"running"},{"id":"a2cbef72153bff3a8","type":"subagent","status":"running","agent_type":"general-purpose"}]}`,
			Event{Kind: EvTool, LiveTeammates: 1}},
		{"the turn Claude starts when a subagent ends goes on with the work", "UserPromptSubmit",
			`{` + teamBase + `,"hook_event_name":"UserPromptSubmit","prompt":"<task-notification>\n<task-id>a2cbef72153bff3a8</task-id>\n<status>completed</status>"}`,
			Event{Kind: EvTool, Prompt: "<task-notification>\n<task-id>a2cbef72153bff3a8</task-id>\n<status>completed</status>"}},
		{"a subagent whose type would act on a terminal", "SubagentStart",
			`{` + teamBase + `,"agent_id":"a2cbef72153bff3a8","agent_type":"general\u001b]0;pwned\u0007"}`,
			Event{Kind: EvSubagent}},
		{"a tool call with an agent_id that is no id", "PreToolUse",
			`{` + teamBase + `,"agent_id":"a b","agent_type":"Explore","tool_name":"Bash"}`,
			Event{Kind: EvTool, Tool: "Bash", Before: true}},
		{"task hooks are not st's", "TaskCreated",
			`{` + teamBase + `,"hook_event_name":"TaskCreated","task_id":"1","task_subject":"Write tests","task_description":"tests for the API"}`,
			Event{Kind: EvIgnore}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := mapClaudeLikeEvent(c.event, []byte(c.payload))
			if err != nil {
				t.Fatal(err)
			}
			want := c.want
			want.Name = c.event
			if strings.Contains(c.payload, teamBase) {
				want.SessionID, want.Cwd, want.Transcript = "0702c391-a443-4834-b5f7-d2e1fad9f3cd", "/w", "/h/.claude/projects/-w/0702c391.jsonl"
			}
			got.ToolInput = nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v (teammate %+v)\nwant %+v (teammate %+v)", got, got.Teammate, want, want.Teammate)
			}
			if got.Aside() != (got.Kind == EvTeammateIdle || got.Kind == EvSubagent || got.SubagentID != "") {
				t.Errorf("Aside() = %v", got.Aside())
			}
		})
	}
}

func TestTeammateFromArgs(t *testing.T) {
	// A teammate's pane, as ps shows it (the key is cut).
	argv := strings.Fields("/x/claude.exe --agent-id alpha@session-0702c391 --agent-name alpha --team-name session-0702c391 " +
		"--agent-color blue --parent-session-id 0702c391-a443-4834-b5f7-d2e1fad9f3cd --lead-verify-key 1796.MCow " +
		"--permission-mode default --model claude-opus-5-5")
	want := &Teammate{Name: "alpha", Team: "session-0702c391", AgentID: "alpha@session-0702c391", Color: "blue",
		LeadSession: "0702c391-a443-4834-b5f7-d2e1fad9f3cd"}
	if got := TeammateFromArgs(argv); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	for _, bad := range [][]string{
		nil,
		strings.Fields("claude --permission-mode default --teammate-mode tmux"), // a lead
		strings.Fields("claude --agent-name alpha"),                             // no team
		{"claude", "--agent-name", "al\npha", "--team-name", "t"},
		{"claude", "--agent-name", "alpha", "--team-name", "../../etc"},
		{"claude", "--team-name"},
	} {
		if got := TeammateFromArgs(bad); got != nil {
			t.Errorf("TeammateFromArgs(%q) = %+v, want nil", bad, got)
		}
	}
	// An id or session that does not look like one is dropped, not kept.
	got := TeammateFromArgs([]string{"--agent-name", "a", "--team-name", "t", "--parent-session-id", "x y", "--agent-color", "\x1b[31m"})
	if got == nil || got.LeadSession != "" || got.Color != "" {
		t.Errorf("got %+v", got)
	}
}

func TestTeammateValid(t *testing.T) {
	good := Teammate{Name: "alpha", Team: "session-0702c391", Pane: "%3", AgentID: "alpha@session-0702c391", Color: "blue",
		LeadSession: "0702c391-a443-4834-b5f7-d2e1fad9f3cd"}
	if !good.Valid() {
		t.Errorf("%+v is not valid", good)
	}
	for _, bad := range []Teammate{
		{Name: "al\x1b[2Jpha", Team: "t"},
		{Name: "alpha", Team: "t\n"},
		{Name: "alpha", Team: "t", Pane: "%3; rm"},
		{Name: "alpha", Team: "t", Color: "\x1b[31m"},
		{Name: "alpha", Team: "t", LeadSession: "x y"},
		{Name: "alpha"},
	} {
		if bad.Valid() {
			t.Errorf("%+v is valid", bad)
		}
	}
}

// A team lead lists its agents under the box's footer; the box is still
// the live one however big the team (captured on 2.1.332).
func TestRecognizeLeadWithTeammates(t *testing.T) {
	lead := screen(
		"● Teammate @gamma finished", "  gamma finished", "", "● Hello from the fake model.", "",
		rule, "❯\u00a0", rule,
		"  ⏸ manual mode on · ? for shortcuts · ↓ to manage", "",
		"  ● main",
		"  ◯ alpha  teammate alpha                                 1m 47s",
		"  ◯ beta   teammate beta                                  1m 46s",
		"  ◯ gamma  teammate gamma                                    57s",
		"  ◯ delta  teammate delta                                    13s",
	)
	if v := recognizeClaudeLike(lead); v.Screen != ScreenReady {
		t.Errorf("lead with four teammates: %+v", v)
	}
	busy := strings.Replace(lead, "? for shortcuts", "esc to interrupt", 1)
	if v := recognizeClaudeLike(busy); v.Screen != ScreenWorking {
		t.Errorf("lead at work: %+v", v)
	}
	// A teammate's own box has its name in the upper rule.
	mate := screen("● alpha finished", "", "──── @alpha ─"+strings.Repeat("─", 30), "❯\u00a0", rule, "  ⏸ manual mode on · ? for shortcuts")
	if v := recognizeClaudeLike(mate); v.Screen != ScreenReady {
		t.Errorf("teammate: %+v", v)
	}
	// Text below a box that is not a list of agents still marks it old.
	old := screen(rule, "❯\u00a0", rule, "  ● main", "x", "y", "z", "w", "v")
	if v := recognizeClaudeLike(old); v.Screen != ScreenUnknown {
		t.Errorf("transcript under a box: %+v", v)
	}
}
