package api

import "strings"

// The ids st names panes and workers by, as every side writes them: a
// pane of this machine (%4), a pane of a tmux server that went (retired),
// and a pane or worker of another machine (machine/%4, machine/name).

// RetiredMark separates, in a relation that names a pane of a tmux server
// that went, the pane id from the restart it went with ("%4~mx4egnk7"):
// the next server reuses the bare id for another pane.
const RetiredMark = "~"

// Retired reports whether id names a pane of a tmux server that went.
func Retired(id string) bool { return strings.Contains(id, RetiredMark) }

// PaneOf is the pane id a (possibly retired) relation names, for people.
func PaneOf(id string) string {
	p, _, _ := strings.Cut(id, RetiredMark)
	return p
}

// SplitRemote splits machine/rest; ok is false for an id of this machine.
func SplitRemote(id string) (machine, rest string, ok bool) {
	i := strings.Index(id, "/")
	if i <= 0 || i == len(id)-1 {
		return "", "", false
	}
	return id[:i], id[i+1:], true
}

// IsRemote reports whether id names a pane or worker of another machine.
func IsRemote(id string) bool {
	_, _, ok := SplitRemote(id)
	return ok
}
