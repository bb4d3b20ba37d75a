package agent

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestMapOpencodeEvent: the payloads st's opencode plugin sends (from
// opencode 1.18.33's own hook arguments and bus events, measured in tmux)
// mean what Claude's counterparts mean.
func TestMapOpencodeEvent(t *testing.T) {
	const sid = `"session_id":"ses_daf763cf4ffezqSwXX8XAv7rAz","cwd":"/w/work"`
	for _, c := range []struct {
		name, payload string
		want          Event
	}{
		{"chat.message", `{` + sid + `,"hook_event_name":"chat.message","prompt":"RUN: echo two > two.txt"}`, Event{Kind: EvTurnStart, Prompt: "RUN: echo two > two.txt"}},
		{"tool.execute.before", `{` + sid + `,"tool_name":"bash","tool_input":{"command":"echo two > two.txt","description":"run"}}`,
			Event{Kind: EvTool, Tool: "bash", Before: true, ToolInput: json.RawMessage(`{"command":"echo two > two.txt","description":"run"}`)}},
		{"tool.execute.after", `{` + sid + `,"tool_name":"bash","tool_input":{"command":"x"}}`, Event{Kind: EvTool, Tool: "bash", ToolInput: json.RawMessage(`{"command":"x"}`)}},
		{"permission.asked", `{` + sid + `,"tool_name":"bash","tool_input":{"command":"echo two > two.txt"}}`, Event{Kind: EvWaiting, Tool: "bash"}},
		{"permission.replied", `{` + sid + `,"reply":"once"}`, Event{Kind: EvTool}},
		{"permission.replied", `{` + sid + `,"reply":"reject"}`, Event{Kind: EvIgnore}},
		{"session.status", `{` + sid + `,"status":"busy"}`, Event{Kind: EvTool}},
		{"session.idle", `{` + sid + `,"last_assistant_message":"second done"}`, Event{Kind: EvTurnEnd, LastAnswer: "second done"}},
		{"session.error", `{` + sid + `,"error":{"name":"MessageAbortedError","data":{"message":"Aborted"}}}`, Event{Kind: EvInterrupt}},
		{"session.error", `{` + sid + `,"error":{"name":"APIError","data":{"message":"overloaded"}}}`, Event{Kind: EvTurnEnd, Failed: true, LastAnswer: "overloaded"}},
	} {
		got, err := Opencode.MapEvent(c.name, []byte(c.payload))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		c.want.Name, c.want.SessionID, c.want.Cwd = c.name, "ses_daf763cf4ffezqSwXX8XAv7rAz", "/w/work"
		if string(got.ToolInput) != string(c.want.ToolInput) {
			t.Errorf("%s: tool input %s, want %s", c.name, got.ToolInput, c.want.ToolInput)
		}
		got.ToolInput, c.want.ToolInput = nil, nil
		if got.Kind != c.want.Kind || got.Prompt != c.want.Prompt || got.LastAnswer != c.want.LastAnswer || got.Tool != c.want.Tool ||
			got.Before != c.want.Before || got.Failed != c.want.Failed || got.SessionID != c.want.SessionID || got.Cwd != c.want.Cwd {
			t.Errorf("%s %s: %+v, want %+v", c.name, c.payload, got, c.want)
		}
	}
	if ev, _ := Opencode.MapEvent("permission.asked", []byte(`{`+sid+`,"tool_name":"bash","tool_input":{"command":"echo two > two.txt"}}`)); ev.Ask == nil || ev.Ask.Command != "echo two > two.txt" {
		t.Errorf("permission.asked: the attention item's command: %+v", ev.Ask)
	}
	if _, err := Opencode.MapEvent("chat.message", []byte("[]")); err == nil {
		t.Error("a payload that is not an object mapped")
	}
	if !Opencode.ValidSession("ses_daf763cf4ffezqSwXX8XAv7rAz") || Opencode.ValidSession("-s") || Opencode.ValidSession("ses_x;rm") {
		t.Error("opencode's session form")
	}
}

// TestRecognizeOpencode: opencode 1.18.33's screens in a 200x50 tmux
// window, as captured: the home box with its placeholder, a session's
// empty box, a line typed (wrapped), a turn at work (its footer), the
// first Esc, a permission request (no box at all).
func TestRecognizeOpencode(t *testing.T) {
	pad := strings.Repeat(" ", 60)
	home := pad + "   ┃\n" + pad + "   ┃  Ask anything… \"Fix broken tests\"\n" + pad + "   ┃\n" + pad + "   ┃  Build · Claude Fake Anthropic\n" +
		pad + "   ╹▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀\n" + pad + "                                   tab agents  ctrl+p commands\n" + strings.Repeat("\n", 14) + "  /w/work" + pad + "1.18.33\n"
	session := func(box []string, footer string) string {
		s := "  ┃  RUN: echo hi > out.txt SAY: all done" + pad + "   all done\n\n     ▣  Build · Claude Fake · 21.4s\n  ┃\n"
		for _, b := range box {
			s += "  ┃  " + b + "\n"
		}
		return s + "  ┃\n  ┃  Build · Claude Fake Anthropic" + pad + pad + "/w/work\n  ╹▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀\n" + footer + "\n\n"
	}
	idle := "   /w/work" + pad + "118 (0%)  ctrl+p commands    • OpenCode 1.18.33"
	busy := "   ⬝⬝⬝⬝⬝⬝⬝⬝  esc interrupt" + pad + "119 (0%)  ctrl+p commands    • OpenCode 1.18.33"
	again := "   ■■■⬝⬝⬝⬝⬝  esc again to interrupt" + pad + "119 (0%)  ctrl+p commands    • OpenCode 1.18.33"
	perm := "  ┃  △ Permission required\n  ┃    # Shell command\n  ┃\n  ┃  $ echo hi > out.txt\n  ┃\n" +
		"  ┃   Allow once   Allow always   Reject" + pad + "ctrl+f fullscreen  ⇆ select  enter confirm\n  ┃" + pad + "• OpenCode 1.18.33\n\n"
	for _, c := range []struct {
		name, screen string
		want         View
	}{
		{"home", home, View{Screen: ScreenReady}},
		{"starting", "\n\n\n", View{Screen: ScreenUnknown}},
		{"empty", session([]string{""}, idle), View{Screen: ScreenReady}},
		{"typed", session([]string{"Your task is in the file /w/t.md - read it and do it. When you have finished, report with: /", "usr/local/bin/st worker done"}, idle),
			View{Screen: ScreenTyped, Box: "Your task is in the file /w/t.md - read it and do it. When you have finished, report with: /usr/local/bin/st worker done"}},
		{"typed beside the sidebar", session([]string{"hello" + pad + "LSPs are disabled"}, idle), View{Screen: ScreenTyped, Box: "hello"}},
		{"working", session([]string{""}, busy), View{Screen: ScreenWorking}},
		{"first esc", session([]string{""}, again), View{Screen: ScreenWorking}},
		{"permission", "  ┃  RUN: echo hi\n\n" + perm, View{Screen: ScreenPrompt}},
	} {
		if got := recognizeOpencode(c.screen); got != c.want {
			t.Errorf("%s: %+v, want %+v\n%s", c.name, got, c.want, c.screen)
		}
	}
}

// TestOpencodeCommand: opencode's command line: its update check and
// models download off, a resumed session only of its own form.
func TestOpencodeCommand(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", "")
	const id = "ses_daf763cf4ffezqSwXX8XAv7rAz"
	base := "env OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_MODELS_FETCH=1 npm_config_offline=true " + OpencodeOfflineMark + "=1 "
	for _, c := range []struct {
		o    LaunchOptions
		want string
	}{
		{LaunchOptions{}, base + "opencode"},
		{LaunchOptions{Program: "/w/opencode", ResumeSession: id}, base + "/w/opencode -s " + id},
		{LaunchOptions{ResumeSession: "--help"}, base + "opencode"},
	} {
		argv := Opencode.Command(c.o)
		if got := strings.Join(argv, " "); got != c.want {
			t.Errorf("%+v: %q, want %q", c.o, got, c.want)
		}
		if got := ResumedSession("opencode", argv); c.o.ResumeSession == id && got != id {
			t.Errorf("resumed %q from %q", got, argv)
		}
	}
}
