// Package orch is st's model of delegation: runs, their coordinators and
// workers, the worker state machine driven by the agents' hooks, the
// delivery of typed lines, the notices sent to coordinators, and the depth
// rules. The daemon is its only user; it is the only writer of run.json.
package orch

import (
	"fmt"
	"strings"
	"time"

	"github.com/sophonz/st/internal/agent"
)

// State is a worker's state.
type State string

// Worker states (DESIGN.md, State and relations).
const (
	Starting    State = "starting"    // window opened, task not yet confirmed
	Blocked     State = "blocked"     // a trust or login screen keeps the task out
	Working     State = "working"     // its turn runs
	Waiting     State = "waiting"     // a permission prompt or a question
	Idle        State = "idle"        // its turn ended with no report
	Done        State = "done"        // it reported with st worker done
	Failed      State = "failed"      // its start failed
	Gone        State = "gone"        // its pane closed
	Unreachable State = "unreachable" // its machine cannot be reached
)

// Settled reports whether st worker wait stops waiting for a worker in s.
func (s State) Settled() bool {
	switch s {
	case Done, Waiting, Idle, Failed, Gone, Blocked:
		return true
	}
	return false
}

// Live reports whether the worker's pane is expected to exist.
func (s State) Live() bool { return s != Gone && s != Failed }

// Worker is one worker of a run, as kept in run.json.
type Worker struct {
	ID     string    `json:"id"` // its pane, %N
	Name   string    `json:"name"`
	Agent  string    `json:"agent"`
	Parent string    `json:"parent"` // the pane that started it
	Level  int       `json:"level"`  // 1 = directly under the run's coordinator
	State  State     `json:"state"`
	Since  time.Time `json:"since"`

	Task    string `json:"task,omitempty"`
	Cwd     string `json:"cwd,omitempty"`
	Window  string `json:"window,omitempty"`
	Session string `json:"session,omitempty"`

	Summary    string     `json:"summary,omitempty"`
	ReportedAt *time.Time `json:"reported_at,omitempty"`
	// ReportAnswer is the answer that ended the turn of the report: it
	// stays as it was when later turns (a notice typed in, say) give a
	// new LastAnswer.
	ReportAnswer string `json:"report_answer,omitempty"`
	LastAnswer   string `json:"last_answer,omitempty"`
	Error      string     `json:"error,omitempty"`

	AgentSession string    `json:"agent_session,omitempty"`
	StartedAt    time.Time `json:"started_at"`
	// Told is set once the parent has seen the report (wait, read or a
	// notice), so that it is not told again.
	Told bool `json:"told,omitempty"`
	// reported is set by st worker done in the current turn.
	Reported bool `json:"reported,omitempty"`
	// Adopted marks an agent that was running before it became a worker.
	Adopted bool `json:"adopted,omitempty"`
	// TeamRun is the run this worker leads as a team lead (adopted with
	// workers of its own).
	TeamRun string `json:"team_run,omitempty"`
	// Scope is what it may change (--owns); Worktree its own checkout.
	Scope    *Scope        `json:"scope,omitempty"`
	Worktree *WorktreeInfo `json:"worktree,omitempty"`
	// Fan names the group of tries (--fan) it belongs to.
	Fan string `json:"fan,omitempty"`

	// Machine is the slug of the machine a worker runs on, for a worker
	// on another machine (its ID is then machine/%N); "" for this one.
	Machine string `json:"machine,omitempty"`
	// MachineName is that machine's name, as st machines shows it.
	MachineName string `json:"machine_name,omitempty"`
	// ParentName and ParentMachineName say who a worker of a coordinator
	// on another machine works for, as people read it: "worker of lead on
	// home-macbook" (its Parent, machine/%N, is only a pane).
	ParentName        string `json:"parent_name,omitempty"`
	ParentMachineName string `json:"parent_machine_name,omitempty"`
	// Ref ties the coordinator's record of a remote worker to the
	// worker's own record on its machine, across pane id changes there.
	Ref string `json:"ref,omitempty"`
	// TeamSize is the size of the team a remote worker leads, as its
	// machine counts it (its team stays there).
	TeamSize int `json:"team_size,omitempty"`
}

// Remote reports whether w runs on another machine.
func (w *Worker) Remote() bool { return w.Machine != "" }

// Run is one coordinator's piece of work.
type Run struct {
	ID          string    `json:"id"`
	Objective   string    `json:"objective"`
	Coordinator string    `json:"coordinator"` // its pane
	Session     string    `json:"session"`     // the coordinator's session id
	Created     time.Time `json:"created"`
	Workers     []*Worker `json:"workers"`
	Tasks       []*Task   `json:"tasks,omitempty"`
	// CoordinatorMachine is the slug of the coordinator's machine, for a
	// run whose coordinator is on another machine (Coordinator is then
	// machine/%N); BaseDepth is how deep that coordinator already is in
	// its whole chain, so that depth counts on across machines.
	CoordinatorMachine string `json:"coordinator_machine,omitempty"`
	BaseDepth          int    `json:"base_depth,omitempty"`
}

func (r *Run) task(name string) *Task {
	for _, t := range r.Tasks {
		if t.Name == name {
			return t
		}
	}
	return nil
}

func (r *Run) worker(id string) *Worker {
	for _, w := range r.Workers {
		if w.ID == id {
			return w
		}
	}
	return nil
}

// Error is a refusal or failure that crosses the daemon's socket intact:
// Kind for programs, Message for people, Hint for what to do next.
type Error struct {
	Kind    string `json:"kind"`
	Message string `json:"error"`
	Hint    string `json:"hint,omitempty"`
}

func (e *Error) Error() string {
	if e.Hint == "" {
		return e.Message
	}
	return e.Message + "\nTry: " + e.Hint
}

// Error kinds.
const (
	KindUsage    = "usage"
	KindNotFound = "not-found"
	KindConflict = "conflict"
	KindDepth    = "depth"
	KindBlocked  = "blocked"
	KindNoHooks  = "no-hooks"
	KindTimeout  = "timeout"
	KindInternal = "internal"
	// KindUnreachable: another machine could not be reached.
	KindUnreachable = "unreachable"
	// KindRemote: refused by another machine, or not available across machines.
	KindRemote = "remote"
)

func errorf(kind, hint, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...), Hint: hint}
}

// MaxLevel is how deep workers may go below their run's coordinator.
const MaxLevel = 2

// ValidName reports whether a worker name is safe as a tmux window name
// and a shell word: letters, digits, '.', '_' and '-', not starting with
// '-' or '.', at most 40 characters.
func ValidName(name string) bool {
	if name == "" || len(name) > 40 || name[0] == '-' || name[0] == '.' {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// NameFromTask derives a worker name from a task file's name: its base
// without the extension, with unsafe characters made '-'.
func NameFromTask(path string) string {
	base := path
	if i := strings.LastIndex(base, "/"); i >= 0 {
		base = base[i+1:]
	}
	if i := strings.LastIndex(base, "."); i > 0 {
		base = base[:i]
	}
	var b strings.Builder
	for _, r := range base {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	n := strings.Trim(b.String(), "-_")
	if len(n) > 40 {
		n = n[:40]
	}
	if n == "" {
		n = "worker"
	}
	return n
}

// Request and response types of the daemon's API.

// StartRunRequest makes a run for a pane.
type StartRunRequest struct {
	Pane      string `json:"pane"`
	Objective string `json:"objective"`
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

	run      *Run   // a task's run (tasks place their workers themselves)
	fanGroup string // the group of tries of a fan
	// remote places a worker that another machine's coordinator starts.
	remote *remotePlace
}

// WaitRequest waits for workers.
type WaitRequest struct {
	Pane    string        `json:"pane"`
	IDs     []string      `json:"ids,omitempty"`
	Timeout time.Duration `json:"timeout"`
}

// WaitResult is what st worker wait prints.
type WaitResult struct {
	Workers  []WorkerView `json:"workers"`
	TimedOut bool         `json:"timed_out"`
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
	// TeamOf is the number of workers in the team this worker leads.
	TeamOf int `json:"team_of,omitempty"`
	// Notes are things the person should know about the start (a glob
	// that matches nothing yet, a worktree marked trusted).
	Notes []string `json:"notes,omitempty"`
	// Teammates and Subagents are those of a Claude worker's own: the
	// teammates of the agent team it leads, and its subagents.
	Teammates []Teammate `json:"teammates,omitempty"`
	Subagents []Subagent `json:"subagents,omitempty"`
}

// IDRequest names a worker for a pane.
type IDRequest struct {
	Pane string `json:"pane"`
	ID   string `json:"id"`
	Text string `json:"text,omitempty"` // send: the line; rename: the name
	All  bool   `json:"all,omitempty"`
	// Owns gives an adopted worker a scope (adopt only).
	Owns []string `json:"owns,omitempty"`

	// byPerson marks an adoption a person asked for in the web UI
	// (AdoptDropped); it never comes over the socket.
	byPerson bool
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
	Teammate *agent.Teammate `json:"teammate,omitempty"`
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
}

// TaskView is a task as st task list shows it.
type TaskView struct {
	Task
	Run        string `json:"run"`
	WorkerName string `json:"worker_name,omitempty"`
	For        string `json:"for"`
}
