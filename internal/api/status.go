package api

import (
	"time"
)

// After a tmux restart. st keeps a picture of its tmux server (sessions,
// windows, panes, folders, which agent runs where and its conversation id
// from the hooks) in $ST_HOME/tmux-layout.json. When the server goes down
// while st has coordinators or workers on it, st brings the sessions
// back, starts each agent again resuming its own conversation, and puts
// the relations back on the new panes. Panes that come back by other
// means are found again by their agents' conversation ids.

// RestoreStats are the figures of the last restore, for st status and
// the benchmark.
type RestoreStats struct {
	At        time.Time     `json:"at"`
	Sessions  time.Duration `json:"sessions"`  // from noticing the server gone to the sessions being back
	Relations time.Duration `json:"relations"` // from the sessions being back to every relation restored
	Panes     int           `json:"panes"`
	// Agents is how many agents the restore started again; AgentsBack
	// how long after the sessions were back the last of them came back
	// or was found gone (0 while some still start).
	Agents     int           `json:"agents,omitempty"`
	AgentsBack time.Duration `json:"agents_back,omitempty"`
}

// Status is a summary for st status.
type Status struct {
	Runs    int `json:"runs"`
	Workers int `json:"workers"`
	Live    int `json:"live"`
	// Waits is how many st worker wait calls are waiting now (their
	// workers found, not yet settled).
	Waits int `json:"waits,omitempty"`
	// Attention is how many attention items are open: agents that need a
	// person (st attention lists them).
	Attention int `json:"attention"`
	// Problems are what the user should know about and fix (a run.json
	// st could not read).
	Problems []string `json:"problems,omitempty"`
	// Limits are the usage limits of the agents' accounts as the agents
	// last said them, one per account and window (those whose window
	// has not reset since); NearLimit is the share (percent) from which
	// one is near.
	Limits    []AgentLimit `json:"limits,omitempty"`
	NearLimit float64      `json:"near_limit,omitempty"`
	// Coordinators are the runs' coordinators on this machine whose own
	// agent is paused at its usage limit (a worker's pause is in its
	// listing; a coordinator has none but this).
	Coordinators []PausedCoordinator `json:"paused_coordinators,omitempty"`
}

// PausedCoordinator is a run's coordinator paused at its agent's usage
// limit, as st status shows it.
type PausedCoordinator struct {
	Pane  string `json:"pane"`
	Run   string `json:"run"`
	Agent string `json:"agent"`
	Pause Pause  `json:"pause"`
}
