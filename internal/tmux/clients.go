package tmux

import (
	"context"
	"strings"
)

// PanesInFront is the panes a person's client shows now: each attached
// client's active pane of its current window. Control-mode clients
// (st's own, an iTerm2 integration's) show no one anything and are left
// out; the web UI's terminals are clients like any other, as a person
// looks at them.
func (c *Client) PanesInFront(ctx context.Context) (map[string]bool, error) {
	out, err := c.Run(ctx, "list-clients", "-F", "#{client_control_mode} #{pane_id}")
	if err != nil {
		return nil, err
	}
	return parseFront(out), nil
}

// parseFront reads PanesInFront's list.
func parseFront(out string) map[string]bool {
	front := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		mode, pane, ok := strings.Cut(strings.TrimSpace(l), " ")
		if ok && mode != "1" && ValidPaneID(pane) {
			front[pane] = true
		}
	}
	return front
}
