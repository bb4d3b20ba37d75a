// Package store keeps st's state as JSON files that are never half
// written: each write goes to a temp file in the same folder, is fsynced,
// and is renamed over the old one, so a crash or a full disk leaves either
// the old file or the new one. It also holds the lock that keeps two
// daemons off one ST_HOME.
package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
	"github.com/google/renameio/v2"
)

// WriteJSON writes v to path atomically with the given mode.
func WriteJSON(path string, v any, mode os.FileMode) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	data = append(data, '\n')
	return WriteFile(path, data, mode)
}

// WriteFile writes data to path atomically: temp file, fsync, rename.
func WriteFile(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("make the folder of %s: %w", path, err)
	}
	// The temp file goes in the same folder, so the rename never crosses
	// filesystems and a full disk there shows on the temp file first.
	if err := renameio.WriteFile(path, data, mode, renameio.WithTempDir(filepath.Dir(path))); err != nil {
		return fmt.Errorf("write %s (the previous version is kept): %w", path, err)
	}
	return nil
}

// ErrCorrupt marks a state file that exists but cannot be decoded.
var ErrCorrupt = errors.New("corrupt state file")

// ReadJSON reads path into v. A missing file returns an error that
// satisfies errors.Is(err, fs.ErrNotExist); one that does not decode
// returns ErrCorrupt naming the file, and the file is left as it is.
func ReadJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	}
	return nil
}

// ReadJSONOrSetAside is ReadJSON for a file st can start without: a
// missing file is no error (found is false), and one that does not decode
// is copied aside first (KeepCopy, at kept) so that the user loses
// nothing when st goes on without it; its error is ReadJSON's.
func ReadJSONOrSetAside(path string, v any) (found bool, kept string, err error) {
	err = ReadJSON(path, v)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, "", nil
	case err != nil:
		kept, _ = KeepCopy(path)
		return true, kept, err
	}
	return true, "", nil
}

// KeepCopy copies a file that st could not read to path.corrupt-N, so
// that nothing a user may need is lost when st starts over without it.
func KeepCopy(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	for i := 1; ; i++ {
		dst := fmt.Sprintf("%s.corrupt-%d", path, i)
		old, err := os.ReadFile(dst)
		if errors.Is(err, fs.ErrNotExist) {
			return dst, os.WriteFile(dst, data, 0o600)
		}
		if err == nil && bytes.Equal(old, data) {
			return dst, nil // kept already (st started again with the file as it was)
		}
	}
}

// Lock is an exclusive lock on a file, held while the daemon runs.
type Lock struct{ f *flock.Flock }

// TryLock takes the lock at path without waiting; ok is false when
// another process holds it.
func TryLock(path string) (l *Lock, ok bool, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, false, err
	}
	f := flock.New(path)
	ok, err = f.TryLock()
	if err != nil || !ok {
		return nil, ok, err
	}
	return &Lock{f: f}, true, nil
}

// LockWait takes the lock at path, trying every `every` until ctx ends.
func LockWait(ctx context.Context, path string, every time.Duration) (*Lock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f := flock.New(path)
	if _, err := f.TryLockContext(ctx, every); err != nil {
		return nil, err
	}
	return &Lock{f: f}, nil
}

// Unlock releases the lock.
func (l *Lock) Unlock() error { return l.f.Unlock() }
