package testutil

import "strings"

// goWords are words of Go, not of st, that a message to a person must
// not carry: a package or type name, a parser's own wording.
var goWords = []string{
	"main.", "daemon.", "cli.", "orch.", "api.", "client.", "toml.", "*errors", "errors.", "strconv.", "time: ",
	"invalid duration", "of type", "struct field", "toml:", "cobra", "pflag", "<nil>", "%!", "runtime error", "goroutine ",
}

// GoWord returns the first word of Go that msg carries, or "".
func GoWord(msg string) string {
	msg = strings.ReplaceAll(msg, "config.toml", "config-file") // st's file, not go-toml's "toml:"
	for _, w := range goWords {
		if strings.Contains(msg, w) {
			return w
		}
	}
	return ""
}
