package hooks

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/renameio/v2"
)

// BackupSuffix is added to a file's name for the copy st keeps of it as it
// was before st first changed it.
const BackupSuffix = ".st-backup"

// errChanged: the file changed between st's read and its write (the agent
// rewrote its settings meanwhile); the edit is done again.
var errChanged = errors.New("the file changed while st edited it")

// configFile is one of the agents' files, as read.
type configFile struct {
	path   string // as the user knows it
	real   string // symlinks resolved: what is read and replaced
	data   []byte
	exists bool
	mode   fs.FileMode
	// absent is what the backup holds when there was no file: text of the
	// same meaning ("{}" for JSON, nothing for TOML), so that every change
	// after st's first has a backup to go back to.
	absent []byte
}

func loadFile(path string, absent string) (*configFile, error) {
	f := &configFile{path: path, real: path, mode: 0o600, absent: []byte(absent)}
	if r, err := filepath.EvalSymlinks(path); err == nil {
		f.real = r
	}
	fi, err := os.Stat(f.real)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("%s is a folder", path)
	}
	if f.data, err = os.ReadFile(f.real); err != nil {
		return nil, err
	}
	f.exists, f.mode = true, fi.Mode().Perm()
	return f, nil
}

// save replaces the file with data atomically, keeping its mode (a dotfile
// that is a symlink stays one: its target is replaced). Before st's first
// change ever, the original is copied to path+BackupSuffix (f.absent when
// there was none); an existing backup is never overwritten. It returns the
// backup it made, if any.
func (f *configFile) save(data []byte) (backup string, err error) {
	cur, err := os.ReadFile(f.real)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if f.exists {
			return "", errChanged
		}
	case err != nil:
		return "", err
	case !f.exists || !bytes.Equal(cur, f.data):
		return "", errChanged
	}
	if err := os.MkdirAll(filepath.Dir(f.real), 0o700); err != nil {
		return "", err
	}
	original := f.data
	if !f.exists {
		original = f.absent
	}
	made, err := backupOnce(f.path+BackupSuffix, original, f.mode)
	if err != nil {
		return "", fmt.Errorf("backing up %s: %w", f.path, err)
	}
	if made {
		backup = f.path + BackupSuffix
	}
	if err := renameio.WriteFile(f.real, data, f.mode); err != nil {
		return backup, err
	}
	return backup, nil
}

// backupOnce writes data to path unless path exists. The copy is written
// in full under a temporary name and then linked into place, so a backup
// is never partial and never replaces another.
func backupOnce(path string, data []byte, mode fs.FileMode) (bool, error) {
	if _, err := os.Lstat(path); err == nil {
		return false, nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}
