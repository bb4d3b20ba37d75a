package agent

import (
	"strings"
	"testing"
)

const testSession = "0702c391-a443-4834-b5f7-d2e1fad9f3cd"

// TestSessionForm: a conversation id is checked against its agent's own
// form (issue 31, item 1): a UUID for Claude Code and Codex, the sim's
// own; an id with a leading "-" or shell characters is none.
func TestSessionForm(t *testing.T) {
	cases := []struct {
		kind, id string
		want     bool
	}{
		{"claude", testSession, true},
		{"codex", strings.ToUpper(testSession), true},
		{"sim", testSession, true},
		{"sim", "env-id", true},
		{"claude", "env-id", false},
		{"claude", "", false},
		{"claude", "--dangerously-skip-permissions", false},
		{"codex", "-c", false},
		{"sim", "--help", false},
		{"sim", "-x", false},
		{"claude", testSession + "; touch /tmp/x", false},
		{"sim", "a;b", false},
		{"sim", "$(id)", false},
		{"sim", "a b", false},
		{"sim", "../x", false},
		{"sim", "a/b", false},
		{"claude", testSession + "\n", false},
		{"nobody", testSession, false},
	}
	for _, c := range cases {
		if got := ValidSession(c.kind, c.id); got != c.want {
			t.Errorf("ValidSession(%s, %q) = %v, want %v", c.kind, c.id, got, c.want)
		}
	}
}

// TestResumeCommandLines: the id stands where the agent reads a session
// and nowhere else; one of another form is not put on the line at all.
func TestResumeCommandLines(t *testing.T) {
	claude, _ := Lookup("claude")
	sim, _ := Lookup("sim")
	codex, _ := Lookup("codex")
	cases := []struct {
		a    *Kind
		o    LaunchOptions
		want string
	}{
		{claude, LaunchOptions{ResumeSession: testSession}, "claude --permission-mode default --resume=" + testSession},
		{claude, LaunchOptions{ResumeSession: "--dangerously-skip-permissions"}, "claude --permission-mode default"},
		{claude, LaunchOptions{ResumeSession: testSession + " $(id)"}, "claude --permission-mode default"},
		{sim, LaunchOptions{STBin: "/st", ResumeSession: "-x"}, "/st agent sim"},
		{sim, LaunchOptions{STBin: "/st", ResumeSession: "a;b"}, "/st agent sim"},
		{codex, LaunchOptions{Program: "/nowhere/codex", ResumeSession: "-c"}, "/nowhere/codex --no-daemon"},
		{codex, LaunchOptions{Program: "/nowhere/codex", ResumeSession: testSession}, "/nowhere/codex resume --no-daemon -- " + testSession},
	}
	for _, c := range cases {
		if got := strings.Join(c.a.Command(c.o), " "); got != c.want {
			t.Errorf("%s %q: %q, want %q", c.a.Name, c.o.ResumeSession, got, c.want)
		}
	}
}

// TestResumedSession reads the conversation off an agent's command line,
// in each way the agents take it.
func TestResumedSession(t *testing.T) {
	cases := []struct {
		kind string
		argv []string
		want string
	}{
		{"claude", []string{"claude", "--permission-mode", "default", "--resume=" + testSession}, testSession},
		{"claude", []string{"node", "/x/@anthropic-ai/claude-code/cli.js", "--resume", testSession}, testSession},
		{"claude", []string{"claude", "-r", testSession}, testSession},
		{"claude", []string{"claude", "--session-id", testSession}, ""},
		{"claude", []string{"claude", "--resume"}, ""},
		{"claude", []string{"claude", "--resume", "-x"}, ""},
		{"codex", []string{"codex", "resume", "--no-daemon", "-c", "a=b", "--", testSession}, testSession},
		{"codex", []string{"codex", "resume", "--no-daemon", "-c", "a=b", testSession}, testSession},
		{"codex", []string{"codex", "resume", "--last"}, ""},
		{"codex", []string{"codex", "--no-daemon"}, ""},
		{"sim", []string{"/st", "agent", "sim", "--resume", "env-id"}, "env-id"},
		{"sim", []string{"/st", "agent", "sim"}, ""},
	}
	for _, c := range cases {
		if got := ResumedSession(c.kind, c.argv); got != c.want {
			t.Errorf("ResumedSession(%s, %q) = %q, want %q", c.kind, c.argv, got, c.want)
		}
	}
}
