// Package orch is st's model of delegation: runs, their coordinators and
// workers, the worker state machine driven by the agents' hooks, the
// delivery of typed lines, the notices sent to coordinators, and the depth
// rules, with the records of work across machines (remote.go, hosted.go)
// that internal/peer keeps true. The daemon and internal/peer are its
// users; it is the only writer of run.json.
package orch

import (
	"fmt"
	"strings"

	"github.com/sophonz/st/internal/api"
)

func runTask(r *Run, name string) *Task {
	for _, t := range r.Tasks {
		if t.Name == name {
			return t
		}
	}
	return nil
}

func runWorker(r *Run, id string) *Worker {
	for _, w := range r.Workers {
		if w.ID == id {
			return w
		}
	}
	return nil
}

func errorf(kind, hint, format string, args ...any) *api.Error {
	return &api.Error{Kind: kind, Message: fmt.Sprintf(format, args...), Hint: hint}
}

// MaxLevel is how deep workers may go below their run's coordinator.
const MaxLevel = 2

// ValidName reports whether a worker name is safe as a tmux window name
// and a shell word: letters, digits, '.', '_' and '-', not starting with
// '-' or '.', at most 40 characters.
func ValidName(name string) bool {
	if name == "" || len(name) > 40 || name[0] == '-' || name[0] == '.' {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// NameFromTask derives a worker name from a task file's name: its base
// without the extension, with unsafe characters made '-'.
func NameFromTask(path string) string {
	base := path
	if i := strings.LastIndex(base, "/"); i >= 0 {
		base = base[i+1:]
	}
	if i := strings.LastIndex(base, "."); i > 0 {
		base = base[:i]
	}
	var b strings.Builder
	for _, r := range base {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	n := strings.Trim(b.String(), "-_")
	if len(n) > 40 {
		n = n[:40]
	}
	if n == "" {
		n = "worker"
	}
	return n
}
