package simagent

import (
	"fmt"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// directiveKind is what one line of a task file asks the sim to do.
type directiveKind int

const (
	dirRun    directiveKind = iota // run: CMD, as a Bash tool call
	dirSleep                       // sleep: DURATION
	dirAsk                         // ask: QUESTION, answered by the next submitted line
	dirPermit                      // permit: CMD, a Bash call that asks a person's leave first
	dirAnswer                      // answer: TEXT, the turn's last answer
	dirUsage                       // usage: input=N output=N ...: a response's tokens in the transcript
	dirBad                         // a known key with a value that cannot be used
)

type directive struct {
	kind  directiveKind
	value string        // the command, question, answer, or what was wrong
	dur   time.Duration // for dirSleep
	usage usage         // for dirUsage
}

// usage is one response's tokens, as the usage: directive gives them, for
// the transcript the sim writes in Claude's form (so that st's token
// ledger reads the sim as it reads Claude).
type usage struct {
	input, output, cacheRead, cacheWrite int64
	model                                string
}

// parseUsage reads "input=100 output=20 cache_read=300 cache_write=5
// model=NAME" (any of them, in any order).
func parseUsage(value string) (usage, error) {
	u := usage{model: "claude-sim"}
	for _, f := range strings.Fields(value) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return u, fmt.Errorf("usage: %q is not key=value", f)
		}
		if k == "model" {
			u.model = v
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return u, fmt.Errorf("usage: %s=%q is not a count", k, v)
		}
		switch k {
		case "input":
			u.input = n
		case "output":
			u.output = n
		case "cache_read":
			u.cacheRead = n
		case "cache_write":
			u.cacheWrite = n
		default:
			return u, fmt.Errorf("usage: unknown key %q (input, output, cache_read, cache_write, model)", k)
		}
	}
	return u, nil
}

// task is a parsed task file. Summary is kept apart because it runs after
// every other directive wherever it is written, the way a real agent
// reports at the end.
type task struct {
	directives []directive
	summary    string
	hasSummary bool
}

// parseTask reads a task file's directives, one `key: value` per line.
// Keys are case-insensitive and values trimmed. Lines without a known key
// are prose for a real agent and are skipped, so one task file can serve
// the sim and a real Claude.
func parseTask(text string) task {
	var t task
	for _, line := range strings.Split(text, "\n") {
		key, value, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		switch strings.ToLower(strings.TrimSpace(key)) {
		case "run":
			if value != "" {
				t.directives = append(t.directives, directive{kind: dirRun, value: value})
			}
		case "sleep":
			d, err := time.ParseDuration(value)
			if err != nil || d < 0 {
				t.directives = append(t.directives, directive{kind: dirBad, value: fmt.Sprintf("sleep: bad duration %q", value)})
				continue
			}
			t.directives = append(t.directives, directive{kind: dirSleep, value: value, dur: d})
		case "permit":
			t.directives = append(t.directives, directive{kind: dirPermit, value: value})
		case "ask":
			t.directives = append(t.directives, directive{kind: dirAsk, value: value})
		case "answer":
			t.directives = append(t.directives, directive{kind: dirAnswer, value: value})
		case "usage":
			u, err := parseUsage(value)
			if err != nil {
				t.directives = append(t.directives, directive{kind: dirBad, value: err.Error()})
				continue
			}
			t.directives = append(t.directives, directive{kind: dirUsage, value: value, usage: u})
		case "summary":
			t.summary, t.hasSummary = value, true
		}
	}
	return t
}

// fileSystem is what the sim reads task files through; tests give a map.
type fileSystem interface {
	Stat(name string) (fs.FileInfo, error)
	ReadFile(name string) ([]byte, error)
}

// maxTaskFile bounds what is read of a task file.
const maxTaskFile = 1 << 20

// findTaskFile picks the task file a submitted line names: a
// whitespace-separated token that is an absolute path of an existing
// regular file, trimmed of the punctuation a sentence puts around it.
// Executable files are never task files: the line st types (and the
// notices it sends) also name st's own binary by its absolute path.
//
// A path in quotes (st quotes one with a space in it: see orch.TaskLine)
// is read whole first, as it is between them.
func findTaskFile(fsys fileSystem, line string) (path string, ok bool) {
	for _, q := range quotedRE().FindAllString(line, -1) {
		p := q[1 : len(q)-1] // as it is between the quotes
		if !strings.HasPrefix(p, "/") {
			continue
		}
		if fi, err := fsys.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 == 0 {
			return p, true
		}
	}
	for _, tok := range strings.Fields(line) {
		tok = strings.TrimLeft(tok, "\"'(`")
		tok = strings.TrimRight(tok, ".,;:)\"'`")
		if !strings.HasPrefix(tok, "/") {
			continue
		}
		fi, err := fsys.Stat(tok)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if fi.Mode().Perm()&0o111 == 0 {
			return tok, true
		}
	}
	return "", false
}

// quotedRE finds the quoted strings of a line, in double or single quotes.
var quotedRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"/[^"]*"|'/[^']*'`) })

// shellQuote quotes s for sh -c.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
