package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/sophonz/st/internal/store"
)

// Gemini is Gemini CLI (shared/reference/real-agents.md §11, measured
// again here on 0.61.0: its screens, hooks and process tree).
var Gemini = &Kind{
	Name:  "gemini",
	Title: "Gemini CLI",
	Icon:  "✦",
	Launch: Launch{
		Program:    "gemini",
		ProgramEnv: "ST_GEMINI_BIN",
		// 0.59.0 passed every scenario of scripts/compat --gemini and its
		// screens are fixtures (docs/compatibility.md).
		Tested:  Range{Oldest: "0.59.0", Newest: "0.61.0", Package: "@google/gemini-cli"},
		Command: geminiCommand,
		Resume:  "gemini --resume <session id>",
		Seed: []string{
			`~/.gemini/settings.json: an auth type (security.auth.selectedType), general.enableAutoUpdate false`,
			`~/.gemini/trustedFolders.json: {"<folder>": "TRUST_FOLDER"}, or its trust screen stops a start`,
		},
		TrustFolder: geminiTrustFolder,
		// Its launcher is a node script (.bin/gemini), which starts a
		// second node with more memory: both are Gemini's.
		Processes: []string{"gemini", "@google/gemini-cli"},
		Marks:     []string{"GEMINI_CLI"},
		// Its --version starts node twice (it relaunches itself with a
		// bigger heap): 2.7 s against 1.6 s without, at a load of 5.
		ProbeEnv: []string{"GEMINI_CLI_NO_RELAUNCH=true"},
	},
	Hear: Hear{
		// Command hooks in ~/.gemini/settings.json, in Claude's form
		// ({"hooks":{"Event":[{"matcher":"*","hooks":[{"type":"command",...}]}]}}).
		Install: "gemini-settings",
		Events: []EventSpec{
			{Name: "SessionStart", Means: EvSessionStart, Matcher: true},
			{Name: "BeforeAgent", Means: EvTurnStart, Matcher: true},
			{Name: "BeforeTool", Means: EvTool, Matcher: true},
			{Name: "AfterTool", Means: EvTool, Matcher: true},
			{Name: "Notification", Means: EvWaiting, Matcher: true}, // ToolPermission
			{Name: "AfterAgent", Means: EvTurnEnd, Matcher: true},
			{Name: "SessionEnd", Means: EvSessionEnd, Matcher: true},
		},
		Map:        mapGeminiEvent,
		ShellTools: []string{"run_shell_command"},
		FileTools:  map[string]string{"write_file": "file_path", "replace": "file_path"},
		BeforeTool: "BeforeTool",
		Refusal:    "gemini-json",
		SessionID:  uuidRE,
		Resumed:    func(argv []string) string { return resumeFlag(uuidRE, argv, true) },
	},
	Screen: ScreenSpec{
		Recognize: recognizeGemini,
		// send-keys -l then Enter as a separate call submitted on the
		// first Enter in 6 of 6 (§11); a short pause as for the others.
		EnterDelay: 150 * time.Millisecond,
		// A line of 250 characters took over a second to show in its
		// box at a load of 25 on 2 cores (st typed it again, twice).
		TypeWait:       5 * time.Second,
		SessionFirst:   true,
		BoxUnderDialog: true,
		// "Is it blue? Or green?" typed in one burst into its empty box
		// showed as "Is it blue Or green", and "Great work! Now list" as
		// " Now list" in shell mode (0.59.0 and 0.61.0).
		FirstAlone: true,
		Submit:     "Enter", Interrupt: "Escape",
		Ready:  []string{geminiPlaceholder},
		Busy:   []string{"esc to cancel"},
		Prompt: geminiPrompt,
	},
	Records: Records{
		Conversation: "the hooks' transcript_path: ~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl",
		Tokens:       `each reply's "tokens" {input, output, cached, thoughts, tool, total} in the transcript`,
		TokenFormat:  "gemini",
	},
	// tmux kill-window leaves Gemini and its relaunched child running on
	// a deleted terminal (measured): st ends the pane's process group.
	StopTree: true,
}

func init() { Register(Gemini) }

// geminiCommand starts Gemini without CI in its environment: Gemini CLI
// takes CI=true (as a CI runner sets it, and a window of a tmux server
// started there inherits it) to mean no terminal, and exits at once
// instead of drawing its box (seen in st's own CI).
func geminiCommand(o LaunchOptions) []string {
	prog := o.Program
	if prog == "" {
		prog = "gemini"
	}
	argv := []string{"env", "-u", "CI", prog}
	if o.PermissionMode != "" {
		argv = append(argv, "--approval-mode", o.PermissionMode)
	}
	if ValidSession("gemini", o.ResumeSession) {
		argv = append(argv, "--resume", o.ResumeSession)
	}
	return argv
}

// geminiTrustFolder marks dir trusted in ~/.gemini/trustedFolders.json
// when repoRoot is.
func geminiTrustFolder(repoRoot, dir string) string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	path := filepath.Join(home, ".gemini", "trustedFolders.json")
	data, err := os.ReadFile(path)
	if err != nil || !gjson.ValidBytes(data) {
		return ""
	}
	key := func(p string) string { return strings.NewReplacer(".", `\.`, "*", `\*`, "?", `\?`).Replace(p) }
	if gjson.GetBytes(data, key(repoRoot)).String() != "TRUST_FOLDER" {
		return ""
	}
	out, err := sjson.SetBytes(data, key(dir), "TRUST_FOLDER")
	if err != nil || store.WriteFile(path, out, 0o600) != nil {
		return ""
	}
	return fmt.Sprintf("marked the worktree %s trusted in %s, as its repository is", dir, path)
}

// The markers of Gemini's screens, as measured on 0.61.0 and 0.59.0.
const (
	geminiPlaceholder = "Type your message or @path/to/file"
	geminiFooter      = "workspace (/directory)"
)

var (
	geminiTrust = []string{"Do you trust the files in this folder?", "Trust folder"}
	geminiLogin = []string{"Get started", "How would you like to authenticate", "Invalid auth method selected"}
	// "Answer Questions" heads the dialog of its question tool, ask_user
	// (0.59.0 and 0.61.0 alike), which replaces the box while it asks.
	geminiPrompt = []string{"Allow execution of", "Apply this change?", "Allow once", "Do you want to proceed?", "Answer Questions"}
)

// recognizeGemini reads a capture-pane of Gemini CLI. Its input box is a
// line starting " > " under a rule (one line of hints between) and above
// its footer ("workspace (/directory)"); it stays drawn during a turn, so
// a turn at work is told by the spinner line above the rule ("esc to
// cancel"). A dialog (trust, permission) replaces the box.
func recognizeGemini(capture string) View {
	lines := screenLines(capture)
	if foot := lowestLine(lines, geminiFooter); foot >= 0 {
		rule := -1
		for i := foot - 1; i >= 0 && i >= foot-maxBoxLines; i-- {
			if isGeminiRule(lines[i]) {
				rule = i
				break
			}
		}
		if rule >= 0 {
			box := geminiBox(lines[rule+1 : foot])
			if geminiDialogAbove(lines, rule) {
				// A permission dialog may be drawn above a box that
				// still takes keys: the keys are the dialog's answer.
				return View{Screen: ScreenPrompt, Box: box}
			}
			for i := rule - 1; i >= 0 && i >= rule-3; i-- {
				if strings.Contains(lines[i], "esc to cancel") {
					return View{Screen: ScreenWorking, Box: box}
				}
			}
			if box != "" {
				return View{Screen: ScreenTyped, Box: box}
			}
			return View{Screen: ScreenReady}
		}
	}
	for _, c := range []struct {
		markers []string
		screen  Screen
	}{{geminiTrust, ScreenTrust}, {geminiLogin, ScreenLogin}, {geminiPrompt, ScreenPrompt}} {
		for _, l := range lines {
			for _, m := range c.markers {
				if strings.Contains(l, m) {
					return View{Screen: c.screen}
				}
			}
		}
	}
	return View{Screen: ScreenUnknown}
}

// geminiDialogAbove reports a permission dialog (a bordered box with
// "Allow execution of", "Allow once"...) in the lines right above the
// box's rule: Gemini draws it over the transcript and, at times, keeps its
// input box below it.
func geminiDialogAbove(lines []string, rule int) bool {
	for i := rule - 1; i >= 0 && i >= rule-40; i-- {
		l := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(l, "│") {
			continue
		}
		for _, m := range geminiPrompt {
			if strings.Contains(l, m) {
				return true
			}
		}
	}
	return false
}

// isGeminiRule: the rule over the box, a line of ─ from column 0.
func isGeminiRule(l string) bool { return strings.HasPrefix(l, "────") }

// geminiBox is the box's text: from its first line, which starts with a
// prompt of one glyph (" > ", " * " in yolo mode, " ! " in shell mode)
// under the mode's hint line ("Shift+Tab to accept edits", "YOLO
// Ctrl+Y"), to the footer; the placeholder reads as empty.
func geminiBox(lines []string) string {
	var parts []string
	in := false
	for _, l := range lines {
		if !in {
			if rest, ok := geminiPrompt1(l); ok {
				in = true
				parts = append(parts, rest)
			}
			continue
		}
		parts = append(parts, strings.TrimPrefix(l, "   "))
	}
	text := strings.TrimSpace(strings.Join(parts, ""))
	if text == geminiPlaceholder {
		return ""
	}
	return text
}

// geminiPrompt1 reports whether l is the box's first line (a space, one
// glyph, a space) and returns the text after it.
func geminiPrompt1(l string) (string, bool) {
	rest, ok := strings.CutPrefix(l, " ")
	if !ok {
		return "", false
	}
	r, n := utf8.DecodeRuneInString(rest)
	if r == utf8.RuneError || unicode.IsSpace(r) || unicode.IsLetter(r) || unicode.IsDigit(r) {
		return "", false
	}
	return strings.CutPrefix(rest[n:], " ")
}

// mapGeminiEvent maps Gemini CLI's hook payloads (§11): BeforeAgent is
// Claude's UserPromptSubmit, BeforeTool its PreToolUse, a Notification of
// type ToolPermission its PermissionRequest, AfterTool its PostToolUse,
// AfterAgent its Stop. Esc ends a turn with AfterAgent and the response
// "[no response text]": an interrupt.
func mapGeminiEvent(name string, payload []byte) (Event, error) {
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
	case "BeforeAgent":
		ev.Kind, ev.Prompt = EvTurnStart, str(p, "prompt")
	case "BeforeTool", "AfterTool":
		ev.Kind, ev.Tool, ev.Before = EvTool, str(p, "tool_name"), name == "BeforeTool"
		if raw, ok := p["tool_input"]; ok {
			ev.ToolInput = raw
		}
		if ev.Before && ev.Tool == "ask_user" {
			// Its question tool waits for a person (its policy asks even
			// in yolo mode; -p does not offer it), and the Notification
			// that follows says only "Tool requires confirmation"
			// (details {type: ask_user, title}): the question and its
			// options are here, in the tool's input (0.59.0 and 0.61.0).
			ev.Kind, ev.Ask = EvWaiting, askOf(ev.Tool, p["tool_input"])
		}
	case "Notification":
		if str(p, "notification_type") == "ToolPermission" {
			ev.Kind = EvWaiting
			var d struct {
				Type string `json:"type"`
			}
			json.Unmarshal(p["details"], &d)
			tool := ""
			if d.Type == "exec" {
				tool = "run_shell_command" // (§11: details type exec is the shell tool)
			}
			ev.Ask = askOf(tool, p["details"])
			if ev.Ask.Text == "" {
				ev.Ask.Text = oneLine(str(p, "message"), maxAskText)
			}
		}
	case "AfterAgent":
		ev.Kind, ev.LastAnswer = EvTurnEnd, str(p, "prompt_response")
		if ev.LastAnswer == "[no response text]" {
			ev.Kind, ev.LastAnswer = EvInterrupt, ""
		}
	case "SessionEnd":
		ev.Kind = EvSessionEnd
	}
	return ev, nil
}
