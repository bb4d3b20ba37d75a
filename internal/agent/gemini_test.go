package agent

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestMapGeminiEvent: Gemini CLI 0.61.0's payloads, as its hooks got them
// in tmux (trimmed of their transcript paths), mean what Claude's
// counterparts mean.
func TestMapGeminiEvent(t *testing.T) {
	const sid = `"session_id":"0e38e465-0f80-409d-99d9-a7f0156b616d","cwd":"/w/work"`
	for _, c := range []struct {
		name, payload string
		want          Event
	}{
		{"SessionStart", `{` + sid + `,"hook_event_name":"SessionStart","source":"startup"}`, Event{Kind: EvSessionStart}},
		{"BeforeAgent", `{` + sid + `,"hook_event_name":"BeforeAgent","prompt":"RUN: echo hi > out.txt"}`, Event{Kind: EvTurnStart, Prompt: "RUN: echo hi > out.txt"}},
		{"BeforeTool", `{` + sid + `,"hook_event_name":"BeforeTool","tool_name":"run_shell_command","tool_input":{"command":"echo hi > out.txt","description":"run"}}`,
			Event{Kind: EvTool, Tool: "run_shell_command", Before: true, ToolInput: json.RawMessage(`{"command":"echo hi > out.txt","description":"run"}`)}},
		{"Notification", `{` + sid + `,"hook_event_name":"Notification","notification_type":"ToolPermission","message":"Tool Confirm Shell Command requires execution","details":{"type":"exec","command":"echo hi > out.txt"}}`, Event{Kind: EvWaiting}},
		{"AfterAgent", `{` + sid + `,"hook_event_name":"AfterAgent","prompt":"x","prompt_response":"all done","stop_hook_active":false}`, Event{Kind: EvTurnEnd, LastAnswer: "all done"}},
		{"AfterAgent", `{` + sid + `,"hook_event_name":"AfterAgent","prompt":"x","prompt_response":"[no response text]"}`, Event{Kind: EvInterrupt}},
		{"SessionEnd", `{` + sid + `,"hook_event_name":"SessionEnd","reason":"exit"}`, Event{Kind: EvSessionEnd}},
		{"Notification", `{` + sid + `,"hook_event_name":"Notification","notification_type":"Other"}`, Event{Kind: EvIgnore}},
	} {
		got, err := Gemini.MapEvent(c.name, []byte(c.payload))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		c.want.Name, c.want.SessionID, c.want.Cwd = c.name, "0e38e465-0f80-409d-99d9-a7f0156b616d", "/w/work"
		if string(got.ToolInput) != string(c.want.ToolInput) {
			t.Errorf("%s: tool input %s, want %s", c.name, got.ToolInput, c.want.ToolInput)
		}
		got.ToolInput, c.want.ToolInput = nil, nil
		if got.Kind != c.want.Kind || got.Prompt != c.want.Prompt || got.LastAnswer != c.want.LastAnswer || got.Tool != c.want.Tool ||
			got.Before != c.want.Before || got.SessionID != c.want.SessionID || got.Cwd != c.want.Cwd {
			t.Errorf("%s %s: %+v, want %+v", c.name, c.payload, got, c.want)
		}
	}
	if _, err := Gemini.MapEvent("BeforeTool", []byte("not json")); err == nil {
		t.Error("a payload that is not JSON mapped")
	}
}

// TestMapGeminiQuestion: Gemini CLI's question tool, ask_user (0.59.0
// and 0.61.0), is a question from its BeforeTool, which holds the
// question and its options; the Notification that follows holds neither
// (its details are only the type and title), so it is a wait with no
// tool and no question, which leaves the question's item as it is.
func TestMapGeminiQuestion(t *testing.T) {
	const sid = `"session_id":"0e38e465-0f80-409d-99d9-a7f0156b616d"`
	before := `{` + sid + `,"hook_event_name":"BeforeTool","tool_name":"ask_user","tool_input":{"questions":[{"question":"Which colour?","header":"Question","type":"choice",` +
		`"options":[{"label":"Yes","description":"Go on."},{"label":"No","description":"Stop here."}],"multiSelect":false}]}}`
	ev, err := Gemini.MapEvent("BeforeTool", []byte(before))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Kind != EvWaiting || !ev.Before || ev.Ask == nil || !ev.Ask.Question || ev.Ask.Text != "Which colour?" ||
		strings.Join(ev.Ask.Options, ",") != "Yes,No" {
		t.Errorf("BeforeTool ask_user: %+v ask %+v", ev, ev.Ask)
	}
	note := `{` + sid + `,"hook_event_name":"Notification","notification_type":"ToolPermission","message":"Tool requires confirmation","details":{"type":"ask_user","title":"Ask User"}}`
	ev, err = Gemini.MapEvent("Notification", []byte(note))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Kind != EvWaiting || ev.Ask == nil || ev.Ask.Question || ev.Ask.Tool != "" {
		t.Errorf("Notification ask_user: %+v ask %+v", ev, ev.Ask)
	}
	// Another tool's BeforeTool is a tool, as before.
	ev, _ = Gemini.MapEvent("BeforeTool", []byte(`{`+sid+`,"hook_event_name":"BeforeTool","tool_name":"read_file","tool_input":{"file_path":"/w/a"}}`))
	if ev.Kind != EvTool || ev.Ask != nil {
		t.Errorf("BeforeTool read_file: %+v", ev)
	}
}

// TestRefuse: st's refusal in each agent's own form.
func TestRefuse(t *testing.T) {
	if got := string(Gemini.Refuse("no")); got != `{"decision":"deny","reason":"no"}` {
		t.Errorf("gemini: %s", got)
	}
	if got := string(Claude.Refuse("no")); got != `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}` {
		t.Errorf("claude: %s", got)
	}
}

// TestRecognizeGeminiModes: the box's prompt glyph changes with Gemini's
// approval mode (" > " by default, " * " in yolo mode, measured on 0.61.0
// in tmux); text in the box is text in the box whatever the glyph, so st
// never types a line over one already there.
func TestRecognizeGeminiModes(t *testing.T) {
	screen := func(hint, line string) string {
		return "✦ done\n\n" + strings.Repeat("─", 80) + "\n " + hint + "\n" + line +
			"\n workspace (/directory)                        sandbox\n /w/work                                      no sandbox\n"
	}
	// A permission dialog above a box that is still drawn (seen in the
	// real tier): the screen is the dialog's.
	dialog := "╭────\n│ ? Shell  echo yes > perm.txt\n│ Allow execution of [Shell]?\n│ ● 1. Allow once\n│   2. No, suggest changes (esc)\n╰────\n"
	if got := recognizeGemini(dialog + screen("Shift+Tab to accept edits", " >   Type your message or @path/to/file")); got.Screen != ScreenPrompt {
		t.Errorf("a permission dialog above the box: %+v, want a prompt", got)
	}
	for _, c := range []struct {
		hint, line string
		want       View
	}{
		{"Shift+Tab to accept edits", " >   Type your message or @path/to/file", View{Screen: ScreenReady}},
		{"Shift+Tab to accept edits", " > Your task is in the file", View{Screen: ScreenTyped, Box: "Your task is in the file"}},
		{"YOLO Ctrl+Y", " *   Type your message or @path/to/file", View{Screen: ScreenReady}},
		{"YOLO Ctrl+Y", " * Your task is in the file /w/t.md - read it\n   and do it.", View{Screen: ScreenTyped, Box: "Your task is in the file /w/t.md - read itand do it."}},
	} {
		if got := recognizeGemini(screen(c.hint, c.line)); got != c.want {
			t.Errorf("%s / %q: %+v, want %+v", c.hint, c.line, got, c.want)
		}
	}
}

// TestGeminiCommand: Gemini's command line: its approval mode, a resumed
// conversation only of its own form, and no CI in its environment (it
// would run without its box).
func TestGeminiCommand(t *testing.T) {
	const id = "0e38e465-0f80-409d-99d9-a7f0156b616d"
	for _, c := range []struct {
		o    LaunchOptions
		want string
	}{
		{LaunchOptions{}, "env -u CI gemini"},
		{LaunchOptions{Program: "/w/gemini", PermissionMode: "yolo", ResumeSession: id}, "env -u CI /w/gemini --approval-mode yolo --resume " + id},
		{LaunchOptions{ResumeSession: "--yolo"}, "env -u CI gemini"},
	} {
		if got := strings.Join(Gemini.Command(c.o), " "); got != c.want {
			t.Errorf("%+v: %q, want %q", c.o, got, c.want)
		}
	}
}
