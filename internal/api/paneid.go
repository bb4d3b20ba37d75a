package api

import "strings"

// RetiredMark separates, in a relation that names a pane of a tmux server
// that went, the pane id from the restart it went with ("%4~mx4egnk7"):
// the next server reuses the bare id for another pane. (orch's
// retiredMark is the same mark; it makes such ids.)
const RetiredMark = "~"

// PaneOf is the pane id a (possibly retired) relation names, for people.
func PaneOf(id string) string {
	p, _, _ := strings.Cut(id, RetiredMark)
	return p
}
