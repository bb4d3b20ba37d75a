package api

// WorktreeInfo is a worker's worktree, as the API shows it.
type WorktreeInfo struct {
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

// Scope is a worker's ownership: globs relative to the root of the
// repository (Root); a worktree worker's paths are matched in its own tree.
type Scope struct {
	Globs []string `json:"globs"`
	Root  string   `json:"root"`
}

// DiffResult is what st worker diff shows.
type DiffResult struct {
	Worker  WorkerView `json:"worker"`
	Changes []Change   `json:"changes"`
	Outside []string   `json:"outside,omitempty"`
	Diff    string     `json:"diff"`
}

// MergeResult is what st worker merge and pick report.
type MergeResult struct {
	Worker  WorkerView `json:"worker"`
	Commit  string     `json:"commit,omitempty"`
	Files   []string   `json:"files"`
	Removed []string   `json:"removed,omitempty"` // other tries removed by pick
}

// Change is one file a worker changed against its base.
type Change struct {
	Path   string `json:"path"`
	Status string `json:"status"`         // added, modified, deleted or renamed
	From   string `json:"from,omitempty"` // the old path of a rename
}
