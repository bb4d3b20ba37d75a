package client

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/tmuxenv"
)

// A report that cannot reach the daemon because a sandbox refuses the
// socket (Codex's default sandbox blocks connect() on unix sockets) is
// queued in a file where the sandbox lets it write, and handed to the
// daemon by the agent's next hook, which runs outside the sandbox.

// Refused reports whether err is a connection that a sandbox refused, as
// opposed to a daemon that is down.
func Refused(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES)
}

// The queue's folder is $TMPDIR/st-UID/reports. That name is known to
// every user of the machine, so another one could make st-UID first and
// so block (or watch) every queued report. A folder st does not own, or
// that others may write to, is never used; st then falls back to a folder
// of its own with a random name, $TMPDIR/st-UID-XXXXXXXX, which no one
// else can make before it (os.MkdirTemp), and which the hook finds again
// by looking for this user's private st-UID-* folders. Neither side needs
// to write anywhere but the temp folder, which the sandbox allows.

func baseDir() string { return filepath.Join(os.TempDir(), fmt.Sprintf("st-%d", os.Getuid())) }

// queueDirs lists the queue folders that are safe to use now: the usual
// one first, then this user's fallbacks.
func queueDirs() []string {
	if privateDir(baseDir()) == nil {
		// The usual case, on every hook: no look through the temp folder.
		return []string{filepath.Join(baseDir(), "reports")}
	}
	var dirs []string
	fbs, _ := filepath.Glob(baseDir() + "-*")
	for _, fb := range fbs {
		if privateDir(fb) == nil {
			dirs = append(dirs, filepath.Join(fb, "reports"))
		}
	}
	return dirs
}

// queueDir returns a safe queue folder, making one when there is none.
func queueDir() (string, error) {
	if err := os.Mkdir(baseDir(), 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	for _, d := range queueDirs() {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			continue
		}
		if safeDir(d) == nil {
			return d, nil
		}
	}
	// The usual folder is someone else's: a fallback no one can pre-make.
	fb, err := os.MkdirTemp(os.TempDir(), filepath.Base(baseDir())+"-")
	if err != nil {
		return "", fmt.Errorf("%s is not a private folder of this user, and no other could be made: %w", baseDir(), err)
	}
	d := filepath.Join(fb, "reports")
	if err := os.Mkdir(d, 0o700); err != nil {
		return "", err
	}
	return d, safeDir(d)
}

// queueFile names the file of pane's report. Pane ids repeat across tmux
// servers (every server has a %2), and one user may run several st
// daemons and servers at once, so the name carries which daemon and which
// tmux server the report is for: a hook in another server's %2 must not
// take it and hand it to a daemon that would give it to the wrong worker.
func (c *Client) queueFile(pane string) (string, error) {
	n := strings.TrimPrefix(pane, "%")
	if n == "" || strings.Trim(n, "0123456789") != "" {
		return "", fmt.Errorf("%q is not a pane id", pane)
	}
	sum := sha256.Sum256([]byte(c.Socket + "\x00" + tmuxenv.Socket(c.Tmux)))
	return hex.EncodeToString(sum[:8]) + "-" + n + ".json", nil
}

// QueueReport keeps a report for pane until a hook of the same tmux
// server and st hands it over.
func (c *Client) QueueReport(req api.DoneRequest) (string, error) {
	name, err := c.queueFile(req.Pane)
	if err != nil {
		return "", err
	}
	dir, err := queueDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	return path, store.WriteJSON(path, req, 0o600)
}

// safeDir refuses a queue folder that another user could write to. Its
// parent (/tmp/st-UID) is checked too: one made by another user could
// have the folder swapped between the check and the read.
func safeDir(dir string) error {
	if err := privateDir(filepath.Dir(dir)); err != nil {
		return err
	}
	return privateDir(dir)
}

func privateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s is not a private folder of this user; st will not use it", dir)
	}
	return nil
}

// TakeQueued returns the report queued for pane, if any, and a function
// that removes it once the daemon has it.
func (c *Client) TakeQueued(pane string) (req api.DoneRequest, done func(), ok bool) {
	name, err := c.queueFile(pane)
	if err != nil {
		return req, nil, false
	}
	for _, dir := range queueDirs() {
		if safeDir(dir) != nil {
			continue
		}
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if err != nil || json.Unmarshal(data, &req) != nil || req.Pane != pane {
			continue
		}
		return req, func() { os.Remove(path) }, true
	}
	return req, nil, false
}
