package fakemodel

import (
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// markerRE finds the script markers. A marker must start a line or follow
// blank space, so that a one-line prompt typed into a TUI (where a newline
// would submit early) can still carry several markers:
// "RUN: echo hi > out.txt SAY: all done".
var markerRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[ \t])(RUN:|ASK:|AGENT:|TEAMMATE:|CALL:|SAY:|SLEEP:|APIERROR:|PREFACE:|LIMIT:|TIMEOUT:|ESCALATE\b)`)
})

// step is one tool call of a script: a shell command (RUN:), the agent's
// question tool (ASK:), Claude's Agent tool (AGENT: a subagent, TEAMMATE:
// a named teammate of the lead's agent team), or any tool by name with a
// JSON input (CALL:).
type step struct {
	tool   string // "shell", "ask", "agent" or "call"
	arg    string // the command, the agent's prompt, or the call's JSON input
	member string // the teammate's name (TEAMMATE:), "" for a subagent
	name   string // the tool of a CALL:
}

// script is what the markers in one piece of text ask the model to do.
type script struct {
	steps    []step
	say      string
	hasSay   bool
	sleep    time.Duration
	apiError int
	escalate bool
	// timeout is how long each shell call may run (TIMEOUT:), given to
	// Claude's Bash tool as its timeout: a long st worker wait is killed
	// at the tool's 2 minutes otherwise, and st's skill tells Claude to
	// give it the 10 minutes the tool allows.
	timeout time.Duration
	// preface is a text that each tool call's answer carries before the
	// call, in the same response (PREFACE:): Claude writes such a
	// response as two transcript records under one message.id.
	preface string
	// limit is the LIMIT: marker's time to the reset: the plan's usage
	// limit is reached for that long from the first request that carries
	// the marker.
	limit time.Duration
	// limitLine is the line that carried LIMIT:, the key of its reset:
	// the same in every request of a conversation, where the text around
	// it (a tool result as the client sends it again) may not be.
	limitLine string
}

// parseScript reads the markers in text. The argument of a marker runs to
// the next marker on the same line, or to the end of the line.
func parseScript(text string) (script, bool) {
	var s script
	found := false
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		ms := markerRE().FindAllStringSubmatchIndex(line, -1)
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
					s.steps = append(s.steps, step{tool: "shell", arg: arg})
				}
			case "ASK:":
				if arg != "" {
					s.steps = append(s.steps, step{tool: "ask", arg: arg})
				}
			case "AGENT:":
				if arg != "" {
					s.steps = append(s.steps, step{tool: "agent", arg: arg})
				}
			case "TEAMMATE:":
				// TEAMMATE: <name> <prompt>. The prompt cannot carry markers
				// of its own (they would be this script's), so it names a
				// task file, which the teammate reads and follows.
				name, prompt, _ := strings.Cut(arg, " ")
				if name != "" && strings.TrimSpace(prompt) != "" {
					s.steps = append(s.steps, step{tool: "agent", member: name, arg: strings.TrimSpace(prompt)})
				}
			case "CALL:":
				// CALL: <Tool> <JSON object>, e.g. CALL: SendMessage {"to":"alpha","message":"again"}.
				name, input, _ := strings.Cut(arg, " ")
				if name != "" && json.Valid([]byte(input)) && strings.HasPrefix(strings.TrimSpace(input), "{") {
					s.steps = append(s.steps, step{tool: "call", name: name, arg: strings.TrimSpace(input)})
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
			case "PREFACE:":
				s.preface = arg
			case "LIMIT:":
				if f, err := strconv.ParseFloat(arg, 64); err == nil && f > 0 {
					s.limit = time.Duration(f * float64(time.Second))
					s.limitLine = strings.TrimSpace(line)
				}
			case "TIMEOUT:":
				if f, err := strconv.ParseFloat(arg, 64); err == nil && f > 0 {
					s.timeout = time.Duration(f * float64(time.Second))
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
	source     string // the text the script came from ("" before any)
	script     script
	run        string // the command to call now, or ""
	ask        string // the question to ask now, or ""
	agent      *step  // the Agent (or CALL:) call to make now, or nil
	say        string // the answer text when there is no call to make
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
		if !e.toolResult && isContinue(e.text) && p.source != "" {
			// "continue" after a usage limit goes on with the script where
			// it stopped, as a model goes on with its task.
			p.prompt = e.text
			continue
		}
		if !e.toolResult {
			p.prompt = e.text
			var ok bool
			p.script, ok = parseScript(e.text)
			p.scriptFrom, p.source = "prompt", e.text
			if !ok {
				// Like a real model handed "your task is in the file X",
				// read the file first; its markers then lead.
				if f := namedFile(e.text); f != "" {
					p.script = script{steps: []step{{tool: "shell", arg: "cat " + shellArg(f)}}}
					p.scriptFrom = "file"
				}
			}
			done, afterTool = 0, false
			continue
		}
		afterTool = true
		for _, m := range summaryRE().FindAllStringSubmatch(e.text, -1) {
			summaries = append(summaries, strings.TrimSpace(m[1]))
		}
		if s, ok := parseScript(e.text); ok {
			p.script, p.scriptFrom, p.source = s, "tool_result", e.text
			done = 0
			continue
		}
		done++
	}
	if done < len(p.script.steps) {
		switch st := p.script.steps[done]; st.tool {
		case "shell":
			p.run = st.arg
		case "ask":
			p.ask = st.arg
		case "agent", "call":
			p.agent = &st
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

// isContinue reports a prompt that only asks to go on: the line st types
// after a usage limit, or Claude's own when it goes on by itself.
func isContinue(text string) bool {
	t := strings.ToLower(strings.TrimSpace(text))
	return t == "continue" || strings.HasPrefix(t, "your claude.ai usage limit has reset")
}

// summaryRE finds the summary lines that st worker read prints.
var summaryRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^summary:[ \t]*(.+)$`) })

// shellArg quotes a path for sh when it has more than pathRE's characters.
func shellArg(p string) string {
	if pathRE().FindString(p) == p {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}

// pathRE finds absolute paths in a prompt.
var pathRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`/[A-Za-z0-9._/+-]+`) })

// namedFile returns the first absolute path in text of a readable,
// non-executable regular file (the line st types also names st's binary).
func namedFile(text string) string {
	// A path with a space comes in quotes (orch.TaskLine), as it is
	// between them.
	for _, q := range regexp.MustCompile(`"/[^"]*"|'/[^']*'`).FindAllString(text, -1) {
		m := q[1 : len(q)-1]
		if fi, err := os.Stat(m); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 == 0 {
			return m
		}
	}
	for _, m := range pathRE().FindAllString(text, -1) {
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
	// Claude 2.1.332 adds "Tool loaded." beside a ToolSearch result, and
	// hands a team lead each teammate's idle notice as a message of its
	// own: neither is a new prompt, so the script in progress goes on.
	if t == "Tool loaded." || strings.HasPrefix(t, "Another Claude session sent a message:") && strings.Contains(t, `"type":"idle_notification"`) {
		return true
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

// text is the answer when the step the script would take now cannot be
// taken here (a side request, or its tool is not on offer): what the
// script says, or the default answer when a call was due.
func (p plan) text() string {
	if p.run == "" && p.ask == "" && p.agent == nil {
		return p.say
	}
	if p.script.hasSay {
		return p.script.say
	}
	return defaultAnswer
}

// pause is how long to wait before answering: the script's SLEEP, but
// never for a side request.
func (p plan) pause(side bool) time.Duration {
	if side {
		return 0
	}
	return p.script.sleep
}
