//go:build realclients

package realagent_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/testutil/fakemodel"
	"github.com/sophonz/st/internal/testutil/realagent"
)

// These tests drive the real, pinned Claude Code and Codex in a private
// tmux server against the fake model, to prove that the homes written by
// realagent reach the input box with no person present, that a typed
// prompt is submitted, and that the fake model's tool call runs.

// --- a private tmux server -------------------------------------------------

var tmuxSeq atomic.Int64

// privateTmux is a tmux server of the test's own: its socket lives in a
// temporary TMUX_TMPDIR under a dedicated -L name, so neither the tester's
// tmux nor another test's can be reached, and cleanup kills only it.
type privateTmux struct {
	t    testing.TB
	name string
	conf string
	env  []string
}

func newTmux(t testing.TB) *privateTmux {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux not found: %v", err)
	}
	dir := t.TempDir()
	// After kill (registered below, so run first): nothing of this server
	// (its agents have TMUX_TMPDIR here) may be left running.
	testutil.CheckNoLeaks(t, dir)
	conf := filepath.Join(dir, "tmux.conf")
	// remain-on-exit keeps the screen of an agent that died, for the
	// failure message; focus-events silences Claude's banner about it.
	err := os.WriteFile(conf, []byte("set -g remain-on-exit on\nset -g focus-events on\nset -g history-limit 5000\n"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	s := &privateTmux{
		t:    t,
		name: fmt.Sprintf("st-realagent-%d-%d", os.Getpid(), tmuxSeq.Add(1)),
		conf: conf,
		env:  append(cleanEnv(), "TMUX_TMPDIR="+dir),
	}
	t.Cleanup(s.kill)
	return s
}

// cleanEnv is this process's environment without what would leak the
// tester's session into the agents: the tmux client variables (so that
// no command reaches the tester's server) and any agent configuration or
// credentials (a real ANTHROPIC_API_KEY would bring up a dialog, and
// CLAUDECODE is set when the tests themselves run inside Claude Code).
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "TMUX", k == "TMUX_PANE", k == "TMUX_TMPDIR",
			strings.HasPrefix(k, "ANTHROPIC_"), strings.HasPrefix(k, "CLAUDE"),
			strings.HasPrefix(k, "OPENAI_"), strings.HasPrefix(k, "CODEX_"):
			continue
		}
		out = append(out, kv)
	}
	return out
}

func (s *privateTmux) run(args ...string) (string, error) {
	cmd := exec.Command("tmux", append([]string{"-L", s.name, "-f", s.conf}, args...)...)
	cmd.Env = s.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("tmux %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func (s *privateTmux) must(args ...string) string {
	s.t.Helper()
	out, err := s.run(args...)
	if err != nil {
		s.t.Fatal(err)
	}
	return out
}

// start runs argv (no shell in between, so nothing needs quoting) in the
// server's only pane, with env added to the environment.
func (s *privateTmux) start(dir string, env []string, argv ...string) {
	s.t.Helper()
	args := []string{"new-session", "-d", "-s", "main", "-x", "160", "-y", "50", "-c", dir, "--", "env"}
	args = append(args, env...)
	s.must(append(args, argv...)...)
}

func (s *privateTmux) capture() string {
	out, err := s.run("capture-pane", "-p", "-t", "main")
	if err != nil {
		return "(capture failed: " + err.Error() + ")"
	}
	return out
}

// kill ends this server only, then waits for the agent to exit, so that it
// does not write into a temporary directory that is being removed.
func (s *privateTmux) kill() {
	pids, _ := s.run("list-panes", "-a", "-F", "#{pane_pid}")
	_, _ = s.run("kill-server")
	for _, f := range strings.Fields(pids) {
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 0 {
			continue
		}
		deadline := time.Now().Add(5 * time.Second)
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if syscall.Kill(pid, 0) == nil {
			// The pane's process is ours: the test started it.
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// --- hooks -----------------------------------------------------------------

type hookEvent struct {
	Name string
	At   time.Time
	Data map[string]any
	Raw  string
}

// writeHookScript writes a hook that appends one line per event to log:
// the event name, the time in ns, and the stdin JSON on one line (JSON
// needs no raw newlines). One printf makes each line a single append.
func writeHookScript(t testing.TB, dir, log string) string {
	t.Helper()
	path := filepath.Join(dir, "hook.sh")
	script := "#!/bin/sh\nts=$(date +%s%N)\nd=$(tr -d '\\n')\nprintf '%s %s %s\\n' \"$1\" \"$ts\" \"$d\" >> '" + log + "'\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// hooksConfig is the hooks JSON both clients read: the same shape in
// Claude's settings and Codex's hooks.json.
func hooksConfig(script string, events []string) map[string]any {
	hooks := map[string]any{}
	for _, e := range events {
		hooks[e] = []any{map[string]any{
			"hooks": []any{map[string]any{"type": "command", "command": script + " " + e}},
		}}
	}
	return map[string]any{"hooks": hooks}
}

func readHooks(t testing.TB, log string) []hookEvent {
	t.Helper()
	f, err := os.Open(log)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []hookEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), " ", 3)
		if len(parts) < 3 {
			continue
		}
		ns, _ := strconv.ParseInt(parts[1], 10, 64)
		e := hookEvent{Name: parts[0], At: time.Unix(0, ns), Raw: parts[2]}
		_ = json.Unmarshal([]byte(parts[2]), &e.Data)
		out = append(out, e)
	}
	return out
}

// --- the scenario ------------------------------------------------------------

type agentCase struct {
	name     string
	ready    func(screen string) bool // the input box is drawn and empty
	typed    func(screen, text string) bool
	approval string   // a line of the permission prompt
	approve  []string // the keys that approve once
	// settle is how long the prompt must be drawn before it takes keys.
	settle time.Duration
}

// norm makes Claude's prompt line comparable: it is "❯" + U+00A0.
func norm(s string) string { return strings.ReplaceAll(s, "\u00a0", " ") }

func hasLine(screen string, ok func(line string) bool) bool {
	for _, l := range strings.Split(norm(screen), "\n") {
		if ok(strings.TrimSpace(l)) {
			return true
		}
	}
	return false
}

var claudeCase = agentCase{
	name: "claude",
	ready: func(s string) bool {
		return hasLine(s, func(l string) bool { return l == "❯" }) && strings.Contains(s, "for shortcuts")
	},
	typed: func(s, text string) bool {
		// In the box the glyph is followed by U+00A0; the transcript's echo
		// of a submitted prompt uses a plain space.
		return strings.Contains(s, "❯\u00a0"+text)
	},
	approval: "Do you want to proceed?",
	approve:  []string{"1"},
	settle:   300 * time.Millisecond,
}

var codexCase = agentCase{
	name: "codex",
	ready: func(s string) bool {
		// "›" appears during the splash already; the model line comes
		// once the session is really up.
		return hasLine(s, func(l string) bool { return strings.HasPrefix(l, "›") }) && strings.Contains(s, "gpt-fake")
	},
	typed: func(s, text string) bool {
		return hasLine(s, func(l string) bool { return l == "› "+text })
	},
	approval: "Would you like to run the following command?",
	approve:  []string{"y"},
}

type session struct {
	t      *testing.T
	c      agentCase
	tm     *privateTmux
	fake   *fakemodel.Server
	work   string
	log    string
	screen map[string]string
}

// waitFor polls cond until it holds or the deadline passes; on failure it
// shows the screen, the hooks and the model's requests.
func (s *session) waitFor(what string, timeout time.Duration, cond func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: timed out after %v waiting for %s\nscreen:\n%s\nhooks:\n%s\nmodel requests:\n%s",
				s.c.name, timeout, what, s.tm.capture(), s.hookSummary(), s.requestSummary())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *session) hookSummary() string {
	var b strings.Builder
	for _, e := range readHooks(s.t, s.log) {
		raw := e.Raw
		if len(raw) > 400 {
			raw = raw[:400] + "..."
		}
		fmt.Fprintf(&b, "  %s %s %s\n", e.At.Format("15:04:05.000"), e.Name, raw)
	}
	return b.String()
}

func (s *session) requestSummary() string {
	var b strings.Builder
	for _, r := range s.fake.Requests() {
		prompt := r.Prompt
		if len(prompt) > 100 {
			prompt = prompt[:100] + "..."
		}
		fmt.Fprintf(&b, "  %s %s %s %d model=%s stream=%v tools=%v prompt=%q calls=%v answer=%q\n",
			r.Time.Format("15:04:05.000"), r.Method, r.Endpoint, r.Status, r.Model, r.Stream, r.Tools, prompt, r.Calls, r.Answer)
	}
	return b.String()
}

// hookAfter returns the first event called name at index >= from.
func (s *session) hookAfter(name string, from int) (hookEvent, int, bool) {
	hs := readHooks(s.t, s.log)
	for i := from; i < len(hs); i++ {
		if hs[i].Name == name {
			return hs[i], i, true
		}
	}
	return hookEvent{}, -1, false
}

// submit types text and presses Enter, and returns when UserPromptSubmit
// has fired for it. A client can drop an Enter that follows the text too
// closely (Claude does with longer lines typed the moment its box
// appears); the text then stays in the box, and Enter is pressed again.
func (s *session) submit(text string) (enter time.Time, ups hookEvent, idx int) {
	s.t.Helper()
	from := len(readHooks(s.t, s.log))
	s.tm.must("send-keys", "-t", "main", "-l", text)
	enter = time.Now()
	s.tm.must("send-keys", "-t", "main", "Enter")
	retried := false
	s.waitFor("UserPromptSubmit for "+strconv.Quote(text), 15*time.Second, func() bool {
		var ok bool
		ups, idx, ok = s.hookAfter("UserPromptSubmit", from)
		if ok {
			return true
		}
		if !retried && time.Since(enter) > 1500*time.Millisecond && s.c.typed(s.tm.capture(), text) {
			s.t.Logf("%s: Enter was dropped, text still in the box; pressing Enter again", s.c.name)
			retried = true
			enter = time.Now() // time the Enter that worked
			s.tm.must("send-keys", "-t", "main", "Enter")
		}
		return false
	})
	if got := ups.Data["prompt"]; got != text {
		s.t.Errorf("%s: UserPromptSubmit prompt = %q, want %q", s.c.name, got, text)
	}
	return enter, ups, idx
}

// waitStop waits for the Stop that ends the turn begun at hook index from.
func (s *session) waitStop(from int) hookEvent {
	s.t.Helper()
	var stop hookEvent
	s.waitFor("Stop", 20*time.Second, func() bool {
		var ok bool
		stop, _, ok = s.hookAfter("Stop", from)
		return ok
	})
	return stop
}

func (s *session) waitScreen(what string, timeout time.Duration, cond func(string) bool) string {
	s.t.Helper()
	var screen string
	s.waitFor(what, timeout, func() bool {
		screen = s.tm.capture()
		return cond(screen)
	})
	return screen
}

// setup prepares everything but the launch: the fake model, a work dir,
// a hook log, and the tmux server (made last, so its cleanup, which waits
// for the agent to exit, runs before the temporary dirs are removed).
func setup(t *testing.T, c agentCase) (*session, string, string) {
	t.Helper()
	s := &session{t: t, c: c, screen: map[string]string{}}
	s.fake = fakemodel.Start(t)
	s.work = t.TempDir()
	home := t.TempDir()
	aux := t.TempDir()
	s.log = filepath.Join(aux, "hooks.log")
	script := writeHookScript(t, aux, s.log)
	s.tm = newTmux(t)
	return s, home, script
}

func (s *session) run(env []string, argv ...string) time.Duration {
	s.t.Helper()
	start := time.Now()
	s.tm.start(s.work, env, argv...)
	screen := s.waitScreen("the input box", 20*time.Second, s.c.ready)
	d := time.Since(start)
	s.screen["idle"] = screen
	s.t.Logf("%s: launch → input box: %v\nidle screen:\n%s", s.c.name, d.Round(time.Millisecond), screen)
	return d
}

var (
	claudeEvents = []string{
		"SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse",
		"PostToolUseFailure", "Notification", "Stop", "StopFailure", "SubagentStop", "SessionEnd",
	}
	codexEvents = []string{
		"SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse",
		"Stop", "SessionEnd",
	}
)

func claudeSession(t *testing.T, allowBash bool) *session {
	t.Helper()
	claude, _ := realagent.Binaries(t)
	s, home, script := setup(t, claudeCase)
	env := realagent.ClaudeHome(t, home, s.fake.URL(), s.work)
	settings := hooksConfig(script, claudeEvents)
	if allowBash {
		// Default mode asks before every Bash call; this lets it run.
		settings["permissions"] = map[string]any{"allow": []string{"Bash"}}
	}
	b, _ := json.Marshal(settings)
	s.run(env, claude, "--permission-mode", "default", "--settings", string(b))
	return s
}

func codexSession(t *testing.T) *session {
	t.Helper()
	_, codex := realagent.Binaries(t)
	s, home, script := setup(t, codexCase)
	env := realagent.CodexHome(t, home, s.fake.URL(), s.work)
	b, _ := json.Marshal(hooksConfig(script, codexEvents))
	if err := os.WriteFile(filepath.Join(realagent.CodexDir(home), "hooks.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	s.run(env, codex, "--no-daemon", "--dangerously-bypass-hook-trust")
	return s
}

// toolTurn types a prompt that makes the model run a command, and checks
// the command's effect, the hook order and the model's log.
func (s *session) toolTurn() {
	s.t.Helper()
	prompt := "Please RUN: echo hi > out.txt SAY: all done"
	enter, ups, idx := s.submit(prompt)
	s.t.Logf("%s: Enter → UserPromptSubmit: %v", s.c.name, ups.At.Sub(enter).Round(time.Millisecond))
	stop := s.waitStop(idx)
	s.t.Logf("%s: Enter → Stop: %v", s.c.name, stop.At.Sub(enter).Round(time.Millisecond))
	if got := stop.Data["last_assistant_message"]; got != "all done" {
		s.t.Errorf("%s: Stop last_assistant_message = %q, want %q", s.c.name, got, "all done")
	}
	out, err := os.ReadFile(filepath.Join(s.work, "out.txt"))
	if err != nil || string(out) != "hi\n" {
		s.t.Errorf("%s: out.txt = %q, %v; want \"hi\\n\"", s.c.name, out, err)
	}
	var sawPrompt, sawCall bool
	for _, r := range s.fake.Requests() {
		if r.Prompt == prompt {
			sawPrompt = true
		}
		for _, c := range r.Calls {
			if c.Command == "echo hi > out.txt" {
				sawCall = true
			}
		}
	}
	if !sawPrompt || !sawCall {
		s.t.Errorf("%s: fake model saw prompt=%v call=%v\n%s", s.c.name, sawPrompt, sawCall, s.requestSummary())
	}
	s.t.Logf("%s: hooks:\n%s", s.c.name, s.hookSummary())
	s.t.Logf("%s: model requests:\n%s", s.c.name, s.requestSummary())
	s.t.Logf("%s: done screen:\n%s", s.c.name, s.tm.capture())
}

// busyTurn makes the model sleep, to see the working screen: it must show
// while the turn runs, that is before the turn's Stop. The model sleeps
// 8 s, so that a loaded machine still has time for several captures.
func (s *session) busyTurn() {
	s.t.Helper()
	prompt := "SLEEP: 8 SAY: slept"
	_, _, idx := s.submit(prompt)
	// Wait for the model's request, so the screen is the one of a turn
	// waiting on the model, not of a hook still running.
	s.waitFor("the model request", 30*time.Second, func() bool {
		for _, r := range s.fake.Requests() {
			if r.Prompt == prompt {
				return true
			}
		}
		return false
	})
	var screen string
	s.waitFor("the working screen before the turn's Stop", 60*time.Second, func() bool {
		screen = s.tm.capture()
		if strings.Contains(screen, "esc to interrupt") {
			return true
		}
		if _, _, ok := s.hookAfter("Stop", idx); ok {
			s.t.Fatalf("%s: the turn ended (Stop) and its working screen was never seen; last screen:\n%s", s.c.name, screen)
		}
		return false
	})
	s.t.Logf("%s: working screen:\n%s", s.c.name, screen)
	stop := s.waitStop(idx)
	if got := stop.Data["last_assistant_message"]; got != "slept" {
		s.t.Errorf("%s: Stop last_assistant_message = %q, want %q", s.c.name, got, "slept")
	}
}

// approvalTurn makes the model run a command that needs the person's
// approval, shows the prompt, and approves it.
func (s *session) approvalTurn(prompt, file string) {
	s.t.Helper()
	_, _, idx := s.submit(prompt)
	// A model request, then the prompt drawn: as long as the working
	// screen of a turn may take (a loaded machine runs several agents).
	screen := s.waitScreen("the permission prompt", 60*time.Second, func(sc string) bool {
		return strings.Contains(sc, s.c.approval)
	})
	s.t.Logf("%s: permission prompt screen:\n%s", s.c.name, screen)
	// The agent tells its hooks it waits for the person (st's "waiting"
	// comes from this hook): it fires with the prompt, for the command the
	// model asked for.
	var perm hookEvent
	s.waitFor("the PermissionRequest hook of the prompt on screen", 30*time.Second, func() bool {
		var ok bool
		perm, _, ok = s.hookAfter("PermissionRequest", idx)
		return ok
	})
	if !strings.Contains(perm.Raw, file) {
		s.t.Errorf("%s: PermissionRequest is not about the command that writes %s: %s", s.c.name, file, perm.Raw)
	}
	s.approve()
	stop := s.waitStop(idx)
	if got := stop.Data["last_assistant_message"]; got != "approved" {
		s.t.Errorf("%s: Stop last_assistant_message = %q, want %q", s.c.name, got, "approved")
	}
	if _, err := os.Stat(filepath.Join(s.work, file)); err != nil {
		s.t.Errorf("%s: the approved command did not run: %v", s.c.name, err)
	}
	s.t.Logf("%s: hooks:\n%s", s.c.name, s.hookSummary())
}

// approve answers the permission prompt. Claude 2.1.332 drops a key
// pressed the moment its prompt is drawn (9 of 9 lost at once, 9 of 9
// taken 200 ms later), so the prompt must have been on screen a while
// first; a key still lost is pressed again.
func (s *session) approve() {
	s.t.Helper()
	var since time.Time
	s.waitFor("the permission prompt to settle", 30*time.Second, func() bool {
		if !strings.Contains(s.tm.capture(), s.c.approval) {
			since = time.Time{}
			return false
		}
		if since.IsZero() {
			since = time.Now()
		}
		return time.Since(since) >= s.c.settle
	})
	for try := 1; ; try++ {
		sent := time.Now()
		s.tm.must(append([]string{"send-keys", "-t", "main"}, s.c.approve...)...)
		gone := false
		for time.Since(sent) < 2*time.Second {
			if !strings.Contains(s.tm.capture(), s.c.approval) {
				gone = true
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if gone {
			if try > 1 {
				s.t.Logf("%s: the approval key %v took %d presses", s.c.name, s.c.approve, try)
			}
			return
		}
		if try == 4 {
			s.t.Fatalf("%s: the permission prompt ignored %v %d times\nscreen:\n%s", s.c.name, s.c.approve, try, s.tm.capture())
		}
	}
}

func TestClaude(t *testing.T) {
	s := claudeSession(t, true)
	s.toolTurn()
	s.busyTurn()
}

func TestCodex(t *testing.T) {
	s := codexSession(t)
	s.toolTurn()
	s.busyTurn()
}

func TestClaudePermissionPrompt(t *testing.T) {
	s := claudeSession(t, false)
	s.approvalTurn("RUN: echo yes > perm.txt SAY: approved", "perm.txt")
}

func TestCodexApproval(t *testing.T) {
	s := codexSession(t)
	s.approvalTurn("ESCALATE RUN: echo yes > perm.txt SAY: approved", "perm.txt")
}
