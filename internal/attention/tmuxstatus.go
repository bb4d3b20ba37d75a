package attention

import "strings"

// The tmux status line's segment (st setup --tmux-status): how many items
// are open, from the server option @st_attention that st's daemon keeps
// (StatusOption), drawn only when it is above zero. It is tmux's own
// format, so the line costs tmux no process and st nothing but an option
// set when the count changes.

// StatusOption is the tmux server option that holds the open count.
const StatusOption = "@st_attention"

// Segment is what st puts before status-right.
const Segment = "#{?#{&&:#{" + StatusOption + "},#{!=:#{" + StatusOption + "},0}},#[fg=black#,bg=red#,bold] st: #{" + StatusOption + "} need you #[default] ,}"

// HasSegment reports whether status holds st's segment.
func HasSegment(status string) bool { return strings.Contains(status, Segment) }

// WithSegment is status with st's segment in front, once.
func WithSegment(status string) string {
	if HasSegment(status) {
		return status
	}
	return Segment + status
}

// WithoutSegment is status with st's segment taken out, and nothing else
// of it changed (the person may have changed the rest since).
func WithoutSegment(status string) string { return strings.ReplaceAll(status, Segment, "") }
