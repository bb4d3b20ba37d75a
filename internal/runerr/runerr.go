// Package runerr words the failure of a program st runs (tmux, git) one
// way: the program and its subcommand, then what the program printed, or
// its exit status when it printed nothing. The user sees the program's
// own words.
package runerr

import (
	"fmt"
	"strings"
)

// Message is the text of a failed run of program with args.
func Message(program string, args []string, stderr string, exitCode int) string {
	name := program
	if len(args) > 0 {
		name += " " + args[0]
	}
	msg := strings.TrimSpace(stderr)
	if msg == "" {
		msg = fmt.Sprintf("exit status %d", exitCode)
	}
	return name + ": " + msg
}
