package real

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/agent"
)

// Fixtures for the screen recognisers, captured from a real agent of one
// version (scripts/compat --capture). Each screen is brought about for
// real, and what it is comes from how it was brought about (the fake
// model's log, a folder left untrusted, a login left undone), never from
// the recogniser it will check. internal/agent's TestScreenFixtures reads
// them.

// Captured screens, by file name (<state>.txt).
const (
	capStart      = "start"      // the first thing drawn after launch
	capReady      = "ready"      // settled after launch, nothing typed
	capTyped      = "typed"      // a line typed into the box, not sent
	capWorking    = "working"    // the model is still answering
	capIdle       = "idle"       // a turn answered, settled
	capPermission = "permission" // a shell command waiting for approval
	capQuestion   = "question"   // the agent's question tool, waiting
	capTrust      = "trust"      // an untrusted folder
	capLogin      = "login"      // no usable credentials
)

// captureInfo is capture.json beside the screens.
type captureInfo struct {
	Kind    string `json:"kind"`
	Version string `json:"version"`
	Output  string `json:"version_output"`
	Tmux    string `json:"tmux"`
	Size    string `json:"size"`
	Date    string `json:"date"`
	// Typed is the text in the box of typed.txt.
	Typed string `json:"typed"`
	// Missing says why a screen could not be captured, by state.
	Missing map[string]string `json:"missing,omitempty"`
}

// TestCaptureScreens writes the fixtures of one agent version under
// $ST_COMPAT_CAPTURE/<kind>/<version>/.
func TestCaptureScreens(t *testing.T) {
	root := os.Getenv("ST_COMPAT_CAPTURE")
	if root == "" {
		t.Skip("scripts/compat --capture runs this with ST_COMPAT_CAPTURE and ST_COMPAT_KIND set")
	}
	ks := kinds(t)
	if len(ks) != 1 {
		t.Fatal("set ST_COMPAT_KIND to the agent whose screens to capture")
	}
	kind := ks[0]
	r := newRig(t)
	ad := mustAdapter(t, kind)
	prog := launchFor(r, kind).Program
	p := agent.ProbeProgram(context.Background(), kind, prog)
	if p.Version == "" {
		t.Fatalf("cannot tell the version of %s: %q %v", prog, p.Output, p.Err)
	}
	dir := filepath.Join(root, kind, p.Version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tv, _ := exec.Command("tmux", "-V").Output()
	info := captureInfo{
		Kind: kind, Version: p.Version, Output: p.Output, Tmux: strings.TrimSpace(string(tv)), Size: "200x50",
		Date: time.Now().UTC().Format("2006-01-02"), Typed: "SLEEP: 6 SAY: answer-one-done", Missing: map[string]string{},
	}
	c := &capturer{t: t, r: r, ad: ad, dir: dir}
	argv := strings.Join(ad.Command(launchFor(r, kind)), " ")
	askBeforeShell(r, kind)

	// One conversation: start, ready, typed, working, idle, permission,
	// question.
	c.launch("cap", r.work(), argv)
	c.save(capStart, c.firstDrawn("cap"))
	c.save(capReady, c.settled("cap", launchSettle))
	before := c.capture("cap")
	c.typeText("cap", info.Typed)
	c.changed("cap", before) // Claude 2.1.100 draws typed text a while later
	c.save(capTyped, c.settled("cap", time.Second))
	c.enter("cap", "answer-one-done")
	// The model answers after 6 s: the turn is on from the prompt's
	// arrival until then; the screen shows it once it moves.
	c.changed("cap", c.capture("cap"))
	c.save(capWorking, c.capture("cap"))
	c.waitFor("cap", func(s string) bool { return strings.Count(s, "answer-one-done") >= answerShown(kind) })
	c.save(capIdle, c.settled("cap", 2*time.Second))

	run := "RUN: echo hi > perm.txt SAY: perm-done"
	if kind == "codex" {
		run = "ESCALATE " + run // Codex asks only to leave its sandbox
	}
	c.typeText("cap", run)
	c.enter("cap", "perm-done")
	shot := c.dialogOf("echo hi > perm.txt")
	if _, err := os.Stat(filepath.Join(r.work(), "perm.txt")); err == nil {
		t.Fatal("perm.txt was written before anyone answered: the agent did not ask")
	}
	c.save(capPermission, shot)
	c.keys("cap", map[string]string{"claude": "1", "codex": "y", "gemini": "Enter", "opencode": "Enter"}[kind])
	c.waitFor("cap", func(s string) bool { return strings.Count(s, "perm-done") >= 2 })
	c.settled("cap", 2*time.Second)

	if kind == "opencode" {
		opencodeMissing(t, dir, info)
	} else {
		c.captureAsks(kind, argv, dir, info)
	}
	t.Logf("wrote the screens of %s %s to %s", kind, p.Version, dir)
}

// launchSettle is how long a screen must stay still after a launch to be
// taken as what the agent shows: Codex up to 0.16x draws a still splash
// (its composer, no model line) for about 3.5 s before its trust or
// sign-in screen.
const launchSettle = 6 * time.Second

type capturer struct {
	t   *testing.T
	r   *rig
	ad  *agent.Kind
	dir string
}

func (c *capturer) launch(window, cwd, command string) {
	c.t.Helper()
	c.r.tmuxMust("new-window", "-d", "-t", "main:", "-n", window, "-c", cwd, command)
}

// capture is what st reads: capture-pane, with escapes for an agent that
// wants them.
func (c *capturer) capture(window string) string {
	args := []string{"capture-pane", "-p", "-t", "main:" + window}
	if c.ad.WantsEscapes() {
		args = []string{"capture-pane", "-p", "-e", "-t", "main:" + window}
	}
	out, err := c.r.tmux(args...)
	if err != nil {
		c.t.Fatalf("%v (did the agent exit?)", err)
	}
	return out
}

func (c *capturer) save(state, screen string) {
	c.t.Helper()
	if err := os.WriteFile(filepath.Join(c.dir, state+".txt"), []byte(screen), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// firstDrawn is the first capture with anything on it.
func (c *capturer) firstDrawn(window string) string {
	c.t.Helper()
	// opencode drew nothing for over 30 s at a load of 25 on 2 cores.
	deadline := time.Now().Add(120 * time.Second)
	for {
		if s := c.capture(window); strings.TrimSpace(ansiPlain(s)) != "" {
			return s
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s drew nothing in 120 s", window)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settled waits until the screen has stopped moving for d, and returns
// it. Only lines with words count: Codex up to 0.15x animates its logo of
// punctuation above its trust screen. Two screens taking turns count as
// still (a glyph that blinks, as Claude's "● Running" does above a
// prompt).
func (c *capturer) settled(window string, d time.Duration) string {
	c.t.Helper()
	type seen struct {
		at    time.Time
		plain string
	}
	start := time.Now()
	deadline := start.Add(60 * time.Second)
	var hist []seen
	for {
		s := c.capture(window)
		now := time.Now()
		hist = append(hist, seen{now, wordLines(ansiPlain(s))})
		for len(hist) > 0 && now.Sub(hist[0].at) > d {
			hist = hist[1:]
		}
		distinct, changes := map[string]bool{}, 0
		for i, h := range hist {
			distinct[h.plain] = true
			if i > 0 && h.plain != hist[i-1].plain {
				changes++
			}
		}
		// One screen, or two taking turns; not one that just changed, nor
		// a blank one (the agent has not drawn yet).
		if now.Sub(start) >= d && strings.TrimSpace(ansiPlain(s)) != "" &&
			(len(distinct) == 1 || len(distinct) == 2 && changes >= 2) {
			return s
		}
		if now.After(deadline) {
			c.t.Fatalf("%s never settled:\n%s", window, ansiPlain(s))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// changed waits until the screen is no longer the one given.
func (c *capturer) changed(window, before string) {
	c.t.Helper()
	c.waitFor(window, func(plain string) bool { return plain != ansiPlain(before) })
}

func (c *capturer) waitFor(window string, cond func(plain string) bool) {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond(ansiPlain(c.capture(window))) {
		if time.Now().After(deadline) {
			c.t.Fatalf("%s never showed what was waited for:\n%s", window, ansiPlain(c.capture(window)))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *capturer) typeText(window, text string) {
	c.t.Helper()
	c.r.tmuxMust("send-keys", "-t", "main:"+window, "-l", text)
}

func (c *capturer) keys(window string, keys ...string) {
	c.t.Helper()
	c.r.tmuxMust(append([]string{"send-keys", "-t", "main:" + window}, keys...)...)
}

// enter sends the typed line, pressing Enter again while the model has not
// been asked (an agent may drop an Enter that follows the text closely).
func (c *capturer) enter(window, mark string) {
	c.t.Helper()
	time.Sleep(400 * time.Millisecond)
	deadline := time.Now().Add(30 * time.Second)
	for try := 0; ; try++ {
		c.keys(window, "Enter")
		until := time.Now().Add(3 * time.Second)
		for time.Now().Before(until) {
			for _, q := range c.r.fake.Requests() {
				if strings.Contains(q.Prompt, mark) {
					return
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the model never got %q:\n%s", mark, ansiPlain(c.capture(window)))
		}
	}
}

// waitCall waits until the model has made a tool call with this command
// (or question).
func (c *capturer) waitCall(what string) {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		for _, q := range c.r.fake.Requests() {
			for _, call := range q.Calls {
				if call.Command == what {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the model never called %q; %s", what, c.lastOffer())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dialogOf waits for the dialog the agent shows for the call the model
// made with what (a command, a question), and returns it: the call
// logged, its text drawn a second time beside the prompt's echo (or the
// tool's result already back: no dialog, which the caller checks), then
// the screen still. A still screen alone is not enough: Gemini CLI 0.59.0
// drew nothing for over 1.5 s after the call, its spinner stopped on
// "Thinking... (0s)", and that was saved as its permission dialog.
func (c *capturer) dialogOf(what string) string {
	c.t.Helper()
	c.waitCall(what)
	c.waitFor("cap", func(s string) bool { return strings.Count(s, what) >= 2 || c.answered() })
	return c.settled("cap", 1500*time.Millisecond)
}

// lastOffer says which tools the agent's last request to the model
// offered, for a call that never came: a model can call only a tool it
// is offered.
func (c *capturer) lastOffer() string {
	reqs := c.r.fake.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if !reqs[i].Side {
			return fmt.Sprintf("the last request (%s, prompt %q) offered the tools %v", reqs[i].Endpoint, reqs[i].Prompt, reqs[i].Tools)
		}
	}
	return "the agent sent the model no request with tools"
}

// answered reports whether the agent sent the model another request after
// the last tool call: its result came back.
func (c *capturer) answered() bool {
	reqs := c.r.fake.Requests()
	var last int
	for i, q := range reqs {
		if len(q.Calls) > 0 {
			last = i
		}
	}
	for _, q := range reqs[last+1:] {
		if !q.Side {
			return true
		}
	}
	return false
}

// lastResult is the text of the request after the last tool call, for the
// note of a question that was not shown.
func (c *capturer) lastResult() string {
	reqs := c.r.fake.Requests()
	if len(reqs) == 0 {
		return ""
	}
	body := string(reqs[len(reqs)-1].Body)
	if i := strings.Index(body, "request_user_input"); i >= 0 {
		body = body[i:]
	}
	if len(body) > 300 {
		body = body[:300]
	}
	return body
}

// wordLines keeps the lines of a screen that hold a word (three letters
// in a row).
func wordLines(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if wordRE.MatchString(l) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

var wordRE = regexp.MustCompile(`[A-Za-z]{3}`)

// ansiPlain drops escape sequences, for comparing screens.
func ansiPlain(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != 0x1b {
			b.WriteByte(s[i])
			continue
		}
		// CSI: ESC [ params final; others: ESC and one more byte.
		if i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		i++
	}
	return b.String()
}

// askBeforeShell makes the agent ask before its shell tool where the rig
// lets it run unasked: opencode runs it unasked unless its permissions
// (OPENCODE_PERMISSION, which new windows get) say otherwise.
func askBeforeShell(r *rig, kind string) {
	if kind == "opencode" {
		r.tmuxMust("set-environment", "-g", "OPENCODE_PERMISSION", `{"bash":"ask"}`)
	}
}

// answerShown is how often the first prompt's SAY text shows once its
// answer is on screen: in the prompt and the answer; opencode's sidebar
// shows the session's title too, which the fake model names after it.
func answerShown(kind string) int {
	if kind == "opencode" {
		return 3
	}
	return 2
}

// opencodeMissing writes capture.json for opencode, which has no
// question tool by default, no folder trust, and signs in with the
// provider's key in its config: those screens are not captured.
func opencodeMissing(t *testing.T, dir string, info captureInfo) {
	info.Missing[capQuestion] = "opencode 1.18.33 offers its question tool only with OPENCODE_ENABLE_QUESTION_TOOL; not captured"
	info.Missing[capTrust] = "opencode has no folder trust"
	info.Missing[capLogin] = "opencode with a provider key in its config shows no sign-in screen; not captured"
	data, _ := json.MarshalIndent(info, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "capture.json"), append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// captureAsks captures the question, the trust screen and the sign-in
// screen, then writes capture.json.
func (c *capturer) captureAsks(kind, argv, dir string, info captureInfo) {
	if kind == "codex" {
		// Codex offers its question tool only in plan mode, which
		// Shift+Tab turns on.
		c.keys("cap", "BTab")
		c.settled("cap", time.Second)
	}
	// No question mark: Gemini CLI (0.59.0, 0.61.0) dropped the one typed
	// here (a "?" in an empty box is its key for the shortcuts' help, and
	// a line typed in one burst finds the box still empty), so the model
	// was asked "Which colour" and the call waited for never came.
	c.typeText("cap", "ASK: Which colour SAY: asked-done")
	c.enter("cap", "asked-done")
	q := c.dialogOf("Which colour")
	if c.answered() {
		// The tool's result came straight back: no question was shown
		// (Codex offers request_user_input only in plan mode).
		info.Missing[capQuestion] = "the question tool answered at once, showing nothing: " + c.lastResult()
	} else {
		c.save(capQuestion, q)
		c.keys("cap", "Enter")
	}

	// An untrusted folder (Codex asks only in a git repository).
	untrusted := filepath.Join(c.r.dir, "untrusted")
	os.MkdirAll(untrusted, 0o755)
	if out, err := exec.Command("git", "init", "-q", untrusted).CombinedOutput(); err != nil {
		c.t.Fatalf("git init: %v %s", err, out)
	}
	c.launch("trust", untrusted, argv)
	c.save(capTrust, c.settled("trust", launchSettle))

	// No usable credentials, in a network namespace of its own, so that
	// nothing leaves the machine.
	c.launch("login", c.r.work(), "unshare -n "+c.loginEnv(kind)+" "+argv)
	c.save(capLogin, c.settled("login", launchSettle))

	data, _ := json.MarshalIndent(info, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "capture.json"), append(data, '\n'), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// loginEnv is the env command that takes the agent's credentials away:
// Claude gets an API key it was not told to use, Codex a CODEX_HOME with
// no provider, Gemini a home of its own (GEMINI_CLI_HOME) whose settings
// choose no auth type, without its API key (its work folder trusted
// there, or its trust screen would come first).
func (c *capturer) loginEnv(kind string) string {
	c.t.Helper()
	switch kind {
	case "claude":
		return "env -u ANTHROPIC_AUTH_TOKEN ANTHROPIC_API_KEY=sk-ant-api03-compat-capture-not-a-key-0123456789"
	case "codex":
		fresh := filepath.Join(c.r.dir, "fresh-codex")
		os.MkdirAll(fresh, 0o700)
		return "env CODEX_HOME=" + fresh
	case "gemini":
		fresh := filepath.Join(c.r.dir, "fresh-gemini")
		settings := `{"privacy":{"usageStatisticsEnabled":false},"general":{"enableAutoUpdate":false,"enableAutoUpdateNotification":false}}`
		folders := map[string]string{c.r.work(): "TRUST_FOLDER"}
		if real, err := filepath.EvalSymlinks(c.r.work()); err == nil {
			folders[real] = "TRUST_FOLDER"
		}
		trusted, _ := json.Marshal(folders)
		for name, data := range map[string][]byte{"settings.json": []byte(settings), "trustedFolders.json": trusted} {
			if err := os.MkdirAll(filepath.Join(fresh, ".gemini"), 0o700); err != nil {
				c.t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(fresh, ".gemini", name), data, 0o600); err != nil {
				c.t.Fatal(err)
			}
		}
		return "env -u GEMINI_API_KEY GEMINI_CLI_HOME=" + fresh
	}
	return ""
}
