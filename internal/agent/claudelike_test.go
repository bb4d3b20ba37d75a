package agent

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// rule is a box rule as Claude draws it, 60 columns.
var rule = strings.Repeat("─", 60)

// screen joins capture lines the way capture-pane prints them.
func screen(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

// The captures below are built from the screens measured on Claude Code
// 2.1.332 and 2.1.197 (shared/reference/real-agents.md §3.4) and from what
// the sim draws.
func TestRecognizeClaudeLike(t *testing.T) {
	cases := []struct {
		name    string
		capture string
		want    View
	}{
		{"empty", "", View{Screen: ScreenUnknown}},
		{"claude idle 2.1.332", screen(
			"● Hello from the fake model.", "", "✻ Brewed for 4s · done 7:49 AM", "",
			rule, "❯\u00a0", rule, "  ⏸ manual mode on · ? for shortcuts",
		), View{Screen: ScreenReady}},
		{"claude idle 2.1.197", screen(
			"❯ Say hello please", "", "● Hello.", "", "✻ Worked for 2s", "",
			rule, "❯\u00a0", rule, "  ? for shortcuts · ← for agents",
		), View{Screen: ScreenReady}},
		{"named session rule", screen(
			"──── st-task-1 ─"+strings.Repeat("─", 40), "❯\u00a0", rule, "  ? for shortcuts",
		), View{Screen: ScreenReady}},
		{"nbsp stripped", screen(rule, "❯", rule, "  ? for shortcuts"), View{Screen: ScreenReady}},
		{"crlf", strings.ReplaceAll(screen(rule, "❯\u00a0hi", rule, ""), "\n", "\r\n"), View{Screen: ScreenTyped, Box: "hi"}},
		{"claude typed", screen(
			"● Hello.", "", rule, "❯\u00a0Say hello please", rule, "  ⏸ manual mode on",
		), View{Screen: ScreenTyped, Box: "Say hello please"}},
		{"typed wrapped", screen(
			rule, "❯\u00a0Read the task file /tmp/x/task", "  .md and finish with", "   st worker done", rule, "",
		), View{Screen: ScreenTyped, Box: "Read the task file /tmp/x/task.md and finish with st worker done"}},
		{"claude working", screen(
			"❯ Say hello please", "", "✽ Whirlpooling…", "",
			rule, "❯\u00a0", rule, "  ⏸ manual mode on · esc to interrupt",
		), View{Screen: ScreenWorking}},
		{"working with text typed", screen(
			"❯ first", "", "· Orbiting… (running UserPromptSubmit hook · 0s)", "",
			rule, "❯\u00a0second while busy", rule, "  esc to interrupt",
		), View{Screen: ScreenWorking, Box: "second while busy"}},
		{"spinner says esc to interrupt", screen(
			"❯ hi", "", "✻ Thinking… (5s · esc to interrupt)", rule, "❯\u00a0", rule, "",
		), View{Screen: ScreenWorking}},
		{"sim working", screen(
			" ✻ sim agent · /w", "", " ❯ hi", "", "✽ Working…", "", rule, "❯\u00a0", rule, "  esc to interrupt",
		), View{Screen: ScreenWorking}},
		{"sim question", screen(
			" ✻ sim agent · /w", "", " ❯ do /t/q.md", "", " ? Which colour?", "   Type your answer and press Enter.", "",
			rule, "❯\u00a0", rule, "  waiting for your answer",
		), View{Screen: ScreenPrompt}},
		{"submitted echo only", screen("❯ Say hello please", "", "✽ Whirlpooling…"), View{Screen: ScreenUnknown}},
		{"box not closed yet", screen("❯ hi", rule, "❯\u00a0"), View{Screen: ScreenUnknown}},
		{"claude trust 2.1.332", screen(
			"", " Accessing workspace:", "", " /w/work1", "",
			" Quick safety check: Is this a project you created or one you trust? (Like your own code, a well-known open",
			" source project, or work from your team). If not, take a moment to review what's in this folder first.", "",
			" ❯ No, exit", "   Yes, I trust this folder", "", " Enter to confirm · Esc to cancel",
		), View{Screen: ScreenTrust}},
		{"sim trust", screen(
			" Accessing workspace:", " /w", " Quick safety check: Is this a project you created or one you trust?",
			" ❯ 1. Yes, I trust this folder", "   2. No, exit", " Enter to confirm · Esc to cancel",
		), View{Screen: ScreenTrust}},
		{"do you trust", screen(" Do you trust the files in this folder?", " ❯ 1. Yes"), View{Screen: ScreenTrust}},
		{"claude api key", screen(
			" Detected a custom API key in your environment", "", " ANTHROPIC_API_KEY: sk-ant-...dummy", "",
			" Do you want to use this API key?", "", "   1. Yes", " ❯ 2. No (recommended)",
		), View{Screen: ScreenLogin}},
		{"claude offline", screen("Unable to connect to Anthropic services", "Failed to connect to api.anthropic.com: ENOTFOUND"), View{Screen: ScreenLogin}},
		{"login method", screen(" Select login method:", " ❯ 1. Claude account"), View{Screen: ScreenLogin}},
		{"claude permission 2.1.332", screen(
			"❯ Write hello", "", "● Bash(echo hello > /w/out.txt)", "",
			"╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌", " Bash command", "", "   echo hello > /w/out.txt", "   Run the requested command",
			"╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌", " Do you want to proceed?", " ❯ 1. Yes",
			"   2. Yes, and always allow access to /w from this project", "   3. Yes, and switch to auto mode", "   4. No", "",
			" Esc to cancel · Tab to amend",
		), View{Screen: ScreenPrompt}},
		{"claude permission 2.1.197", screen(
			"● Bash(echo v197 > probe/x)", "  ⎿  Waiting…", "", " Bash command", " Do you want to proceed?",
			" ❯ 1. Yes", "   2. Yes, and always allow access to probe/ from this project", "   3. No", "",
			"Esc to cancel · Tab to amend · ctrl+e to explain",
		), View{Screen: ScreenPrompt}},
		{"codex approval", screen(
			"• Running echo hi > /w/y.txt", "Would you like to run the following command?", "› 1. Yes, proceed (y)",
		), View{Screen: ScreenPrompt}},
		// Words of a blocking screen in the transcript do not block an idle agent.
		{"markers in the transcript", screen(
			" ❯ say Quick safety check and Do you want to proceed? and esc to interrupt", "",
			" ● Bash(grep -r markers .)", "   ⎿  Do you want to proceed?", "      Type your answer and press Enter.", "",
			" ● Received: esc to interrupt", "", rule, "❯\u00a0", rule, "  ? for shortcuts",
		), View{Screen: ScreenReady}},
		{"markers above the last answer", screen(
			"● Quick safety check: Do you want to proceed?", "", "● Hello.", "", "✻ Brewed for 1s",
		), View{Screen: ScreenUnknown}},
		// The box is drawn at the bottom, under the transcript; a box with
		// the transcript going on below it is not the live one.
		{"box-like text in the transcript", screen(
			rule, "❯\u00a0old", rule, "● Hello.", "", "✻ Brewed for 1s", "x", "y", "z", "w",
		), View{Screen: ScreenUnknown}},
		{"footer of several lines", screen(
			rule, "❯\u00a0", rule, "  ⏸ manual mode on", "  ⚠ 1 warning", "", "", "",
		), View{Screen: ScreenReady}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := recognizeClaudeLike(c.capture); got != c.want {
				t.Errorf("got %+v, want %+v\n%s", got, c.want, c.capture)
			}
		})
	}
}

func TestMapClaudeLikeEvent(t *testing.T) {
	const base = `"session_id":"cddc5193","transcript_path":"/h/.claude/projects/-w/cddc5193.jsonl","cwd":"/w/work1"`
	cases := []struct {
		name, payload string
		want          Event
	}{
		{"SessionStart", `{` + base + `,"hook_event_name":"SessionStart","source":"startup","model":"claude-opus-5-5"}`,
			Event{Kind: EvSessionStart}},
		{"UserPromptSubmit", `{` + base + `,"prompt_id":"5883","permission_mode":"auto","hook_event_name":"UserPromptSubmit","prompt":"Say hello please"}`,
			Event{Kind: EvTurnStart, Prompt: "Say hello please"}},
		{"PreToolUse", `{` + base + `,"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"echo hello"},"tool_use_id":"toolu_fake1"}`,
			Event{Kind: EvTool, Tool: "Bash"}},
		{"PostToolUse", `{` + base + `,"hook_event_name":"PostToolUse","tool_name":"Bash","tool_response":{"stdout":"","stderr":""}}`,
			Event{Kind: EvTool, Tool: "Bash"}},
		{"PostToolUseFailure", `{` + base + `,"tool_name":"Bash","error":"Exit code 1"}`,
			Event{Kind: EvTool, Tool: "Bash"}},
		{"PermissionRequest", `{` + base + `,"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{},"permission_suggestions":[]}`,
			Event{Kind: EvWaiting, Tool: "Bash"}},
		{"Notification", `{` + base + `,"message":"Claude needs your permission","notification_type":"permission_prompt"}`,
			Event{Kind: EvWaiting}},
		{"Notification", `{` + base + `,"notification_type":"agent_needs_input"}`, Event{Kind: EvWaiting}},
		{"Notification", `{` + base + `,"notification_type":"elicitation_dialog"}`, Event{Kind: EvWaiting}},
		{"Notification", `{` + base + `,"message":"Claude is waiting for your input","notification_type":"idle_prompt"}`,
			Event{Kind: EvIgnore}},
		{"Stop", `{` + base + `,"hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"Tool finished.","background_tasks":[],"session_crons":[]}`,
			Event{Kind: EvTurnEnd, LastAnswer: "Tool finished."}},
		{"Stop", `{` + base + `,"last_assistant_message":"no tasks field"}`,
			Event{Kind: EvTurnEnd, LastAnswer: "no tasks field"}},
		{"Stop", `{` + base + `,"last_assistant_message":"started","background_tasks":[{"id":"a1","type":"subagent","status":"running"}]}`,
			Event{Kind: EvTool}},
		{"Stop", `{` + base + `,"last_assistant_message":"odd","background_tasks":{"n":1}}`,
			Event{Kind: EvTurnEnd, LastAnswer: "odd"}},
		{"StopFailure", `{` + base + `,"hook_event_name":"StopFailure","error":"unknown","last_assistant_message":"API Error: 400 fake server: forced 400"}`,
			Event{Kind: EvTurnEnd, Failed: true, FailReason: "unknown", LastAnswer: "API Error: 400 fake server: forced 400"}},
		{"StopFailure", `{` + base + `,"error":"rate_limit"}`, Event{Kind: EvTurnEnd, Failed: true, FailReason: "rate_limit", LastAnswer: "rate_limit"}},
		{"SubagentStart", `{` + base + `,"agent_id":"aafc","agent_type":"claude"}`,
			Event{Kind: EvSubagent, SubagentID: "aafc", SubagentType: "claude"}},
		{"SubagentStop", `{` + base + `,"agent_id":"aafc","agent_type":"claude","stop_hook_active":false,"background_tasks":[{}]}`,
			Event{Kind: EvSubagent, SubagentID: "aafc", SubagentType: "claude", SubagentDone: true}},
		{"SessionEnd", `{` + base + `,"hook_event_name":"SessionEnd","reason":"prompt_input_exit"}`, Event{Kind: EvSessionEnd}},
		{"PreCompact", `{` + base + `}`, Event{Kind: EvIgnore}},
		// Fields of an unexpected type read as empty.
		{"UserPromptSubmit", `{"session_id":7,"cwd":null,"prompt":["x"]}`, Event{Kind: EvTurnStart}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := mapClaudeLikeEvent(c.name, []byte(c.payload))
			if err != nil {
				t.Fatal(err)
			}
			want := c.want
			want.Name = c.name
			if strings.Contains(c.payload, base) {
				want.SessionID, want.Cwd, want.Transcript = "cddc5193", "/w/work1", "/h/.claude/projects/-w/cddc5193.jsonl"
			}
			// The tool input is kept as sent; what a prompt asks is
			// TestAskFromHooks's; the table checks the rest.
			got.ToolInput, got.Before, want.Before, got.Ask = nil, false, false, nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}

	// The event's name comes from the payload when the command line has none.
	if got, err := mapClaudeLikeEvent("", []byte(`{"hook_event_name":"Stop","last_assistant_message":"x"}`)); err != nil || got.Kind != EvTurnEnd || got.Name != "Stop" {
		t.Errorf("no name: %+v %v", got, err)
	}
	for _, bad := range []string{"", "  ", "null", "[]", `"x"`, "12", "{", `{"a":}`, "{}x"} {
		if _, err := mapClaudeLikeEvent("Stop", []byte(bad)); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
	// A payload of 1 MiB (a long last answer) is mapped whole.
	long := strings.Repeat("x", 1<<20)
	got, err := mapClaudeLikeEvent("Stop", []byte(`{"last_assistant_message":"`+long+`","background_tasks":[]}`))
	if err != nil || got.LastAnswer != long {
		t.Errorf("1 MiB payload: %v, answer of %d bytes", err, len(got.LastAnswer))
	}
}

func TestSimAdapter(t *testing.T) {
	a, err := Lookup("sim")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(a.Command(LaunchOptions{STBin: "/opt/st", Program: "ignored"}), " "); got != "/opt/st agent sim" {
		t.Errorf("command %q", got)
	}
	if got := strings.Join(a.Command(LaunchOptions{STBin: "/opt/st", ResumeSession: "abc"}), " "); got != "/opt/st agent sim --resume abc" {
		t.Errorf("resume command %q", got)
	}
	if a.EnterDelay() <= 50e6 {
		t.Errorf("EnterDelay %v is inside the sim's 50 ms swallow window", a.EnterDelay())
	}
	if v := a.Recognize(screen(rule, "❯\u00a0", rule)); v.Screen != ScreenReady {
		t.Errorf("Recognize: %+v", v)
	}
	if ev, err := a.MapEvent("Stop", []byte(`{"last_assistant_message":"x","background_tasks":[]}`)); err != nil || ev.Kind != EvTurnEnd {
		t.Errorf("MapEvent: %+v %v", ev, err)
	}
}

func FuzzRecognizeClaudeLike(f *testing.F) {
	f.Add(screen(rule, "❯\u00a0", rule, "  ? for shortcuts"))
	f.Add(screen(rule, "❯\u00a0text", "  more", rule, "  esc to interrupt"))
	f.Fuzz(func(t *testing.T, capture string) {
		v := recognizeClaudeLike(capture)
		if _, ok := screenNames[v.Screen]; !ok {
			t.Fatalf("screen %d", v.Screen)
		}
		switch v.Screen {
		case ScreenReady, ScreenTrust, ScreenLogin, ScreenUnknown:
			if v.Box != "" {
				t.Fatalf("%v with box %q", v.Screen, v.Box)
			}
		case ScreenTyped:
			if v.Box == "" {
				t.Fatal("typed with an empty box")
			}
		}
		if utf8.ValidString(capture) && !utf8.ValidString(v.Box) {
			t.Fatalf("box %q is not UTF-8", v.Box)
		}
	})
}

func FuzzMapClaudeLikeEvent(f *testing.F) {
	f.Add("Stop", []byte(`{"last_assistant_message":"x","background_tasks":[]}`))
	f.Add("Notification", []byte(`{"notification_type":"permission_prompt"}`))
	f.Fuzz(func(t *testing.T, name string, payload []byte) {
		ev, err := mapClaudeLikeEvent(name, payload)
		if err != nil {
			return
		}
		if ev.Kind == "" {
			t.Fatal("no kind")
		}
		if name != "" && ev.Name != name {
			t.Fatalf("name %q, want %q", ev.Name, name)
		}
	})
}

// lowestLine finds the lowest line with a prefix, indented or not, and
// none on a screen without one.
func TestLowestLine(t *testing.T) {
	lines := screenLines("╭─ box\n  ▀▀▀ rule\ntext\n▀▀▀ lower rule\n  hint  \n")
	for _, c := range []struct {
		prefix string
		want   int
	}{{"▀▀▀", 3}, {"╭─", 0}, {"hint", 4}, {"absent", -1}, {"rule", -1}} {
		if got := lowestLine(lines, c.prefix); got != c.want {
			t.Errorf("lowestLine(%q) = %d, want %d", c.prefix, got, c.want)
		}
	}
	if got := lowestLine(nil, "x"); got != -1 {
		t.Errorf("lowestLine of no lines = %d", got)
	}
}
