package hooks

import (
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/sophonz/st/internal/agent"
)

// spec is what differs between the agents: the events st listens to and
// which of them take a tool matcher, read from the agent kind's
// description (agent.Kind.Hear).
type spec struct {
	agent   string
	events  []string
	matcher map[string]bool // events whose group carries "matcher": "*"
}

// The kinds whose hooks this package installs, each in its own form:
// Claude's settings.json, Codex's hooks.json (with Codex's trust), Gemini
// CLI's settings.json (Claude's form of hooks, in its own folder).
const (
	Claude = "claude"
	Codex  = "codex"
	Gemini = "gemini"
)

// ClaudeEvents are the Claude Code events st installs a hook for.
var ClaudeEvents = agent.Claude.EventNames()

// CodexEvents are the Codex events st installs a hook for (Codex has no
// Notification; it has Interrupt, fired by Esc during a turn).
var CodexEvents = agent.Codex.EventNames()

// specs are the kinds whose hooks st installs (agent.WithHooks), by name.
var specs = func() map[string]spec {
	out := map[string]spec{}
	for _, k := range agent.WithHooks() {
		sp := spec{agent: k.Name, events: k.EventNames(), matcher: map[string]bool{}}
		for _, e := range k.Hear.Events {
			if e.Matcher {
				sp.matcher[e.Name] = true
			}
		}
		out[k.Name] = sp
	}
	return out
}()

// Kinds lists the agent kinds whose hooks st installs, sorted.
func Kinds() []string {
	out := make([]string, 0, len(specs))
	for k := range specs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Command is the hook command st writes for an agent's event: the st
// binary, quoted for the shell when it needs to be, then "hook AGENT EVENT".
func Command(st, agent, event string) string {
	return shellQuote(st) + " hook " + agent + " " + event
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// stCommandRE matches "<path> hook <agent> <event>", the path bare or in
// single or double quotes.
var stCommandRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\s*(?:'((?:[^']|'\\'')*)'|"((?:[^"\\]|\\.)*)"|(\S+))\s+hook\s+(\S+)\s+(\S+)\s*$`)
})

var backslashRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\\(.)`) })

// parseCommand reports whether command is a hook st wrote for agent: it
// runs a program named st (any folder, or exactly st, the binary in use)
// with "hook AGENT EVENT". It returns the program's path and the event.
func parseCommand(command, agent, st string) (path, event string, ok bool) {
	m := stCommandRE().FindStringSubmatch(command)
	if m == nil || m[4] != agent {
		return "", "", false
	}
	if path, ok = stProgram(m[1], m[2], m[3], st); !ok {
		return "", "", false
	}
	return path, m[5], true
}

// stProgram is the program's path from the three ways a command spells
// it (single-quoted, backslash-escaped, bare), and whether it is st: a
// program named st in any folder, or exactly st, the binary in use.
func stProgram(quoted, escaped, bare, st string) (string, bool) {
	path := bare
	switch {
	case quoted != "":
		path = strings.ReplaceAll(quoted, `'\''`, "'")
	case escaped != "":
		path = backslashRE().ReplaceAllString(escaped, "$1")
	}
	return path, filepath.Base(path) == "st" || path == st
}
