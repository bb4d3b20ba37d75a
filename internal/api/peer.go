package api

import (
	"time"
)

// MachineRef names a machine of the account.
type MachineRef struct {
	Slug string `json:"slug"`
	Name string `json:"name"`
}

// Requests of the peer API (the other machine's st serves them).

// PeerStart starts a worker for a coordinator on the calling machine.
type PeerStart struct {
	Run         string            `json:"run"`
	Coordinator string            `json:"coordinator"` // the run's coordinator pane there
	Parent      string            `json:"parent"`      // the pane that starts the worker there
	Level       int               `json:"level"`
	BaseDepth   int               `json:"base_depth"` // the coordinator's depth in its whole chain
	Ref         string            `json:"ref"`
	Agent       string            `json:"agent"`
	TaskName    string            `json:"task_name"`
	TaskText    string            `json:"task_text"`
	Name        string            `json:"name"`
	Cwd         string            `json:"cwd,omitempty"`
	Worktree    bool              `json:"worktree,omitempty"`
	Owns        []string          `json:"owns,omitempty"`
	Env         map[string]string `json:"env,omitempty"` // the sim agent's knobs only
	// ParentName is who the worker works for, as people there read it.
	ParentName string `json:"parent_name,omitempty"`

	BlockedTimeout time.Duration `json:"blocked_timeout,omitempty"`
	HookTimeout    time.Duration `json:"hook_timeout,omitempty"`
}

// PeerOp names a worker there (its pane or name) for read, send, stop,
// rename, release and adopt; adopt also carries the placement.
type PeerOp struct {
	ID          string `json:"id"`
	Text        string `json:"text,omitempty"`
	Run         string `json:"run,omitempty"`
	Coordinator string `json:"coordinator,omitempty"`
	Parent      string `json:"parent,omitempty"`
	Level       int    `json:"level,omitempty"`
	BaseDepth   int    `json:"base_depth,omitempty"`
	Ref         string `json:"ref,omitempty"`
	ParentName  string `json:"parent_name,omitempty"`
}

// PeerWatchRequest asks for the calling machine's workers there once
// anything changed after Since (or after Wait passes); Since 0 answers at
// once. Depths tells how deep in its whole chain the coordinator of each
// of the calling machine's runs with workers there is now (by run id):
// the chain above may grow after a worker went there (its coordinator
// adopted in turn), and the depth limits count it there too.
type PeerWatchRequest struct {
	Boot   string         `json:"boot"`
	Since  uint64         `json:"since"`
	Wait   time.Duration  `json:"wait"`
	Depths map[string]int `json:"depths,omitempty"`
}

// PeerWatchResult is the calling machine's workers there.
type PeerWatchResult struct {
	Boot    string       `json:"boot"` // which life of that st counted Seq
	Seq     uint64       `json:"seq"`
	Workers []WorkerView `json:"workers"`
	// Attention is the open attention items of those workers there (a
	// permission prompt, a question, a turn without a report, a failure,
	// a pause), with each worker's pane there: the calling machine shows
	// them, marked with this machine, and pushes none of them (this
	// machine does, once). An older st sends none and reads none (the
	// field is left out when empty): each side works on as before.
	Attention []Attention `json:"attention,omitempty"`
}

// PeerReparent tells a machine that a coordinator pane here moved.
type PeerReparent struct {
	Old string `json:"old"`
	New string `json:"new"`
}

// PeerPaneResult says whether a pane lives, and where it went if it moved.
// Retired is its retired id (%3~gen) when it did not come back after a
// tmux restart there: the id that names it now (%3 may be another pane).
type PeerPaneResult struct {
	Live    bool   `json:"live"`
	Now     string `json:"now,omitempty"`
	Retired string `json:"retired,omitempty"`
}
