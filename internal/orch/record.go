package orch

import (
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/tokens"
)

// The records of run.json: what st keeps of each run, its workers and
// its tasks, in the form the file has (api.RunFormat names the form; an
// st reads the forms up to its own, and tests/faults
// TestUpgradeWithWorkersRunning reads the previous release's files).
// They are apart from the wire's types (api.Run, api.Worker, api.Task,
// which the views carry to the CLI and the web UI), so that either can
// change without the other: the two meet only here, in wire and
// workerRecord.

// Run is one coordinator's piece of work, as run.json keeps it.
type Run struct {
	// Format is the version of run.json's form (api.RunFormat when
	// written; 0 in files of st before formats were numbered). An st that
	// finds a newer one leaves it out and never writes it.
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
	// Budget is the run's budget (tokens.go); BudgetWarned: its
	// coordinator was told of 80 %; BudgetGate: the gate opened at 100 %,
	// while it is open st starts no new worker of the run.
	Budget       *tokens.Budget `json:"budget,omitempty"`
	BudgetWarned bool           `json:"budget_warned,omitempty"`
	BudgetGate   string         `json:"budget_gate,omitempty"`
	// CoordTokens is what the coordinator's own agent spent in this run
	// (its pane's conversation, read as a worker's is, from its hooks),
	// apart from its workers' and from the budget, which counts workers;
	// CoordLedger is what was read of its whole conversation, so that a
	// restart of st reads on; CoordBase is what that conversation had
	// spent when the run started (an earlier run of the same coordinator,
	// its talk before st orch start), by model, which its run does not
	// count.
	CoordTokens *api.Tokens              `json:"coordinator_tokens,omitempty"`
	CoordLedger *tokens.Ledger           `json:"coordinator_ledger,omitempty"`
	CoordBase   map[string]tokens.Counts `json:"coordinator_base,omitempty"`
	// CoordPause is the coordinator's own pause at its agent's usage
	// limit (limit.go handles it as a worker's); CoordLimitSeen is the
	// reset of the last limit it was paused for, as a worker's LimitSeen;
	// CoordAgent and CoordTranscript are its agent's kind and
	// conversation file, as its hooks name them: st reads the file again
	// for the exact reset, and when the turn of an agent that fires no
	// hook at its limit (Codex) goes quiet.
	CoordPause      *api.Pause `json:"coordinator_pause,omitempty"`
	CoordLimitSeen  time.Time  `json:"coordinator_limit_seen,omitzero"`
	CoordAgent      string     `json:"coordinator_agent,omitempty"`
	CoordTranscript string     `json:"coordinator_transcript,omitempty"`
	// CoordError says what st could not do for its coordinator (type its
	// continue: its box held a person's text, say), until it goes on.
	CoordError string `json:"coordinator_error,omitempty"`
}

// Worker is one worker of a run, as run.json keeps it.
type Worker struct {
	ID     string    `json:"id"` // its pane, %N
	Name   string    `json:"name"`
	Agent  string    `json:"agent"`
	Parent string    `json:"parent"` // the pane that started it
	Level  int       `json:"level"`  // 1 = directly under the run's coordinator
	State  api.State `json:"state"`
	Since  time.Time `json:"since"`

	Task string `json:"task,omitempty"`
	Cwd  string `json:"cwd,omitempty"`
	// Typing: st is typing its task (from the start until the agent's
	// hook shows the turn, or the delivery fails). A worker found so as st
	// starts had its start cut short by st's end (settleCutStarts).
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
	// Pause says why and until when it is paused (State Paused); OnLimit
	// is what st does at its agent's usage limit (limit.go).
	Pause   *api.Pause `json:"pause,omitempty"`
	OnLimit string     `json:"on_limit,omitempty"`
	// LimitSeen is the reset of the last usage limit it was paused for:
	// the same limit read again from its records is behind it (measured:
	// Codex's Stop of the turn after continue can come before its rollout
	// has that turn, whose tail still ends at the limit).
	LimitSeen time.Time `json:"limit_seen,omitzero"`
	// Transcript is its agent's conversation file, as its hooks name it.
	Transcript string `json:"transcript,omitempty"`

	AgentSession string    `json:"agent_session,omitempty"`
	StartedAt    time.Time `json:"started_at"`
	// Told is set once the parent has seen the report (wait, read or a
	// notice), so that it is not told again.
	Told bool `json:"told,omitempty"`
	// Reported is set by st worker done in the current turn.
	Reported bool `json:"reported,omitempty"`
	// Adopted marks an agent that was running before it became a worker.
	Adopted bool `json:"adopted,omitempty"`
	// TeamRun is the run this worker leads as a team lead (adopted with
	// workers of its own).
	TeamRun string `json:"team_run,omitempty"`
	// Scope is what it may change (--owns); Worktree its own checkout.
	Scope    *Scope    `json:"scope,omitempty"`
	Worktree *Worktree `json:"worktree,omitempty"`
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
	// ScreenThere: a remote worker's machine reads its states from its
	// screen (api.Worker.ScreenThere).
	ScreenThere bool `json:"screen_there,omitempty"`
	// Tokens is what its agent spent (tokens.go); Ledger, for a worker of
	// this machine, the record files it was read from and how far, so
	// that a restart of st reads on from there.
	Tokens *api.Tokens    `json:"tokens,omitempty"`
	Ledger *tokens.Ledger `json:"ledger,omitempty"`
	// AgentCost is the cost its agent gave itself (Claude's status line,
	// statusline.go), which Tokens shows in place of an estimate.
	AgentCost *float64 `json:"agent_cost_usd,omitempty"`
}

// Remote reports whether w runs on another machine.
func (w *Worker) Remote() bool { return w.Machine != "" }

// Scope is a worker's ownership, as run.json keeps it: globs relative to
// the root of the repository (Root).
type Scope struct {
	Globs []string `json:"globs"`
	Root  string   `json:"root"`
}

// Worktree is a worker's git worktree, as run.json keeps it.
type Worktree struct {
	// Path is the worktree's folder, Branch its branch, Base the commit
	// it started from (as worktree.Worktree has them).
	Path   string `json:"path"`
	Branch string `json:"branch"`
	Base   string `json:"base"`
	// Root is the checkout it came from, where merge brings it back.
	Root string `json:"root"`
	// Merged is set once its branch is merged into Root.
	Merged bool `json:"merged,omitempty"`
}

// Task is a named piece of work of a run, as run.json keeps it.
type Task struct {
	Name     string        `json:"name"`
	File     string        `json:"file"`
	Agent    string        `json:"agent"`
	Deps     []string      `json:"deps,omitempty"`
	Owns     []string      `json:"owns,omitempty"`
	Worktree bool          `json:"worktree,omitempty"`
	Cwd      string        `json:"cwd,omitempty"`
	Parent   string        `json:"parent"` // the pane that made it; its worker's parent
	State    api.TaskState `json:"state"`
	Since    time.Time     `json:"since"`
	Worker   string        `json:"worker,omitempty"` // the pane of its worker
	Reason   string        `json:"reason,omitempty"` // why it failed, or what it waits on
	Created  time.Time     `json:"created"`
	// Env is the creator's environment for the worker's window (PATH...).
	Env map[string]string `json:"env,omitempty"`
	// BlockedTimeout and HookTimeout are its worker's start's
	// (api.TaskRequest), kept until its dependencies let it start.
	BlockedTimeout time.Duration `json:"blocked_timeout,omitempty"`
	HookTimeout    time.Duration `json:"hook_timeout,omitempty"`
}

// wire is the run as the API shows it.
func (r *Run) wire() api.Run {
	v := api.Run{Format: r.Format, ID: r.ID, Objective: r.Objective, OnLimit: r.OnLimit, Coordinator: r.Coordinator, Session: r.Session,
		Created: r.Created, CoordinatorMachine: r.CoordinatorMachine, BaseDepth: r.BaseDepth,
		BudgetWarned: r.BudgetWarned, BudgetGate: r.BudgetGate}
	if t := r.CoordTokens; t != nil {
		c := *t
		v.CoordinatorTokens = &c
	}
	if p := r.CoordPause; p != nil {
		pp := *p
		v.CoordinatorPause = &pp
	}
	v.CoordinatorLimitSeen, v.CoordinatorAgent, v.CoordinatorTranscript = r.CoordLimitSeen, r.CoordAgent, r.CoordTranscript
	v.CoordinatorError = r.CoordError
	if b := r.Budget; b != nil {
		v.Budget = &api.Budget{Tokens: b.Tokens, USD: b.USD}
	}
	if r.Workers != nil {
		v.Workers = make([]*api.Worker, 0, len(r.Workers))
	}
	for _, w := range r.Workers {
		ww := w.wire()
		v.Workers = append(v.Workers, &ww)
	}
	if r.Tasks != nil {
		v.Tasks = make([]*api.Task, 0, len(r.Tasks))
	}
	for _, t := range r.Tasks {
		tw := t.wire()
		v.Tasks = append(v.Tasks, &tw)
	}
	return v
}

// wire is the worker as the API shows it.
func (w *Worker) wire() api.Worker {
	v := api.Worker{ID: w.ID, Name: w.Name, Agent: w.Agent, Parent: w.Parent, Level: w.Level, State: w.State, Since: w.Since,
		Task: w.Task, Cwd: w.Cwd, Typing: w.Typing, Window: w.Window, Session: w.Session,
		Summary: w.Summary, ReportedAt: w.ReportedAt, ReportAnswer: w.ReportAnswer, LastAnswer: w.LastAnswer, Error: w.Error,
		AgentSession: w.AgentSession, StartedAt: w.StartedAt, Told: w.Told, Reported: w.Reported, Adopted: w.Adopted,
		TeamRun: w.TeamRun, Fan: w.Fan, Machine: w.Machine, MachineName: w.MachineName,
		ParentName: w.ParentName, ParentMachineName: w.ParentMachineName, Ref: w.Ref, TeamSize: w.TeamSize, TeamDepth: w.TeamDepth, ScreenThere: w.ScreenThere,
		OnLimit: w.OnLimit, LimitSeen: w.LimitSeen, Transcript: w.Transcript}
	if w.Tokens != nil {
		t := *w.Tokens
		v.Tokens = &t
	}
	if p := w.Pause; p != nil {
		pp := *p
		v.Pause = &pp
	}
	if s := w.Scope; s != nil {
		v.Scope = &api.Scope{Globs: s.Globs, Root: s.Root}
	}
	if t := w.Worktree; t != nil {
		v.Worktree = &api.WorktreeInfo{Path: t.Path, Branch: t.Branch, Base: t.Base, Root: t.Root, Merged: t.Merged}
	}
	return v
}

// workerRecord is the record of a worker that another machine's st showed
// (its view, checked: peer.CheckView), as this machine keeps it.
func workerRecord(v api.Worker) *Worker {
	w := &Worker{ID: v.ID, Name: v.Name, Agent: v.Agent, Parent: v.Parent, Level: v.Level, State: v.State, Since: v.Since,
		Task: v.Task, Cwd: v.Cwd, Typing: v.Typing, Window: v.Window, Session: v.Session,
		Summary: v.Summary, ReportedAt: v.ReportedAt, ReportAnswer: v.ReportAnswer, LastAnswer: v.LastAnswer, Error: v.Error,
		AgentSession: v.AgentSession, StartedAt: v.StartedAt, Told: v.Told, Reported: v.Reported, Adopted: v.Adopted,
		TeamRun: v.TeamRun, Fan: v.Fan, Machine: v.Machine, MachineName: v.MachineName,
		ParentName: v.ParentName, ParentMachineName: v.ParentMachineName, Ref: v.Ref, TeamSize: v.TeamSize, TeamDepth: v.TeamDepth, ScreenThere: v.ScreenThere,
		OnLimit: v.OnLimit, LimitSeen: v.LimitSeen, Transcript: v.Transcript}
	if v.Tokens != nil {
		// (internal/peer checked the counts: checkView.)
		t := *v.Tokens
		w.Tokens = &t
	}
	if p := v.Pause; p != nil {
		pp := *p
		w.Pause = &pp
	}
	if s := v.Scope; s != nil {
		w.Scope = &Scope{Globs: s.Globs, Root: s.Root}
	}
	if t := v.Worktree; t != nil {
		w.Worktree = &Worktree{Path: t.Path, Branch: t.Branch, Base: t.Base, Root: t.Root, Merged: t.Merged}
	}
	return w
}

// wire is the task as the API shows it.
func (t *Task) wire() api.Task {
	return api.Task{Name: t.Name, File: t.File, Agent: t.Agent, Deps: t.Deps, Owns: t.Owns, Worktree: t.Worktree, Cwd: t.Cwd,
		Parent: t.Parent, State: t.State, Since: t.Since, Worker: t.Worker, Reason: t.Reason, Created: t.Created, Env: t.Env,
		BlockedTimeout: t.BlockedTimeout, HookTimeout: t.HookTimeout}
}

func runTask(r *Run, name string) *Task {
	for _, t := range r.Tasks {
		if t.Name == name {
			return t
		}
	}
	return nil
}

func runWorker(r *Run, id string) *Worker {
	for _, w := range r.Workers {
		if w.ID == id {
			return w
		}
	}
	return nil
}
