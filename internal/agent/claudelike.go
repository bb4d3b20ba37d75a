package agent

// Claude Code and the sim agent draw the same kind of screen and send the
// same hook payloads, so one recognizer and one event mapper serve both.
// The facts they rest on were measured on Claude Code 2.1.332 in tmux 3.3a
// (shared/reference/real-agents.md §3.4–3.6).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

const (
	// boxPrompt starts the input line of the box: U+276F then U+00A0. The
	// transcript echoes a submitted line with a normal space instead, which
	// is how a line still in the box is told apart from a submitted one.
	boxPrompt = "❯\u00a0"
	// boxGlyph alone is the empty box if a terminal strips the trailing
	// NBSP (tmux 3.3a keeps it, but an empty box is still an empty box).
	boxGlyph = "❯"
	// maxBoxLines bounds the continuation lines of a wrapped box, so that a
	// screen that only looks like a box halfway is not read as one.
	maxBoxLines = 64
	// maxFooterLines bounds the footer under the box: the box is drawn at
	// the bottom of the screen, so one with more below it is old text.
	maxFooterLines = 4
	// maxStatusLines bounds a user's status line drawn under the box, over
	// Claude's own footer lines. Claude 2.1.332 sets no limit of its own:
	// it drew every line of 1, 4 and 6; of 30, in a pane of 50 rows, the
	// first 21, the rest and the mode line past the screen's end. The
	// bound is that of a screen.
	maxStatusLines = 64
)

// Markers of the screens that only a person may answer, matched as
// substrings. They are searched only where such a screen draws them (see
// recognizeClaudeLike), so that the same words in the transcript (a prompt,
// a command's output) do not count.
var (
	trustMarkers = []string{"Quick safety check", "Yes, I trust this folder", "Do you trust"}
	loginMarkers = []string{"Detected a custom API key", "Select login method", "Unable to connect to Anthropic services"}
	// promptMarkers are a permission prompt (Claude, Codex) and a question
	// to the person (the sim's ask:, and the footer of Claude's
	// AskUserQuestion, the same from 2.1.100 to 2.1.332).
	promptMarkers = []string{"Do you want to proceed?", "Type your answer and press Enter.", "Would you like to",
		"Enter to select · ↑/↓ to navigate"}
)

// recognizeClaudeLike reads a `tmux capture-pane -p` of Claude Code or the
// sim agent.
//
// When the input box is drawn (a line starting with ❯+NBSP at column 0
// between two rule lines), the screen is a question if a prompt marker
// starts one of the few lines right above the box (the sim keeps its box
// under a question), a turn in progress if "esc to interrupt" shows in the
// footer or in a spinner line right above the box, else typed or ready by
// the box's text. Trust, login and Claude's permission dialogs replace the
// box, so without a box the markers are looked for in the lines below the
// last transcript message (a line starting with ●): that keeps an old
// answer or a command's output that quotes a marker from blocking the
// agent.
func recognizeClaudeLike(capture string) View {
	lines := screenLines(capture)
	if b, ok := findBox(lines); ok {
		status := statusBlock(lines, b.top)
		for _, l := range status {
			t := strings.TrimSpace(l)
			for _, m := range promptMarkers {
				if strings.HasPrefix(t, m) {
					return View{Screen: ScreenPrompt, Box: b.text}
				}
			}
		}
		for _, l := range status {
			if isSpinner(l) && strings.Contains(l, "esc to interrupt") {
				return View{Screen: ScreenWorking, Box: b.text}
			}
		}
		for _, l := range lines[b.bottom+1:] {
			if strings.Contains(l, "esc to interrupt") {
				return View{Screen: ScreenWorking, Box: b.text}
			}
		}
		if b.text != "" {
			return View{Screen: ScreenTyped, Box: b.text}
		}
		return View{Screen: ScreenReady}
	}
	tail := lines
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(strings.TrimSpace(lines[i]), "●") {
			tail = lines[i+1:]
			break
		}
	}
	for _, c := range []struct {
		markers []string
		screen  Screen
	}{{trustMarkers, ScreenTrust}, {loginMarkers, ScreenLogin}, {promptMarkers, ScreenPrompt}} {
		for _, l := range tail {
			for _, m := range c.markers {
				if strings.Contains(l, m) {
					return View{Screen: c.screen}
				}
			}
		}
	}
	return View{Screen: ScreenUnknown}
}

// box is where the input box is on a captured screen: the line numbers of
// its two rules, and its text with soft wraps joined back.
type box struct {
	top, bottom int
	text        string
}

// findBox finds the input box: the last ❯+NBSP line that follows a rule,
// is closed by a rule, and has no more than a footer below. Claude draws
// the box at the bottom, under the transcript, so a box-like drawing in
// the transcript does not count.
func findBox(lines []string) (box, bool) {
	for i := len(lines) - 1; i >= 1; i-- {
		l := lines[i]
		if !(strings.HasPrefix(l, boxPrompt) || l == boxGlyph) || !isRule(lines[i-1]) {
			continue
		}
		parts := []string{strings.TrimPrefix(strings.TrimPrefix(l, boxGlyph), "\u00a0")}
		for j := i + 1; j < len(lines) && j <= i+maxBoxLines; j++ {
			if isRule(lines[j]) {
				if !isFooter(lines[j+1:]) {
					// The transcript goes on below: not the live box, and
					// no box above this one can be either.
					return box{}, false
				}
				// Continuation lines are indented by two columns to sit
				// under the text; the text itself may start with spaces
				// that a wrap moved there, so only two are taken off.
				return box{top: i - 1, bottom: j, text: strings.TrimSpace(strings.Join(parts, ""))}, true
			}
			parts = append(parts, strings.TrimPrefix(lines[j], "  "))
		}
	}
	return box{}, false
}

// isFooter reports whether lines may be what Claude draws under its live
// box: a few lines of any kind, or more when each is indented as Claude
// indents its footer. A user's status line (settings.json statusLine, st
// statusline --then) goes there, between the box and the mode line, as
// many lines as the command prints, each drawn two columns in (measured
// on Claude Code 2.1.332 with status lines of 1, 4 and 6 lines). The transcript under an
// old box-like drawing is not indented so (● an answer, ✻ its time, ❯ a
// prompt at column 0), and neither are the dialogs that replace the box
// (a rule at column 0, then " Bash command", " ☐ Question", their
// options at column 0 or 1), so none of them passes for a footer.
func isFooter(lines []string) bool {
	n := footerLines(lines)
	if n <= maxFooterLines {
		return true
	}
	if n > maxStatusLines+maxFooterLines {
		return false
	}
	for _, l := range lines {
		if strings.TrimSpace(l) != "" && !strings.HasPrefix(l, "  ") {
			return false
		}
	}
	return true
}

// footerLines counts the lines under the box that are not blank and not
// a team lead's list of agents: with an agent team, Claude lists the main
// conversation and each teammate under its footer, one line each
// ("  ● main", "  ◯ alpha  teammate alpha   1m 23s"), so a big team must
// not make the live box look like old text.
func footerLines(lines []string) int {
	n, agents := 0, 0
	for _, l := range lines {
		switch {
		case strings.TrimSpace(l) == "":
		case isAgentsLine(l) && agents < maxAgentLines:
			agents++
		default:
			n++
		}
	}
	return n
}

// maxAgentLines bounds the list of agents under a lead's box.
const maxAgentLines = 64

// isAgentsLine reports whether l is a line of a team lead's list of
// agents: two spaces, a dot (● for the one in view, ◯ for the others), a
// space and a name.
func isAgentsLine(l string) bool {
	for _, dot := range []string{"  ● ", "  ◯ "} {
		if rest, ok := strings.CutPrefix(l, dot); ok && rest != "" && rest[0] != ' ' {
			return true
		}
	}
	return false
}

// isRule reports whether a line is a horizontal rule of U+2500 drawn from
// column 0, possibly with a label inside (`──── st-task-1 ─`, Claude's
// session name).
func isRule(l string) bool {
	return strings.HasPrefix(l, "──") && strings.HasSuffix(l, "─")
}

// statusBlock is the block of non-blank lines right above the box's upper
// rule (blank lines between them skipped), at most four: where a spinner
// or a question is drawn. When the agent is idle it is the end of the last
// answer, which is why callers look only for a marker at the start of a
// line, or only in spinner lines.
func statusBlock(lines []string, top int) []string {
	j := top - 1
	for j >= 0 && strings.TrimSpace(lines[j]) == "" {
		j--
	}
	var out []string
	for ; j >= 0 && len(out) < 4 && strings.TrimSpace(lines[j]) != "" && !isRule(lines[j]); j-- {
		out = append([]string{lines[j]}, out...)
	}
	return out
}

// isSpinner reports whether a line may be a spinner (`✽ Whirlpooling…`):
// drawn from column 0 with a glyph that is not one of the transcript's
// (● answer, ❯ submitted line, ⎿ tool result). A transcript line that
// quotes "esc to interrupt" must not make an idle agent look busy.
func isSpinner(l string) bool {
	if l == "" || l[0] == ' ' {
		return false
	}
	for _, p := range []string{"●", "❯", "⎿", "│"} {
		if strings.HasPrefix(l, p) {
			return false
		}
	}
	return true
}

// mapClaudeLikeEvent maps a Claude-shaped hook payload to an Event. Fields
// are read leniently (a field of an unexpected type reads as empty), since
// the agents add and change fields between versions; only a payload that
// is not a JSON object is an error.
func mapClaudeLikeEvent(name string, payload []byte) (Event, error) {
	trimmed := bytes.TrimSpace(payload)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Event{}, errors.New("hook payload is not a JSON object")
	}
	var p map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &p); err != nil {
		return Event{}, fmt.Errorf("hook payload: %w", err)
	}
	if name == "" {
		name = str(p, "hook_event_name")
	}
	ev := Event{Kind: EvIgnore, Name: name, SessionID: str(p, "session_id"), Cwd: str(p, "cwd"), Transcript: str(p, "transcript_path")}
	switch name {
	case "SessionStart":
		ev.Kind = EvSessionStart
		ev.Resumed = str(p, "source") == "resume"
	case "PreToolUse", "PostToolUse", "PostToolUseFailure":
		toolEvent(&ev, p)
	case "Stop", "StopFailure":
		stopEvent(&ev, p)
	default:
		otherEvent(&ev, p)
	}
	return ev, nil
}

// toolEvent reads a tool call's hook (PreToolUse, PostToolUse,
// PostToolUseFailure).
func toolEvent(ev *Event, p map[string]json.RawMessage) {
	ev.Kind = EvTool
	ev.Tool = str(p, "tool_name")
	ev.Before = ev.Name == "PreToolUse"
	if raw, ok := p["tool_input"]; ok {
		ev.ToolInput = raw
	}
	// A subagent's (or an in-process teammate's) calls fire in its
	// lead's pane, marked with its agent_id.
	ev.SubagentID, ev.SubagentType = subagentOf(p)
	if ev.Name == "PostToolUse" {
		ev.Teammate = spawnedTeammate(p)
		ev.MessageTo = messageTo(p)
	}
}

// stopEvent reads the end of a turn (Stop, StopFailure).
func stopEvent(ev *Event, p map[string]json.RawMessage) {
	if ev.Name == "StopFailure" {
		ev.Kind = EvTurnEnd
		ev.Failed = true
		ev.FailReason = str(p, "error")
		ev.LastAnswer = str(p, "last_assistant_message")
		if ev.LastAnswer == "" {
			ev.LastAnswer = str(p, "error")
		}
		return
	}
	// Claude 2.1.332 stops with subagents still running in the
	// background and starts a synthetic turn when they finish: the turn
	// is over only when no background task is left. A team lead's
	// teammates are listed there as long as they live, idle or not, so
	// they do not hold the turn open.
	mates, others := backgroundTasks(p)
	ev.LiveTeammates = mates
	if others > 0 {
		ev.Kind = EvTool
	} else {
		ev.Kind = EvTurnEnd
		ev.LastAnswer = str(p, "last_assistant_message")
	}
}

// otherEvent reads the hooks of a prompt, a permission, a notification,
// a subagent, a teammate and a session's end.
func otherEvent(ev *Event, p map[string]json.RawMessage) {
	switch ev.Name {
	case "UserPromptSubmit":
		ev.Kind = EvTurnStart
		ev.Prompt = str(p, "prompt")
		if strings.HasPrefix(ev.Prompt, "<task-notification>") {
			// Claude 2.1.332 starts this turn by itself when a background
			// subagent ends: the same piece of work goes on, and a report
			// made in it stands.
			ev.Kind = EvTool
		}
	case "PermissionRequest":
		// Fires as the dialog shows; Notification permission_prompt comes
		// about 6 s later, so this is the one to act on.
		ev.Kind = EvWaiting
		ev.Tool = str(p, "tool_name")
		ev.Ask = askOf(ev.Tool, p["tool_input"])
	case "Notification":
		switch str(p, "notification_type") {
		case "permission_prompt", "agent_needs_input", "elicitation_dialog":
			ev.Kind = EvWaiting
			ev.Ask = &Ask{Text: oneLine(str(p, "message"), maxAskText)}
		}
	case "SubagentStart", "SubagentStop":
		ev.Kind = EvSubagent
		ev.SubagentID, ev.SubagentType = subagentOf(p)
		ev.SubagentDone = ev.Name == "SubagentStop"
	case "TeammateIdle":
		// After each turn of a teammate: from its own pane, or from its
		// lead's pane when it runs in-process.
		t := &Teammate{Name: str(p, "teammate_name"), Team: str(p, "team_name")}
		if t.clean() {
			ev.Kind = EvTeammateIdle
			ev.Teammate = t
		}
	case "SessionEnd":
		ev.Kind = EvSessionEnd
	}
}

// subagentOf reads agent_id and agent_type, or "" for both when they do
// not look as Claude writes them: st prints them (st worker list).
func subagentOf(p map[string]json.RawMessage) (id, typ string) {
	id, typ = str(p, "agent_id"), str(p, "agent_type")
	if id == "" || !ValidSubagent(id, typ) {
		return "", ""
	}
	return id, typ
}

// str reads a string field, or "" when it is missing or not a string.
func str(p map[string]json.RawMessage, key string) string {
	var s string
	if raw, ok := p[key]; ok && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}

// arrayLen is the length of an array field, or 0 when it is missing, null
// or not an array.
func arrayLen(p map[string]json.RawMessage, key string) int {
	var a []json.RawMessage
	if raw, ok := p[key]; ok && json.Unmarshal(raw, &a) == nil {
		return len(a)
	}
	return 0
}

// screenLines is a capture-pane's lines, each without the blanks at its
// end (tmux pads some; a line's end is where its text ends): what every
// recognizer reads.
func screenLines(capture string) []string {
	lines := strings.Split(strings.ReplaceAll(capture, "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	return lines
}

// lowestLine is the index of the lowest of lines that begins with prefix
// (blanks before it left out), or -1: where a recognizer finds the
// bottom of an agent's input box (Gemini's footer, opencode's rule).
func lowestLine(lines []string, prefix string) int {
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(strings.TrimSpace(lines[i]), prefix) {
			return i
		}
	}
	return -1
}
