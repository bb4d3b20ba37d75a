package api

import (
	"time"
)

// GraphAgent is one agent as the web UI's graph and cards show it.
type GraphAgent struct {
	Pane       string    `json:"pane"`
	Name       string    `json:"name"`
	Kind       string    `json:"kind"`
	Role       string    `json:"role"` // coordinator, worker, or ""
	State      string    `json:"state"`
	Since      time.Time `json:"since"`
	Summary    string    `json:"summary,omitempty"`
	Parent     string    `json:"parent,omitempty"`
	ParentGone bool      `json:"parent_gone,omitempty"`
	// ParentShell marks a worker started from a shell (a person typing st
	// worker start): no line is drawn from a shell, and it is no orphan.
	ParentShell bool `json:"parent_shell,omitempty"`
	// ParentName and ParentMachineName name a coordinator on another
	// machine, for the "worker of X on M" mark.
	ParentName        string     `json:"parent_name,omitempty"`
	ParentMachineName string     `json:"parent_machine_name,omitempty"`
	Run               string     `json:"run,omitempty"`
	TeamOf            int        `json:"team_of,omitempty"`
	Subagents         []Subagent `json:"subagents,omitempty"`
	// Teammates are those of the Claude agent team it leads.
	Teammates []Teammate `json:"teammates,omitempty"`
	// Pause says why and until when a paused worker waits (its usage
	// limit's reset).
	Pause *Pause `json:"pause,omitempty"`
	// TextsHidden says its summary was left out (WorkerView.HideTexts).
	TextsHidden bool `json:"texts_hidden,omitempty"`
	// Tokens is what a worker's agent spent (st's token ledger).
	Tokens *Tokens `json:"tokens,omitempty"`
	// Screen: its states are read from its screen (its kind has no
	// hooks), as the machine it runs on says; that machine's kind may be
	// one this machine has no description of (WorkerView.ScreenStates).
	Screen bool `json:"screen,omitempty"`
}

// HideTexts leaves out the worker's report (WorkerView.HideTexts).
func (a *GraphAgent) HideTexts() {
	a.Summary, a.TextsHidden = "", true
}

// Subagent is one of Claude's subagents (Task tool), seen through the
// SubagentStart and SubagentStop hooks. It has no window; st only watches.
type Subagent struct {
	ID      string    `json:"id"`
	Type    string    `json:"type"`
	State   string    `json:"state"` // working or done
	Since   time.Time `json:"since"`
	For     string    `json:"for,omitempty"` // how long in its state
	Started time.Time `json:"started"`
}

// Teammate is one teammate of a Claude agent team, as st shows it under
// its lead.
type Teammate struct {
	Name string `json:"name"`
	Team string `json:"team"`
	// Pane is its own tmux pane; "" when it runs in its lead's process,
	// which InProcess then says.
	Pane      string `json:"pane,omitempty"`
	InProcess bool   `json:"in_process,omitempty"`
	Color     string `json:"color,omitempty"`
	// State is working, waiting (a permission prompt in its pane) or idle.
	State   string    `json:"state"`
	Since   time.Time `json:"since"`
	For     string    `json:"for,omitempty"` // how long in its state, e.g. "12s"
	Started time.Time `json:"started"`
	// Session is its own conversation id (a teammate in a pane).
	Session string `json:"session,omitempty"`
}
