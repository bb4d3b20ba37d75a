package web

import (
	"context"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
)

// Backend is what the web UI needs from the rest of st: the state to show,
// word of its changes, and the few things a person may do from a browser.
// Errors from the actions are shown to the person as they are, so they
// should read as a refusal with its reason ("Try: ..." included).
type Backend interface {
	// Snapshot is the state now.
	Snapshot(ctx context.Context) (Snapshot, error)
	// Changed returns a channel that is closed at the next change of
	// state; call it again after that for the one after.
	Changed() <-chan struct{}
	// Adopt makes agentPane a worker of coordinatorPane (a card dropped on
	// another). Panes on another machine are written machine/%7.
	Adopt(ctx context.Context, coordinatorPane, agentPane string) error
	// Release lets a worker go: it keeps running, with no coordinator.
	Release(ctx context.Context, workerPane string) error
	// AnswerGate answers an open decision gate with one of its options.
	AnswerGate(ctx context.Context, gateID, option string) error
	// AnswerPrompt answers an agent's open permission prompt with one of
	// its choices (allow, deny, or a question's option): its waiting
	// hook takes it.
	AnswerPrompt(ctx context.Context, promptID, option string) error
	// DismissAttention closes an open attention item (issue 34) a
	// person has seen to.
	DismissAttention(ctx context.Context, id string) error
}

// Snapshot is everything a page shows. /api/state sends it whole;
// /api/events sends it whole first, then what changed (events.go).
//
// Pane ids are tmux's (%7) on this machine; an agent on another machine
// has Machine set and its own pane id, and a Parent on another machine
// than this one is written machine/%7, as st's worker ids are.
type Snapshot struct {
	// Machine is this machine's name.
	Machine string `json:"machine"`
	// Sessions are the sessions of st's tmux server with their windows,
	// in tmux's order. When a Backend leaves it nil the server lists the
	// tmux server itself (see TmuxSessions).
	Sessions []Session `json:"sessions"`
	// Agents are the coordinators, workers and other agents st knows.
	Agents []Agent `json:"agents"`
	// Gates are the open decision gates.
	Gates []Gate `json:"gates"`
	// Prompts are the agents' permission prompts that st may answer
	// through their hooks (Allow once / Deny, a question's options).
	Prompts []Prompt `json:"prompts"`
	// Attention is the open attention items, the newest first: the
	// agents that need a person (the page's Needs you list).
	Attention []Attention `json:"attention"`
	// Machines are the account's machines, this one included, when it is
	// signed in: agents on an offline machine are shown dimmed.
	Machines []Machine `json:"machines,omitempty"`
	// Kinds are the agent kinds st knows, from their descriptions
	// (agent.Kind): the page draws each agent's kind by them. The server
	// fills them in at each snapshot (an agent described in config.toml
	// joins them at the first start that names it).
	Kinds []KindInfo `json:"kinds"`
	// Limits are the agents' accounts' usage limits as the agents last
	// said them (Claude's status line, Codex's rollout): the page shows
	// those near.
	Limits []api.AgentLimit `json:"limits,omitempty"`
}

// KindInfo is what the page needs of an agent kind.
type KindInfo struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	Icon  string `json:"icon"`
	// Screen: st reads this kind's states from its screen (it has no
	// hooks), and the page marks them so.
	Screen bool `json:"screen,omitempty"`
}

// kindInfos lists the known agent kinds for the page.
func kindInfos() []KindInfo {
	var out []KindInfo
	for _, k := range agent.All() {
		out = append(out, kindInfo(k))
	}
	return out
}

// kindInfo is what the page gets of one kind.
func kindInfo(k *agent.Kind) KindInfo {
	return KindInfo{Name: k.Name, Title: k.Title, Icon: k.Icon, Screen: k.ScreenStates()}
}

// Machine is one machine of the account. Slug is what Agent.Machine holds.
type Machine struct {
	Slug    string `json:"slug"`
	Name    string `json:"name"`
	Online  bool   `json:"online"`
	Accepts bool   `json:"accepts"` // takes workers from other machines
	This    bool   `json:"this,omitempty"`
}

// Session is a tmux session.
type Session struct {
	ID      string   `json:"id"` // $1
	Name    string   `json:"name"`
	Windows []Window `json:"windows"`
}

// Window is a tmux window. Active is the window in front of its session
// for tmux's own clients; a browser tab lights the one it shows instead.
type Window struct {
	ID     string `json:"id"`    // @3
	Index  string `json:"index"` // 0, 1, ...
	Name   string `json:"name"`
	Active bool   `json:"active"`
	Panes  []Pane `json:"panes"`
}

// Pane is a pane of a window, with the agent running in it if any.
type Pane struct {
	ID    string `json:"id"`             // %7
	Agent string `json:"agent"`          // claude, codex, sim, or "" for none
	Role  string `json:"role,omitempty"` // coordinator, worker, or ""
}

// Agent roles.
const (
	RoleCoordinator = "coordinator"
	RoleWorker      = "worker"
)

// Agent is one agent: a coordinator, a worker, or an agent with neither
// role yet (which can be adopted).
type Agent struct {
	Pane string `json:"pane"` // %7, on Machine
	Name string `json:"name"` // the worker's name, or the window's
	Kind string `json:"kind"` // claude, codex, sim
	Role string `json:"role"` // coordinator, worker, or ""
	// State is a worker's: starting, blocked, working, waiting, idle,
	// done, failed, gone or unreachable. A coordinator's is its own turn:
	// working or idle ("" when unknown).
	State string    `json:"state"`
	Since time.Time `json:"since"` // when State began
	// Summary is a finished worker's report.
	Summary string `json:"summary,omitempty"`
	// Resets is when a paused worker's usage limit resets (State
	// paused); GoesOn says who goes on then: "agent" (by itself), "st"
	// (st types continue) or "move" (its task moved to another kind).
	Resets time.Time `json:"resets,omitempty"`
	GoesOn string    `json:"goesOn,omitempty"`
	// Parent is the coordinator's pane ("" for none); ParentGone says its
	// pane closed, or st has not found it again since tmux restarted.
	Parent     string `json:"parent,omitempty"`
	ParentGone bool   `json:"parentGone,omitempty"`
	// ParentShell: started from a shell, which is not an agent: no line
	// to it, and not an orphan.
	ParentShell bool `json:"parentShell,omitempty"`
	// Screen: its states are read from its screen, as its machine says
	// (its kind may be described only there, and so not in Kinds).
	Screen bool `json:"screen,omitempty"`
	// ParentName and ParentMachine name a coordinator on another machine:
	// the row says "worker of ParentName on ParentMachine".
	ParentName    string `json:"parentName,omitempty"`
	ParentMachine string `json:"parentMachine,omitempty"`
	Run           string `json:"run,omitempty"`
	// TeamOf is N for a worker that leads a team of N workers of its own.
	TeamOf int `json:"teamOf,omitempty"`
	// Release: this page may let the worker go, as the authorization
	// model (internal/authz, a web session) decides for this machine's
	// records: a worker here, or one it started on another machine.
	// Another machine's own workers are that machine's to release; the
	// page offers Release (the graph's, the chart's, a row's Let go, an
	// orphan's) only where this is set (issue 32, item 6).
	Release bool   `json:"release,omitempty"`
	Session string `json:"session"` // session id ($1) of its pane
	Window  string `json:"window"`  // window id (@3) of its pane
	// Machine is "" (or Snapshot.Machine) on this machine.
	Machine   string     `json:"machine,omitempty"`
	Subagents []Subagent `json:"subagents,omitempty"`
	// Teammates are those of the Claude agent team it leads.
	Teammates []Teammate `json:"teammates,omitempty"`
	// Tokens is what a worker's agent spent, by kind, with its estimated
	// cost where known (the API's form: input, output, cache_read,
	// cache_write, reasoning, total, cost_usd, price_date).
	Tokens *api.Tokens `json:"tokens,omitempty"`
}

// Subagent is one of Claude's subagents (its Task tool), seen through the
// SubagentStart and SubagentStop hooks. It has no window.
type Subagent struct {
	ID      string    `json:"id"`
	Type    string    `json:"type"`  // the subagent type, e.g. general-purpose
	State   string    `json:"state"` // working or done
	Since   time.Time `json:"since"`
	Started time.Time `json:"started"`
}

// Teammate is a teammate of a Claude agent team, under its lead. It is
// no st worker: st only shows it. One in a pane of its own can be opened
// (and a person may drop it on a coordinator); an in-process one runs in
// its lead's process and has no pane.
type Teammate struct {
	Name      string    `json:"name"`
	Team      string    `json:"team"`
	Pane      string    `json:"pane,omitempty"`    // %7
	Session   string    `json:"session,omitempty"` // session id ($1) of its pane
	Window    string    `json:"window,omitempty"`  // window id (@3) of its pane
	InProcess bool      `json:"inProcess,omitempty"`
	Color     string    `json:"color,omitempty"` // the colour Claude gave it (blue, green, ...)
	State     string    `json:"state"`           // working, waiting or idle
	Since     time.Time `json:"since"`
	Started   time.Time `json:"started"`
}

// Attention is an open attention item: an agent needs a person, for
// Text, since Opened. Kind is api.AttentionKind's (permission, question,
// gate, no-report, failed, paused, run-done); the page names it from its
// catalogue. Text, Command and Options are the agent's words.
type Attention struct {
	ID      string    `json:"id"`
	Kind    string    `json:"kind"`
	Pane    string    `json:"pane"`              // %7, on Machine
	Machine string    `json:"machine,omitempty"` // "" on this machine
	Name    string    `json:"name,omitempty"`
	Agent   string    `json:"agent,omitempty"`
	Text    string    `json:"text"`
	Command string    `json:"command,omitempty"`
	Options []string  `json:"options,omitempty"`
	Gate    string    `json:"gate,omitempty"`
	Opened  time.Time `json:"opened"`
}

// Gate is an open decision gate: a question an agent asked a person.
type Gate struct {
	ID       string    `json:"id"`
	Question string    `json:"question"`
	Options  []string  `json:"options"`
	Pane     string    `json:"pane"` // the asking agent
	Asked    time.Time `json:"asked"`
	// Value is an option whose amount the person types (a run's budget
	// gate: "go on with a budget of " and the amount).
	Value *GateValue `json:"value,omitempty"`
}

// GateValue is a gate's option that takes an amount: the answer is
// Prefix followed by it.
type GateValue struct {
	Prefix string `json:"prefix"`
}

// Prompt is an agent's open permission prompt that its hook waits to have
// answered: a tool call (Command) or a question (Question, Options).
type Prompt struct {
	ID       string    `json:"id"`
	Pane     string    `json:"pane"`
	Agent    string    `json:"agent"`
	Tool     string    `json:"tool"`
	Command  string    `json:"command,omitempty"`
	Question string    `json:"question,omitempty"`
	Options  []string  `json:"options"`
	Opened   time.Time `json:"opened"`
	Deadline time.Time `json:"deadline"`
}
