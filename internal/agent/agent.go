// Package agent describes each kind of coding agent that st can run as a
// coordinator or a worker, as one value (Kind): how to launch and resume
// it, how st hears it (its hook events and what each means), how to read
// its screen from tmux capture-pane and type into it, where it keeps its
// conversation and tokens, and how to stop it. The kinds know nothing about
// runs or workers; the orch package decides what an event means for a
// worker.
package agent

import (
	"encoding/json"
)

// Screen is what an agent's pane shows, as far as typing is concerned.
type Screen int

const (
	// ScreenUnknown is a screen st does not recognise yet (starting, splash).
	ScreenUnknown Screen = iota
	// ScreenReady is the input box, drawn and empty: a line may be typed.
	ScreenReady
	// ScreenTyped is the input box holding text that was not submitted.
	ScreenTyped
	// ScreenWorking is a turn in progress.
	ScreenWorking
	// ScreenTrust is a folder-trust screen: a person must answer it.
	ScreenTrust
	// ScreenLogin is a sign-in or API-key screen: a person must answer it.
	ScreenLogin
	// ScreenPrompt is a permission prompt or a question to a person.
	ScreenPrompt
)

var screenNames = map[Screen]string{
	ScreenUnknown: "unknown", ScreenReady: "ready", ScreenTyped: "typed",
	ScreenWorking: "working", ScreenTrust: "trust", ScreenLogin: "login",
	ScreenPrompt: "prompt",
}

func (s Screen) String() string { return screenNames[s] }

// Blocking reports whether the screen is one that only a person may answer.
func (s Screen) Blocking() bool {
	return s == ScreenTrust || s == ScreenLogin || s == ScreenPrompt
}

// View is a recognised screen. Box is the text in the input box (for
// ScreenTyped, and for ScreenWorking when the box holds text), with the
// soft wraps of a long line joined back together.
type View struct {
	Screen Screen
	Box    string
}

// EventKind is what a hook event means, independent of the agent kind.
type EventKind string

const (
	EvSessionStart EventKind = "session-start" // the agent's conversation began or resumed
	EvTurnStart    EventKind = "turn-start"    // a prompt was submitted (delivery confirmed)
	EvTool         EventKind = "tool"          // a tool is about to run or ran: working
	EvWaiting      EventKind = "waiting"       // a permission prompt or question: a person must answer
	EvTurnEnd      EventKind = "turn-end"      // the turn is over (LastAnswer holds the answer)
	EvInterrupt    EventKind = "interrupt"     // the person stopped the turn
	EvSessionEnd   EventKind = "session-end"   // the agent exited
	EvSubagent     EventKind = "subagent"      // a subagent started or stopped (Claude)
	EvTeammateIdle EventKind = "teammate-idle" // a teammate of a Claude agent team ended its turn
	EvIgnore       EventKind = "ignore"        // nothing st acts on
)

// Event is one hook event, mapped from an agent's own payload.
type Event struct {
	Kind      EventKind `json:"kind"`
	Name      string    `json:"name"` // the agent's own event name, e.g. "Stop"
	SessionID string    `json:"session_id,omitempty"`
	// Resumed marks a SessionStart that resumed an earlier conversation
	// (its source "resume").
	Resumed bool `json:"resumed,omitempty"`
	// Prompt is the submitted text, for EvTurnStart.
	Prompt string `json:"prompt,omitempty"`
	// LastAnswer is the agent's last message, for EvTurnEnd.
	LastAnswer string `json:"last_answer,omitempty"`
	// Failed marks a turn that ended in an error (Claude's StopFailure).
	Failed bool `json:"failed,omitempty"`
	// Tool is the tool's name, for EvTool and EvWaiting.
	Tool string `json:"tool,omitempty"`
	// Before marks a tool call that has not run yet (PreToolUse), which a
	// hook may still refuse; ToolInput is its input as the agent sent it.
	Before    bool            `json:"before,omitempty"`
	ToolInput json.RawMessage `json:"tool_input,omitempty"`
	// SubagentID and SubagentDone describe EvSubagent. On EvTool,
	// SubagentID and SubagentType name the subagent (or in-process
	// teammate) that made the call in its lead's pane; "" for the pane's
	// own agent.
	SubagentID   string `json:"subagent_id,omitempty"`
	SubagentType string `json:"subagent_type,omitempty"`
	SubagentDone bool   `json:"subagent_done,omitempty"`
	Cwd          string `json:"cwd,omitempty"`
	// Transcript is the file where the agent keeps its conversation and
	// its tokens (the payload's transcript_path), as the agent says: what
	// st reads it from checks it first (orch's token book).
	Transcript string `json:"transcript,omitempty"`
	// Teammate is the teammate of EvTeammateIdle, or the one a lead's
	// Agent call spawned (on its PostToolUse, an EvTool).
	Teammate *Teammate `json:"teammate,omitempty"`
	// MessageTo is the teammate a lead's SendMessage went to: it takes a
	// turn, though no hook of its own says so before its first tool.
	MessageTo string `json:"message_to,omitempty"`
	// LiveTeammates is how many teammates a Stop lists as alive.
	LiveTeammates int `json:"live_teammates,omitempty"`
	// Ask is what an EvWaiting asks a person, as far as its payload says
	// (ask.go); nil when it says nothing st can show.
	Ask *Ask `json:"ask,omitempty"`
}

// Aside reports whether the event is about another agent than the pane's
// own: a subagent, or a teammate that runs in its lead's process. Such an
// event leaves the pane's own turn as it was.
func (e Event) Aside() bool {
	switch e.Kind {
	case EvSubagent, EvTeammateIdle:
		return true
	case EvTool:
		return e.SubagentID != ""
	}
	return false
}

// LaunchOptions is what st knows when it launches an agent in a window.
type LaunchOptions struct {
	// STBin is the absolute path of the st binary (the sim agent is st itself).
	STBin string
	// Program overrides the agent's program path (claude, codex).
	Program string
	// Path is the PATH the agent's window gets, where a Program that is a
	// name is found ("" = st's own PATH): what the program takes may
	// depend on its version.
	Path string
	// ResumeSession resumes this conversation instead of starting a new one.
	ResumeSession string
	// Name is the worker's name.
	Name string
	// PermissionMode is the agent's permission mode as the user chose it
	// (ST_<KIND>_PERMISSION_MODE): Claude's --permission-mode, Gemini's
	// --approval-mode; "" = the kind's default.
	PermissionMode string
	// NetworkAccess starts Codex with its sandbox's network (and unix
	// socket) access on, for users who choose it.
	NetworkAccess bool
}
