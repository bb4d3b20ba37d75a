package api

import (
	"time"
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
	Paused      State = "paused"      // stopped at its plan's usage limit until the limit resets
)

// Pause is why and until when a worker is paused (State Paused).
type Pause struct {
	// Reason is what stopped it: "usage limit".
	Reason string `json:"reason"`
	// Resets is when the limit resets; Exact says it came from the
	// agent's records (else from its screen's minute).
	Resets time.Time `json:"resets"`
	Exact  bool      `json:"exact,omitempty"`
	// Text is what the agent said of it.
	Text string `json:"text,omitempty"`
	// By is who goes on after the reset: "agent" (it goes on by itself,
	// Claude's auto-continue), "st" (st types its continue line once
	// its box is up), or "move" (st starts its task on another agent
	// kind at once, and types nothing more into this one). GoesOnBy is when st looks: the reset, or the end
	// of the agent's own grace.
	By       string    `json:"by"`
	GoesOnBy time.Time `json:"goes_on_by"`
	// ItselfFrom and ItselfBy are when an agent that goes on by itself
	// (By "agent") is expected to, as measured of its kind (Claude:
	// 30-90 s after the reset); zero when its kind has no measure.
	ItselfFrom time.Time `json:"itself_from,omitzero"`
	ItselfBy   time.Time `json:"itself_by,omitzero"`
	// Typed is set once st typed the line: never twice. With By "move"
	// it is set once st started the move, so that no restart moves twice.
	Typed bool `json:"typed,omitempty"`
	// MoveTo is the agent kind its task moves to (--on-limit move, By
	// "move"); MovedTo names the worker that took it ("%7 fix-codex").
	MoveTo  string `json:"move_to,omitempty"`
	MovedTo string `json:"moved_to,omitempty"`
}

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

// Worker is one worker of a run, as the API shows it (in a WorkerView).
// run.json keeps its own record of it (orch.Worker, internal/orch
// record.go), which has the same keys; the two meet only there.
type Worker struct {
	ID     string    `json:"id"` // its pane, %N
	Name   string    `json:"name"`
	Agent  string    `json:"agent"`
	Parent string    `json:"parent"` // the pane that started it
	Level  int       `json:"level"`  // 1 = directly under the run's coordinator
	State  State     `json:"state"`
	Since  time.Time `json:"since"`

	Task string `json:"task,omitempty"`
	Cwd  string `json:"cwd,omitempty"`
	// Typing: st is typing its task and has not yet seen its turn start.
	Typing  bool   `json:"typing,omitempty"`
	Window  string `json:"window,omitempty"`
	Session string `json:"session,omitempty"`

	Summary    string     `json:"summary,omitempty"`
	ReportedAt *time.Time `json:"reported_at,omitempty"`
	// ReportAnswer is the answer that ended the turn of the report: it
	// stays as it was when later turns (a notice typed in, say) give a
	// new LastAnswer.
	ReportAnswer string `json:"report_answer,omitempty"`
	LastAnswer   string `json:"last_answer,omitempty"`
	Error        string `json:"error,omitempty"`
	// Pause says why and until when it is paused (State Paused).
	Pause *Pause `json:"pause,omitempty"`
	// OnLimit is what st does when its agent reaches its usage limit:
	// wait (paused, then on), move (the task to another agent kind), or
	// fail (its turn ends, as any failed turn).
	OnLimit string `json:"on_limit,omitempty"`
	// LimitSeen is the reset of the last usage limit it was paused for.
	LimitSeen time.Time `json:"limit_seen,omitzero"`
	// Transcript is its agent's conversation file, as its hooks name it.
	Transcript string `json:"transcript,omitempty"`

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
	// machine counts it (its team stays there); TeamDepth is how many
	// levels that team goes below it, so that the whole chain counts them.
	TeamSize  int `json:"team_size,omitempty"`
	TeamDepth int `json:"team_depth,omitempty"`
	// ScreenThere says that a remote worker's machine reads its states
	// from its screen (its kind has no hooks there): that machine knows
	// its kind, which this one may not (one only its config.toml
	// describes), so the mark is that machine's word.
	ScreenThere bool `json:"screen_there,omitempty"`
	// Tokens is what its agent spent, from the agent's own records (for a
	// worker on another machine, as that machine reports it).
	Tokens *Tokens `json:"tokens,omitempty"`
}

// RunFormat is the form of run.json (orch.Run) this st writes, and the
// newest it reads.
const RunFormat = 1

// Remote reports whether w runs on another machine.
func (w *Worker) Remote() bool { return w.Machine != "" }

// Run is one coordinator's piece of work, as the API shows it (in a
// RunView). run.json keeps orch.Run, which has the same keys.
type Run struct {
	// Format is the version of run.json's form (RunFormat when written;
	// 0 in files of st before formats were numbered). An st that finds a
	// newer one leaves it out and never writes it.
	Format    int    `json:"format"`
	ID        string `json:"id"`
	Objective string `json:"objective"`
	// OnLimit is the run's default --on-limit for its workers ("" = wait).
	OnLimit     string    `json:"on_limit,omitempty"`
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
	// Budget is the run's budget; BudgetWarned: its coordinator was told
	// of 80 %; BudgetGate: the gate opened at 100 % (RunView.BudgetUse
	// says how much is spent).
	Budget       *Budget `json:"budget,omitempty"`
	BudgetWarned bool    `json:"budget_warned,omitempty"`
	BudgetGate   string  `json:"budget_gate,omitempty"`
	// CoordinatorTokens is what the coordinator's own agent spent, read
	// from its pane's conversation (not counted to the budget, which
	// counts the workers).
	CoordinatorTokens *Tokens `json:"coordinator_tokens,omitempty"`
	// CoordinatorPause says why and until when the coordinator's own
	// agent is paused at its usage limit (handled as a worker's is:
	// docs/limits.md), and CoordinatorLimitSeen the reset of the last
	// limit it was paused for; CoordinatorAgent and CoordinatorTranscript
	// are its agent's kind and conversation file, as its hooks name them.
	CoordinatorPause      *Pause    `json:"coordinator_pause,omitempty"`
	CoordinatorLimitSeen  time.Time `json:"coordinator_limit_seen,omitzero"`
	CoordinatorAgent      string    `json:"coordinator_agent,omitempty"`
	CoordinatorTranscript string    `json:"coordinator_transcript,omitempty"`
	// CoordinatorError says what st could not do for its coordinator
	// (type its continue after its usage limit), and what to do instead.
	CoordinatorError string `json:"coordinator_error,omitempty"`
}

// Choices of --on-limit: what st does when a worker's agent reaches its
// plan's usage limit.
const (
	OnLimitWait = "wait" // paused until the reset, then on (the default)
	OnLimitMove = "move" // its task to another agent kind
	OnLimitFail = "fail" // its turn ends as a failed one
)

// ValidOnLimit reports whether s is a choice of --on-limit ("" = wait).
func ValidOnLimit(s string) bool {
	switch s {
	case "", OnLimitWait, OnLimitMove, OnLimitFail:
		return true
	}
	return false
}
