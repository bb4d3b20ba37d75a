package agent

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
)

// UsageLimit is an agent's plan usage limit, reached: its turn stopped
// and the agent takes no more work until Resets (reference §13).
type UsageLimit struct {
	// Resets is when the limit resets; Exact says it came from the
	// agent's records (to the second), not from its screen text (which
	// rounds to the minute).
	Resets time.Time `json:"resets"`
	Exact  bool      `json:"exact,omitempty"`
	// Text is what the agent said of it ("You've hit your 5-hour limit ·
	// resets 3:54am (UTC)").
	Text string `json:"text,omitempty"`
}

// Limits is how an agent meets its plan's usage limit: how st reads it,
// and how its turn goes on after the reset.
type Limits struct {
	// FromRecords reads a limit the agent just reached from the tail of
	// its conversation file (the hooks' transcript_path): Claude's
	// apiErrorParams.rate_limit_info.resetsAt, Codex's rollout
	// usage_limit_exceeded with rate_limits.primary.resets_at. It is
	// how st hears a limit of an agent that fires no hook at it (Codex),
	// and the exact time of one whose hook gives only the screen's text.
	FromRecords func(transcript string) (UsageLimit, bool)
	// Silent: no hook fires at its limit (Codex): st looks in its records
	// when a turn of it goes quiet.
	Silent bool
	// ContinuesItself reports whether the agent goes on with its turn by
	// itself after the reset (Claude's autoContinueAtUsageLimit, on
	// unless its user turned it off); Grace is how long after the reset
	// st leaves it to do so before it types ContinueLine itself.
	ContinuesItself func() bool
	Grace           time.Duration
	// Itself is when after the reset the agent goes on by itself, as
	// measured (Claude: 30-90 s), so that st can say when to expect it;
	// zero when nobody measured it.
	Itself [2]time.Duration
	// ContinueLine is what st types to go on once the limit reset.
	ContinueLine string
	// Menu recognizes a menu the agent puts up at its limit over its box
	// (Claude with autoContinueAtUsageLimit off: "What do you want to
	// do? 1. Stop and wait for limit to reset ..."), and MenuKey is the
	// key that closes it without choosing to spend or to wait (Escape,
	// measured: the box comes back empty and nothing reaches the model).
	// st presses it only on a screen Menu recognizes, before it types
	// ContinueLine.
	Menu    func(screen string) bool
	MenuKey string
	// Waiting recognizes the agent's screen while it waits to go on by
	// itself at the reset (Claude: "Continuing automatically at 5:13pm ·
	// Esc to cancel"), and CancelKey is the key that calls that off. st
	// presses it when the agent's task moved to another (--on-limit
	// move), so that two agents do not work one folder after the reset.
	Waiting   func(screen string) bool
	CancelKey string
}

// claudeWaiting recognizes Claude 2.1.332 waiting to go on by itself
// after its usage limit (measured, autoContinueAtUsageLimit on):
//
//	⚠ Usage limit reached · limit resets 5:13pm
//	  Continuing automatically at 5:13pm · Esc to cancel
func claudeWaiting(screen string) bool {
	return strings.Contains(screen, "Continuing automatically at") && strings.Contains(screen, "Esc to cancel")
}

// claudeLimitMenu recognizes Claude 2.1.332's menu at a usage limit
// (measured with autoContinueAtUsageLimit off):
//
//	What do you want to do?
//	❯ 1. Stop and wait for limit to reset
//	  2. Wait here, then continue automatically at 1pm
//	  3. Upgrade your plan
//	Enter to confirm · Esc to cancel
func claudeLimitMenu(screen string) bool {
	return strings.Contains(screen, "Stop and wait for limit to reset") &&
		strings.Contains(screen, "Esc to cancel")
}

// maxRecordTail bounds what st reads of an agent's conversation file to
// find a limit: the limit's record is among the last lines written.
const maxRecordTail = 256 << 10

// recordTail reads the last lines of an agent's conversation file, at
// most maxRecordTail bytes. The path comes from a hook payload: it is
// read only when it is a regular file (a rail: a same-user agent could
// name another of the user's files, and would only learn whether it
// parses as a limit record).
func recordTail(path string) []byte {
	if path == "" || !filepath.IsAbs(path) {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	off := fi.Size() - maxRecordTail
	if off < 0 {
		off = 0
	}
	data, err := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	if err != nil {
		return nil
	}
	if off > 0 {
		// The first line is cut: leave it out.
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	return data
}

// lastRecord walks the JSON lines of data from the end and returns the
// first limit match finds.
func lastRecord(data []byte, match func(gjson.Result) (UsageLimit, bool)) (UsageLimit, bool) {
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if !gjson.ValidBytes(lines[i]) {
			continue
		}
		if l, ok := match(gjson.ParseBytes(lines[i])); ok {
			return l, true
		}
	}
	return UsageLimit{}, false
}

// epochTime reads a reset time as the agents write it: seconds since the
// epoch (Codex's resets_at), milliseconds, or an RFC 3339 string.
func epochTime(r gjson.Result) (time.Time, bool) {
	switch r.Type {
	case gjson.Number:
		n := r.Float()
		if n <= 0 {
			return time.Time{}, false
		}
		if n > 1e12 { // milliseconds
			return time.UnixMilli(int64(n)), true
		}
		return time.Unix(int64(n), int64((n-float64(int64(n)))*1e9)), true
	case gjson.String:
		t, err := time.Parse(time.RFC3339Nano, r.Str)
		return t, err == nil
	}
	return time.Time{}, false
}

// claudeLimitRecord reads Claude's record of a usage limit (§13: the
// transcript's apiErrorParams.rate_limit_info.resetsAt).
func claudeLimitRecord(transcript string) (UsageLimit, bool) {
	decided := false
	return lastRecord(recordTail(transcript), func(r gjson.Result) (UsageLimit, bool) {
		if decided || r.Get("type").String() != "assistant" {
			return UsageLimit{}, false
		}
		// The last answer decides: an older limit is behind the turn.
		decided = true
		at, ok := epochTime(r.Get("apiErrorParams.rate_limit_info.resetsAt"))
		if !ok {
			return UsageLimit{}, false
		}
		text := r.Get("message.content.0.text").String()
		return UsageLimit{Resets: at, Exact: true, Text: firstLine(text)}, true
	})
}

// codexLimitRecord reads Codex's rollout for a turn ended by its usage
// limit (§13: task_complete with codex_error_info usage_limit_exceeded,
// and the exact reset in rate_limits.primary.resets_at of a token_count
// event). Only the last turn counts: a turn that completed since means
// the limit is behind it.
func codexLimitRecord(transcript string) (UsageLimit, bool) {
	data := recordTail(transcript)
	var hit bool
	var resets time.Time
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if !gjson.ValidBytes(lines[i]) {
			continue
		}
		r := gjson.ParseBytes(lines[i])
		p := r.Get("payload")
		switch p.Get("type").String() {
		case "task_complete", "turn_complete":
			if hit {
				continue
			}
			info := p.Get("error.codex_error_info").String()
			if info == "" {
				info = p.Get("codex_error_info").String()
			}
			if info != "usage_limit_exceeded" {
				return UsageLimit{}, false // the last turn ended otherwise
			}
			hit = true
		case "token_count":
			if !hit || !resets.IsZero() {
				continue
			}
			if at, ok := epochTime(p.Get("rate_limits.primary.resets_at")); ok && p.Get("rate_limits.primary.used_percent").Float() >= 100 {
				resets = at
			}
		case "user_message":
			if !hit {
				return UsageLimit{}, false
			}
		}
		if hit && !resets.IsZero() {
			break
		}
	}
	if !hit || resets.IsZero() {
		return UsageLimit{}, false
	}
	return UsageLimit{Resets: resets, Exact: true, Text: "usage limit reached"}, true
}

// resetsTextRE finds the reset time in an agent's words: "resets 3:54am",
// "try again at 3:53 AM", "resets at 03:53", and "resets 1pm" (Claude
// 2.1.332 leaves the minutes out on the hour: measured).
var resetsTextRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(?:resets(?: at)?|try again at|continu(?:e|ing) automatically at)\s+(\d{1,2})(?::(\d{2})\s*([ap]m)?|\s*([ap]m))`)
})

// ResetsFromText reads a reset time from an agent's text, as the next
// such wall-clock time after now (in now's zone: the agents print the
// user's local time, "(UTC)" here). ok is false when the text names none.
func ResetsFromText(text string, now time.Time) (time.Time, bool) {
	m := resetsTextRE().FindStringSubmatch(text)
	if m == nil {
		return time.Time{}, false
	}
	h, min := atoi(m[1]), atoi(m[2])
	switch strings.ToLower(m[3] + m[4]) {
	case "am":
		if h == 12 {
			h = 0
		}
	case "pm":
		if h != 12 {
			h += 12
		}
	}
	if h > 23 || min > 59 {
		return time.Time{}, false
	}
	at := time.Date(now.Year(), now.Month(), now.Day(), h, min, 0, 0, now.Location())
	if at.Before(now.Add(-time.Minute)) {
		at = at.Add(24 * time.Hour)
	}
	return at, true
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// claudeContinuesItself reads Claude's autoContinueAtUsageLimit (on
// unless the user's settings.json turns it off).
func claudeContinuesItself() bool {
	dir := os.Getenv("CLAUDE_CONFIG_DIR")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return true
		}
		dir = filepath.Join(home, ".claude")
	}
	data, err := os.ReadFile(filepath.Join(dir, "settings.json"))
	if err != nil {
		return true
	}
	v := gjson.GetBytes(data, "autoContinueAtUsageLimit")
	return !v.Exists() || v.Bool()
}

// LimitOf reads a usage limit from the end of a turn: the agent's hook
// said its turn failed on a rate limit (Claude's StopFailure
// "rate_limit"), or, for an agent that fires no hook at its limit
// (Codex), its records say so. The records' exact time wins over the
// text's minute. ok is false when the turn did not end at a limit, or
// when no reset time is known (an API key's plain 429: a failed turn, as
// before).
func (k *Kind) LimitOf(ev Event, now time.Time) (UsageLimit, bool) {
	if k.Limits == nil {
		return UsageLimit{}, false
	}
	switch {
	case ev.Failed && ev.FailReason != "rate_limit":
		return UsageLimit{}, false
	case !ev.Failed && !k.Limits.Silent:
		// Its hook says so when it stops at a limit: a turn that ended
		// otherwise did not.
		return UsageLimit{}, false
	}
	if k.Limits.FromRecords != nil {
		if l, ok := k.Limits.FromRecords(ev.Transcript); ok && l.Resets.After(now.Add(-time.Hour)) {
			if t := firstLine(ev.LastAnswer); t != "" {
				l.Text = t
			}
			return l, true
		}
	}
	if !ev.Failed {
		return UsageLimit{}, false
	}
	at, ok := ResetsFromText(ev.LastAnswer, now)
	if !ok {
		return UsageLimit{}, false
	}
	return UsageLimit{Resets: at, Text: firstLine(ev.LastAnswer)}, true
}
