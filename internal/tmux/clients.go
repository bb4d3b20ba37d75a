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

// GlobalOption is the server-wide (global) option name, "" when unset.
func (c *Client) GlobalOption(ctx context.Context, name string) (string, error) {
	out, err := c.Run(ctx, "show-options", "-gqv", name)
	return strings.TrimSuffix(out, "\n"), err
}

// SetGlobalOption sets the global option name to value.
func (c *Client) SetGlobalOption(ctx context.Context, name, value string) error {
	_, err := c.Run(ctx, "set-option", "-g", name, value)
	return err
}

// UnsetGlobalOption unsets the global option name.
func (c *Client) UnsetGlobalOption(ctx context.Context, name string) error {
	_, err := c.Run(ctx, "set-option", "-gu", name)
	return err
}

// RefreshStatus redraws every person's client's status line now (an
// option it shows changed; tmux would wait for status-interval).
func (c *Client) RefreshStatus(ctx context.Context) error {
	out, err := c.Run(ctx, "list-clients", "-F", "#{client_control_mode} #{client_name}")
	if err != nil {
		return err
	}
	for _, l := range strings.Split(out, "\n") {
		mode, name, ok := strings.Cut(strings.TrimSpace(l), " ")
		if ok && mode != "1" && name != "" {
			c.Run(ctx, "refresh-client", "-S", "-t", name)
		}
	}
	return nil
}
