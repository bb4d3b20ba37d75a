// Package tmuxenv reads what tmux tells the programs in its panes about
// their server: $TMUX ("/tmp/tmux-0/default,1234,0": the server's socket,
// its pid, the session) and where the default server's socket is
// ($TMUX_TMPDIR). It imports nothing of st, so the command line, its
// client and the guard in the agents' hook process read $TMUX without
// linking internal/tmux, which runs tmux (and creack/pty with it): they
// ask the daemon, and run no tmux themselves.
package tmuxenv

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Socket is the server's socket path in a $TMUX value, or "" when the
// value is empty (not in tmux).
func Socket(tmuxEnv string) string {
	sock, _, _ := strings.Cut(tmuxEnv, ",")
	return sock
}

// DefaultSocket is where tmux puts the default server's socket of user
// uid: tmpdir ($TMUX_TMPDIR; "" is /tmp) / tmux-UID / default.
func DefaultSocket(tmpdir string, uid int) string {
	if tmpdir == "" {
		tmpdir = "/tmp"
	}
	return filepath.Join(tmpdir, fmt.Sprintf("tmux-%d", uid), "default")
}
