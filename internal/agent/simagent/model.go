package simagent

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// The model is the sim's whole behaviour as a pure state machine: messages
// go in (bytes typed, timers, hook and command results), effects come out
// (fire a hook, run a command, start a timer, exit) and the screen is a
// function of the state. The driver carries the effects out; tests feed
// messages with made-up times and read the screen as lines, with no
// terminal, no processes and no waiting.

// swallowWindow is how soon after a text byte an Enter is dropped under
// ST_SIM_SWALLOW_ENTER, like Claude's paste detection that took a fast
// Enter as part of the paste (reference §8.1).
const swallowWindow = 50 * time.Millisecond

// ctrlCWindow is how soon a second Ctrl-C must follow the first to exit.
const ctrlCWindow = 2 * time.Second

// maxShownOutput is how many lines of a command's output the transcript
// keeps, as Claude folds the rest.
const maxShownOutput = 10

// maxTranscript bounds the transcript kept in memory; only its end is
// ever drawn.
const maxTranscript = 2000

// maxToolOutput bounds the output kept for a hook payload (its tail).
const maxToolOutput = 256 << 10

type phase int

const (
	phaseTrust    phase = iota // the folder-trust screen (ST_SIM_TRUST)
	phaseStarting              // the splash before the box (ST_SIM_SLOW_START)
	phaseMain                  // the transcript and the input box
	phaseExited
)

// config is fixed at start.
type config struct {
	cwd            string
	sessionID      string
	transcriptPath string
	home           string // where conversations are kept (HOME)
	resume         bool
	stBin          string // what summary: runs as `<stBin> worker done`
	trust          bool
	swallowEnter   bool
	slowStart      time.Duration
	deaf           time.Duration
	lag            time.Duration // every key taken this late (ST_SIM_LAG)
	turnDelay      time.Duration
	// autoContinue: after a usage limit's reset it goes on by itself,
	// continueAfter later, as Claude does with autoContinueAtUsageLimit
	// (reference §13: 30-90 s; ST_SIM_AUTO_CONTINUE=0 turns it off).
	autoContinue  bool
	continueAfter time.Duration
	// statusLines is the height of a user's status line, drawn as Claude
	// 2.1.332 draws one: between the box's lower rule and the footer,
	// each line two columns in (ST_SIM_STATUS_LINES).
	statusLines int
	fs          fileSystem
}

// Messages into the model.
type (
	msg interface{}
	// inputMsg is bytes read from the terminal, stamped when read.
	inputMsg struct {
		data []byte
		at   time.Time
	}
	timerMsg struct{ tag int }
	// hookMsg is the answer of a hook the model asked to hear back from
	// (PreToolUse).
	hookMsg struct {
		tag    int
		deny   bool
		reason string
	}
	commandMsg struct {
		tag    int
		output string // stdout and stderr together
		code   int
	}
	// hangupMsg is SIGHUP, SIGTERM, or the terminal gone.
	hangupMsg struct{}
)

// Effects out of the model, carried out in order by the driver.
type (
	effect interface{}
	// fireHook runs `st hook sim <event>`. With a tag, the driver answers
	// with a hookMsg of that tag.
	fireHook struct {
		event   string
		payload map[string]any
		tag     int
	}
	runCommand struct {
		tag     int
		command string
	}
	cancelCommand struct{}
	startTimer    struct {
		tag   int
		after time.Duration
	}
	exitProgram struct{ code int }
	// appendRecords appends lines (JSON records) to the transcript at
	// path, before any hook emitted after it fires: st reads the
	// transcript when a hook comes.
	appendRecords struct {
		path  string
		lines []map[string]any
	}
	// appendRecord adds a line to the conversation file, as Claude
	// writes its transcript.
	appendRecord struct {
		path string
		line []byte
	}
)

// waitKind is what a turn waits for before its next directive.
type waitKind int

const (
	waitNone    waitKind = iota
	waitDelay            // ST_SIM_TURN_DELAY, "thinking"
	waitSleep            // sleep:
	waitPreTool          // the PreToolUse hook's decision
	waitCommand          // the command to finish
	waitAnswer           // the person's answer to ask:
	waitPermit           // the person's leave for a permit: command
)

type toolCall struct {
	name  string
	id    string
	input map[string]any
}

// turn is one submitted line being worked on.
type turn struct {
	line       string
	rest       []directive
	task       task
	answer     string // the last answer so far, sent with Stop
	summaryRun bool
	wait       waitKind
	// tag names what the turn waits for; a result with another tag is
	// from an interrupted turn or a superseded wait and is dropped.
	tag      int
	tool     toolCall
	question string
	// permit: the tool call asks a person's leave once its PreToolUse
	// lets it through (permit:), as Claude's default mode does for Bash.
	permit bool
}

type model struct {
	cfg        config
	phase      phase
	transcript []string
	box        []rune
	partial    []byte // the first bytes of a UTF-8 rune not complete yet
	lastText   time.Time
	deafUntil  time.Time
	ctrlCArmed bool
	ctrlCAt    time.Time
	ctrlCTag   int
	startTag   int
	turn       *turn
	queue      []string // lines submitted during a turn, run after it
	// limited is the turn stopped at the usage limit, until it goes on.
	limited   *limitedTurn
	now       time.Time // the time of the message being taken
	tags      int
	tools     int
	responses int
	out       []effect
}

func newModel(cfg config) *model {
	return &model{cfg: cfg}
}

// start is the first step: the trust screen, the splash or the box.
func (m *model) start(now time.Time) []effect {
	if m.cfg.trust {
		m.phase = phaseTrust
	} else {
		m.afterTrust(now)
	}
	return m.flush()
}

// update takes one message and returns the effects it causes.
func (m *model) update(now time.Time, in msg) []effect {
	if m.phase == phaseExited {
		return nil
	}
	m.now = now
	switch v := in.(type) {
	case inputMsg:
		m.input(v.data, v.at)
	case timerMsg:
		m.timer(now, v.tag)
	case hookMsg:
		m.hookDone(v)
	case commandMsg:
		m.commandDone(v)
	case hangupMsg:
		m.exit(0, "other")
	}
	return m.flush()
}

func (m *model) flush() []effect {
	out := m.out
	m.out = nil
	return out
}

func (m *model) emit(e effect) { m.out = append(m.out, e) }

func (m *model) newTag() int {
	m.tags++
	return m.tags
}

func (m *model) afterTrust(now time.Time) {
	if m.cfg.slowStart > 0 {
		m.phase = phaseStarting
		m.startTag = m.newTag()
		m.emit(startTimer{tag: m.startTag, after: m.cfg.slowStart})
		return
	}
	m.showBox(now)
}

// showBox draws the box for the first time; that is when Claude fires
// SessionStart, and when the deaf period starts.
func (m *model) showBox(now time.Time) {
	m.phase = phaseMain
	m.deafUntil = now.Add(m.cfg.deaf)
	source := "startup"
	if m.cfg.resume {
		source = "resume"
	}
	m.fire("SessionStart", map[string]any{"source": source, "model": "sim"}, 0)
}

func (m *model) timer(now time.Time, tag int) {
	switch {
	case m.phase == phaseStarting && tag == m.startTag:
		m.showBox(now)
	case tag == m.ctrlCTag:
		m.ctrlCArmed = false
	case m.turn != nil && tag == m.turn.tag && (m.turn.wait == waitDelay || m.turn.wait == waitSleep):
		m.turn.wait = waitNone
		m.advance()
	case m.limited != nil && tag == m.limited.tag && m.turn == nil:
		m.goOn("Your usage limit has reset. Continue the task.", true)
	}
}

// input handles bytes one at a time. All bytes of one read share its time
// stamp, so text and an Enter written together count as 0 ms apart.
func (m *model) input(data []byte, at time.Time) {
	for i := 0; i < len(data) && m.phase != phaseExited; i++ {
		b := data[i]
		if m.phase == phaseStarting || (m.phase == phaseMain && m.cfg.deaf > 0 && at.Before(m.deafUntil)) {
			continue // not listening yet: the key is lost, as the knobs intend
		}
		// A terminal writes an escape sequence (arrow, function key) in
		// one go, so ESC followed by [ or O in the same read is a key to
		// skip, and an ESC alone is the Esc key.
		if b == 0x1b && i+1 < len(data) && (data[i+1] == '[' || data[i+1] == 'O') {
			j := i + 2
			if data[i+1] == '[' {
				for j < len(data) && data[j] >= 0x20 && data[j] <= 0x3f {
					j++
				}
			}
			i = j
			continue
		}
		if m.phase == phaseTrust {
			m.trustKey(b, at)
		} else {
			m.key(b, at)
		}
	}
}

func (m *model) trustKey(b byte, at time.Time) {
	switch b {
	case '\r', '\n', '1':
		m.afterTrust(at)
	case '2', 0x1b, 0x03:
		m.phase = phaseExited
		m.emit(exitProgram{code: 1})
	}
}

func (m *model) key(b byte, at time.Time) {
	if m.turn != nil && m.turn.wait == waitPermit && m.permitKey(b) {
		return
	}
	switch {
	case b == 0x03:
		m.ctrlC(at)
	case b == 0x1b:
		m.interrupt()
	case b == 0x7f || b == 0x08:
		m.partial = nil
		if len(m.box) > 0 {
			m.box = m.box[:len(m.box)-1]
		}
	case b == 0x15: // Ctrl-U
		m.partial = nil
		m.box = nil
	case b == '\r' || b == '\n':
		m.enter(at)
	case b == '\t':
		m.addRune(' ', at)
	case b < 0x20:
		// other control keys do nothing
	default:
		m.partial = append(m.partial, b)
		if utf8.FullRune(m.partial) {
			r, n := utf8.DecodeRune(m.partial)
			if r != utf8.RuneError || n > 1 {
				m.addRune(r, at)
			}
			m.partial = nil
		}
	}
}

func (m *model) addRune(r rune, at time.Time) {
	m.box = append(m.box, r)
	m.lastText = at
}

func (m *model) ctrlC(at time.Time) {
	if m.ctrlCArmed && at.Sub(m.ctrlCAt) <= ctrlCWindow {
		m.exit(0, "prompt_input_exit")
		return
	}
	m.ctrlCArmed, m.ctrlCAt = true, at
	m.ctrlCTag = m.newTag()
	m.emit(startTimer{tag: m.ctrlCTag, after: ctrlCWindow})
	if m.turn != nil {
		m.interrupt()
	} else {
		m.box, m.partial = nil, nil
	}
}

func (m *model) enter(at time.Time) {
	if m.cfg.swallowEnter && !m.lastText.IsZero() && at.Sub(m.lastText) < swallowWindow {
		return
	}
	text := strings.TrimSpace(string(m.box))
	if text == "" {
		return
	}
	m.box, m.partial = nil, nil
	switch {
	case m.turn != nil && m.turn.wait == waitAnswer:
		m.answerQuestion(text)
	case m.turn != nil:
		// Claude fires UserPromptSubmit for a queued line at once, and
		// answers it after the current turn (reference §3.5).
		m.say("", " ❯ "+text, "   ⎿  Queued · runs after this turn")
		m.queue = append(m.queue, text)
		m.fire("UserPromptSubmit", map[string]any{"prompt": text}, 0)
	case m.limited != nil:
		// A line after the limit goes on with the stopped turn: at the
		// limit again before its reset.
		m.say("", " ❯ "+text)
		m.goOn(text, false)
	default:
		m.say("", " ❯ "+text)
		m.fire("UserPromptSubmit", map[string]any{"prompt": text}, 0)
		m.startTurn(text)
	}
}

func (m *model) startTurn(line string) {
	t := &turn{line: line, answer: "Received: " + line}
	if path, ok := findTaskFile(m.cfg.fs, line); ok {
		data, err := m.cfg.fs.ReadFile(path)
		if len(data) > maxTaskFile {
			data = data[:maxTaskFile]
		}
		if err != nil {
			t.answer = fmt.Sprintf("Could not read %s: %v", path, err)
		} else {
			t.task = parseTask(string(data))
			t.rest = t.task.directives
			t.answer = "Done: " + firstRunes(line, 60)
		}
	}
	m.turn = t
	if m.cfg.turnDelay > 0 {
		t.wait, t.tag = waitDelay, m.newTag()
		m.emit(startTimer{tag: t.tag, after: m.cfg.turnDelay})
		return
	}
	m.advance()
}

// advance runs directives until one has to wait, and ends the turn when
// none is left.
func (m *model) advance() {
	t := m.turn
	for t != nil && t == m.turn {
		if len(t.rest) == 0 {
			if t.task.hasSummary && !t.summaryRun {
				t.summaryRun = true
				m.startBash(shellQuote(m.cfg.stBin) + " worker done --summary " + shellQuote(t.task.summary))
				return
			}
			m.endTurn()
			return
		}
		d := t.rest[0]
		t.rest = t.rest[1:]
		switch d.kind {
		case dirRun:
			m.startBash(d.value)
			return
		case dirPermit:
			m.startBash(d.value)
			t.permit = true
			return
		case dirSleep:
			t.wait, t.tag = waitSleep, m.newTag()
			m.emit(startTimer{tag: t.tag, after: d.dur})
			return
		case dirAsk:
			m.ask(d.value)
			return
		case dirLimit:
			m.hitLimit(d.dur)
			return
		case dirAnswer:
			t.answer = d.value
		case dirUsage:
			m.respond(d.usage)
		case dirBad:
			m.say("", " ● "+d.value)
		}
	}
}

// respond writes one response to the transcript as Claude does: a record
// per content block (here a text and a second text), each with the whole
// response's message.usage under one message.id.
func (m *model) respond(u usage) {
	m.responses++
	id := fmt.Sprintf("msg_sim_%d", m.responses)
	use := map[string]any{"input_tokens": u.input, "output_tokens": u.output,
		"cache_read_input_tokens": u.cacheRead, "cache_creation_input_tokens": u.cacheWrite}
	var lines []map[string]any
	for i, text := range []string{"Working on it.", "Here is what I found."} {
		lines = append(lines, map[string]any{
			"type": "assistant", "sessionId": m.cfg.sessionID, "uuid": fmt.Sprintf("%s-%d", id, i),
			"message": map[string]any{"id": id, "type": "message", "role": "assistant", "model": u.model,
				"content": []any{map[string]any{"type": "text", "text": text}}, "usage": use},
		})
	}
	m.emit(appendRecords{path: m.cfg.transcriptPath, lines: lines})
}

func (m *model) nextTool(name string, input map[string]any) toolCall {
	m.tools++
	return toolCall{name: name, id: fmt.Sprintf("toolu_sim_%d", m.tools), input: input}
}

// startBash asks the PreToolUse hook first: st's guard hooks refuse
// commands there, as they would in Claude.
func (m *model) startBash(command string) {
	t := m.turn
	t.tool = m.nextTool("Bash", map[string]any{"command": command})
	m.say("", " ● Bash("+command+")")
	t.wait, t.tag = waitPreTool, m.newTag()
	m.fire("PreToolUse", map[string]any{
		"tool_name": "Bash", "tool_input": t.tool.input, "tool_use_id": t.tool.id,
	}, t.tag)
}

func (m *model) hookDone(v hookMsg) {
	t := m.turn
	if t == nil || v.tag != t.tag || (t.wait != waitPreTool && t.wait != waitPermit) {
		return
	}
	if t.wait == waitPermit && !v.deny {
		return // the hook left it to the person: the dialog stays
	}
	if !v.deny && t.permit {
		m.askPermission()
		return
	}
	if v.deny {
		reason := strings.Join(strings.Fields(v.reason), " ")
		if reason == "" {
			reason = "a PreToolUse hook refused it"
		}
		m.say("   ⎿  Not run · permission denied", "      │ Reason: "+reason)
		t.wait = waitNone
		m.advance()
		return
	}
	t.wait, t.tag = waitCommand, m.newTag()
	m.emit(runCommand{tag: t.tag, command: t.tool.input["command"].(string)})
}

func (m *model) commandDone(v commandMsg) {
	t := m.turn
	if t == nil || v.tag != t.tag || t.wait != waitCommand {
		return
	}
	lines := outputLines(v.output)
	var shown []string
	if v.code != 0 {
		shown = append(shown, fmt.Sprintf("Error: Exit code %d", v.code))
	}
	if len(lines) > maxShownOutput {
		shown = append(shown, fmt.Sprintf("… +%d lines", len(lines)-maxShownOutput))
		lines = lines[len(lines)-maxShownOutput:]
	}
	shown = append(shown, lines...)
	if len(shown) == 0 {
		shown = []string{"(No content)"}
	}
	for i, l := range shown {
		if i == 0 {
			m.say("   ⎿  " + l)
		} else {
			m.say("      " + l)
		}
	}
	out := v.output
	if len(out) > maxToolOutput {
		out = out[len(out)-maxToolOutput:]
	}
	common := map[string]any{"tool_name": t.tool.name, "tool_input": t.tool.input, "tool_use_id": t.tool.id}
	if v.code == 0 {
		common["tool_response"] = map[string]any{
			"stdout": out, "stderr": "", "interrupted": false, "isImage": false,
		}
		m.fire("PostToolUse", common, 0)
	} else {
		// Claude fires PostToolUseFailure, not PostToolUse, for a command
		// that exits non-zero (reference §8.5).
		common["error"] = fmt.Sprintf("Exit code %d", v.code)
		common["is_interrupt"] = false
		m.fire("PostToolUseFailure", common, 0)
	}
	t.wait = waitNone
	m.advance()
}

// askPermission shows Claude's permission dialog for the Bash call and
// fires what Claude fires (reference §13): PermissionRequest at once, then
// Notification permission_prompt (Claude waits about 6 s for it; the sim
// does not). A PermissionRequest hook that denies refuses the call; "1",
// "y" or Enter allows it, "2" or "n" refuses it, Esc interrupts the turn
// with no hook, as in Claude.
func (m *model) askPermission() {
	t := m.turn
	t.permit = false
	t.wait, t.tag = waitPermit, m.newTag()
	m.fire("PermissionRequest", map[string]any{"tool_name": t.tool.name, "tool_input": t.tool.input,
		"permission_suggestions": []any{}}, t.tag)
	m.fire("Notification", map[string]any{"message": "Claude needs your permission", "notification_type": "permission_prompt"}, 0)
}

// permitKey is a key pressed at the permission dialog; it reports whether
// the key was the dialog's.
func (m *model) permitKey(b byte) bool {
	t := m.turn
	switch b {
	case '1', 'y', '\r', '\n':
		m.say("   ⎿  Allowed")
		t.wait, t.tag = waitCommand, m.newTag()
		m.emit(runCommand{tag: t.tag, command: t.tool.input["command"].(string)})
	case '2', 'n':
		m.say("   ⎿  Not run · the person said no")
		t.wait = waitNone
		m.advance()
	case 0x1b, 0x03:
		return false
	}
	return true
}

// ask shows a question above the box and waits for the next submitted
// line. PermissionRequest is the hook Claude fires when a person must
// answer, so st sees the worker as waiting.
func (m *model) ask(question string) {
	t := m.turn
	t.tool = m.nextTool("AskUser", map[string]any{"question": question})
	t.question = question
	t.wait, t.tag = waitAnswer, m.newTag()
	m.fire("PermissionRequest", map[string]any{"tool_name": "AskUser", "tool_input": t.tool.input}, 0)
}

// answerQuestion takes a submitted line as the answer. It is not a prompt,
// so it fires PostToolUse for the question and not UserPromptSubmit.
func (m *model) answerQuestion(text string) {
	t := m.turn
	m.say("", " ? "+t.question, " ❯ "+text)
	m.fire("PostToolUse", map[string]any{
		"tool_name": "AskUser", "tool_input": t.tool.input, "tool_use_id": t.tool.id,
		"tool_response": map[string]any{"answer": text},
	}, 0)
	t.wait, t.question = waitNone, ""
	m.advance()
}

func (m *model) endTurn() {
	t := m.turn
	m.say("", " ● "+t.answer)
	m.fire("Stop", map[string]any{
		"stop_hook_active": false, "last_assistant_message": t.answer, "background_tasks": []any{},
	}, 0)
	m.turn = nil
	if len(m.queue) > 0 {
		next := m.queue[0]
		m.queue = m.queue[1:]
		m.startTurn(next)
	}
}

// limitedTurn is a turn stopped at the plan's usage limit.
type limitedTurn struct {
	turn   *turn
	resets time.Time
	text   string
	tag    int // the timer of its own going on
}

// hitLimit stops the turn at the plan's usage limit, reset in after, as
// Claude does for a subscriber (reference §13): its words on screen, the
// exact reset in its transcript, StopFailure rate_limit.
func (m *model) hitLimit(after time.Duration) {
	t := m.turn
	resets := m.now.Add(after)
	m.stopAtLimit(t, resets)
}

func (m *model) stopAtLimit(t *turn, resets time.Time) {
	local := resets.UTC()
	text := "You've hit your 5-hour limit · resets " + strings.ToLower(local.Format("3:04pm")) + " (UTC)"
	l := &limitedTurn{turn: t, resets: resets, text: text}
	m.say("", " ● "+text)
	if m.cfg.autoContinue {
		m.say("   ⎿  Usage limit reached · set to continue automatically at " + strings.ToLower(local.Format("3:04pm")))
		l.tag = m.newTag()
		m.emit(startTimer{tag: l.tag, after: resets.Sub(m.now) + m.cfg.continueAfter})
	}
	rec, _ := json.Marshal(map[string]any{
		"type": "assistant", "isApiErrorMessage": true, "sessionId": m.cfg.sessionID,
		"apiErrorParams": map[string]any{"rate_limit_info": map[string]any{"resetsAt": float64(resets.UnixMilli()) / 1000}},
		"message":        map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}}},
	})
	m.emit(appendRecord{path: m.cfg.transcriptPath, line: rec})
	m.fire("StopFailure", map[string]any{"error": "rate_limit", "last_assistant_message": text}, 0)
	m.turn, m.limited = nil, l
}

// goOn takes the stopped turn up again: by itself after the reset (own),
// or with a line typed. Before the reset the limit stops it again.
func (m *model) goOn(line string, own bool) {
	l := m.limited
	m.limited = nil
	if own {
		m.say("", " ● "+line)
	}
	m.fire("UserPromptSubmit", map[string]any{"prompt": line}, 0)
	if m.now.Before(l.resets) {
		m.stopAtLimit(l.turn, l.resets)
		return
	}
	m.turn = l.turn
	m.turn.wait = waitNone
	m.advance()
}

// interrupt is Esc during a turn. Claude fires no hook for it (reference
// §3.6), and puts the interrupted prompt back in the box (§9.1), with the
// lines queued behind it, ready to edit and send again.
func (m *model) interrupt() {
	t := m.turn
	if t == nil {
		return
	}
	if t.wait == waitCommand {
		m.emit(cancelCommand{})
	}
	if t.wait == waitAnswer {
		m.say("", " ? "+t.question)
	}
	m.say("   ⎿  Interrupted · What should Claude do instead?")
	m.turn = nil
	back := append([]string{t.line}, m.queue...)
	text := strings.Join(back, " ")
	if len(m.box) > 0 {
		text += " " + string(m.box)
	}
	m.box, m.queue = []rune(text), nil
}

func (m *model) exit(code int, reason string) {
	if m.phase == phaseMain {
		m.fire("SessionEnd", map[string]any{"reason": reason}, 0)
	}
	if m.turn != nil && m.turn.wait == waitCommand {
		m.emit(cancelCommand{})
	}
	m.phase = phaseExited
	m.emit(exitProgram{code: code})
}

// fire emits a hook with the fields every Claude payload carries.
func (m *model) fire(event string, fields map[string]any, tag int) {
	p := map[string]any{
		"session_id":      m.cfg.sessionID,
		"transcript_path": m.cfg.transcriptPath,
		"cwd":             m.cfg.cwd,
		"hook_event_name": event,
		"permission_mode": "default",
	}
	for k, v := range fields {
		p[k] = v
	}
	m.emit(fireHook{event: event, payload: p, tag: tag})
}

func (m *model) say(lines ...string) {
	for _, l := range lines {
		m.transcript = append(m.transcript, sanitize(l))
	}
	if n := len(m.transcript); n > maxTranscript {
		m.transcript = append([]string(nil), m.transcript[n-maxTranscript:]...)
	}
}

// busy reports whether a turn is in progress.
func (m *model) busy() bool { return m.turn != nil }

// render draws the screen as lines for a terminal of w columns and h rows:
// the end of the transcript that fits, then the box and its footer.
func (m *model) render(w, h int) []string {
	w, h = max(w, 10), max(h, 3)
	switch m.phase {
	case phaseTrust:
		return fit(wrapAll([]string{
			"",
			" Accessing workspace:",
			"",
			" " + m.cfg.cwd,
			"",
			" Quick safety check: Is this a project you created or one you trust?",
			"",
			" ❯ 1. Yes, I trust this folder",
			"   2. No, exit",
			"",
			" Enter to confirm · Esc to cancel",
		}, w), h, false)
	case phaseStarting:
		return fit(wrapAll([]string{" ✻ sim agent · starting…"}, w), h, false)
	}
	top := wrapAll(append([]string{" ✻ sim agent · " + m.cfg.cwd, ""}, m.transcript...), w)
	var bottom []string
	t := m.turn
	switch {
	case t != nil && t.wait == waitAnswer:
		bottom = append(bottom, "", " ? "+sanitize(t.question), "   Type your answer and press Enter.")
	case t != nil && t.wait == waitPermit:
		cmd, _ := t.tool.input["command"].(string)
		bottom = append(bottom, "", " Bash command", "   "+sanitize(cmd), " Do you want to proceed?", " ❯ 1. Yes", "   2. No")
	case t != nil:
		bottom = append(bottom, "", "✽ Working…")
	}
	bottom = wrapAll(append(bottom, ""), w)
	rule := strings.Repeat("─", w)
	bottom = append(bottom, rule)
	for i, part := range wrapBox(m.box, w) {
		prefix := "  "
		if i == 0 {
			prefix = "❯\u00a0"
		}
		bottom = append(bottom, prefix+string(part))
	}
	bottom = append(bottom, rule)
	for i := 1; i <= m.cfg.statusLines; i++ {
		bottom = append(bottom, fmt.Sprintf("  status %d of %d", i, m.cfg.statusLines))
	}
	bottom = append(bottom, m.footer())
	if len(bottom) >= h {
		return fit(bottom, h, true)
	}
	return append(fit(top, h-len(bottom), true), bottom...)
}

func (m *model) footer() string {
	switch {
	case m.ctrlCArmed:
		return "  Press Ctrl-C again to exit"
	case m.turn != nil && m.turn.wait == waitAnswer:
		return "  waiting for your answer"
	case m.turn != nil && m.turn.wait == waitPermit:
		return "  Esc to cancel"
	case m.turn != nil:
		return "  esc to interrupt"
	case len(m.box) > 0:
		return "" // Claude drops "? for shortcuts" while text is typed
	}
	return "  ? for shortcuts"
}

// fit keeps n lines: the last ones (a transcript scrolls) or the first.
func fit(lines []string, n int, last bool) []string {
	if len(lines) <= n {
		return lines
	}
	if last {
		return lines[len(lines)-n:]
	}
	return lines[:n]
}

// wrapAll hard-wraps lines at w columns (one rune, one column). A
// continuation is indented two columns, so that a wrapped line can never
// put a rule or the box's ❯ at column 0, where the recognizer looks.
func wrapAll(lines []string, w int) []string {
	var out []string
	for _, l := range lines {
		r := []rune(l)
		if len(r) <= w {
			out = append(out, l)
			continue
		}
		out = append(out, string(r[:w]))
		r = r[w:]
		for len(r) > 0 {
			n := min(len(r), w-2)
			out = append(out, "  "+string(r[:n]))
			r = r[n:]
		}
	}
	return out
}

// wrapBox splits the box text into lines of w-2 runes (the ❯ and NBSP, or
// the continuation indent, take two columns). A space at a break moves to
// the start of the next line: tmux strips trailing spaces from a capture,
// so a space left at the end of a line would be lost when the box text is
// read back.
func wrapBox(text []rune, w int) [][]rune {
	n := max(w-2, 1)
	var out [][]rune
	for len(text) > n {
		cut := n
		for cut > 0 && text[cut-1] == ' ' {
			cut--
		}
		if cut == 0 {
			cut = n
		}
		out = append(out, text[:cut])
		text = text[cut:]
	}
	return append(out, text)
}

var ansiSeq = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[^\[]`) })

// sanitize keeps a transcript line printable: command output may hold
// colours, tabs and carriage returns that would break the drawing.
func sanitize(s string) string {
	s = ansiSeq().ReplaceAllString(s, "")
	s = strings.ReplaceAll(s, "\t", "    ")
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

// outputLines splits a command's output into lines to show.
func outputLines(out string) []string {
	out = strings.TrimRight(strings.ReplaceAll(out, "\r\n", "\n"), "\n")
	if strings.TrimSpace(out) == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

func firstRunes(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		r = r[:n]
	}
	return string(r)
}
