package store

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/sophonz/st/internal/api"
)

// HomeWriteError is what st says when what (making ST_HOME, its lock, its
// socket, daemon.log) failed in home: a folder st may not write, or a
// read-only disk, is refused with what to do; any other failure is
// wrapped as it is.
func HomeWriteError(home, what string, err error) error {
	var why, hint string
	switch {
	case errors.Is(err, syscall.EROFS):
		why = "it is on a read-only disk"
		hint = "set ST_HOME to a folder on a disk you can write (ST_HOME=~/.sophonz is the default)"
	case errors.Is(err, fs.ErrPermission):
		why = "you may not write there"
		hint = fmt.Sprintf("chmod u+rwx %s, or set ST_HOME to a folder you can write", home)
	default:
		return fmt.Errorf("%s: %w", what, err)
	}
	return &api.Error{Kind: api.KindUsage, Message: fmt.Sprintf("st cannot %s in ST_HOME %s: %s", what, home, why), Hint: hint}
}
