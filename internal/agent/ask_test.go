package agent

import (
	"reflect"
	"strings"
	"testing"
)

func TestAskFromHooks(t *testing.T) {
	for _, c := range []struct {
		kind, event, payload string
		want                 *Ask
	}{
		{"claude", "PermissionRequest", `{"tool_name":"Bash","tool_input":{"command":"rm -rf build\n\u001b[31mred"}}`,
			&Ask{Tool: "Bash", Command: "rm -rf build [31mred", Text: "rm -rf build [31mred"}},
		{"claude", "PermissionRequest", `{"tool_name":"AskUserQuestion","tool_input":{"questions":[{"question":"Which DB?","header":"DB","options":[{"label":"Postgres","description":"x"},{"label":"SQLite"}],"multiSelect":false}]}}`,
			&Ask{Question: true, Tool: "AskUserQuestion", Text: "Which DB?", Options: []string{"Postgres", "SQLite"}}},
		{"codex", "PermissionRequest", `{"tool_name":"Bash","tool_input":{"command":"echo hi > y.txt","description":"Write the file outside the sandbox?"}}`,
			&Ask{Tool: "Bash", Command: "echo hi > y.txt", Text: "echo hi > y.txt (Write the file outside the sandbox?)"}},
		{"claude", "Notification", `{"notification_type":"permission_prompt","message":"Claude needs your permission"}`,
			&Ask{Text: "Claude needs your permission"}},
		{"claude", "Notification", `{"notification_type":"idle_prompt","message":"Claude is waiting for your input"}`, nil},
		{"gemini", "Notification", `{"notification_type":"ToolPermission","message":"Allow?","details":{"type":"exec","title":"Shell","command":"ls > x","rootCommand":"ls"}}`,
			&Ask{Tool: "run_shell_command", Command: "ls > x", Text: "ls > x"}},
		{"sim", "PermissionRequest", `{"tool_name":"AskUser","tool_input":{"question":"Ready?"}}`,
			&Ask{Question: true, Tool: "AskUser", Text: "Ready?"}},
	} {
		k, err := Lookup(c.kind)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := k.MapEvent(c.event, []byte(c.payload))
		if err != nil {
			t.Fatalf("%s %s: %v", c.kind, c.event, err)
		}
		if !reflect.DeepEqual(c.want, ev.Ask) {
			t.Errorf("%s %s %s: ask = %+v, want %+v", c.kind, c.event, c.payload, ev.Ask, c.want)
		}
	}
}

func TestAskTextIsBounded(t *testing.T) {
	long := strings.Repeat("x", 5000)
	a := askOf("Bash", []byte(`{"command":"`+long+`"}`))
	if n := len([]rune(a.Text)); n > maxAskText+1 || !strings.HasSuffix(a.Text, "…") {
		t.Fatalf("text of %d runes, ends %q", n, a.Text[len(a.Text)-5:])
	}
	if got := oneLine("a\u202eb\tc\r\nd", 100); got != "a b c d" {
		t.Fatalf("oneLine = %q", got)
	}
}
