package api

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
