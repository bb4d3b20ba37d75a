package hooks

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Claude Code's status line (reference §13) is where Claude gives its own
// cost and its account's usage limits: it runs settings.json's
// "statusLine": {"type": "command", "command": ...} with them on stdin.
// st setup puts "<st> statusline" there, with the user's own command, if
// any, after --then, so that st statusline runs it and prints what it
// prints: the user's status line looks as before. The user's command is
// kept in st's command itself (single-quoted), not in a file of st's:
// whatever ST_HOME a Claude runs with, and after st's state is gone, the
// pass-through still finds it. Every other key of statusLine (padding...)
// stays as the user had it; --undo puts the command back, or takes out
// the statusLine st added, and the file is then back byte for byte
// (RestoreOriginal, once the hooks are out too).

// StatusLine is the state of st's status line in Claude's settings.json.
type StatusLine struct {
	File string `json:"file"`
	// Installed: the status line runs st statusline; Current: this st.
	Installed bool `json:"installed"`
	Current   bool `json:"current"`
	// User is the user's own command, which st's passes through ("":
	// none).
	User string `json:"user,omitempty"`
	// Changed: this call rewrote the file.
	Changed bool `json:"changed,omitempty"`
	// Error says why the file was left as it was; Hint what to do.
	Error string `json:"error,omitempty"`
	Hint  string `json:"hint,omitempty"`
}

// StatusLineCommand is the status-line command st writes: this st's
// statusline, and the user's own command after --then.
func StatusLineCommand(st, user string) string {
	s := shellQuote(st) + " statusline"
	if user != "" {
		s += " --then '" + strings.ReplaceAll(user, "'", `'\''`) + "'"
	}
	return s
}

// statusLineRE matches what StatusLineCommand writes (the program bare or
// quoted, as stCommandRE).
var statusLineRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\s*(?:'((?:[^']|'\\'')*)'|"((?:[^"\\]|\\.)*)"|(\S+))\s+statusline(?:\s+--then\s+'((?:[^']|'\\'')*)')?\s*$`)
})

// ParseStatusLineCommand reports whether command is a status line st
// wrote (a program named st, or exactly st, running statusline), with the
// program and the user's command it passes through.
func ParseStatusLineCommand(command, st string) (path, user string, ok bool) {
	m := statusLineRE().FindStringSubmatch(command)
	if m == nil {
		return "", "", false
	}
	if path, ok = stProgram(m[1], m[2], m[3], st); !ok {
		return "", "", false
	}
	return path, strings.ReplaceAll(m[4], `'\''`, "'"), true
}

// InstallStatusLine puts st's status line into Claude's settings.json,
// with the user's command (if any) passed through.
func InstallStatusLine(o Options) StatusLine { return statusLine(o, modeInstall) }

// UninstallStatusLine puts the user's own status line back (or takes
// st's out where the user had none).
func UninstallStatusLine(o Options) StatusLine { return statusLine(o, modeUninstall) }

// StatusLineStatus reads st's status line, changing nothing.
func StatusLineStatus(o Options) StatusLine { return statusLine(o, modeStatus) }

func statusLine(o Options, m mode) StatusLine {
	o.Agents = []string{Claude}
	o, err := o.resolve()
	if err != nil {
		return StatusLine{Error: err.Error()}
	}
	path := o.file(Claude)
	sl := StatusLine{File: path}
	for attempt := 0; attempt < 3; attempt++ {
		f, err := loadFile(path, "{}\n")
		if err != nil {
			sl.Error = fmt.Sprintf("cannot read %s: %v", path, unwrapPath(err))
			sl.Hint = "make " + path + " a file st can read and write, then run st setup again"
			return sl
		}
		doc := string(f.data)
		if !f.exists || strings.TrimSpace(doc) == "" {
			doc = "{}\n"
		}
		out, err := editStatusLine(doc, o.St, m, &sl)
		if err != nil {
			sl.Error, sl.Hint = fmt.Sprintf("%s: %v; it was left as it was", path, err), "fix "+path+" (its \"statusLine\"), then run st setup again"
			return sl
		}
		if m == modeStatus || out == doc {
			return sl
		}
		if _, err := f.save([]byte(out)); errors.Is(err, errChanged) {
			continue
		} else if err != nil {
			sl.Error = fmt.Sprintf("cannot write %s: %v", path, unwrapPath(err))
			sl.Hint = "make " + path + " writable, then run st setup again"
			return sl
		}
		sl.Changed = true
		return sl
	}
	sl.Error = path + " kept changing while st edited it; nothing was written"
	sl.Hint = "run st setup again"
	return sl
}

// editStatusLine reads doc's statusLine into sl and returns doc as mode m
// leaves it.
func editStatusLine(doc, st string, m mode, sl *StatusLine) (string, error) {
	if !gjson.Valid(doc) || !gjson.Parse(doc).IsObject() {
		return doc, errors.New("not a JSON object")
	}
	cur := gjson.Get(doc, "statusLine")
	if cur.Exists() && !cur.IsObject() {
		return doc, fmt.Errorf(`"statusLine" is %s, not an object`, cur.Type)
	}
	cmd := cur.Get("command")
	if cmd.Exists() && cmd.Type != gjson.String {
		return doc, fmt.Errorf(`"statusLine.command" is %s, not a string`, cmd.Type)
	}
	path, user, ours := ParseStatusLineCommand(cmd.String(), st)
	sl.Installed, sl.Current = ours, ours && path == st
	if ours {
		sl.User = user
	} else {
		sl.User = cmd.String()
	}
	switch {
	case m == modeInstall && !sl.Current:
		want := StatusLineCommand(st, sl.User)
		sl.Installed, sl.Current = true, true
		if cur.Exists() {
			return sjson.Set(doc, "statusLine.command", want)
		}
		type line struct {
			Type    string `json:"type"`
			Command string `json:"command"`
		}
		return insertLast(doc, "", "statusLine", line{"command", want})
	case m == modeUninstall && ours:
		sl.Installed, sl.Current = false, false
		if user == "" {
			return sjson.Delete(doc, "statusLine")
		}
		return sjson.Set(doc, "statusLine.command", user)
	}
	return doc, nil
}
