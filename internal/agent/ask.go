package agent

import (
	"encoding/json"
	"strings"
	"unicode"
)

// Ask is what an agent asks a person, read from its EvWaiting hook (a
// permission request, a question, a notification): what st shows in an
// attention item. Every field comes from the agent's payload and is
// untrusted: cut to a line of bounded length, with control characters
// out (a terminal, a push and the web UI show them).
type Ask struct {
	// Question: the agent asks a question (Claude's AskUserQuestion, the
	// sim's AskUser), with Options to pick from; otherwise it asks leave
	// to run Tool (Command, for a shell tool).
	Question bool     `json:"question,omitempty"`
	Tool     string   `json:"tool,omitempty"`
	Command  string   `json:"command,omitempty"`
	Text     string   `json:"text,omitempty"`
	Options  []string `json:"options,omitempty"`
}

// Bounds of an Ask's text: what a person reads at a glance.
const (
	maxAskText   = 400
	maxAskOption = 80
	maxAskOpts   = 8
)

// oneLine is s on one line, with control characters and runs of spaces
// as one space, cut to n runes (with … when cut).
func oneLine(s string, n int) string {
	var b strings.Builder
	space := false
	count := 0
	for _, r := range s {
		if unicode.IsControl(r) || unicode.IsSpace(r) || r == '\u2028' || r == '\u2029' || (r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069') {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			count++
			space = false
		}
		if count >= n {
			return strings.TrimSpace(b.String()) + "…"
		}
		b.WriteRune(r)
		count++
	}
	return b.String()
}

// askOf reads what a permission request of tool asks (Claude, Codex, the
// sim): a question tool's question and options, or the command a shell
// tool would run, or else the tool's description.
func askOf(tool string, input json.RawMessage) *Ask {
	a := &Ask{Tool: oneLine(tool, maxAskOption)}
	var in struct {
		Command     string `json:"command"`
		Description string `json:"description"`
		FilePath    string `json:"file_path"`
		Question    string `json:"question"`
		Questions   []struct {
			Question string `json:"question"`
			Options  []struct {
				Label string `json:"label"`
			} `json:"options"`
		} `json:"questions"`
	}
	json.Unmarshal(input, &in) // a field that is not there stays ""
	switch {
	case len(in.Questions) > 0:
		q := in.Questions[0]
		a.Question, a.Text = true, oneLine(q.Question, maxAskText)
		for _, o := range q.Options {
			if l := oneLine(o.Label, maxAskOption); l != "" && len(a.Options) < maxAskOpts {
				a.Options = append(a.Options, l)
			}
		}
	case in.Question != "":
		a.Question, a.Text = true, oneLine(in.Question, maxAskText)
	case in.Command != "":
		a.Command = oneLine(in.Command, maxAskText)
		a.Text = a.Command
		if d := oneLine(in.Description, maxAskText); d != "" {
			a.Text += " (" + d + ")"
		}
	case in.FilePath != "":
		a.Text = oneLine(in.FilePath, maxAskText)
	default:
		a.Text = oneLine(in.Description, maxAskText)
	}
	return a
}
