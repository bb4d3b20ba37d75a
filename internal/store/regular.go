package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ErrNotRegular is a path that names no regular file: a FIFO, a device, a
// socket or a folder, which st never reads as a file of the user's.
var ErrNotRegular = errors.New("not a regular file")

// OpenRegular opens path for reading without blocking: O_NONBLOCK, so that
// a FIFO with no writer, which open(2) would wait on for good (a command
// that ignores Ctrl-C while it waits), opens at once, and then fstat
// refuses anything but a regular file. Checking the file opened, not the
// path before it, leaves no moment for the path to become another file.
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is %s, %w", path, kindOf(fi.Mode()), ErrNotRegular)
	}
	return f, nil
}

// ReadRegular reads a regular file whole, as OpenRegular opens it.
func ReadRegular(path string) ([]byte, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// kindOf names a file's kind in words.
func kindOf(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "of another kind"
}
