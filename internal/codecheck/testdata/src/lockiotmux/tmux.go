// Package lockiotmux stands for st's internal/tmux in the lockio test
// (an internal package cannot be imported here): its Runner runs tmux
// commands, and the test lists Runner.Run as I/O, as lockio lists
// internal/tmux's.
package lockiotmux

import "context"

// Runner runs one tmux command.
type Runner interface {
	Run(ctx context.Context, args ...string) (string, error)
}
