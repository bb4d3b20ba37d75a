package fakemodel

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// markerRE finds the script markers. A marker must start a line or follow
// blank space, so that a one-line prompt typed into a TUI (where a newline
// would submit early) can still carry several markers:
// "RUN: echo hi > out.txt SAY: all done".
var markerRE = regexp.MustCompile(`(?:^|[ \t])(RUN:|ASK:|SAY:|SLEEP:|APIERROR:|ESCALATE\b)`)

// askStep starts a step of a script's runs that asks the person a question
// (the agent's question tool) instead of running a command. No command
// can start with it: markerRE would have cut "ASK:" off as a marker.
const askStep = "ASK: "

// script is what the markers in one piece of text ask the model to do.
type script struct {
	runs     []string // commands, and questions (askStep + the question), in order
	say      string
	hasSay   bool
	sleep    time.Duration
	apiError int
	escalate bool
}

// parseScript reads the markers in text. The argument of a marker runs to
// the next marker on the same line, or to the end of the line.
func parseScript(text string) (script, bool) {
	var s script
	found := false
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		ms := markerRE.FindAllStringSubmatchIndex(line, -1)
		for i, m := range ms {
			kw := line[m[2]:m[3]]
			end := len(line)
			if i+1 < len(ms) {
				end = ms[i+1][0]
			}
			arg := strings.TrimSpace(line[m[3]:end])
			found = true
			switch kw {
			case "RUN:":
				if arg != "" {
					s.runs = append(s.runs, arg)
				}
			case "ASK:":
				if arg != "" {
					s.runs = append(s.runs, askStep+arg)
				}
			case "SAY:":
				s.say, s.hasSay = arg, true
			case "SLEEP:":
				if f, err := strconv.ParseFloat(arg, 64); err == nil && f > 0 {
					s.sleep = time.Duration(f * float64(time.Second))
				}
			case "APIERROR:":
				if n, err := strconv.Atoi(arg); err == nil && n >= 400 && n <= 599 {
					s.apiError = n
				}
			case "ESCALATE":
				s.escalate = true
			}
		}
	}
	return s, found
}

// event is one step of a conversation as the scripting logic sees it, the
// same for the Anthropic and the Responses wire formats.
type event struct {
	toolResult bool   // a tool result the model got; otherwise a user prompt
	text       string // the prompt, or the tool's output
}

// plan is what the model does next, worked out from the whole conversation
// in one request. The server keeps no state between requests: progress
// through a script is the number of tool results since the script began,
// which survives server restarts and concurrent conversations alike.
type plan struct {
	prompt     string // the last prompt the user typed
	scriptFrom string // "prompt" or "tool_result": where the markers came from
	script     script
	run        string // the command to call now, or ""
	ask        string // the question to ask now, or ""
	say        string // the answer text when run is ""
}

const (
	defaultAfterTool = "Tool finished."
	defaultAnswer    = "Hello from the fake model."
)

// decide walks the conversation. A new prompt starts its script afresh. A
// tool result that carries markers (the agent read a task file, say)
// replaces the script and starts it afresh too; any other tool result
// counts as one RUN done.
func decide(events []event) plan {
	var p plan
	done := 0
	afterTool := false
	var summaries []string
	for _, e := range events {
		if !e.toolResult {
			p.prompt = e.text
			var ok bool
			p.script, ok = parseScript(e.text)
			p.scriptFrom = "prompt"
			if !ok {
				// Like a real model handed "your task is in the file X",
				// read the file first; its markers then lead.
				if f := namedFile(e.text); f != "" {
					p.script = script{runs: []string{"cat " + f}}
					p.scriptFrom = "file"
				}
			}
			done, afterTool = 0, false
			continue
		}
		afterTool = true
		for _, m := range summaryRE.FindAllStringSubmatch(e.text, -1) {
			summaries = append(summaries, strings.TrimSpace(m[1]))
		}
		if s, ok := parseScript(e.text); ok {
			p.script, p.scriptFrom = s, "tool_result"
			done = 0
			continue
		}
		done++
	}
	if done < len(p.script.runs) {
		if q, ok := strings.CutPrefix(p.script.runs[done], askStep); ok {
			p.ask = q
		} else {
			p.run = p.script.runs[done]
		}
		return p
	}
	switch {
	case p.script.hasSay:
		// {summaries} stands for every "summary: ..." line the tools
		// printed (st worker read), so a coordinator can pass them on.
		p.say = strings.ReplaceAll(p.script.say, "{summaries}", strings.Join(summaries, "; "))
	case afterTool:
		p.say = defaultAfterTool
	default:
		p.say = defaultAnswer
	}
	return p
}

// summaryRE finds the summary lines that st worker read prints.
var summaryRE = regexp.MustCompile(`(?m)^summary:[ \t]*(.+)$`)

// pathRE finds absolute paths in a prompt.
var pathRE = regexp.MustCompile(`/[A-Za-z0-9._/+-]+`)

// namedFile returns the first absolute path in text of a readable,
// non-executable regular file (the line st types also names st's binary).
func namedFile(text string) string {
	for _, m := range pathRE.FindAllString(text, -1) {
		m = strings.TrimRight(m, ".,;:")
		fi, err := os.Stat(m)
		if err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 == 0 {
			return m
		}
	}
	return ""
}

// isContextText reports text that a client puts in a user-role message but
// that the person did not type: Claude's reminders, Codex's environment and
// instruction blocks. Such text must not hide the prompt.
func isContextText(text string) bool {
	t := strings.TrimSpace(text)
	for _, prefix := range []string{
		"<system-reminder>",
		"<environment_context>",
		"<user_instructions>",
		"<permissions instructions>",
		"# AGENTS.md instructions",
	} {
		if strings.HasPrefix(t, prefix) {
			return true
		}
	}
	return t == ""
}

// lastPromptText picks the prompt among a user message's text blocks. After
// an API error Claude merges the failed turn and the next into one message,
// so only the last block is the new prompt.
func lastPromptText(texts []string) (string, bool) {
	for i := len(texts) - 1; i >= 0; i-- {
		if !isContextText(texts[i]) {
			return texts[i], true
		}
	}
	return "", false
}
