package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sophonz/st/internal/orch"
	"github.com/sophonz/st/internal/store"
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

func queueDir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("st-%d", os.Getuid()), "reports")
}

func queuePath(pane string) (string, error) {
	n := strings.TrimPrefix(pane, "%")
	if n == "" || strings.Trim(n, "0123456789") != "" {
		return "", fmt.Errorf("%q is not a pane id", pane)
	}
	return filepath.Join(queueDir(), n+".json"), nil
}

// QueueReport keeps a report for pane until a hook hands it over.
func QueueReport(req orch.DoneRequest) (string, error) {
	path, err := queuePath(req.Pane)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(queueDir(), 0o700); err != nil {
		return "", err
	}
	if err := safeDir(queueDir()); err != nil {
		return "", err
	}
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
func TakeQueued(pane string) (req orch.DoneRequest, done func(), ok bool) {
	path, err := queuePath(pane)
	if err != nil || safeDir(queueDir()) != nil {
		return req, nil, false
	}
	data, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(data, &req) != nil || req.Pane != pane {
		return req, nil, false
	}
	return req, func() { os.Remove(path) }, true
}
