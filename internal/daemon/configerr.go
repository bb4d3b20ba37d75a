package daemon

// What st says of a config.toml it cannot use: the line, the setting,
// what that setting takes, and the nearest setting for a key st does not
// know, never go-toml's words about Go's types.

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"

	"github.com/sophonz/st/internal/api"
)

// settings are config.toml's keys, each with what it takes, said for a
// person (TestSettingsAreConfig keeps it to Config's fields).
var settings = map[string]string{
	"tmux_socket":      `a tmux socket's name or path in quotes, such as "st"`,
	"web_port":         "a port number from 1 to 65535 such as 7766, or -1 for any free port",
	"push_url":         `a URL in quotes, such as "https://ntfy.sh/my-topic"`,
	"push_answer_url":  `an http(s) URL in quotes, such as "https://st.example.net"`,
	"web_hosts":        `a list of host names in quotes, such as ["st.example.net"]`,
	"peer_listen":      `host:port in quotes, such as "0.0.0.0:7443", or "off"`,
	"heartbeat":        `a duration above zero in quotes, such as "10s"`,
	"peer_retry":       `a duration above zero in quotes, such as "1m"`,
	"agents_start_sim": "true or false",
	"attention":        `a table, [attention], of push = ["permission", "question"] (the kinds that push), quiet_front = true, summary = 3, summary_window = "30s"`,
	"permission_wait":  `a duration above zero in quotes, such as "5m" (at most an hour)`,
	"tokens":           `a table: [tokens] budget = "500k" or "$5", and [tokens.prices] with date = "YYYY-MM-DD" and [tokens.prices.models.NAME] input, output, cache_read, cache_write in dollars per million tokens (docs/tokens.md)`,
}

// settingNames are the settings, in order, for a Try line.
func settingNames() string {
	names := make([]string, 0, len(settings))
	for k := range settings {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// goWords are go-toml's words that name Go's types rather than TOML's.
var goWords = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`struct|of type|\binto\b|\bin a\b|\bint\d*\b|\bfloat\d*\b|\[\]|time: |\w\.\w`)
})

// configError turns what go-toml said of config.toml at path into st's
// words: which line, what is wrong there, and to fix that line.
func configError(path string, data []byte, err error) error {
	var se *toml.StrictMissingError
	if errors.As(err, &se) && len(se.Errors) > 0 {
		return unknownKeys(path, se.Errors)
	}
	var de *toml.DecodeError
	if !errors.As(err, &de) {
		// An error of a setting's own reading comes without a place
		// when go-toml gave it a number as text: a duration without
		// quotes.
		for _, k := range []string{"heartbeat", "peer_retry"} {
			if keyLine(data, k) > 0 {
				return settingError(path, data, k)
			}
		}
		return &api.Error{Kind: api.KindUsage, Message: path + " has a setting st cannot read", Hint: "fix it, or move the file away"}
	}
	row, col := de.Position()
	where := fmt.Sprintf("line %d of %s", row, path)
	fix := "fix " + where + ", or move the file away"
	key := de.Key()
	msg := strings.TrimPrefix(de.Error(), "toml: ")
	switch {
	case strings.Contains(msg, "already defined"):
		return &api.Error{Kind: api.KindUsage, Message: fmt.Sprintf("%s sets %s a second time", where, strings.Join(key, ".")), Hint: "keep one of the two lines: " + fix}
	case len(key) > 0 && settings[key[0]] != "":
		return &api.Error{Kind: api.KindUsage, Message: fmt.Sprintf("%s: %s takes %s", where, key[0], settings[key[0]]), Hint: fix}
	case goWords().MatchString(msg):
		msg = "st cannot read what is there"
	}
	return &api.Error{Kind: api.KindUsage, Message: fmt.Sprintf("%s is not valid TOML (at column %d: %s)", where, col, msg), Hint: fix}
}

// settingError says that key, on its line of config.toml, takes what it
// takes.
func settingError(path string, data []byte, key string) error {
	where := path
	if n := keyLine(data, key); n > 0 {
		where = fmt.Sprintf("line %d of %s", n, path)
	}
	return &api.Error{Kind: api.KindUsage, Message: fmt.Sprintf("%s: %s takes %s", where, key, settings[key]), Hint: "fix " + where + ", or move the file away"}
}

// keyLine is the line of data (from 1) that sets key at its start, or 0.
func keyLine(data []byte, key string) int {
	re := regexp.MustCompile(`^\s*"?` + regexp.QuoteMeta(key) + `"?\s*=`)
	for i, l := range strings.Split(string(data), "\n") {
		if re.MatchString(l) {
			return i + 1
		}
	}
	return 0
}

// unknownKeys refuses the keys of config.toml that st has no setting
// for, each by its line and with the nearest known setting.
func unknownKeys(path string, errs []toml.DecodeError) error {
	var lines []string
	first := 0
	for i := range errs {
		row, _ := errs[i].Position()
		if first == 0 {
			first = row
		}
		key := strings.Join(errs[i].Key(), ".")
		line := fmt.Sprintf("line %d of %s: st has no setting %q", row, path, key)
		if n := nearestSetting(errs[i].Key()[len(errs[i].Key())-1]); n != "" {
			line += fmt.Sprintf(" (did you mean %s?)", n)
		}
		lines = append(lines, line)
	}
	return &api.Error{Kind: api.KindUsage, Message: strings.Join(lines, "\n"),
		Hint: fmt.Sprintf("fix line %d of %s; the settings are %s", first, path, settingNames())}
}

// nearestSetting is the setting whose name is nearest to key, when it is
// near enough to be a slip (at most a third of its letters apart).
func nearestSetting(key string) string {
	best, bestD := "", 0
	for name := range settings {
		d := editDistance(strings.ToLower(key), name)
		if best == "" || d < bestD || d == bestD && name < best {
			best, bestD = name, d
		}
	}
	if bestD > max(2, len(best)/3) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
