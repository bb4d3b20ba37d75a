package agent

import (
	"regexp"
	"strings"
	"sync"
)

// Conversation ids. A hook's payload names the agent's conversation
// (session_id), st keeps it on the pane (@st_agent_session) and puts it
// on the command line that resumes the agent after a tmux restart. A hook
// is any process's to send, so the id is checked against the agent's own
// form before st keeps or uses it: text of another form (a leading "-"
// that the agent would read as an option, shell characters) is no
// conversation of that agent.

var (
	// uuidRE is the form of Claude Code's and Codex's conversation ids.
	uuidRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	})
	// simSessionRE is the sim's: a UUID of its own making, or a name its
	// tests give it (ST_SIM_SESSION_ID), a letter or digit first.
	simSessionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`) })
)

// ValidSession reports whether id has the form of a conversation id of
// the agent kind (its description's SessionID). An unknown kind has no
// valid id.
func ValidSession(kind, id string) bool {
	k, err := Lookup(kind)
	return err == nil && k.ValidSession(id)
}

// ResumedSession is the conversation the agent process with this command
// line was started to resume (`claude --resume ID`, `claude -r ID`,
// `codex resume ID`, `gemini --resume ID`, `st agent sim --resume ID`), or
// "", as the kind's description reads it. A conversation picked later
// inside the agent (Claude's /resume) is not on its command line, and is
// not found here.
func ResumedSession(kind string, argv []string) string {
	k, err := Lookup(kind)
	if err != nil || k.Hear.Resumed == nil {
		return ""
	}
	return k.Hear.Resumed(argv)
}

// resumeFlag reads --resume ID, --resume=ID (and -resume, as Go's flag
// package takes it), and -r ID where short is set: the id when it has
// the form.
func resumeFlag(form func() *regexp.Regexp, argv []string, short bool) string {
	for i, a := range argv {
		next := ""
		if i+1 < len(argv) {
			next = argv[i+1]
		}
		var id string
		switch {
		case a == "--resume" || a == "-resume" || (short && a == "-r"):
			id = next
		case strings.HasPrefix(a, "--resume=") || strings.HasPrefix(a, "-resume="):
			_, id, _ = strings.Cut(a, "=")
		}
		if id != "" && form().MatchString(id) {
			return id
		}
	}
	return ""
}

// codexResumeArg is the session of `codex resume`'s arguments: the first
// one that is not an option (after "--", the next one).
func codexResumeArg(args []string) string {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		case a == "-c" || a == "--config" || a == "--enable" || a == "--disable" || a == "--remote" || a == "-m" || a == "--model" ||
			a == "-p" || a == "--profile" || a == "-s" || a == "--sandbox" || a == "-a" || a == "--ask-for-approval" || a == "-C" || a == "--cd":
			i++ // its value
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}
