package api

import (
	"time"
)

// Request and response types of the daemon's API.

// StartRunRequest makes a run for a pane.
type StartRunRequest struct {
	Pane      string `json:"pane"`
	Objective string `json:"objective"`
	// Budget is the run's budget as written (500k, $5); "" takes
	// config.toml's default, "none" sets none.
	Budget string `json:"budget,omitempty"`
	// OnLimit is the run's default of StartRequest.OnLimit.
	OnLimit string `json:"on_limit,omitempty"`
}

// StartRequest starts a worker.
type StartRequest struct {
	Pane  string            `json:"pane"` // the coordinator
	Agent string            `json:"agent"`
	Task  string            `json:"task"` // absolute path
	Name  string            `json:"name,omitempty"`
	Cwd   string            `json:"cwd,omitempty"`
	Split bool              `json:"split,omitempty"`
	Env   map[string]string `json:"env,omitempty"` // PATH and the sim's knobs, from the caller
	// BlockedTimeout and HookTimeout override 90 s and 30 s (for tests).
	BlockedTimeout time.Duration `json:"blocked_timeout,omitempty"`
	HookTimeout    time.Duration `json:"hook_timeout,omitempty"`
	// Owns are globs, relative to the repository root, of what the
	// worker may change.
	Owns []string `json:"owns,omitempty"`
	// Worktree gives the worker a git worktree and branch of its own.
	Worktree bool `json:"worktree,omitempty"`
	// Fan starts this many tries of the task, NAME-1 to NAME-N.
	Fan int `json:"fan,omitempty"`
	// Machine starts the worker on another machine of the account (its
	// name, host name or slug).
	Machine string `json:"machine,omitempty"`
	// OnLimit is what st does when the agent reaches its plan's usage
	// limit: wait (the default: paused, then on), move, fail.
	OnLimit string `json:"on_limit,omitempty"`
}

// WaitRequest waits for workers.
type WaitRequest struct {
	Pane    string        `json:"pane"`
	IDs     []string      `json:"ids,omitempty"`
	Timeout time.Duration `json:"timeout"`
}

// WaitResult is what st worker wait prints.
type WaitResult struct {
	Workers []WorkerView `json:"workers"`
	// Tasks are the tasks waited for that have no worker: one that can
	// never start (its reason says why), or, past the timeout, one that
	// still waits.
	Tasks    []TaskView `json:"tasks,omitempty"`
	TimedOut bool       `json:"timed_out"`
}

// WorkerView is a worker as commands show it.
type WorkerView struct {
	Worker
	Run        string `json:"run"`
	For        string `json:"for"` // how long in its state, e.g. "12s"
	ParentGone bool   `json:"parent_gone,omitempty"`
	// ParentNow is where a gone coordinator on another machine is now
	// (machine/%N), while this machine has not been told yet.
	ParentNow string `json:"parent_now,omitempty"`
	// TeamOf is the number of workers in the team this worker leads, and
	// TeamDepth how many levels it goes below this worker.
	TeamOf    int `json:"team_of,omitempty"`
	TeamDepth int `json:"team_depth,omitempty"`
	// Notes are things the person should know about the start (a glob
	// that matches nothing yet, a worktree marked trusted).
	Notes []string `json:"notes,omitempty"`
	// Teammates and Subagents are those of a Claude worker's own: the
	// teammates of the agent team it leads, and its subagents.
	Teammates []Teammate `json:"teammates,omitempty"`
	Subagents []Subagent `json:"subagents,omitempty"`
	// TextsHidden says its texts were left out: the asker may not read
	// this worker (st worker read would refuse it).
	TextsHidden bool `json:"texts_hidden,omitempty"`
	// ScreenStates: its agent has no hooks, so its state was read from
	// its screen (an agent described in config.toml), which can be wrong
	// where a hook's word cannot.
	ScreenStates bool `json:"screen_states,omitempty"`
}

// HideTexts leaves of v what anyone who may see st's state may see of a
// worker that is not theirs: its name, agent, state, times and place
// among the workers. What the worker was told and what it said (its task,
// its report and answers, its error, the notes of its start) go.
func (v *WorkerView) HideTexts() {
	v.Task, v.Summary, v.ReportAnswer, v.LastAnswer, v.Error, v.Notes = "", "", "", "", "", nil
	v.TextsHidden = true
}

// WorkerRef is the part of a WorkerView that names the worker: what a
// client that needs no more decodes of one.
type WorkerRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// IDRequest names a worker for a pane.
type IDRequest struct {
	Pane string `json:"pane"`
	ID   string `json:"id"`
	Text string `json:"text,omitempty"` // send: the line; rename: the name
	All  bool   `json:"all,omitempty"`
	// Owns gives an adopted worker a scope (adopt only).
	Owns []string `json:"owns,omitempty"`
}

// DoneRequest is a worker's report.
type DoneRequest struct {
	Pane    string `json:"pane"`
	Summary string `json:"summary"`
}

// HookResponse is what a hook is told back: a tool call to refuse, with
// the reason the agent sees.
type HookResponse struct {
	Deny   bool   `json:"deny,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// HookRequest is one hook event from an agent.
type HookRequest struct {
	Agent   string `json:"agent"`
	Event   string `json:"event"`
	Pane    string `json:"pane"`
	Payload []byte `json:"payload"`
	// Teammate is who a teammate of a Claude agent team is, from its
	// command line (nil for any other agent): no hook payload says it.
	Teammate *TeammateID `json:"teammate,omitempty"`
}

// RunView is a run as st orch show prints it.
type RunView struct {
	Run
	Views []WorkerView `json:"worker_views"`
	// Teammates and Subagents are the coordinator's own (a Claude
	// coordinator that leads an agent team, or runs subagents); each
	// worker's are in its view.
	Teammates []Teammate `json:"teammates,omitempty"`
	Subagents []Subagent `json:"subagents,omitempty"`
	// Tokens is what the run's workers spent together (those on other
	// machines as their machines report them); Budget its budget.
	Tokens    *Tokens     `json:"tokens,omitempty"`
	BudgetUse *BudgetView `json:"budget_use,omitempty"`
}

// TaskState is a task's state.
type TaskState string

// Task states.
const (
	TaskWaiting   TaskState = "waiting"   // on its dependencies
	TaskRunning   TaskState = "running"   // a worker has it
	TaskDone      TaskState = "done"      // its worker reported
	TaskFailed    TaskState = "failed"    // its worker failed or went, or a dependency did
	TaskCancelled TaskState = "cancelled" // st task cancel
)

// Task is a named piece of work that st starts a worker for once every
// task it depends on is done.
type Task struct {
	Name     string    `json:"name"`
	File     string    `json:"file"`
	Agent    string    `json:"agent"`
	Deps     []string  `json:"deps,omitempty"`
	Owns     []string  `json:"owns,omitempty"`
	Worktree bool      `json:"worktree,omitempty"`
	Cwd      string    `json:"cwd,omitempty"`
	Parent   string    `json:"parent"` // the pane that made it; its worker's parent
	State    TaskState `json:"state"`
	Since    time.Time `json:"since"`
	Worker   string    `json:"worker,omitempty"` // the pane of its worker
	Reason   string    `json:"reason,omitempty"` // why it failed, or what it waits on
	Created  time.Time `json:"created"`
	// Env is the creator's environment for the worker's window (PATH...).
	Env map[string]string `json:"env,omitempty"`
	// BlockedTimeout and HookTimeout are its worker's start's
	// (TaskRequest's), when its creator set them.
	BlockedTimeout time.Duration `json:"blocked_timeout,omitempty"`
	HookTimeout    time.Duration `json:"hook_timeout,omitempty"`
}

// TaskRequest creates a task.
type TaskRequest struct {
	Pane     string            `json:"pane"`
	Name     string            `json:"name"`
	File     string            `json:"file"`
	Agent    string            `json:"agent"`
	Deps     []string          `json:"deps,omitempty"`
	Owns     []string          `json:"owns,omitempty"`
	Worktree bool              `json:"worktree,omitempty"`
	Cwd      string            `json:"cwd,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	// Machine is refused: ordered tasks run on this machine only.
	Machine string `json:"machine,omitempty"`
	// BlockedTimeout and HookTimeout are its worker's start's, as
	// StartRequest's (ST_BLOCKED_TIMEOUT, ST_HOOK_TIMEOUT where st task
	// create runs): a start that waits on its dependencies takes them too.
	BlockedTimeout time.Duration `json:"blocked_timeout,omitempty"`
	HookTimeout    time.Duration `json:"hook_timeout,omitempty"`
}

// TaskView is a task as st task list shows it.
type TaskView struct {
	Task
	Run        string `json:"run"`
	WorkerName string `json:"worker_name,omitempty"`
	For        string `json:"for"`
}

// TeammateID is who a teammate of a Claude agent team is, as a hook or a
// command line tells it (agent.Teammate has the same fields).
type TeammateID struct {
	Name string `json:"name"`
	Team string `json:"team"`
	// Pane is its own tmux pane (%N); "" when it runs in its lead's
	// process, which InProcess then says.
	Pane      string `json:"pane,omitempty"`
	InProcess bool   `json:"in_process,omitempty"`
	// AgentID is the id an in-process teammate's hooks carry as agent_id
	// in its lead's pane.
	AgentID string `json:"agent_id,omitempty"`
	Color   string `json:"color,omitempty"`
	// LeadSession is the lead's conversation id (--parent-session-id).
	LeadSession string `json:"lead_session,omitempty"`
}

// GuardServerRequest asks what the guard (in an agent's PreToolUse hook)
// reads of the agent's own tmux server, named by its socket ($TMUX): st's
// daemon answers for the server it drives, so the hook runs no tmux.
type GuardServerRequest struct {
	Pane   string `json:"pane"` // the agent's ($TMUX_PANE), as every request names it
	Socket string `json:"socket"`
}

// GuardServer is that server as tmux lists it: list-panes -a in the
// guard's format (guard.PaneFormat; guard.ParseServer reads it), and the
// server's command line as ps and pkill -f see it.
type GuardServer struct {
	Panes string `json:"panes"`
	Args  string `json:"args"`
}
