package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Opencode is opencode (shared/reference/real-agents.md §12, measured
// again here on 1.18.33: its screens, its plugin's events, its exit). It
// has no command hooks: st hears it through a plugin file st installs
// (internal/hooks writes it), which runs `st hook opencode EVENT` with a
// payload of st's making on stdin.
var Opencode = &Kind{
	Name:  "opencode",
	Title: "opencode",
	Icon:  "⌬",
	Launch: Launch{
		Program:    "opencode",
		ProgramEnv: "ST_OPENCODE_BIN",
		Tested:     Range{Oldest: "1.17.19", Newest: "1.18.33", Package: "opencode-ai"},
		Command:    opencodeCommand,
		Resume:     "opencode -s <session id>",
		Seed: []string{
			`~/.config/opencode/opencode.json: a model and its provider (a model entry of its own, so no models list is fetched), "autoupdate": false`,
			`~/.config/opencode/node_modules with @opencode-ai/plugin (opencode installs it at its first start online), or every start offline waits for npm`,
			`~/.config/opencode/opencode.json: "permission": {"external_directory": "allow"} for workers in worktrees (their task file is outside the worktree, and opencode asks before reading it)`,
		},
		// Its npm launcher (.bin/opencode) is a native binary,
		// opencode.exe in its package's bin folder, or the platform
		// package's bin/opencode.
		Processes: []string{"opencode", "opencode.exe", "opencode-ai"},
		Marks:     []string{"OPENCODE", "OPENCODE_PID"},
		// Where it keeps its settings, and the permissions a person gives
		// its tools in the environment (OPENCODE_PERMISSION='{"bash":"ask"}').
		ConfigEnv: []string{"XDG_CONFIG_HOME", "OPENCODE_CONFIG", "OPENCODE_CONFIG_DIR", "OPENCODE_PERMISSION"},
	},
	Hear: Hear{
		// A plugin file in its config folder's plugin/ (opencode loads
		// every .js there), written by st hooks install.
		Install: "opencode-plugin",
		Events: []EventSpec{
			{Name: "chat.message", Means: EvTurnStart},
			{Name: "tool.execute.before", Means: EvTool},
			{Name: "tool.execute.after", Means: EvTool},
			{Name: "permission.asked", Means: EvWaiting},
			{Name: "permission.replied", Means: EvTool},
			{Name: "session.idle", Means: EvTurnEnd},
			{Name: "session.error", Means: EvTurnEnd},
			{Name: "session.status", Means: EvIgnore},
		},
		Map:        mapOpencodeEvent,
		ShellTools: []string{"bash"},
		FileTools:  map[string]string{"write": "filePath", "edit": "filePath"},
		// Esc twice ends a turn with session.error (MessageAbortedError),
		// which st's plugin hands on: every turn ends with an event.
		QuietEnds:  false,
		BeforeTool: "tool.execute.before",
		Refusal:    "opencode-plugin",
		SessionID:  opencodeSessionRE,
		Resumed:    opencodeResumed,
	},
	Screen: ScreenSpec{
		Recognize: recognizeOpencode,
		// send-keys -l then Enter submitted on the first Enter (§12).
		EnterDelay: 150 * time.Millisecond,
		// Its box echoed a typed line only after 5 to 10 s at a load of
		// 40 on 2 cores (st typed it again, four times), its server still
		// booting behind the box.
		TypeWait: 10 * time.Second,
		Submit:   "Enter",
		// The first Esc only arms it ("esc again to interrupt").
		Interrupt: "Escape Escape",
		Ready:     []string{opencodePlaceholder, opencodePlaceholderDots, opencodeRule},
		Busy:      []string{"esc interrupt", "esc again to interrupt"},
		Prompt:    opencodePrompt,
	},
	Records: Records{
		Conversation: "SQLite ~/.local/share/opencode/opencode.db (session, message, part); opencode export <session id>",
		Tokens: `each assistant message's tokens {total, input, output, reasoning, cache} (its database, and message.updated), ` +
			`written by st's plugin to ~/.local/share/opencode/st-tokens/<session>.jsonl`,
		TokenFormat: "opencode",
	},
}

func init() { Register(Opencode) }

// opencodeSessionRE is the form of opencode's session ids: "ses_" and
// letters and digits (ses_daf77e13dffeUmYpD2Dg7U5NVd).
var opencodeSessionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^ses_[0-9A-Za-z]{8,64}$`) })

// OpencodeOfflineMark is set beside npm_config_offline when st sets it
// for opencode's own start-up install; st's plugin takes both out of
// opencode's environment again, so that the agent's own commands (an npm
// install in its shell tool) run as the person's would.
const OpencodeOfflineMark = "ST_OPENCODE_NPM_OFFLINE"

// opencodeCommand starts opencode with its update check and models list
// download off (neither can work offline, and an update would change
// what st was tested on). When its config folder lacks the node_modules
// its start-up install puts there, npm is told to work from its cache:
// opencode waits for that install before it loads any plugin (st's
// included), and with no network npm retries for over a minute first.
func opencodeCommand(o LaunchOptions) []string {
	prog := o.Program
	if prog == "" {
		prog = "opencode"
	}
	argv := []string{"env", "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1"}
	if !opencodeDepsThere() {
		argv = append(argv, "npm_config_offline=true", OpencodeOfflineMark+"=1")
	}
	argv = append(argv, prog)
	if ValidSession("opencode", o.ResumeSession) {
		argv = append(argv, "-s", o.ResumeSession)
	}
	return argv
}

// OpencodeConfigDir is opencode's global config folder:
// $XDG_CONFIG_HOME/opencode, else ~/.config/opencode.
func OpencodeConfigDir(getenv func(string) string) string {
	if x := getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "opencode")
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".config", "opencode")
}

// opencodeDepsThere reports whether opencode's config folder holds the
// node_modules its start-up install makes (then it installs nothing).
func opencodeDepsThere() bool {
	fi, err := os.Stat(filepath.Join(OpencodeConfigDir(os.Getenv), "node_modules"))
	return err == nil && fi.IsDir()
}

// opencodeResumed reads -s ID, --session ID and --session=ID.
func opencodeResumed(argv []string) string {
	for i, a := range argv {
		var id string
		switch {
		case (a == "-s" || a == "--session") && i+1 < len(argv):
			id = argv[i+1]
		case strings.HasPrefix(a, "--session="), strings.HasPrefix(a, "-s="):
			_, id, _ = strings.Cut(a, "=")
		}
		if id != "" && opencodeSessionRE().MatchString(id) {
			return id
		}
	}
	return ""
}

// The markers of opencode's screens, as measured on 1.18.33.
const (
	// opencodePlaceholder begins the home screen's empty box (its example
	// in quotes varies).
	opencodePlaceholder = "Ask anything…"
	// opencodePlaceholderDots is the same in 1.17.19, with three dots
	// for the ellipsis (measured by scripts/compat --capture).
	opencodePlaceholderDots = "Ask anything..."
	// opencodeRule is the box's bottom edge, under its model line.
	opencodeRule = "╹▀▀▀"
)

var opencodePrompt = []string{"Permission required", "Allow once", "Reject"}

// recognizeOpencode reads a capture-pane of opencode. Its input box is a
// column of lines starting "┃" whose last line names the agent and model
// ("┃  Build · Claude Fake Anthropic"), over a rule of "▀" starting "╹";
// under the rule, its footer says "esc interrupt" while a turn works. A
// permission request replaces the box with one of its own ("△ Permission
// required" ... "Allow once   Allow always   Reject").
func recognizeOpencode(capture string) View {
	lines := screenLines(capture)
	// The box's rule is the lowest on the screen: under it are only its
	// hints and footer (on the home screen far below it, at the window's
	// last line).
	rule := lowestLine(lines, opencodeRule)
	if rule < 1 {
		if opencodePromptIn(lines) {
			return View{Screen: ScreenPrompt}
		}
		return View{Screen: ScreenUnknown}
	}
	if !strings.HasPrefix(strings.TrimSpace(lines[rule-1]), "┃") {
		return View{Screen: ScreenUnknown}
	}
	// The box's lines, above its model line, up to the first that is not
	// of the box.
	top := rule - 1
	for top > 0 && rule-top <= maxBoxLines && strings.HasPrefix(strings.TrimSpace(lines[top-1]), "┃") {
		top--
	}
	box := opencodeBox(lines[top : rule-1])
	for _, l := range lines[rule+1:] {
		if strings.Contains(l, "esc interrupt") || strings.Contains(l, "esc again to interrupt") {
			return View{Screen: ScreenWorking, Box: box}
		}
	}
	if box != "" {
		return View{Screen: ScreenTyped, Box: box}
	}
	return View{Screen: ScreenReady}
}

// opencodePromptIn finds a permission request: its title, then its
// choices below.
func opencodePromptIn(lines []string) bool {
	for i, l := range lines {
		if strings.Contains(l, "Permission required") {
			for _, m := range lines[i:] {
				if strings.Contains(m, "Allow once") && strings.Contains(m, "Reject") {
					return true
				}
			}
		}
	}
	return false
}

// opencodeBox is the text of the box's lines: each after its "┃" and the
// two spaces of its margin, up to the sidebar (a wide window draws one
// to the right of the box, on the same lines: a gap of 8 spaces or more,
// which no line st types has); the wraps of a long line joined back. The
// home screen's placeholder reads as empty.
func opencodeBox(lines []string) string {
	var parts []string
	for _, l := range lines {
		_, rest, _ := strings.Cut(l, "┃")
		rest = strings.TrimPrefix(rest, "  ")
		if i := strings.Index(rest, "        "); i >= 0 {
			rest = rest[:i]
		}
		parts = append(parts, strings.TrimRight(rest, " "))
	}
	text := strings.TrimSpace(strings.Join(parts, ""))
	if strings.HasPrefix(text, opencodePlaceholder) || strings.HasPrefix(text, opencodePlaceholderDots) {
		return ""
	}
	return text
}

// mapOpencodeEvent maps the payloads of st's opencode plugin
// (internal/hooks), which speaks for opencode's plugin hooks and bus
// events in st's form: hook_event_name, session_id, cwd, and per event
// prompt (chat.message), tool_name and tool_input (tool.execute.*),
// last_assistant_message (session.idle), error (session.error), status
// (session.status), reply (permission.replied). chat.message is Claude's
// UserPromptSubmit, tool.execute.before its PreToolUse, permission.asked
// its PermissionRequest, session.idle its Stop. An Esc ends a turn with
// session.error MessageAbortedError: an interrupt.
func mapOpencodeEvent(name string, payload []byte) (Event, error) {
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
	case "chat.message":
		ev.Kind, ev.Prompt = EvTurnStart, str(p, "prompt")
	case "tool.execute.before", "tool.execute.after":
		ev.Kind, ev.Tool, ev.Before = EvTool, str(p, "tool_name"), name == "tool.execute.before"
		if raw, ok := p["tool_input"]; ok {
			ev.ToolInput = raw
		}
	case "permission.asked":
		// What it asks leave for: its permission's name and the
		// request's metadata ({command} for bash), untrusted.
		ev.Kind, ev.Tool = EvWaiting, str(p, "tool_name")
		ev.Ask = askOf(ev.Tool, p["tool_input"])
	case "permission.replied":
		// Once allowed, the tool runs; refused, the turn ends (its
		// session.idle follows).
		ev.Kind = EvTool
		if str(p, "reply") == "reject" {
			ev.Kind = EvIgnore
		}
	case "session.status":
		// Sent only for a turn that began with no prompt of its own.
		if str(p, "status") == "busy" {
			ev.Kind = EvTool
		}
	case "session.idle":
		ev.Kind, ev.LastAnswer = EvTurnEnd, str(p, "last_assistant_message")
	case "session.error":
		var e struct {
			Name string `json:"name"`
			Data struct {
				Message string `json:"message"`
			} `json:"data"`
		}
		_ = json.Unmarshal(p["error"], &e)
		if e.Name == "MessageAbortedError" {
			ev.Kind = EvInterrupt
			break
		}
		ev.Kind, ev.Failed, ev.LastAnswer = EvTurnEnd, true, e.Data.Message
		if ev.LastAnswer == "" {
			ev.LastAnswer = e.Name
		}
	}
	return ev, nil
}
