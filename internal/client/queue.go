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
// queued in a file where the sandbox lets it write, the temp folder, and
// handed to the daemon by the agent's hook, which runs outside the
// sandbox.
//
// Every sandboxed Codex may write the temp folder, and read the whole
// disk, so neither where a queued report is nor a secret st could give
// the worker (measured on Codex 0.171.0: the sandbox sees no other
// process, but Codex writes its session's environment to
// $CODEX_HOME/shell_snapshots, which every sandbox reads) tells who wrote
// it. What no other sandbox can touch is the worker's own tool call:
// st worker done prints the SHA-256 of the report it queued, Codex
// (outside the sandbox) hands that output to the worker's PostToolUse
// hook, and the hook takes the queued file only when it has that digest.
// A report another agent wrote for this pane is never named by this
// agent's own output, and an old one of its own is named only by the
// call that queued it, so neither is handed in.
//
// A report the hook took while st was down waits in $ST_HOME/reports,
// which no sandbox may write (st's config.toml rests on the same), for
// the pane's next hook.

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

// queueName names the file of pane's report: the tmux server and st it
// is for, the pane, and the digest of what the file holds. Pane ids
// repeat across tmux servers (every server has a %2), and one user may
// run several st daemons and servers at once, so a hook in another
// server's %2 must not take it and hand it to a daemon that would give
// it to the wrong worker.
func (c *Client) queueName(pane, digest string) (string, error) {
	n := strings.TrimPrefix(pane, "%")
	if n == "" || strings.Trim(n, "0123456789") != "" {
		return "", fmt.Errorf("%q is not a pane id", pane)
	}
	sum := sha256.Sum256([]byte(c.Socket + "\x00" + tmuxenv.Socket(c.Tmux)))
	name := hex.EncodeToString(sum[:8]) + "-" + n
	if digest != "" {
		name += "-" + digest
	}
	return name + ".json", nil
}

// QueueReport keeps a report for pane until the hook of the tool call
// that runs this hands it over. It returns the file and the SHA-256 of
// what it holds, which the caller must print: that line of the tool
// call's output is what lets the hook take it.
func (c *Client) QueueReport(req api.DoneRequest) (path, digest string, err error) {
	data, err := json.Marshal(req)
	if err != nil {
		return "", "", err
	}
	digest = digestOf(data)
	name, err := c.queueName(req.Pane, digest)
	if err != nil {
		return "", "", err
	}
	dir, err := queueDir()
	if err != nil {
		return "", "", err
	}
	path = filepath.Join(dir, name)
	return path, digest, store.WriteFile(path, data, 0o600)
}

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
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

// TakeQueued returns the report queued for pane whose file holds exactly
// what digest says (the digest the agent's own tool call printed), and a
// function that removes it once the daemon has it.
func (c *Client) TakeQueued(pane, digest string) (req api.DoneRequest, done func(), ok bool) {
	name, err := c.queueName(pane, digest)
	if err != nil || len(digest) != sha256.Size*2 {
		return req, nil, false
	}
	for _, dir := range queueDirs() {
		if safeDir(dir) != nil {
			continue
		}
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		// One read: what is checked is what is handed over.
		if err != nil || digestOf(data) != digest || json.Unmarshal(data, &req) != nil || req.Pane != pane {
			continue
		}
		return req, func() { os.Remove(path) }, true
	}
	return req, nil, false
}

// keptPath is where a report the hook took while st was down waits.
func (c *Client) keptPath(pane string) (string, error) {
	name, err := c.queueName(pane, "")
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(c.Socket), "reports", name), nil
}

// KeepReport keeps a report the hook took from the queue while st could
// not take it, for the pane's next hook. A later one replaces it, as a
// later report replaces a worker's summary.
func (c *Client) KeepReport(req api.DoneRequest) error {
	path, err := c.keptPath(req.Pane)
	if err != nil {
		return err
	}
	return store.WriteJSON(path, req, 0o600)
}

// TakeKept returns the report kept for pane, if any, and a function that
// removes it once the daemon has it.
func (c *Client) TakeKept(pane string) (req api.DoneRequest, done func(), ok bool) {
	path, err := c.keptPath(pane)
	if err != nil {
		return req, nil, false
	}
	if store.ReadJSON(path, &req) != nil || req.Pane != pane {
		return req, nil, false
	}
	return req, func() { os.Remove(path) }, true
}
