package agent

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sophonz/st/internal/testutil"
)

// Fuzz targets for what st reads from outside: the agents' screens
// (capture-pane text, Codex's with escapes) and their hook payloads. Each
// input must be answered quickly, without a panic, with a result that
// keeps the adapters' promises. The seed corpora live in
// testdata/fuzz/<FuzzName>/ and run as ordinary tests.

// fuzzDeadline bounds one input: a recognizer or mapper that loops, or
// backtracks without end, fails here instead of hanging the fuzzer.
const fuzzDeadline = 2 * time.Second

// within runs fn under testutil.Within.
func within(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	testutil.Within(t, d, what, fn)
}

// checkView checks what every recognizer promises of a View.
func checkView(t *testing.T, kind, capture string, v View) {
	t.Helper()
	if _, ok := screenNames[v.Screen]; !ok {
		t.Fatalf("%s: screen %d is not a known screen", kind, v.Screen)
	}
	switch v.Screen {
	case ScreenReady, ScreenTrust, ScreenLogin:
		if v.Box != "" {
			t.Fatalf("%s: %v with box %q", kind, v.Screen, v.Box)
		}
	case ScreenTyped:
		if v.Box == "" {
			t.Fatalf("%s: typed with an empty box", kind)
		}
	}
	if v.Box != strings.TrimSpace(v.Box) {
		t.Fatalf("%s: box %q is not trimmed", kind, v.Box)
	}
	if strings.ContainsAny(v.Box, "\n") {
		t.Fatalf("%s: box %q spans lines", kind, v.Box)
	}
	if utf8.ValidString(capture) && !utf8.ValidString(v.Box) {
		t.Fatalf("%s: box %q is not UTF-8", kind, v.Box)
	}
}

// codexScreen is a Codex screen as capture-pane -e prints it.
func codexScreen(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

const (
	codexDim   = "\x1b[2m"
	codexReset = "\x1b[0m"
	codexModel = "  gpt-fake default · /w/cwork1"
)

func FuzzRecognizeCodex(f *testing.F) {
	// Measured screens (shared/reference/real-agents.md §4).
	f.Add(codexScreen("", "› "+codexDim+"Ask Codex to do anything"+codexReset, "", codexModel))
	f.Add(codexScreen("", "› Say hello please", "", codexModel))
	f.Add(codexScreen("• Working (3s • esc to interrupt)", "", "› ", "", codexModel))
	f.Add(codexScreen("  Folder access", "  /w/cwork3", "  Trust this folder? Codex can read, edit, and run files here.",
		"› 1. Trust and continue", "  2. Back", "  enter continue · esc back"))
	f.Add(codexScreen("• Running echo hi > y.txt", "Would you like to run the following command?", "$ echo hi > /w/y.txt",
		"› 1. Yes, proceed (y)", "Press enter to confirm or esc to cancel"))
	f.Add(codexScreen("  Welcome to Codex", "› 1. Sign in with ChatGPT", "  2. Use an OpenAI API key"))
	f.Add("› \x1b[2;")
	f.Add("›\x1b[")
	f.Fuzz(func(t *testing.T, capture string) {
		a, err := Lookup("codex")
		if err != nil {
			t.Fatal(err)
		}
		var v View
		within(t, fuzzDeadline, "codex Recognize", func() { v = a.Recognize(capture) })
		checkView(t, "codex", capture, v)
		// Colours and attributes are not text: when every escape of the
		// capture is whole (as tmux prints them), none reaches the box. A
		// cut one at a line's end may, joined with the next line.
		whole := true
		for _, l := range strings.Split(capture, "\n") {
			if strings.Contains(ansiRE().ReplaceAllString(l, ""), "\x1b") {
				whole = false
			}
		}
		if whole && strings.Contains(v.Box, "\x1b") {
			t.Fatalf("codex: box %q keeps an escape sequence", v.Box)
		}
	})
}

// FuzzRecognizeScreens feeds one capture to every adapter: none may
// panic, hang or break the View's promises, whatever the pane shows.
func FuzzRecognizeScreens(f *testing.F) {
	f.Add(screen(rule, "❯\u00a0", rule, "  ? for shortcuts"))
	f.Add(screen(rule, "❯\u00a0$(touch /tmp/x) `id` ; a && b | c #{pane_id}", rule))
	f.Add(screen("● Hello.", "", "✽ Whirlpooling… (esc to interrupt)", "", rule, "❯\u00a0", rule))
	f.Add(screen(" ? Which colour?", "   Type your answer and press Enter.", "", rule, "❯\u00a0", rule))
	f.Add(codexScreen("", "› "+codexDim+"Ask Codex to do anything"+codexReset, "", codexModel))
	f.Add("\x1b[31m❯\u00a0\x1b[0m\r\n" + rule + "\r")
	f.Fuzz(func(t *testing.T, capture string) {
		for _, kind := range Kinds() {
			a, _ := Lookup(kind)
			var v View
			within(t, fuzzDeadline, kind+" Recognize", func() { v = a.Recognize(capture) })
			checkView(t, kind, capture, v)
		}
	})
}

// FuzzHookEvent feeds a hook event's name and payload to every adapter's
// mapper, as st hook does with what an agent writes on stdin.
func FuzzHookEvent(f *testing.F) {
	for _, s := range []struct {
		name    string
		payload string
	}{
		{"UserPromptSubmit", `{"session_id":"s1","prompt":"$(touch /tmp/x) ` + "`id`" + `; #{pane_id}","cwd":"/w"}`},
		{"PreToolUse", `{"tool_name":"Bash","tool_input":{"command":"tmux kill-server"}}`},
		{"PostToolUse", `{"tool_name":"Edit","tool_input":{"file_path":"/w/a.go"},"tool_response":{}}`},
		{"PermissionRequest", `{"tool_name":"Bash","tool_input":{"command":"rm -rf /"}}`},
		{"Stop", `{"last_assistant_message":"\u001b[31mred\u001b[0m","background_tasks":[]}`},
		{"Stop", `{"background_tasks":[{"id":"b1"}]}`},
		{"StopFailure", `{"error":"rate limited"}`},
		{"SubagentStart", `{"agent_id":"a1","agent_type":"Explore"}`},
		{"SubagentStop", `{"agent_id":"a1"}`},
		{"TeammateIdle", `{"teammate_name":"alpha","team_name":"session-0702c391"}`},
		{"PostToolUse", `{"tool_name":"Agent","tool_response":{"status":"teammate_spawned","name":"alpha","team_name":"session-1","tmux_pane_id":"%1"}}`},
		{"PostToolUse", `{"tool_name":"SendMessage","tool_input":{"to":"alpha"},"agent_id":"aalpha-1"}`},
		{"Stop", `{"background_tasks":[{"type":"teammate"},{"type":"subagent"},3]}`},
		{"Interrupt", `{"session_id":"s1"}`},
		{"SessionEnd", `{"reason":"exit"}`},
		{"", `{"hook_event_name":"Notification","notification_type":"permission_prompt"}`},
		{"Stop", `{"session_id":7,"last_assistant_message":null,"background_tasks":"x"}`},
		{"Stop", `  [1,2]`},
		{"Stop", `{"a":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`},
		{"Stop", "{\"last_assistant_message\":\"\xff\xfe\"}"},
	} {
		f.Add(s.name, []byte(s.payload))
	}
	f.Fuzz(func(t *testing.T, name string, payload []byte) {
		for _, kind := range Kinds() {
			a, _ := Lookup(kind)
			var ev Event
			var err error
			within(t, fuzzDeadline, kind+" MapEvent", func() { ev, err = a.MapEvent(name, payload) })
			if err != nil {
				if ev.Kind != "" {
					t.Fatalf("%s: error %v with an event %+v", kind, err, ev)
				}
				continue
			}
			if ev.Kind == "" {
				t.Fatalf("%s: event with no kind for %q %q", kind, name, payload)
			}
			if name != "" && ev.Name != name {
				t.Fatalf("%s: event name %q, want %q", kind, ev.Name, name)
			}
			if len(ev.ToolInput) > 0 && !json.Valid(ev.ToolInput) {
				t.Fatalf("%s: tool input %q is not JSON", kind, ev.ToolInput)
			}
			if ev.Kind == EvSubagent && ev.SubagentDone != (ev.Name == "SubagentStop") {
				t.Fatalf("%s: %s with SubagentDone=%v", kind, ev.Name, ev.SubagentDone)
			}
			// The event goes to the daemon as JSON: it must encode.
			if _, err := json.Marshal(ev); err != nil {
				t.Fatalf("%s: event %+v does not encode: %v", kind, ev, err)
			}
		}
	})
}
