// Package real is st's real-client tier: the real Claude Code and Codex
// programs (pinned in tests/realclients, installed by scripts/test) as
// st's workers and coordinators, in a private tmux server, offline
// against the project's fake model server on 127.0.0.1.
package real

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/testutil/fakemodel"
	"github.com/sophonz/st/internal/testutil/realagent"
)

// rig is one test's world: a fake model, a HOME for both agents, an
// ST_HOME with its daemon, and a private tmux server whose first pane (a
// plain shell) stands for a person at the coordinator's seat.
type rig struct {
	t                              testing.TB
	dir, home, stHome, tmuxDir, st string
	sock                           string
	claude, codex, gemini          string
	opencode                       string
	fake                           *fakemodel.Server
	env                            []string
	coord                          string
}

func newRig(t testing.TB) *rig { t.Helper(); return newRigWith(t, nil) }

// newRigWith is newRig with the agents' environment changed by edit
// before the tmux server and st start (a Claude subscriber's token, say).
func newRigWith(t testing.TB, edit func(env []string) []string) *rig {
	t.Helper()
	r := &rig{t: t, st: testutil.BuildST(t), fake: fakemodel.Start(t)}
	r.claude, r.codex = realagent.Binaries(t)
	r.gemini = realagent.Gemini(t)
	r.opencode = realagent.Opencode(t)
	r.dir = testutil.ShortTempDir(t)
	r.home = filepath.Join(r.dir, "home")
	r.stHome = filepath.Join(r.dir, "st")
	r.tmuxDir = filepath.Join(r.dir, "t")
	r.sock = filepath.Join(r.tmuxDir, fmt.Sprintf("tmux-%d", os.Getuid()), "default")
	for _, d := range []string{r.home, r.stHome, filepath.Dir(r.sock), filepath.Join(r.dir, "work")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	work := filepath.Join(r.dir, "work")
	cenv := realagent.ClaudeHome(t, r.home, r.fake.URL(), work)
	xenv := realagent.CodexHome(t, r.home, r.fake.URL(), work)
	genv := realagent.GeminiHome(t, r.home, r.fake.URL(), work)
	oenv := realagent.OpencodeHome(t, r.home, r.fake.URL())
	// st must get Codex's Enter through without help from the config.
	cfg := filepath.Join(realagent.CodexDir(r.home), "config.toml")
	data, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, regexp.MustCompile(`(?m)^disable_paste_burst.*$`).ReplaceAll(data, nil), 0o600)

	var base []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		// CI (set by a CI runner) is not a person's terminal's: Gemini
		// CLI takes CI=true to mean no terminal and exits.
		if k == "TMUX" || k == "TMUX_PANE" || k == "HOME" || k == "CODEX_HOME" || k == "CI" || strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "GEMINI_") || strings.HasPrefix(k, "GOOGLE_") ||
			strings.HasPrefix(k, "OPENCODE_") || k == "XDG_CONFIG_HOME" || strings.HasPrefix(k, "npm_config_") ||
			strings.HasPrefix(k, "ST_") || k == "PATH" || k == "TMUX_TMPDIR" {
			continue
		}
		base = append(base, kv)
	}
	r.env = append(base, cenv...)
	r.env = append(r.env, xenv...)
	r.env = append(r.env, genv...)
	r.env = append(r.env, oenv...)
	if edit != nil {
		r.env = edit(r.env)
	}
	r.env = append(r.env,
		"ST_HOME="+r.stHome, "TMUX_TMPDIR="+r.tmuxDir,
		"PATH="+filepath.Dir(r.st)+":"+filepath.Dir(r.claude)+":"+os.Getenv("PATH"),
		"ST_CLAUDE_BIN="+r.claude, "ST_CODEX_BIN="+r.codex, "ST_GEMINI_BIN="+r.gemini, "ST_OPENCODE_BIN="+r.opencode, "ST_WEB_PORT=auto",
		// Gemini asks before every command with a redirection, whatever
		// its settings allow; a person who lets workers run chooses yolo
		// (TestPermissionPromptWaits takes its default back).
		"ST_GEMINI_PERMISSION_MODE=yolo",
		// opencode took 45 to 60 s to draw its box at a load of 25 to
		// 35 on 2 cores (measured: its 185 MB binary, its database, its
		// plugins), past st's default 90 s with the rest of the rig.
		// And its first prompt took 15 to 20 s to reach its plugin (its
		// server was still booting behind the box it drew).
		"ST_BLOCKED_TIMEOUT=240s", "ST_HOOK_TIMEOUT=120s",
		// The rig's person answers in the agents' windows: st's permission
		// hooks wait 2 s for an answer from the web UI (Codex draws its
		// dialog only after the hook; TestRealCodexPromptAnsweredByAPerson
		// waits longer).
		"ST_PERMISSION_WAIT=2s",
	)
	t.Cleanup(func() {
		// The daemon first: one that outlives its server restores it.
		testutil.StopDaemon(r.stHome)
		testutil.KillServer(r.tmux)
	})
	// The tmux server's environment is what new windows get.
	r.tmuxMust("-f", "/dev/null", "new-session", "-d", "-s", "main", "-x", "200", "-y", "50", "-c", work, "sh")
	r.coord = strings.TrimSpace(r.tmuxMust("display-message", "-p", "-t", "main:", "#{pane_id}"))
	r.stMust("up")
	return r
}

func (r *rig) work() string { return filepath.Join(r.dir, "work") }

func (r *rig) tmux(args ...string) (string, error) {
	cmd := exec.Command("tmux", append([]string{"-S", r.sock}, args...)...)
	cmd.Env = r.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func (r *rig) tmuxMust(args ...string) string {
	r.t.Helper()
	out, err := r.tmux(args...)
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

// stIn runs st as if typed in pane.
func (r *rig) stIn(pane string, args ...string) (string, string, int) {
	// A deadline, so that a hung daemon fails the test that met it with
	// its log, rather than running to the package's alarm and leaving its
	// daemon, tmux and agents behind. Waits in the tests are shorter.
	ctx, cancel := context.WithTimeout(context.Background(), stInLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.st, args...)
	cmd.Dir = r.work()
	cmd.Env = append(append([]string{}, r.env...), "TMUX_PANE="+pane, "TMUX="+r.sock+",1,0")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		r.t.Fatalf("st %s did not return within %s\n%s", strings.Join(args, " "), stInLimit, r.daemonLog())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		r.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// stInLimit bounds one st command of a test; the longest a test asks
// for is a wait of a few minutes.
const stInLimit = 8 * time.Minute

func (r *rig) st1(args ...string) (string, string, int) { return r.stIn(r.coord, args...) }

func (r *rig) stMust(args ...string) string {
	r.t.Helper()
	out, errs, code := r.st1(args...)
	if code != 0 {
		r.t.Fatalf("st %s: exit %d\n%s%s\n%s", strings.Join(args, " "), code, out, errs, r.daemonLog())
	}
	return out
}

func (r *rig) daemonLog() string {
	b, _ := os.ReadFile(filepath.Join(r.stHome, "daemon.log"))
	s := string(b)
	if len(s) > 4000 {
		s = s[len(s)-4000:]
	}
	return "daemon log (tail):\n" + s
}

func (r *rig) capture(target string) string {
	out, _ := r.tmux("capture-pane", "-p", "-t", target)
	return out
}

func (r *rig) writeTask(name, text string) string {
	r.t.Helper()
	p := filepath.Join(r.work(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		r.t.Fatal(err)
	}
	return p
}

// workerView is what st worker read --json prints.
type workerView struct {
	ID, Name, State, Summary, Error string
	LastAnswer                      string `json:"last_answer"`
}

func (r *rig) read(id string) workerView {
	r.t.Helper()
	var v workerView
	if err := json.Unmarshal([]byte(r.stMust("worker", "read", id, "--json")), &v); err != nil {
		r.t.Fatal(err)
	}
	return v
}

// installHooks runs st hooks install over a settings.json that holds the
// user's own keys and hooks, twice, and checks that all of them stay.
func (r *rig) installHooks() {
	r.t.Helper()
	settings := filepath.Join(r.home, ".claude", "settings.json")
	os.MkdirAll(filepath.Dir(settings), 0o700)
	user := `{
  "theme": "dark",
  "permissions": {"allow": ["Bash"]},
  "hooks": {
    "Stop": [{"hooks": [{"type": "command", "command": "echo user-stop-hook >> ` + r.dir + `/user-hook.log"}]}],
    "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "true # user's own"}]}]
  },
  "env": {"USER_KEY": "kept"}
}
`
	if err := os.WriteFile(settings, []byte(user), 0o600); err != nil {
		r.t.Fatal(err)
	}
	r.stMust("hooks", "install")
	r.stMust("hooks", "install")
	data, err := os.ReadFile(settings)
	if err != nil {
		r.t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		r.t.Fatalf("settings.json after install: %v\n%s", err, data)
	}
	s := string(data)
	for _, want := range []string{`"theme": "dark"`, `"USER_KEY": "kept"`, `user-stop-hook`, `true # user's own`, `"Bash"`} {
		if !strings.Contains(s, want) {
			r.t.Errorf("st hooks install lost %s:\n%s", want, s)
		}
	}
	if n := strings.Count(s, r.st+" hook claude Stop\""); n != 1 {
		r.t.Errorf("st's Stop hook appears %d times after two installs:\n%s", n, s)
	}
	if strings.Index(s, "user-stop-hook") > strings.Index(s, r.st+" hook claude Stop\"") {
		r.t.Errorf("the user's Stop hook no longer comes first:\n%s", s)
	}
}

func TestHooksInstallKeepsUserSettings(t *testing.T) {
	r := newRig(t)
	r.installHooks()
	out := r.stMust("hooks", "status")
	if !strings.Contains(out, "claude") || !strings.Contains(out, "codex") {
		t.Fatalf("st hooks status:\n%s", out)
	}
}

// TestHooksRoundTrip: st hooks uninstall takes st's hooks out of each
// agent's files, keeping the user's own, and the agent then tells st
// nothing (a start fails, saying to run st hooks install); st hooks
// install puts them back, and a start goes through again.
func TestHooksRoundTrip(t *testing.T) {
	r := newRig(t)
	r.installHooks()
	r.stMust("hooks", "uninstall")
	settings, _ := os.ReadFile(filepath.Join(r.home, ".claude", "settings.json"))
	codexHooks, _ := os.ReadFile(filepath.Join(realagent.CodexDir(r.home), "hooks.json"))
	codexConfig, _ := os.ReadFile(filepath.Join(realagent.CodexDir(r.home), "config.toml"))
	for name, data := range map[string][]byte{"settings.json": settings, "hooks.json": codexHooks, "config.toml": codexConfig} {
		if strings.Contains(string(data), r.st) || strings.Contains(string(data), "trusted_hash") {
			t.Errorf("st hooks uninstall left st's hooks or their trust in %s:\n%s", name, data)
		}
	}
	for _, want := range []string{`"theme": "dark"`, `"USER_KEY": "kept"`, `user-stop-hook`, `true # user's own`} {
		if !strings.Contains(string(settings), want) {
			t.Errorf("st hooks uninstall lost %s:\n%s", want, settings)
		}
	}
	r.env = append(r.env, "ST_HOOK_TIMEOUT=15s")
	task := r.writeTask("h.md", "SAY: hello\n")
	for _, kind := range kinds(t) {
		out, errs, code := r.st1("worker", "start", "--agent", kind, "--task", task, "--name", "off-"+kind)
		if code == 0 {
			t.Fatalf("%s: a start with no hooks went through:\n%s", kind, out)
		}
		if !strings.Contains(errs, "no hook came from the agent") || !strings.Contains(errs, "st hooks install") {
			t.Errorf("%s: message without hooks:\n%s", kind, errs)
		}
	}
	r.stMust("hooks", "install")
	for _, kind := range kinds(t) {
		if o, e, code := r.st1("worker", "start", "--agent", kind, "--task", task, "--name", "on-"+kind); code != 0 {
			t.Errorf("%s: the start after st hooks install: exit %d\n%s%s\n%s", kind, code, o, e, r.capture("main:on-"+kind))
		}
	}
}

// TestWorkerEachKind: each real agent as a worker starts, its hooks
// confirm the start (subtest start), it writes a file through its Bash
// tool, reports with st worker done, and st worker read shows its summary
// and last answer (subtest report).
func TestWorkerEachKind(t *testing.T) {
	r := newRig(t)
	r.installHooks()
	started := t.Run("start", func(t *testing.T) {
		r := r.with(t)
		for _, kind := range kinds(t) {
			out := "out-" + kind + ".txt"
			task := r.writeTask(kind+".md", fmt.Sprintf(
				"Write the file.\nRUN: echo made-by-%s > %s\nRUN: %s worker done --summary \"wrote %s, checked it with cat\"\nSAY: I wrote %s.\n",
				kind, out, r.st, out, out))
			start := time.Now()
			o, e, code := r.st1("worker", "start", "--agent", kind, "--task", task, "--name", "w-"+kind)
			if code != 0 || !regexp.MustCompile(`^%\d+ w-`+kind+`\n$`).MatchString(o) {
				t.Fatalf("st worker start: exit %d, printed %q\n%s\n%s\n%s", code, o, e, r.capture("main:w-"+kind), r.daemonLog())
			}
			// The start says so when the agent is newer or older than st
			// was tested on, and says nothing of it otherwise.
			prog := r.program(kind)
			switch v := agent.Check(context.Background(), kind, prog, ""); {
			case v.Line() != "" && !strings.Contains(e, "st: note: "+v.Line()):
				t.Errorf("%s %s: the start did not say %q:\n%s", kind, v.Version, v.Line(), e)
			case v.Line() == "" && strings.Contains(e, "tested on"):
				t.Errorf("%s %s: a version st was tested on got a note:\n%s", kind, v.Version, e)
			}
			t.Logf("%s: st worker start took %s", kind, time.Since(start).Round(time.Millisecond))
		}
	})
	t.Run("report", func(t *testing.T) {
		if !started {
			t.Fatal("no worker started (see the start subtest)")
		}
		r := r.with(t)
		o, e, code := r.st1("worker", "wait", "--timeout", "150s")
		if code != 0 {
			t.Fatalf("st worker wait: exit %d\n%s%s\n%s\n%s", code, o, e, r.screens("w-"), r.daemonLog())
		}
		for _, kind := range kinds(t) {
			data, err := os.ReadFile(filepath.Join(r.work(), "out-"+kind+".txt"))
			if err != nil || strings.TrimSpace(string(data)) != "made-by-"+kind {
				t.Errorf("%s did not write its file: %q %v", kind, data, err)
			}
			v := r.read("w-" + kind)
			if v.State != "done" || v.Summary != fmt.Sprintf("wrote out-%s.txt, checked it with cat", kind) {
				t.Errorf("%s: read shows %+v", kind, v)
			}
			if !strings.Contains(v.LastAnswer, "I wrote out-"+kind+".txt.") {
				t.Errorf("%s: last answer %q", kind, v.LastAnswer)
			}
		}
	})
}

// TestTrustScreenFailsStart: an untrusted folder's trust screen keeps the
// task out; the start fails after the configured time with the message,
// and the window stays open at that screen.
func TestTrustScreenFailsStart(t *testing.T) {
	r := newRig(t)
	r.installHooks()
	untrusted := filepath.Join(r.dir, "untrusted")
	repo := filepath.Join(r.dir, "repo")
	os.MkdirAll(untrusted, 0o700)
	os.MkdirAll(repo, 0o700)
	// Codex shows its trust screen only in a git repository.
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	task := r.writeTask("t.md", "RUN: echo never > never.txt\n")
	// Long enough for a loaded machine: Codex up to 0.165 shows a still
	// splash for a few seconds first (over 10 s at a load of 20 on 2
	// cores), and st rightly says then that no box appeared.
	r.env = append(r.env, "ST_BLOCKED_TIMEOUT=20s")
	checked := 0
	defer func() {
		if checked == 0 && !t.Failed() {
			// Nothing was checked: say so, rather than pass (scripts/compat
			// prints this column as n/a for ST_COMPAT_KIND=opencode).
			t.Skip("no agent kind of this run has folder trust (opencode has none, reference §12)")
		}
	}()
	for _, kind := range kinds(t) {
		if kind == "opencode" {
			continue // opencode has no folder trust (reference §12)
		}
		checked++
		dir := map[string]string{"claude": untrusted, "codex": repo, "gemini": untrusted}[kind]
		start := time.Now()
		out, errs, code := r.st1("worker", "start", "--agent", kind, "--task", task, "--name", "t-"+kind, "--cwd", dir)
		took := time.Since(start)
		if code == 0 {
			t.Fatalf("%s: the start went through a trust screen:\n%s", kind, out)
		}
		if !strings.Contains(errs, "folder-trust screen kept the task from being typed for 20s") ||
			!strings.Contains(errs, "the window is left open") || !strings.Contains(errs, "--yes") {
			t.Errorf("%s: message:\n%s\n%s", kind, errs, r.capture("main:t-"+kind))
		}
		if took < 20*time.Second {
			t.Errorf("%s: failed after %s, before the configured 20s", kind, took)
		}
		screen := r.capture("main:t-" + kind)
		if !strings.Contains(screen, "trust") && !strings.Contains(screen, "Trust") {
			t.Errorf("%s: the window does not show its trust screen:\n%s", kind, screen)
		}
		if strings.Contains(screen, "Your task is in the file") {
			t.Errorf("%s: st typed over the trust screen:\n%s", kind, screen)
		}
	}
}

// TestGuardBlocksKillServer: st's PreToolUse hook refuses tmux kill-server
// in both agents, and the tmux server lives on.
func TestGuardBlocksKillServer(t *testing.T) {
	r := newRig(t)
	r.installHooks()
	// st brings a killed server back, so the proof that it lived is its pid.
	pid := strings.TrimSpace(r.tmuxMust("display-message", "-p", "#{pid}"))
	for _, kind := range kinds(t) {
		task := r.writeTask("k-"+kind+".md", fmt.Sprintf(
			"RUN: tmux kill-server\nRUN: %s worker done --summary \"tried tmux kill-server\"\nSAY: the hook refused it.\n", r.st))
		r.stMust("worker", "start", "--agent", kind, "--task", task, "--name", "k-"+kind)
	}
	o, e, code := r.st1("worker", "wait", "--timeout", "150s")
	if code != 0 {
		t.Fatalf("wait: %d\n%s%s\n%s", code, o, e, r.daemonLog())
	}
	if now, err := r.tmux("display-message", "-p", "#{pid}"); err != nil || strings.TrimSpace(now) != pid {
		t.Fatalf("the tmux server was killed (pid %s before, %q %v now)\n%s", pid, now, err, r.daemonLog())
	}
	var calls int
	for _, q := range r.fake.Requests() {
		for _, c := range q.Calls {
			if strings.Contains(c.Command, "kill-server") {
				calls++
			}
		}
	}
	if calls < len(kinds(t)) {
		t.Errorf("the model asked for kill-server %d times; want once per agent", calls)
	}
	// Each agent's model got the guard's reason as the tool's result:
	// Claude's on the Messages API, Codex's on the Responses API,
	// Gemini's on the Gemini API.
	// opencode speaks the Messages API too; its requests name it.
	told := map[string]bool{}
	for _, q := range r.fake.Requests() {
		if strings.Contains(string(q.Body), "st guard: this command would stop the tmux server") {
			told[requestKind(q)] = true
		}
	}
	for _, kind := range kinds(t) {
		if !told[kind] {
			t.Errorf("no request of %s to the model carries the guard's reason", kind)
		}
	}
	// And the person sees it, once the turn is over.
	for _, kind := range kinds(t) {
		var s string
		testutil.WaitFor(t, 60*time.Second, func() (bool, string) {
			s = r.capture("main:k-" + kind)
			return strings.Contains(s, "the hook refused it."), "the turn never ended:\n" + s
		})
		if kind == "claude" && claudeFolded.MatchString(s) && !strings.Contains(s, "st guard") {
			s = r.expandClaude("main:k-claude", "st guard")
		}
		if kind == "opencode" {
			// opencode draws a call its plugin refused as the command
			// alone ("$ tmux kill-server", no output; its model gets st's
			// reason, checked above): the person sees no output of it.
			if !strings.Contains(s, "$ tmux kill-server") {
				t.Errorf("opencode's screen does not show the refused call:\n%s", s)
			}
			continue
		}
		if kind == "gemini" {
			// Gemini CLI draws nothing of a call its BeforeTool hook
			// refused (its model gets "Tool execution blocked: <the
			// reason>", checked above): the person sees no call of it.
			if strings.Contains(s, "Shell tmux kill-server") {
				t.Errorf("gemini's screen shows the refused call as run:\n%s", s)
			}
			continue
		}
		if !strings.Contains(s, "st guard") && !(kind == "codex" && strings.Contains(s, "Blocked by hook")) {
			t.Errorf("%s's screen does not show the guard's refusal:\n%s", kind, s)
		}
	}
}

// claudeFolded finds the line into which Claude Code folds a turn's tool
// calls ("Ran 2 shell commands", "Read 1 file, ran 2 shell commands"),
// hiding their results; ctrl+o expands them.
var claudeFolded = regexp.MustCompile(`(?i)\bran \d+ shell commands?\b`)

// expandClaude shows Claude's folded tool calls in target (ctrl+o, which
// the fold offers) until the screen holds want, and answers that screen;
// then it folds them again.
func (r *rig) expandClaude(target, want string) string {
	r.t.Helper()
	r.tmuxMust("send-keys", "-t", target, "C-o")
	defer r.tmux("send-keys", "-t", target, "C-o")
	var s string
	testutil.WaitFor(r.t, 30*time.Second, func() (bool, string) {
		s = r.capture(target)
		return strings.Contains(s, want), "with its tool calls expanded (ctrl+o), claude's screen does not show " + want + ":\n" + s
	})
	return s
}

// TestPermissionPromptWaits: a worker at a permission prompt shows as
// waiting, and st attention lists it as a permission item with the
// command it asks for (issue 34); st types nothing over the prompt; once
// a person answers it in the window, the worker goes on to done and the
// item is closed.
func TestPermissionPromptWaits(t *testing.T) {
	r := newRig(t)
	r.installHooks()
	// Claude asks before Bash commands other than st itself.
	settings := filepath.Join(r.home, ".claude", "settings.json")
	data, _ := os.ReadFile(settings)
	data = bytes.Replace(data, []byte(`"allow": ["Bash"]`), []byte(`"allow": ["Bash(`+r.st+`:*)"]`), 1)
	if err := os.WriteFile(settings, data, 0o600); err != nil {
		t.Fatal(err)
	}
	tasks := map[string]string{
		"claude": "RUN: echo yes > perm-claude.txt\nRUN: %s worker done --summary \"wrote perm-claude.txt after approval\"\nSAY: done.\n",
		// Codex asks when the model wants to leave its sandbox.
		"codex": "ESCALATE RUN: echo yes > perm-codex.txt\nRUN: %s worker done --summary \"wrote perm-codex.txt after approval\"\nSAY: done.\n",
		// Gemini asks before a shell command not allowed in its settings.
		"gemini": "RUN: echo yes > perm-gemini.txt\nRUN: %s worker done --summary \"wrote perm-gemini.txt after approval\"\nSAY: done.\n",
		// opencode asks before its shell tool when its permissions say so
		// (not before the cat that reads its task, as a person allows it).
		"opencode": "RUN: echo yes > perm-opencode.txt\nRUN: %s worker done --summary \"wrote perm-opencode.txt after approval\"\nSAY: done.\n",
	}
	// The rig runs Gemini in yolo mode: here in its default, which asks.
	r.env = append(r.env, "ST_GEMINI_PERMISSION_MODE=default", `OPENCODE_PERMISSION={"bash":{"*":"ask","cat *":"allow"}}`)
	approve := map[string]string{"claude": "1", "codex": "y", "gemini": "Enter", "opencode": "Enter"}
	for _, kind := range kinds(t) {
		task := r.writeTask("p-"+kind+".md", fmt.Sprintf(tasks[kind], r.st))
		id := "p-" + kind
		r.stMust("worker", "start", "--agent", kind, "--task", task, "--name", id)
		o, e, code := r.st1("worker", "wait", id, "--timeout", "90s")
		if code != 2 || !strings.Contains(o, "waiting") {
			t.Fatalf("%s: wait: exit %d\n%s%s\n%s", kind, code, o, e, r.capture("main:"+id))
		}
		// The agent's own hook opened an attention item, with the command.
		items := r.stMust("attention", "--json")
		if !strings.Contains(items, `"kind": "permission"`) || !strings.Contains(items, `"name": "`+id+`"`) ||
			!strings.Contains(items, "perm-"+kind+".txt") {
			t.Errorf("%s: st attention --json at the prompt:\n%s", kind, items)
		}
		// st never types over the prompt.
		_, e, code = r.st1("worker", "send", id, "typed over the prompt")
		if code == 0 || !strings.Contains(e, "prompt") {
			t.Errorf("%s: send during a prompt: exit %d %s", kind, code, e)
		}
		if s := r.capture("main:" + id); strings.Contains(s, "typed over the prompt") {
			t.Errorf("%s: the line went over the prompt:\n%s", kind, s)
		}
		// A person answers each prompt in the window, until it is done.
		ad := mustAdapter(t, kind)
		deadline := time.Now().Add(90 * time.Second)
		for r.read(id).State != "done" {
			if time.Now().After(deadline) {
				t.Fatalf("%s never got done:\n%s\n%s", kind, r.capture("main:"+id), r.daemonLog())
			}
			if screenStable(r, id, ad, 400*time.Millisecond) {
				r.tmuxMust("send-keys", "-t", "main:"+id, approve[kind])
			}
			time.Sleep(200 * time.Millisecond)
		}
		if _, err := os.Stat(filepath.Join(r.work(), "perm-"+kind+".txt")); err != nil {
			t.Errorf("%s: the approved command did not run: %v", kind, err)
		}
		if items := r.stMust("attention", "--json"); strings.Contains(items, `"name": "`+id+`"`) {
			t.Errorf("%s: an item of the worker is still open once it is done:\n%s", kind, items)
		}
	}
}

// TestClaudeCoordinator: a real Claude, asked once, runs st orch start,
// starts a Codex worker and a Claude worker with task files, waits, reads
// both reports, and answers with both summaries.
func TestClaudeCoordinator(t *testing.T) {
	r := newRig(t)
	r.installHooks()
	r.tmuxMust("new-window", "-d", "-t", "main:", "-n", "coord", "-c", r.work(), r.claude+" --permission-mode default")
	ad := mustAdapter(t, "claude")
	waitScreen(t, r, "coord", ad, 60*time.Second)
	r.tmuxMust("send-keys", "-t", "main:coord", "-l", r.coordPrompt(""))
	time.Sleep(500 * time.Millisecond) // Claude drops an Enter right after a line typed at once
	r.tmuxMust("send-keys", "-t", "main:coord", "Enter")
	r.checkCoordRun(t, "coord", r.awaitCoordinator(t, "coord", ad, nil))
}

// coordPrompt writes the tasks of the coordinator tests' run (API tests
// for a Codex worker, the README for a Claude one) and is the one line
// that asks a coordinator to run it: orch start, both starts, wait, both
// reads, then an answer with both summaries. mode goes before the steps
// (ESCALATE for a Codex coordinator).
func (r *rig) coordPrompt(mode string) string {
	cx := r.writeTask("api-tests.md", fmt.Sprintf("RUN: echo tests > api-tests.txt\nRUN: %s worker done --summary \"codex wrote api-tests.txt\"\nSAY: API tests written.\n", r.st))
	cl := r.writeTask("readme.md", fmt.Sprintf("RUN: echo readme > readme.txt\nRUN: %s worker done --summary \"claude tidied readme.txt\"\nSAY: README tidied.\n", r.st))
	st := r.st
	return strings.Join([]string{
		coordAsk, mode,
		"RUN: " + st + " orch start --objective 'API tests and README'",
		"RUN: " + st + " worker start --agent codex --task " + cx + " --name api-tests",
		"RUN: " + st + " worker start --agent claude --task " + cl + " --name readme",
		"RUN: " + st + " worker wait --timeout 100s",
		"RUN: " + st + " worker read api-tests",
		"RUN: " + st + " worker read readme",
		"SAY: Both workers are done: {summaries}",
	}, " ")
}

// coordAsk is how coordPrompt's line begins.
const coordAsk = "Give the API tests to Codex and the README to another agent, then check both and tell me."

// awaitCoordinator waits up to 4 minutes for the coordinator in window to
// answer "Both workers are done: ...", pressing Enter again when the line
// still sits in its box; watch, when given, sees each screen on the way.
func (r *rig) awaitCoordinator(t *testing.T, window string, ad *agent.Kind, watch func(screen string)) string {
	t.Helper()
	deadline := time.Now().Add(4 * time.Minute)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("the coordinator never answered:\n%s\n%s", r.capture("main:"+window), r.daemonLog())
		}
		screen := r.capture("main:" + window)
		if watch != nil {
			watch(screen)
		}
		if v := ad.Recognize(screen); v.Screen == agentTyped() {
			r.tmux("send-keys", "-t", "main:"+window, "Enter")
		}
		for _, q := range r.fake.Requests() {
			if strings.HasPrefix(q.Answer, "Both workers are done:") {
				return q.Answer
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkCoordRun checks what coordPrompt's run leaves: both summaries in
// the answer, both workers done in st orch show of the coordinator's
// pane, and both files written.
func (r *rig) checkCoordRun(t *testing.T, window, answer string) {
	t.Helper()
	for _, want := range []string{"codex wrote api-tests.txt", "claude tidied readme.txt"} {
		if !strings.Contains(answer, want) {
			t.Errorf("the coordinator's answer %q lacks %q", answer, want)
		}
	}
	coord := strings.TrimSpace(r.tmuxMust("display-message", "-p", "-t", "main:"+window, "#{pane_id}"))
	out, _, _ := r.stIn(coord, "orch", "show")
	if !regexp.MustCompile(`api-tests +codex +done`).MatchString(out) || !regexp.MustCompile(`readme +claude +done`).MatchString(out) {
		t.Errorf("st orch show in the coordinator's pane:\n%s", out)
	}
	for _, f := range []string{"api-tests.txt", "readme.txt"} {
		if _, err := os.Stat(filepath.Join(r.work(), f)); err != nil {
			t.Errorf("%s missing: %v", f, err)
		}
	}
}

// TestScopeRefusesClaudeEdit: a Claude worker that owns src/** has an edit
// outside its scope refused by st's PreToolUse hook, with a reason it
// sees, and goes on to report.
func TestScopeRefusesClaudeEdit(t *testing.T) {
	r := newRig(t)
	r.installHooks()
	repo := r.work()
	for _, c := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, c...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", c, err, out)
		}
	}
	os.MkdirAll(filepath.Join(repo, "src"), 0o755)
	os.MkdirAll(filepath.Join(repo, "docs"), 0o755)
	task := r.writeTask("scoped.md", fmt.Sprintf(
		"RUN: echo inside > src/in.txt\nRUN: echo outside > docs/out.txt\nRUN: %s worker done --summary \"wrote src/in.txt; docs/out.txt was refused\"\nSAY: src written; the docs edit was refused.\n", r.st))
	r.stMust("worker", "start", "--agent", "claude", "--task", task, "--name", "scoped", "--owns", "src/**")
	if o, e, code := r.st1("worker", "wait", "scoped", "--timeout", "120s"); code != 0 {
		t.Fatalf("wait: %d\n%s%s\n%s\n%s", code, o, e, r.capture("main:scoped"), r.daemonLog())
	}
	if _, err := os.Stat(filepath.Join(repo, "src", "in.txt")); err != nil {
		t.Errorf("the edit inside the scope did not happen: %v", err)
	}
	if _, err := os.Stat(filepath.Join(repo, "docs", "out.txt")); err == nil {
		t.Errorf("the edit outside the scope went through")
	}
	if s := r.capture("main:scoped"); !strings.Contains(s, "may change only src/**") {
		t.Errorf("the agent's screen does not show the scope's reason:\n%s", s)
	}
	var sawReason bool
	for _, q := range r.fake.Requests() {
		if strings.Contains(string(q.Body), "may change only src/**") {
			sawReason = true
		}
	}
	if !sawReason {
		t.Errorf("the model never got the refusal's reason")
	}
}

// TestRealAgentsBackAfterTmuxRestart: a worker of each kind is brought
// back, resuming its own conversation, after the tmux server is killed.
func TestRealAgentsBackAfterTmuxRestart(t *testing.T) { agentsBack(t, false) }

// TestRealAgentsBackAfterReboot: the same after a reboot: st killed
// (kill -9), then the tmux server (SIGKILL), its socket's folder removed
// (a reboot empties /tmp), and st up, as st up --at-login runs after one.
// The faults tier does this with the sim; here each real agent resumes
// by its own resume argument (Gemini's --resume, opencode's -s).
func TestRealAgentsBackAfterReboot(t *testing.T) { agentsBack(t, true) }

func agentsBack(t *testing.T, reboot bool) {
	r := newRig(t)
	r.installHooks()
	for _, kind := range kinds(t) {
		task := r.writeTask("r-"+kind+".md", "SAY: remembered-"+kind+"\n")
		r.stMust("worker", "start", "--agent", kind, "--task", task, "--name", "r-"+kind)
	}
	r.st1("worker", "wait", "--timeout", "120s")
	layout := filepath.Join(r.stHome, "tmux-layout.json")
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, _ := os.ReadFile(layout)
		if strings.Count(string(data), `"@st_agent_session"`) >= len(kinds(t)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("st never kept both conversation ids:\n%s", data)
		}
		time.Sleep(100 * time.Millisecond)
	}
	before := map[string]string{}
	for _, kind := range kinds(t) {
		out, _ := r.tmux("show-options", "-p", "-v", "-t", "main:r-"+kind, "@st_agent_session")
		before[kind] = strings.TrimSpace(out)
	}
	if reboot {
		r.reboot(t)
	} else {
		r.tmuxMust("kill-server")
	}
	for _, kind := range kinds(t) {
		deadline := time.Now().Add(90 * time.Second)
		for {
			s := r.capture("main:r-" + kind)
			if strings.Contains(s, "remembered-"+kind) {
				break // the resumed conversation shows its earlier answer
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not come back with its conversation:\n%s\n%s", kind, s, r.daemonLog())
			}
			time.Sleep(200 * time.Millisecond)
		}
		out, _ := r.tmux("show-options", "-p", "-v", "-t", "main:r-"+kind, "@st_agent_session")
		if got := strings.TrimSpace(out); got != before[kind] {
			t.Errorf("%s: conversation %q after the restart, %q before", kind, got, before[kind])
		}
		if _, err := r.tmux("show-options", "-p", "-v", "-t", "main:r-"+kind, "@st_parent"); err != nil {
			t.Errorf("%s: no relation on its new pane: %v", kind, err)
		}
	}
	// The screen is up a moment before st looks at it again (every 50 ms)
	// and settles the worker: the list is asked until it says so.
	for _, kind := range kinds(t) {
		settled := regexp.MustCompile(`r-` + kind + ` +` + kind + ` +(idle|done)`)
		deadline := time.Now().Add(30 * time.Second)
		for {
			out := r.stMust("worker", "list")
			if settled.MatchString(out) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after the restart st worker list says:\n%s\nits screen:\n%s\n%s", out, r.capture("main:r-"+kind), r.daemonLog())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// TestEscEndsTurn (issue 14): Esc during a worker's turn. Claude Code ends
// the turn, fires no hook, and puts the interrupted prompt back into its
// box; Codex fires its Interrupt hook. Either way st must say idle soon
// (the figure is logged: the goal is 2 s), a wait must return (exit 2),
// and st must not type over the prompt Claude put back.
func TestEscEndsTurn(t *testing.T) {
	r := newRig(t)
	r.installHooks()
	for _, kind := range kinds(t) {
		id := "esc-" + kind
		task := r.writeTask(id+".md", "Say you are ready.\nSAY: ready\n")
		r.stMust("worker", "start", "--agent", kind, "--task", task, "--name", id)
		ad := mustAdapter(t, kind)
		if o, e, code := r.st1("worker", "wait", id, "--timeout", "90s"); code != 2 || !strings.Contains(o, "idle") {
			t.Fatalf("%s: first turn: exit %d\n%s%s", kind, code, o, e)
		}
		// A prompt the model thinks about for long: Esc comes during its
		// first request, as a person stops a turn that goes nowhere.
		r.stMust("worker", "send", id, "Think it over. SLEEP: 120 SAY: too late")
		deadline := time.Now().Add(60 * time.Second)
		for {
			v := r.view(id, ad)
			if v.Screen == agent.ScreenWorking && r.read(id).State == "working" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never showed a turn at work:\n%s", kind, r.capture("main:"+id))
			}
			time.Sleep(200 * time.Millisecond)
		}
		time.Sleep(time.Second) // its hooks are quiet now, as in a long think
		// The kind's interrupt: opencode's first Esc only arms it.
		for i, k := range strings.Fields(ad.Screen.Interrupt) {
			if i > 0 {
				time.Sleep(300 * time.Millisecond)
			}
			r.tmuxMust("send-keys", "-t", "main:"+id, k)
		}
		esc := time.Now()
		for r.read(id).State != "idle" {
			if time.Since(esc) > 30*time.Second {
				t.Fatalf("%s: st never said idle after Esc:\n%s\n%s", kind, r.capture("main:"+id), r.daemonLog())
			}
			time.Sleep(50 * time.Millisecond)
		}
		took := time.Since(esc)
		t.Logf("%s: Esc to st saying idle: %s", kind, took.Round(time.Millisecond))
		fmt.Printf("FIGURE esc_to_idle_%s %.0f ms\n", kind, float64(took.Microseconds())/1000)
		o, e, code := r.st1("worker", "wait", id, "--timeout", "20s")
		if code != 2 || !strings.Contains(o, "idle") {
			t.Errorf("%s: wait after Esc: exit %d\n%s%s", kind, code, o, e)
		}
		if kind == "claude" {
			// The prompt is back in the box; st types nothing over it.
			v := r.view(id, ad)
			if v.Screen != agent.ScreenTyped || !strings.Contains(v.Box, "Think it over.") {
				t.Errorf("claude's box after Esc: %v %q", v.Screen, v.Box)
			}
			if _, e, code := r.st1("worker", "send", id, "typed over the box"); code == 0 {
				t.Errorf("a send went over the text in the box: %s", e)
			}
			if strings.Contains(r.capture("main:"+id), "typed over the box") {
				t.Errorf("the line was typed over the box:\n%s", r.capture("main:"+id))
			}
		}
		r.stMust("worker", "stop", id, "--yes")
	}
}

// TestReadmeAsk: the README's Install (its last three lines) after st
// setup, with the real Claude Code: tmux new -s work, claude in it, and
// the /sophonz:orchestrate ask typed in. The plugin st setup installed
// turns the ask into the coordinator's instructions; the coordinator
// starts a Codex worker through st, waits, reads its report and answers.
// (The user has allowed Bash in Claude's settings, as one who chose
// "don't ask again"; otherwise Claude asks before each st command.)
func TestReadmeAsk(t *testing.T) {
	r := newRig(t)
	settings := filepath.Join(r.home, ".claude", "settings.json")
	os.MkdirAll(filepath.Dir(settings), 0o700)
	if err := os.WriteFile(settings, []byte(`{"permissions": {"allow": ["Bash"]}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := r.stMust("setup")
	for _, want := range []string{"ok    hooks claude: ", "ok    plugin claude: ", "ok    rule codex: ", "/sophonz:orchestrate "} {
		if !strings.Contains(out, want) {
			t.Fatalf("st setup does not say %q:\n%s", want, out)
		}
	}
	task := r.writeTask("api-tests.md", fmt.Sprintf("RUN: echo tests > api-tests.txt\nRUN: %s worker done --summary \"codex wrote api-tests.txt\"\nSAY: API tests written.\n", r.st))
	// tmux new -s work, detached: this test has no terminal to attach.
	// Plain claude starts in auto mode here, whose safety check runs on
	// Anthropic's server and cannot pass the fake model's address: the
	// default mode is asked for, as every real test does.
	r.tmuxMust("new-session", "-d", "-s", "work", "-x", "200", "-y", "50", "-c", r.work(), "claude --permission-mode default")
	ad := mustAdapter(t, "claude")
	testutil.WaitFor(t, 60*time.Second, func() (bool, string) {
		s := r.capture("work:")
		return ad.Recognize(s).Screen == agent.ScreenReady, "claude never showed its input box:\n" + s
	})
	st := r.st
	ask := strings.Join([]string{
		"/sophonz:orchestrate Give the API tests to Codex, then check and tell me.",
		"RUN: " + st + " orch start --objective 'API tests'",
		"RUN: " + st + " worker start --agent codex --task " + task + " --name api-tests",
		"RUN: " + st + " worker wait --timeout 100s",
		"RUN: " + st + " worker read api-tests",
		"SAY: The worker is done: {summaries}",
	}, " ")
	r.tmuxMust("send-keys", "-t", "work:", "-l", ask)
	time.Sleep(500 * time.Millisecond) // Claude drops an Enter right after a line typed at once
	r.tmuxMust("send-keys", "-t", "work:", "Enter")
	var answer, prompt string
	testutil.WaitFor(t, 4*time.Minute, func() (bool, string) {
		if v := ad.Recognize(r.capture("work:")); v.Screen == agentTyped() {
			r.tmux("send-keys", "-t", "work:", "Enter")
		}
		for _, q := range r.fake.Requests() {
			if strings.HasPrefix(q.Answer, "The worker is done:") {
				answer, prompt = q.Answer, q.Prompt
			}
		}
		return answer != "", "the coordinator never answered:\n" + r.capture("work:") + "\n" + r.daemonLog()
	})
	if !strings.Contains(answer, "codex wrote api-tests.txt") {
		t.Errorf("the coordinator's answer %q lacks the worker's summary", answer)
	}
	// The ask reached the model as the plugin's command made it.
	if !strings.Contains(prompt, "The person asked you to coordinate this job: Give the API tests to Codex") {
		t.Errorf("the prompt the model got is not the plugin's /sophonz:orchestrate:\n%s", prompt)
	}
	if _, err := os.Stat(filepath.Join(r.work(), "api-tests.txt")); err != nil {
		t.Errorf("the worker's file: %v", err)
	}
}

// reboot ends st's daemon and the tmux server as a reboot does (SIGKILL,
// the socket's folder gone), then runs st up.
func (r *rig) reboot(t *testing.T) {
	t.Helper()
	var pids []int
	if pid := testutil.DaemonPID(r.stHome); pid > 0 {
		pids = append(pids, pid)
	}
	out := r.tmuxMust("display-message", "-p", "#{pid}")
	var tpid int
	fmt.Sscan(strings.TrimSpace(out), &tpid)
	if tpid <= 1 || len(pids) == 0 {
		t.Fatalf("no daemon (%v) or tmux server (%q) to end", pids, out)
	}
	pids = append(pids, tpid)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		if !testutil.WaitGone(pid, 30*time.Second) {
			t.Fatalf("process %d still there after SIGKILL", pid)
		}
	}
	if err := os.RemoveAll(filepath.Dir(r.sock)); err != nil {
		t.Fatal(err)
	}
	r.stMust("up")
}
