package simagent

import (
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/sophonz/st/internal/agent"
)

// permit: asks a person's leave as Claude does in its default mode: the
// PreToolUse hook first, then PermissionRequest and Notification with the
// dialog drawn (a screen st reads as a prompt, never typed into); "1"
// runs the command, "2" does not, a PermissionRequest hook's deny refuses.
func TestPermit(t *testing.T) {
	cfg := testConfig()
	cfg.fs = mapFS{fstest.MapFS{"w/t": {Data: []byte("permit: make deploy\npermit: rm -rf /tmp/x\npermit: echo third\n")}}}
	h := newHarness(t, cfg)
	h.typ("/w/t\r")
	h.send(hookMsg{tag: pending[fireHook](h).tag}) // PreToolUse lets it through
	pr := h.lastHook("PermissionRequest")
	if pr.payload["tool_name"] != "Bash" || !reflect.DeepEqual(pr.payload["tool_input"], map[string]any{"command": "make deploy"}) || pr.tag == 0 {
		t.Fatalf("PermissionRequest %+v", pr)
	}
	if n := h.lastHook("Notification"); n.payload["notification_type"] != "permission_prompt" {
		t.Fatalf("Notification %v", n.payload)
	}
	screen := strings.Join(h.m.render(100, 30), "\n")
	if v := agent.Sim.Screen.Recognize(screen); v.Screen != agent.ScreenPrompt {
		t.Fatalf("the dialog reads as %s, want prompt:\n%s", v.Screen, screen)
	}
	if !h.has("   make deploy") || !h.has(" Do you want to proceed?") {
		t.Fatalf("screen:\n%s", screen)
	}
	// A PermissionRequest hook that leaves it to the person: the dialog stays.
	h.send(hookMsg{tag: pr.tag})
	if h.m.turn.wait != waitPermit {
		t.Fatal("a hook with no decision took the dialog away")
	}
	h.typ("1")
	run := pending[runCommand](h)
	if run.command != "make deploy" {
		t.Fatalf("ran %q", run.command)
	}
	h.send(commandMsg{tag: run.tag, output: "deployed\n"})
	// The second: the person says no; nothing runs.
	h.send(hookMsg{tag: pending[fireHook](h).tag})
	h.typ("2")
	if !h.has("   ⎿  Not run · the person said no") {
		t.Fatalf("screen:\n%s", strings.Join(h.m.render(100, 30), "\n"))
	}
	// The third: a PermissionRequest hook denies it.
	h.send(hookMsg{tag: pending[fireHook](h).tag})
	h.send(hookMsg{tag: h.lastHook("PermissionRequest").tag, deny: true, reason: "a person said no in st's web UI"})
	for _, e := range h.eff {
		if r, ok := e.(runCommand); ok && r.command != "make deploy" {
			t.Fatalf("ran %q, which no one allowed", r.command)
		}
	}
	want := []string{"SessionStart", "UserPromptSubmit",
		"PreToolUse", "PermissionRequest", "Notification", "PostToolUse",
		"PreToolUse", "PermissionRequest", "Notification",
		"PreToolUse", "PermissionRequest", "Notification", "Stop"}
	if got := h.hooks(); !reflect.DeepEqual(got, want) {
		t.Fatalf("hooks %v\nwant  %v", got, want)
	}
}
