package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"

	"github.com/google/renameio/v2"
)

// BackupSuffix is added to a file's name for the copy st keeps of it as it
// was before st first changed it.
const BackupSuffix = ".st-backup"

// AbsentSuffix is added to a file's name for the mark st leaves (an empty
// file) when there was no file before st first made it. It is kept apart
// from a backup: a backup whose text stood for "no file" could not be told
// from a file whose text was just that ("{}" and a newline, an empty
// config.toml), which an uninstall then removed instead of putting back.
// (A backup an older st made of no file holds that text, and is now put
// back as a file of it: one that means what no file means.)
const AbsentSuffix = ".st-absent"

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
	// absent is text that means what no file means ("{}" for JSON,
	// nothing for TOML): what a file is compared with when there was none.
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
// change ever, the original is copied to path+BackupSuffix, or, when there
// was none, path+AbsentSuffix marks that; neither is ever overwritten. It
// returns the backup it made, if any.
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
	made, err := keepOriginalOnce(f)
	if err != nil {
		return "", fmt.Errorf("backing up %s: %w", f.path, err)
	}
	if made && f.exists {
		backup = f.path + BackupSuffix
	}
	if err := renameio.WriteFile(f.real, data, f.mode); err != nil {
		return backup, err
	}
	return backup, nil
}

// keepOriginalOnce keeps f as it was read (its backup, or the mark that
// there was no file) unless st keeps either already.
func keepOriginalOnce(f *configFile) (bool, error) {
	for _, suffix := range []string{BackupSuffix, AbsentSuffix} {
		if _, err := os.Lstat(f.path + suffix); err == nil {
			return false, nil
		}
	}
	if !f.exists {
		return backupOnce(f.path+AbsentSuffix, nil, 0o600)
	}
	return backupOnce(f.path+BackupSuffix, f.data, f.mode)
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

// KeepOriginal backs path up as it is now (or marks that there is no
// file), unless st already keeps its original: what st does before another
// program rewrites the file on st's behalf (claude plugin install rewrites
// settings.json in its own layout). absent is the text that means no file,
// as for loadFile.
func KeepOriginal(path, absent string) error {
	f, err := loadFile(path, absent)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	_, err = keepOriginalOnce(f)
	return err
}

// RestoreOriginal puts path back as it was before st first changed it,
// byte for byte, once nothing of st's is left in it, and removes the
// backup. Nothing of st's is left when the file means what the original
// means: for JSON the same values, allowing empty objects and lists that
// the original did not have (Claude Code leaves "enabledPlugins": {}
// behind when it drops a plugin); for anything else the same bytes. Where
// there was no file (path+AbsentSuffix), the file is removed once it means
// what absent means. A file that means anything else (the user changed it
// since) is left as it is, and so is its backup. It reports whether the
// original is back.
func RestoreOriginal(path, absent string) (bool, error) {
	mark := path + AbsentSuffix
	_, err := os.Lstat(mark)
	wasAbsent := err == nil
	backupPath := path + BackupSuffix
	orig := []byte(absent)
	if !wasAbsent {
		orig, err = os.ReadFile(backupPath)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
	f, err := loadFile(path, absent)
	if err != nil {
		return false, err
	}
	cur := f.data
	if !f.exists {
		cur = f.absent
	}
	if !sameMeaning(path, orig, cur) {
		return false, nil
	}
	switch {
	case wasAbsent:
		if f.exists {
			if err := os.Remove(f.path); err != nil {
				return false, err
			}
		}
		return true, os.Remove(mark)
	case !f.exists || !bytes.Equal(orig, f.data):
		if err := renameio.WriteFile(f.real, orig, f.mode); err != nil {
			return false, err
		}
	}
	return true, os.Remove(backupPath)
}

// sameMeaning compares a file's original with its text now (see
// RestoreOriginal).
func sameMeaning(path string, orig, cur []byte) bool {
	if bytes.Equal(orig, cur) {
		return true
	}
	if filepath.Ext(path) != ".json" {
		return false
	}
	var a, b any
	if json.Unmarshal(orig, &a) != nil || json.Unmarshal(cur, &b) != nil {
		return false
	}
	return sameExceptEmpty(a, b)
}

// sameExceptEmpty: b holds what a holds, and beyond it only empty objects
// and lists under keys a does not have.
func sameExceptEmpty(a, b any) bool {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if !aok || !bok {
		return reflect.DeepEqual(a, b)
	}
	for k, av := range am {
		bv, ok := bm[k]
		if !ok || !sameExceptEmpty(av, bv) {
			return false
		}
	}
	for k, bv := range bm {
		if _, ok := am[k]; ok {
			continue
		}
		switch v := bv.(type) {
		case map[string]any:
			if len(v) > 0 {
				return false
			}
		case []any:
			if len(v) > 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}
