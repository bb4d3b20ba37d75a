package simagent_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/agent/simagent"
	"github.com/sophonz/st/internal/testutil"
)

// TestMain lets the test binary be the sim agent: a test starts it again
// in a tmux pane with SIMAGENT_TEST_MAIN=1, so that nothing else has to be
// built.
func TestMain(m *testing.M) {
	if os.Getenv("SIMAGENT_TEST_MAIN") == "1" {
		os.Exit(simagent.Main(os.Args[1:], os.Stdin, os.Stdout, os.Getenv))
	}
	os.Exit(m.Run())
}

// simPane is a sim agent running in a private tmux server.
type simPane struct {
	t      *testing.T
	dir    string // the agent's cwd, with the fake st's hook log
	socket string
	pane   string
	log    string
}

// fakeST is what the sim runs as st: it logs each call as its arguments,
// a tab, and its stdin (one line of JSON for a hook). Like st's guard
// hooks, it refuses a command that says "forbidden" by exiting 2.
const fakeST = `#!/bin/sh
in=$(cat)
printf '%s\t%s\n' "$*" "$in" >> "$(dirname "$0")/calls.log"
case "$3:$in" in
PreToolUse:*forbidden*) echo "BLOCKED by st hook: forbidden" >&2; exit 2 ;;
esac
`

// startSim starts the sim in a tmux server of its own, with TMUX_TMPDIR in
// a temporary folder and no TMUX or TMUX_PANE from the test's own
// environment, so it never touches another tmux server.
func startSim(t *testing.T, knobs ...string) *simPane {
	t.Helper()
	tmuxBin, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatalf("tmux is needed for this test: %v", err)
	}
	dir := t.TempDir()
	// After the server is killed (a cleanup registered below, so run
	// first): nothing of this sim (TMUX_TMPDIR is here) may be left.
	testutil.CheckNoLeaks(t, dir)
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	stBin := filepath.Join(dir, "st")
	if err := os.WriteFile(stBin, []byte(fakeST), 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &simPane{t: t, dir: work, socket: filepath.Join(dir, "tmux.sock"), log: filepath.Join(dir, "calls.log")}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TMUX=") && !strings.HasPrefix(kv, "TMUX_PANE=") {
			env = append(env, kv)
		}
	}
	env = append(env, "TMUX_TMPDIR="+dir, "SIMAGENT_TEST_MAIN=1", "ST_BIN="+stBin)
	env = append(env, knobs...)
	cmd := exec.Command(tmuxBin, "-S", p.socket, "-f", "/dev/null", "new-session", "-d",
		"-x", "100", "-y", "30", "-c", work, "-P", "-F", "#{pane_id}", "--", self)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	p.pane = strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last screen:\n%s", p.capture())
		}
		_ = exec.Command(tmuxBin, "-S", p.socket, "kill-server").Run()
	})
	return p
}

func (p *simPane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.socket}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (p *simPane) capture() string {
	out, _ := exec.Command("tmux", "-S", p.socket, "capture-pane", "-p", "-t", p.pane).Output()
	return string(out)
}

var sim, _ = agent.Lookup("sim")

func (p *simPane) view() agent.View { return sim.Recognize(p.capture()) }

// waitFor polls until cond holds, or fails the test with what it saw.
func (p *simPane) waitFor(what string, timeout time.Duration, cond func() bool) {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			p.t.Fatalf("timed out after %v waiting for %s; screen:\n%s\ncalls:\n%s", timeout, what, p.capture(), p.calls())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *simPane) waitScreen(want agent.Screen) agent.View {
	p.t.Helper()
	var v agent.View
	p.waitFor("screen "+want.String(), 10*time.Second, func() bool { v = p.view(); return v.Screen == want })
	return v
}

func (p *simPane) calls() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// call is one run of the fake st.
type call struct {
	args    string
	payload map[string]any
}

func (p *simPane) parsedCalls() []call {
	var out []call
	for _, line := range strings.Split(strings.TrimSpace(p.calls()), "\n") {
		args, body, _ := strings.Cut(line, "\t")
		c := call{args: args}
		if strings.HasPrefix(body, "{") {
			if err := json.Unmarshal([]byte(body), &c.payload); err != nil {
				p.t.Fatalf("hook payload %q: %v", body, err)
			}
		}
		out = append(out, c)
	}
	return out
}

func TestSimInTmux(t *testing.T) {
	t.Parallel()
	p := startSim(t)
	p.waitScreen(agent.ScreenReady)
	screen := p.capture()
	for _, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(l, "❯") {
			t.Logf("empty box line as captured: %q (% x)", l, l)
		}
	}

	task := filepath.Join(p.dir, "task.md")
	if err := os.WriteFile(task, []byte("# a task\nrun: echo hi > out.txt\nanswer: built it\nsummary: wrote out.txt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf("Do the task in %s.", task)
	p.tmux("send-keys", "-t", p.pane, "-l", line)
	v := p.waitScreen(agent.ScreenTyped)
	if v.Box != line {
		t.Errorf("box = %q, want %q", v.Box, line)
	}
	p.tmux("send-keys", "-t", p.pane, "Enter")
	p.waitFor("the Stop hook", 10*time.Second, func() bool { return strings.Contains(p.calls(), "hook sim Stop\t") })
	if b, err := os.ReadFile(filepath.Join(p.dir, "out.txt")); err != nil || string(b) != "hi\n" {
		t.Errorf("out.txt = %q, %v; want \"hi\\n\"", b, err)
	}
	p.waitScreen(agent.ScreenReady)

	calls := p.parsedCalls()
	var got []string
	for _, c := range calls {
		got = append(got, c.args)
	}
	want := []string{
		"hook sim SessionStart", "hook sim UserPromptSubmit", "hook sim PreToolUse", "hook sim PostToolUse",
		"hook sim PreToolUse", "worker done --summary wrote out.txt", "hook sim PostToolUse", "hook sim Stop",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if c := calls[1].payload; c["prompt"] != line {
		t.Errorf("UserPromptSubmit prompt = %v, want %q", c["prompt"], line)
	}
	if in, _ := calls[2].payload["tool_input"].(map[string]any); in["command"] != "echo hi > out.txt" {
		t.Errorf("PreToolUse tool_input = %v", calls[2].payload["tool_input"])
	}
	if c := calls[7].payload; c["last_assistant_message"] != "built it" {
		t.Errorf("Stop last_assistant_message = %v, want \"built it\"", c["last_assistant_message"])
	}
	for _, c := range calls {
		if c.payload == nil {
			continue
		}
		if c.payload["session_id"] != calls[0].payload["session_id"] || c.payload["cwd"] != p.dir {
			t.Errorf("%s: session_id %v, cwd %v; want %v, %s", c.args, c.payload["session_id"], c.payload["cwd"], calls[0].payload["session_id"], p.dir)
		}
	}
	t.Logf("screen after the turn:\n%s", p.capture())
}

func TestSimSwallowEnterInTmux(t *testing.T) {
	t.Parallel()
	p := startSim(t, "ST_SIM_SWALLOW_ENTER=1")
	p.waitScreen(agent.ScreenReady)
	// One tmux command: the text and the Enter reach the sim together.
	p.tmux("send-keys", "-t", p.pane, "-l", "hello there", ";", "send-keys", "-t", p.pane, "Enter")
	v := p.waitScreen(agent.ScreenTyped)
	if v.Box != "hello there" {
		t.Fatalf("box = %q, want %q", v.Box, "hello there")
	}
	// The Enter is in the same write as the text, so by the time the text
	// shows it was already dropped; no UserPromptSubmit may come.
	if strings.Contains(p.calls(), "UserPromptSubmit") {
		t.Fatalf("the fast Enter submitted the line:\n%s", p.calls())
	}
	// st leaves the adapter's EnterDelay between text and Enter; an Enter
	// that late is taken. This wait is the protocol, not a guess.
	time.Sleep(sim.EnterDelay())
	if v := p.view(); v.Screen != agent.ScreenTyped || v.Box != "hello there" {
		t.Fatalf("before the second Enter: %v %q", v.Screen, v.Box)
	}
	p.tmux("send-keys", "-t", p.pane, "Enter")
	p.waitFor("UserPromptSubmit", 10*time.Second, func() bool { return strings.Contains(p.calls(), "hook sim UserPromptSubmit") })
	p.waitFor("Stop", 10*time.Second, func() bool { return strings.Contains(p.calls(), "hook sim Stop") })
	p.waitScreen(agent.ScreenReady)
}

func TestSimTrustInTmux(t *testing.T) {
	t.Parallel()
	p := startSim(t, "ST_SIM_TRUST=1")
	p.waitScreen(agent.ScreenTrust)
	if c := p.calls(); c != "" {
		t.Fatalf("a hook fired on the trust screen:\n%s", c)
	}
	t.Logf("trust screen:\n%s", p.capture())
	p.tmux("send-keys", "-t", p.pane, "Enter")
	p.waitScreen(agent.ScreenReady)
	p.waitFor("SessionStart", 10*time.Second, func() bool { return strings.Contains(p.calls(), "hook sim SessionStart") })
}

func TestSimAskAndDenyInTmux(t *testing.T) {
	t.Parallel()
	p := startSim(t)
	p.waitScreen(agent.ScreenReady)
	task := filepath.Join(p.dir, "task.md")
	if err := os.WriteFile(task, []byte("sleep: 1s\nrun: echo forbidden > bad.txt\nask: Which colour?\nanswer: painted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.tmux("send-keys", "-t", p.pane, "-l", task, ";", "send-keys", "-t", p.pane, "Enter")
	p.waitScreen(agent.ScreenWorking)
	p.waitScreen(agent.ScreenPrompt)
	screen := p.capture()
	for _, want := range []string{"⎿  Not run · permission denied", "│ Reason: BLOCKED by st hook: forbidden", " ? Which colour?"} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
	if _, err := os.Stat(filepath.Join(p.dir, "bad.txt")); err == nil {
		t.Error("the denied command ran")
	}
	p.tmux("send-keys", "-t", p.pane, "-l", "blue", ";", "send-keys", "-t", p.pane, "Enter")
	p.waitFor("Stop", 10*time.Second, func() bool { return strings.Contains(p.calls(), "hook sim Stop") })
	p.waitScreen(agent.ScreenReady)
	var got []string
	for _, c := range p.parsedCalls() {
		got = append(got, strings.TrimPrefix(c.args, "hook sim "))
	}
	want := "SessionStart UserPromptSubmit PreToolUse PermissionRequest PostToolUse Stop"
	if strings.Join(got, " ") != want {
		t.Errorf("calls %v, want %s", got, want)
	}
	t.Logf("screen after the turn:\n%s", p.capture())
}

func TestSimInterruptAndHangupInTmux(t *testing.T) {
	t.Parallel()
	p := startSim(t)
	p.waitScreen(agent.ScreenReady)
	task := filepath.Join(p.dir, "task.md")
	if err := os.WriteFile(task, []byte("run: touch started; sleep 30\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.tmux("send-keys", "-t", p.pane, "-l", "Do "+task, ";", "send-keys", "-t", p.pane, "Enter")
	p.waitFor("the command to start", 10*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(p.dir, "started"))
		return err == nil
	})
	p.waitScreen(agent.ScreenWorking)
	p.tmux("send-keys", "-t", p.pane, "Escape")
	// As Claude: the turn is over, and the prompt is back in the box.
	if v := p.waitScreen(agent.ScreenTyped); v.Box != "Do "+task {
		t.Errorf("box after Esc = %q, want the interrupted prompt", v.Box)
	}
	if !strings.Contains(p.capture(), "⎿  Interrupted · What should Claude do instead?") {
		t.Errorf("no Interrupted line:\n%s", p.capture())
	}
	// Closing the pane hangs the sim up: SessionEnd with reason "other".
	p.tmux("kill-pane", "-t", p.pane)
	p.waitFor("SessionEnd", 10*time.Second, func() bool { return strings.Contains(p.calls(), "hook sim SessionEnd") })
	calls := p.parsedCalls()
	var got []string
	for _, c := range calls {
		got = append(got, strings.TrimPrefix(c.args, "hook sim "))
	}
	// Esc fires no hook, as in Claude.
	if want := "SessionStart UserPromptSubmit PreToolUse SessionEnd"; strings.Join(got, " ") != want {
		t.Errorf("calls %v, want %s", got, want)
	}
	if r := calls[len(calls)-1].payload["reason"]; r != "other" {
		t.Errorf("SessionEnd reason %v", r)
	}
}
