package tmux

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/privdir"
)

// SocketDir makes the folder of a server's socket when it is missing (mode
// 0700, this user's), and refuses one that another user owns or that
// others may write into or read, or one in a folder they could rename it
// out of (privdir.Check): whoever can put a socket of their own
// there gets st's commands, the lines it types into agents among them.
// tmux checks its default folder the same way; st gives -S, so tmux checks
// nothing. The error wraps ErrNoServer: no server of st's can run there.
func SocketDir(socket string) error {
	dir := filepath.Dir(socket)
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("make the tmux socket's folder %s: %v: %w", dir, err, ErrNoServer)
		}
		fi, err = os.Lstat(dir)
	}
	if err != nil {
		return fmt.Errorf("the tmux socket's folder %s: %v: %w", dir, err, ErrNoServer)
	}
	if !fi.IsDir() {
		return fmt.Errorf("the tmux socket's folder %s is not a folder (Try: remove it, and st makes the folder): %w", dir, ErrNoServer)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("refused: the tmux socket's folder %s belongs to user %d, not to this user (%d), who could put a server of their own there (Try: point TMUX_TMPDIR or ST_TMUX_SOCKET at a folder of yours): %w",
			dir, st.Uid, os.Getuid(), ErrNoServer)
	}
	if fi.Mode().Perm()&0o027 != 0 {
		return fmt.Errorf("refused: the tmux socket's folder %s is open to other users (mode %04o) (Try: chmod 700 %s): %w",
			dir, fi.Mode().Perm(), dir, ErrNoServer)
	}
	// The folders above it, as for ST_HOME: whoever may rename it away
	// could put a folder of their own in its place.
	if err := privdir.Check(dir, socketFolder); err != nil {
		var e *api.Error
		if errors.As(err, &e) {
			return fmt.Errorf("refused: %s (Try: %s): %w", e.Message, e.Hint, ErrNoServer)
		}
		return fmt.Errorf("refused: %v: %w", err, ErrNoServer)
	}
	return nil
}

// socketFolder names the socket's folder in privdir's refusals.
var socketFolder = privdir.Folder{Name: "the tmux socket's folder", Elsewhere: "point TMUX_TMPDIR or ST_TMUX_SOCKET at a folder of yours"}
