package agent

import (
	"slices"
	"strings"
	"testing"
)

// TestKindsAreWhole: every kind says what st needs of it: a name, a title
// and an icon for listings, a launch, a screen, and how st hears it; a kind
// with hooks lists its events, each once.
func TestKindsAreWhole(t *testing.T) {
	if got := strings.Join(Kinds(), ","); got != "claude,codex,gemini,opencode,sim" {
		t.Fatalf("kinds = %s, want claude,codex,gemini,opencode,sim", got)
	}
	for _, k := range All() {
		if k.Title == "" || k.Icon == "" || k.Screen.Submit == "" || k.Screen.Interrupt == "" || k.Screen.EnterDelay <= 0 {
			t.Errorf("%s: a title, an icon, its submit and interrupt keys and an Enter delay are each needed: %+v", k.Name, k)
		}
		if k.Launch.Resume == "" || k.Hear.SessionID == nil {
			t.Errorf("%s: says neither how it resumes nor the form of its session ids", k.Name)
		}
		if k.HasHooks() && (len(k.Hear.Events) == 0 || k.Hear.BeforeTool == "" || !slices.Contains(k.EventNames(), k.Hear.BeforeTool)) {
			t.Errorf("%s: has hooks (%s) and no events", k.Name, k.Hear.Install)
		}
		seen := map[string]bool{}
		for _, e := range k.Hear.Events {
			if seen[e.Name] {
				t.Errorf("%s: event %s listed twice", k.Name, e.Name)
			}
			seen[e.Name] = true
		}
	}
}

// TestKindEventsMeanWhatMapSays: the meaning a description gives each of
// its events is what its event map makes of a plain payload of that event,
// so the description cannot say one thing while the code does another.
func TestKindEventsMeanWhatMapSays(t *testing.T) {
	// The fields without which an event means nothing to st.
	needs := map[string]string{
		"claude Notification": `,"notification_type":"permission_prompt"`,
		"sim Notification":    `,"notification_type":"permission_prompt"`,
		"claude TeammateIdle": `,"teammate_name":"alpha","team_name":"session-0b1c2d3e"`,
		"gemini Notification": `,"notification_type":"ToolPermission"`,
	}
	for _, k := range All() {
		for _, e := range k.Hear.Events {
			payload := `{"session_id":"0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0","hook_event_name":"` + e.Name + `"` + needs[k.Name+" "+e.Name] + `}`
			ev, err := k.MapEvent(e.Name, []byte(payload))
			if err != nil {
				t.Errorf("%s %s: %v", k.Name, e.Name, err)
				continue
			}
			if ev.Kind != e.Means {
				t.Errorf("%s %s: the description says %s, the event map makes it %s", k.Name, e.Name, e.Means, ev.Kind)
			}
		}
	}
}

// TestByProcess: st tells an agent's process by what its description
// names: the program, its node launcher's package, st agent sim.
func TestByProcess(t *testing.T) {
	for _, c := range []struct {
		argv  []string
		extra map[string]string
		want  string
	}{
		{[]string{"/usr/bin/claude", "--permission-mode", "default"}, nil, "claude"},
		{[]string{"claude.exe"}, nil, "claude"},
		{[]string{"node", "/w/node_modules/@openai/codex/bin/codex.js", "--no-daemon"}, nil, "codex"},
		{[]string{"/w/node_modules/@openai/codex-linux-x64/vendor/codex"}, nil, "codex"},
		{[]string{"/usr/local/bin/st", "agent", "sim"}, nil, "sim"},
		{[]string{"node", "/w/node_modules/.bin/gemini"}, nil, "gemini"},
		{[]string{"/usr/bin/node", "--max-old-space-size=12052", "/w/node_modules/.bin/gemini"}, nil, "gemini"},
		{[]string{"node", "/w/node_modules/.bin/codex", "--no-daemon"}, nil, "codex"},
		{[]string{"node", "/w/server.js", "gemini"}, nil, ""},
		{[]string{"/usr/local/bin/st", "worker", "sim"}, nil, ""},
		{[]string{"bash", "-c", "echo claude"}, nil, ""},
		{[]string{"/opt/my-claude"}, map[string]string{"claude": "/opt/my-claude"}, "claude"},
		{nil, nil, ""},
	} {
		if got := ByProcess(c.argv, c.extra); got != c.want {
			t.Errorf("ByProcess(%q) = %q, want %q", c.argv, got, c.want)
		}
	}
}

// TestMarkIn: the variables only an agent's commands carry, from each
// kind's description.
func TestMarkIn(t *testing.T) {
	for env, want := range map[string]string{
		"HOME=/root CLAUDECODE=1":          "CLAUDECODE=1",
		"CLAUDECODE=0":                     "",
		"CODEX_SANDBOX_NETWORK_DISABLED=1": "CODEX_SANDBOX_NETWORK_DISABLED=1",
		"CODEX_THREAD_ID=abc":              "CODEX_THREAD_ID=abc",
		"PATH=/bin TERM=xterm":             "",
	} {
		if got := MarkIn(strings.Fields(env)); got != want {
			t.Errorf("MarkIn(%s) = %q, want %q", env, got, want)
		}
	}
}

// TestValidSession: only an id of the agent's own form is stored and put
// on a resume command line; one that would read as an option, or carries
// shell characters, is not.
func TestValidSession(t *testing.T) {
	uuid := "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"
	for _, c := range []struct {
		kind, id string
		ok       bool
	}{
		{"claude", uuid, true},
		{"codex", uuid, true},
		{"sim", uuid, true},
		{"sim", "pipe-id", true},
		{"claude", "pipe-id", false},
		{"claude", "--dangerously-skip-permissions", false},
		{"sim", "-x", false},
		{"codex", uuid + ";rm -rf ~", false},
		{"sim", "a b", false},
		{"sim", "$(id)", false},
		{"claude", "", false},
	} {
		k, _ := Lookup(c.kind)
		if got := k.ValidSession(c.id); got != c.ok {
			t.Errorf("%s ValidSession(%q) = %v, want %v", c.kind, c.id, got, c.ok)
		}
	}
}
