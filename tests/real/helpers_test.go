package real

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/testutil/fakemodel"
)

func mustAdapter(t testing.TB, kind string) *agent.Kind {
	t.Helper()
	ad, err := agent.Lookup(kind)
	if err != nil {
		t.Fatal(err)
	}
	return ad
}

func agentTyped() agent.Screen { return agent.ScreenTyped }

func (r *rig) view(window string, ad *agent.Kind) agent.View {
	args := []string{"capture-pane", "-p", "-t", "main:" + window}
	if ad.WantsEscapes() {
		args = []string{"capture-pane", "-p", "-e", "-t", "main:" + window}
	}
	out, _ := r.tmux(args...)
	return ad.Recognize(out)
}

// screenStable reports whether a prompt has stayed on the window's screen
// for d: Claude drops a key pressed the instant its prompt is drawn.
func screenStable(r *rig, window string, ad *agent.Kind, d time.Duration) bool {
	if r.view(window, ad).Screen != agent.ScreenPrompt {
		return false
	}
	time.Sleep(d)
	return r.view(window, ad).Screen == agent.ScreenPrompt
}

// waitScreen polls until the agent in window shows its empty input box.
func waitScreen(t *testing.T, r *rig, window string, ad *agent.Kind, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for r.view(window, ad).Screen != agent.ScreenReady {
		if time.Now().After(deadline) {
			t.Fatalf("%s never showed its input box:\n%s", window, r.capture("main:"+window))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// launchFor is how st would launch kind in the rig.
func launchFor(r *rig, kind string) agent.LaunchOptions {
	return agent.LaunchOptions{Program: r.program(kind)}
}

// program is the rig's program of an agent kind.
func (r *rig) program(kind string) string {
	return map[string]string{"claude": r.claude, "codex": r.codex, "gemini": r.gemini, "opencode": r.opencode}[kind]
}

// kinds are the agents a real-client test runs: every one, or the one that
// the compatibility tier (scripts/compat) names in ST_COMPAT_KIND while it
// runs these tests against another version of that agent
// (ST_REAL_CLAUDE_BIN, ST_REAL_CODEX_BIN, ST_REAL_GEMINI_BIN).
func kinds(t testing.TB) []string {
	t.Helper()
	switch k := os.Getenv("ST_COMPAT_KIND"); k {
	case "":
		return []string{"claude", "codex", "gemini", "opencode"}
	case "claude", "codex", "gemini", "opencode":
		return []string{k}
	default:
		t.Fatalf("ST_COMPAT_KIND=%q: want claude, codex, gemini or opencode", k)
		return nil
	}
}

// with is the rig seen from a subtest: its failures end the subtest.
func (r *rig) with(t testing.TB) *rig {
	c := *r
	c.t = t
	return &c
}

// screens captures every window whose name starts with prefix, for a
// failure's message.
func (r *rig) screens(prefix string) string {
	out, _ := r.tmux("list-windows", "-a", "-F", "#{window_name}")
	var b strings.Builder
	for _, name := range strings.Fields(out) {
		if strings.HasPrefix(name, prefix) {
			fmt.Fprintf(&b, "--- %s:\n%s\n", name, r.capture("main:"+name))
		}
	}
	return b.String()
}

// requestKind is the agent that made a request of the fake model: its
// API, and on the Messages API, which Claude Code and opencode both
// speak, its User-Agent.
func requestKind(q fakemodel.Logged) string {
	switch {
	case strings.HasPrefix(q.Endpoint, "/v1/responses"):
		return "codex"
	case strings.HasPrefix(q.Endpoint, "/v1beta/"):
		return "gemini"
	case strings.Contains(strings.ToLower(q.UserAgent), "opencode"):
		return "opencode"
	}
	return "claude"
}
