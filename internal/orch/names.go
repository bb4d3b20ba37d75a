package orch

// Worker names: what a name may be, and the name a task file gives.

import (
	"strings"
)

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
