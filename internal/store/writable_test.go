package store

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/sophonz/st/internal/api"
)

// TestHomeWriteError: a folder st may not write, or a read-only disk, is
// refused with what to do; any other failure keeps its cause.
func TestHomeWriteError(t *testing.T) {
	for _, tt := range []struct {
		err        error
		want, hint string
	}{
		{&fs.PathError{Op: "open", Path: "/h/daemon.log", Err: syscall.EACCES}, "st cannot write daemon.log in ST_HOME /h: you may not write there", "chmod u+rwx /h, or set ST_HOME to a folder you can write"},
		{fmt.Errorf("listen: %w", syscall.EROFS), "st cannot write daemon.log in ST_HOME /h: it is on a read-only disk", "set ST_HOME to a folder on a disk you can write"},
	} {
		err := HomeWriteError("/h", "write daemon.log", tt.err)
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Message != tt.want || !strings.HasPrefix(ae.Hint, tt.hint) {
			t.Errorf("HomeWriteError(%v) = %v; want %q, Try: %q", tt.err, err, tt.want, tt.hint)
		}
		if strings.Contains(err.Error(), "open ") {
			t.Errorf("HomeWriteError(%v) says go's words: %v", tt.err, err)
		}
	}
	other := syscall.ENOSPC
	if err := HomeWriteError("/h", "write daemon.log", other); !errors.Is(err, other) {
		t.Errorf("HomeWriteError(ENOSPC) = %v; want its cause kept", err)
	}
}
