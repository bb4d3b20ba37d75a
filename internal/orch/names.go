package orch

// Worker names: what a name may be, and the name a task file gives.

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sophonz/st/internal/api"
)

// MaxName is the longest name st takes, in characters.
const MaxName = 40

// NameRule is what a name may be, said as the Try line of a refusal.
const NameRule = "use letters, digits, '.', '_' and '-', at most 40 characters, starting with a letter, digit or '_'"

// CheckName refuses a name that ValidName refuses, saying which of its
// rules the name breaks (its length, its first character, or which
// character), with the rule and an example as the Try line. what names
// the name ("the name", "the task name"), and example the command that
// would take a good one ("--name api-tests").
func CheckName(what, name, example string) error {
	var why string
	switch {
	case ValidName(name):
		return nil
	case name == "":
		why = fmt.Sprintf("%s is empty", what)
	case utf8.RuneCountInString(name) > MaxName:
		why = fmt.Sprintf("%s is %d characters long; st takes at most %d", what, utf8.RuneCountInString(name), MaxName)
	case name[0] == '-':
		why = fmt.Sprintf("%s %q starts with '-', which a command would read as an option", what, name)
	case name[0] == '.':
		why = fmt.Sprintf("%s %q starts with '.', which names a folder or a hidden file", what, name)
	default:
		why = fmt.Sprintf("%s %q has characters that tmux or a shell would misread (%s)", what, name, badRunes(name))
	}
	hint := NameRule
	if example != "" {
		hint += ", e.g. " + example
	}
	return &api.Error{Kind: api.KindUsage, Message: why, Hint: hint}
}

// badRunes lists the characters of name that a name may not have, each
// once, quoted so that a space or a quote shows.
func badRunes(name string) string {
	var out []string
	seen := map[rune]bool{}
	for _, r := range name {
		if nameRune(r) || seen[r] {
			continue
		}
		seen[r] = true
		out = append(out, fmt.Sprintf("%+q", r))
	}
	return strings.Join(out, " ")
}

// nameRune is a character a name may have.
func nameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
}

// ValidName reports whether a worker name is safe as a tmux window name
// and a shell word: letters, digits, '.', '_' and '-', not starting with
// '-' or '.', at most 40 characters.
func ValidName(name string) bool {
	if name == "" || len(name) > MaxName || name[0] == '-' || name[0] == '.' {
		return false
	}
	for _, r := range name {
		if !nameRune(r) {
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
