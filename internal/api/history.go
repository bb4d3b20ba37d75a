package api

import "time"

// RouteOrchPrune takes old runs out of st's history (st orch prune).
const RouteOrchPrune = "/v1/orch/prune" // PruneRequest -> PruneResult

// PruneRequest asks to take away the runs of st's history (the finished
// runs that the daemon leaves on disk: internal/history) that ended more
// than OlderThan ago. Without Yes it only says which they are.
type PruneRequest struct {
	Pane      string        `json:"pane"`
	OlderThan time.Duration `json:"older_than"`
	Yes       bool          `json:"yes"`
}

// PruneResult is what st orch prune took away (Removed), or would.
type PruneResult struct {
	Cutoff  time.Time   `json:"cutoff"` // runs that ended before it
	Runs    []PrunedRun `json:"runs"`
	Removed bool        `json:"removed"`
	// Kept is how many runs the history holds after it.
	Kept int `json:"kept"`
}

// PrunedRun is a run that st orch prune takes away.
type PrunedRun struct {
	ID        string    `json:"id"`
	Objective string    `json:"objective,omitempty"`
	Ended     time.Time `json:"ended"`
	Workers   int       `json:"workers"`
}
