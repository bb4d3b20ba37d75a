package simagent

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/orch"
	"github.com/sophonz/st/internal/tokens"
)

// mapFS serves task files from memory, by absolute path.
type mapFS struct{ fstest.MapFS }

func (m mapFS) Stat(name string) (fs.FileInfo, error) {
	return m.MapFS.Stat(strings.TrimPrefix(name, "/"))
}

func (m mapFS) ReadFile(name string) ([]byte, error) {
	return m.MapFS.ReadFile(strings.TrimPrefix(name, "/"))
}

var t0 = time.Date(2026, 11, 29, 7, 49, 0, 0, time.UTC)

func testConfig() config {
	return config{
		cwd: "/w", sessionID: "sess-1", transcriptPath: "/tmp/st-sim/sess-1.jsonl",
		stBin: "/opt/st", fs: mapFS{fstest.MapFS{}},
	}
}

// harness drives a model and keeps every effect it emitted.
type harness struct {
	t   *testing.T
	m   *model
	now time.Time
	eff []effect
}

func newHarness(t *testing.T, cfg config) *harness {
	h := &harness{t: t, m: newModel(cfg), now: t0}
	h.eff = append(h.eff, h.m.start(t0)...)
	return h
}

// at moves the clock forward by d.
func (h *harness) at(d time.Duration) *harness {
	h.now = h.now.Add(d)
	return h
}

func (h *harness) send(v msg) []effect {
	e := h.m.update(h.now, v)
	h.eff = append(h.eff, e...)
	return e
}

func (h *harness) typ(s string) []effect {
	return h.send(inputMsg{data: []byte(s), at: h.now})
}

// hooks lists the events fired so far.
func (h *harness) hooks() []string {
	var out []string
	for _, e := range h.eff {
		if f, ok := e.(fireHook); ok {
			out = append(out, f.event)
		}
	}
	return out
}

func (h *harness) lastHook(event string) fireHook {
	h.t.Helper()
	for i := len(h.eff) - 1; i >= 0; i-- {
		if f, ok := h.eff[i].(fireHook); ok && f.event == event {
			return f
		}
	}
	h.t.Fatalf("no %s hook in %v", event, h.hooks())
	return fireHook{}
}

// pending returns the last effect of type T.
func pending[T effect](h *harness) T {
	h.t.Helper()
	for i := len(h.eff) - 1; i >= 0; i-- {
		if v, ok := h.eff[i].(T); ok {
			return v
		}
	}
	var zero T
	h.t.Fatalf("no %T effect", zero)
	return zero
}

func (h *harness) screen() []string { return h.m.render(40, 12) }

func (h *harness) view() agent.View {
	a, err := agent.Lookup("sim")
	if err != nil {
		h.t.Fatal(err)
	}
	return a.Recognize(strings.Join(h.m.render(60, 20), "\n"))
}

func (h *harness) has(line string) bool {
	for _, l := range h.m.render(200, 200) {
		if l == line {
			return true
		}
	}
	return false
}

var rule40 = strings.Repeat("─", 40)

func TestRenderStates(t *testing.T) {
	cases := []struct {
		name  string
		setup func(*harness)
		want  []string
		view  agent.Screen
	}{
		{
			name: "ready",
			want: []string{" ✻ sim agent · /w", "", "", rule40, "❯\u00a0", rule40, "  ? for shortcuts"},
			view: agent.ScreenReady,
		},
		{
			name:  "typed",
			setup: func(h *harness) { h.typ("hello world") },
			want:  []string{" ✻ sim agent · /w", "", "", rule40, "❯\u00a0hello world", rule40, ""},
			view:  agent.ScreenTyped,
		},
		{
			name: "typed long wraps",
			setup: func(h *harness) {
				h.typ("0123456789 0123456789 0123456789 0123456789 0123456789")
			},
			want: []string{
				" ✻ sim agent · /w", "", "", rule40,
				"❯\u00a00123456789 0123456789 0123456789 01234",
				"  56789 0123456789", rule40, "",
			},
			view: agent.ScreenTyped,
		},
		{
			name:  "typed wraps at a space",
			setup: func(h *harness) { h.typ("0123456789012345678901234567890123456 x") },
			want: []string{
				" ✻ sim agent · /w", "", "", rule40,
				"❯\u00a00123456789012345678901234567890123456",
				"   x", rule40, "",
			},
			view: agent.ScreenTyped,
		},
		{
			name: "working",
			setup: func(h *harness) {
				h.m.cfg.turnDelay = time.Second
				h.typ("hi\r")
				h.typ("next")
			},
			want: []string{
				" ✻ sim agent · /w", "", "", " ❯ hi", "", "✽ Working…", "",
				rule40, "❯\u00a0next", rule40, "  esc to interrupt",
			},
			view: agent.ScreenWorking,
		},
		{
			name: "question",
			setup: func(h *harness) {
				h.m.cfg.fs = mapFS{fstest.MapFS{"t/q.md": {Data: []byte("ask: Which colour?\n")}}}
				h.typ("do /t/q.md\r")
			},
			want: []string{
				" ✻ sim agent · /w", "", "", " ❯ do /t/q.md", "", " ? Which colour?",
				"   Type your answer and press Enter.", "", rule40, "❯\u00a0", rule40, "  waiting for your answer",
			},
			view: agent.ScreenPrompt,
		},
		{
			name: "after a turn",
			setup: func(h *harness) {
				h.typ("hi\r")
			},
			want: []string{
				" ✻ sim agent · /w", "", "", " ❯ hi", "", " ● Received: hi", "",
				rule40, "❯\u00a0", rule40, "  ? for shortcuts",
			},
			view: agent.ScreenReady,
		},
		{
			name:  "ctrl-c once",
			setup: func(h *harness) { h.typ("abc\x03") },
			want:  []string{" ✻ sim agent · /w", "", "", rule40, "❯\u00a0", rule40, "  Press Ctrl-C again to exit"},
			view:  agent.ScreenReady,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, testConfig())
			if c.setup != nil {
				c.setup(h)
			}
			if got := h.screen(); !reflect.DeepEqual(got, c.want) {
				t.Errorf("screen:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			if v := h.view(); v.Screen != c.view {
				t.Errorf("recognised as %v, want %v", v.Screen, c.view)
			}
		})
	}
}

func TestTrustScreen(t *testing.T) {
	cfg := testConfig()
	cfg.trust = true
	h := newHarness(t, cfg)
	want := []string{
		"", " Accessing workspace:", "", " /w", "",
		" Quick safety check: Is this a project you created or one you trust?", "",
		" ❯ 1. Yes, I trust this folder", "   2. No, exit", "", " Enter to confirm · Esc to cancel",
	}
	if got := h.m.render(80, 24); !reflect.DeepEqual(got, want) {
		t.Errorf("screen:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if v := h.view(); v.Screen != agent.ScreenTrust {
		t.Errorf("recognised as %v", v.Screen)
	}
	if hs := h.hooks(); len(hs) != 0 {
		t.Errorf("hooks on the trust screen: %v", hs)
	}
	h.typ("x") // other keys do nothing
	if h.m.phase != phaseTrust {
		t.Fatal("left the trust screen on x")
	}
	h.typ("1")
	if h.m.phase != phaseMain || !reflect.DeepEqual(h.hooks(), []string{"SessionStart"}) {
		t.Errorf("after 1: phase %v hooks %v", h.m.phase, h.hooks())
	}

	for _, key := range []string{"2", "\x1b"} {
		h := newHarness(t, cfg)
		h.typ(key)
		if got := pending[exitProgram](h); got.code != 1 {
			t.Errorf("%q: exit %d, want 1", key, got.code)
		}
		if hs := h.hooks(); len(hs) != 0 {
			t.Errorf("%q: hooks %v", key, hs)
		}
	}
}

func TestSlowStartAndDeaf(t *testing.T) {
	cfg := testConfig()
	cfg.slowStart = 2 * time.Second
	cfg.deaf = time.Second
	h := newHarness(t, cfg)
	if got, want := h.screen(), []string{" ✻ sim agent · starting…"}; !reflect.DeepEqual(got, want) {
		t.Errorf("splash = %q, want %q", got, want)
	}
	if v := h.view(); v.Screen != agent.ScreenUnknown {
		t.Errorf("splash recognised as %v", v.Screen)
	}
	h.typ("lost\r")
	start := pending[startTimer](h)
	if start.after != 2*time.Second {
		t.Fatalf("slow start timer %v", start.after)
	}
	h.at(2 * time.Second).send(timerMsg{tag: start.tag})
	if v := h.view(); v.Screen != agent.ScreenReady {
		t.Fatalf("after the splash: %v", v.Screen)
	}
	if got := h.hooks(); !reflect.DeepEqual(got, []string{"SessionStart"}) {
		t.Fatalf("hooks %v", got)
	}
	h.at(999 * time.Millisecond).typ("deaf")
	if len(h.m.box) != 0 {
		t.Fatalf("typed during the deaf period: %q", string(h.m.box))
	}
	h.at(time.Millisecond).typ("heard")
	if string(h.m.box) != "heard" {
		t.Fatalf("box = %q after the deaf period", string(h.m.box))
	}
}

func TestSwallowEnter(t *testing.T) {
	cfg := testConfig()
	cfg.swallowEnter = true
	h := newHarness(t, cfg)
	h.typ("hello")
	h.at(49 * time.Millisecond).typ("\r")
	if string(h.m.box) != "hello" || len(h.hooks()) != 1 {
		t.Fatalf("Enter at 49 ms: box %q hooks %v", string(h.m.box), h.hooks())
	}
	h.at(time.Millisecond).typ("\r") // 50 ms after the last text byte
	if len(h.m.box) != 0 || h.lastHook("UserPromptSubmit").payload["prompt"] != "hello" {
		t.Fatalf("Enter at 50 ms: box %q hooks %v", string(h.m.box), h.hooks())
	}
	h.typ("again\r") // text and Enter in one read: swallowed
	if string(h.m.box) != "again" {
		t.Fatalf("box %q", string(h.m.box))
	}

	// Without the knob, Enter right after the text submits.
	h = newHarness(t, testConfig())
	h.typ("hello\r")
	if got := h.hooks(); !reflect.DeepEqual(got, []string{"SessionStart", "UserPromptSubmit", "Stop"}) {
		t.Fatalf("hooks %v", got)
	}
}

func TestEditing(t *testing.T) {
	h := newHarness(t, testConfig())
	h.typ("héllo wörld")
	h.typ("\x7f\x7f")
	if got := string(h.m.box); got != "héllo wör" {
		t.Fatalf("after two backspaces: %q", got)
	}
	// A rune split over two reads is kept whole.
	h.typ("\xc3")
	h.typ("\xa9")
	if got := string(h.m.box); got != "héllo wöré" {
		t.Fatalf("split rune: %q", got)
	}
	// Arrow keys and other sequences are not text.
	h.typ("\x1b[A\x1b[1;5C\x1bOB")
	if got := string(h.m.box); got != "héllo wöré" {
		t.Fatalf("after arrows: %q", got)
	}
	h.typ("\x15")
	if len(h.m.box) != 0 {
		t.Fatalf("Ctrl-U left %q", string(h.m.box))
	}
	h.typ("   \r")
	if len(h.hooks()) != 1 {
		t.Fatalf("a blank line was submitted: %v", h.hooks())
	}
}

func TestTaskTurn(t *testing.T) {
	cfg := testConfig()
	cfg.fs = mapFS{fstest.MapFS{"w/task.md": {Data: []byte(
		"Summary: wrote it\n# prose is ignored\nrun: make\nsleep: 2s\nRUN:  false  \nanswer: built it\nbogus: x\n")}}}
	h := newHarness(t, cfg)
	h.typ("Please do /w/task.md.\r")

	pre := h.lastHook("PreToolUse")
	if pre.tag == 0 || pre.payload["tool_name"] != "Bash" || !reflect.DeepEqual(pre.payload["tool_input"], map[string]any{"command": "make"}) {
		t.Fatalf("PreToolUse %+v", pre)
	}
	if v := h.view(); v.Screen != agent.ScreenWorking {
		t.Fatalf("during the turn: %v", v.Screen)
	}
	h.send(hookMsg{tag: pre.tag})
	run := pending[runCommand](h)
	if run.command != "make" {
		t.Fatalf("ran %q", run.command)
	}
	h.send(commandMsg{tag: run.tag, output: "ok\n", code: 0})
	post := h.lastHook("PostToolUse")
	if post.payload["tool_use_id"] != pre.payload["tool_use_id"] ||
		!reflect.DeepEqual(post.payload["tool_response"], map[string]any{"stdout": "ok\n", "stderr": "", "interrupted": false, "isImage": false}) {
		t.Fatalf("PostToolUse %+v", post.payload)
	}
	if !h.has("   ⎿  ok") {
		t.Errorf("output not shown:\n%s", strings.Join(h.m.render(200, 200), "\n"))
	}
	sleep := pending[startTimer](h)
	if sleep.after != 2*time.Second {
		t.Fatalf("sleep %v", sleep.after)
	}
	h.at(2 * time.Second).send(timerMsg{tag: sleep.tag})
	pre = h.lastHook("PreToolUse")
	h.send(hookMsg{tag: pre.tag})
	run = pending[runCommand](h)
	if run.command != "false" {
		t.Fatalf("ran %q", run.command)
	}
	h.send(commandMsg{tag: run.tag, code: 1})
	fail := h.lastHook("PostToolUseFailure")
	if fail.payload["error"] != "Exit code 1" {
		t.Fatalf("PostToolUseFailure %+v", fail.payload)
	}
	if !h.has("   ⎿  Error: Exit code 1") {
		t.Errorf("failure not shown")
	}
	// summary: runs last, as a Bash call of `st worker done`.
	pre = h.lastHook("PreToolUse")
	want := "'/opt/st' worker done --summary 'wrote it'"
	if pre.payload["tool_input"].(map[string]any)["command"] != want {
		t.Fatalf("summary command %v, want %s", pre.payload["tool_input"], want)
	}
	h.send(hookMsg{tag: pre.tag})
	run = pending[runCommand](h)
	h.send(commandMsg{tag: run.tag, output: "recorded\n"})
	stop := h.lastHook("Stop")
	if stop.payload["last_assistant_message"] != "built it" || stop.payload["stop_hook_active"] != false {
		t.Fatalf("Stop %+v", stop.payload)
	}
	b, _ := json.Marshal(stop.payload)
	if !strings.Contains(string(b), `"background_tasks":[]`) {
		t.Errorf("Stop payload %s", b)
	}
	want2 := []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreToolUse",
		"PostToolUseFailure", "PreToolUse", "PostToolUse", "Stop"}
	if got := h.hooks(); !reflect.DeepEqual(got, want2) {
		t.Fatalf("hooks %v\nwant %v", got, want2)
	}
	if !h.has(" ● built it") || h.view().Screen != agent.ScreenReady {
		t.Errorf("end of turn:\n%s", strings.Join(h.m.render(200, 200), "\n"))
	}
	for _, e := range h.eff {
		if f, ok := e.(fireHook); ok {
			p := f.payload
			if p["session_id"] != "sess-1" || p["cwd"] != "/w" || p["hook_event_name"] != f.event ||
				p["permission_mode"] != "default" || p["transcript_path"] != "/tmp/st-sim/sess-1.jsonl" {
				t.Errorf("%s payload %v", f.event, p)
			}
		}
	}
}

func TestDefaultAnswers(t *testing.T) {
	cfg := testConfig()
	cfg.fs = mapFS{fstest.MapFS{"w/empty.md": {Data: []byte("nothing for the sim here\n")}}}
	h := newHarness(t, cfg)
	line := "Read /w/empty.md and do what it says, then finish with the st command"
	h.typ(line + "\r")
	if got := h.lastHook("Stop").payload["last_assistant_message"]; got != "Done: "+line[:60] {
		t.Errorf("answer %q", got)
	}
	h.typ("just chatting\r")
	if got := h.lastHook("Stop").payload["last_assistant_message"]; got != "Received: just chatting" {
		t.Errorf("answer %q", got)
	}
}

func TestDeniedTool(t *testing.T) {
	cfg := testConfig()
	cfg.fs = mapFS{fstest.MapFS{"w/t": {Data: []byte("run: tmux kill-server\nanswer: tried\n")}}}
	h := newHarness(t, cfg)
	h.typ("/w/t\r")
	pre := h.lastHook("PreToolUse")
	h.send(hookMsg{tag: pre.tag, deny: true, reason: "BLOCKED by st hook:\n tmux kill-server is not allowed"})
	for _, e := range h.eff {
		if _, ok := e.(runCommand); ok {
			t.Fatal("a denied command ran")
		}
	}
	if !h.has("   ⎿  Not run · permission denied") || !h.has("      │ Reason: BLOCKED by st hook: tmux kill-server is not allowed") {
		t.Errorf("screen:\n%s", strings.Join(h.m.render(200, 200), "\n"))
	}
	if got := h.hooks(); !reflect.DeepEqual(got, []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "Stop"}) {
		t.Errorf("hooks %v", got)
	}
}

func TestAsk(t *testing.T) {
	cfg := testConfig()
	cfg.fs = mapFS{fstest.MapFS{"w/t": {Data: []byte("ask: Which colour?\nanswer: painted\n")}}}
	h := newHarness(t, cfg)
	h.typ("/w/t\r")
	pr := h.lastHook("PermissionRequest")
	if pr.payload["tool_name"] != "AskUser" || !reflect.DeepEqual(pr.payload["tool_input"], map[string]any{"question": "Which colour?"}) {
		t.Fatalf("PermissionRequest %v", pr.payload)
	}
	h.at(time.Second).typ("blue\r")
	post := h.lastHook("PostToolUse")
	if post.payload["tool_name"] != "AskUser" || !reflect.DeepEqual(post.payload["tool_response"], map[string]any{"answer": "blue"}) {
		t.Fatalf("PostToolUse %v", post.payload)
	}
	want := []string{"SessionStart", "UserPromptSubmit", "PermissionRequest", "PostToolUse", "Stop"}
	if got := h.hooks(); !reflect.DeepEqual(got, want) {
		t.Fatalf("hooks %v, want %v (no UserPromptSubmit for an answer)", got, want)
	}
	if !h.has(" ❯ blue") || !h.has(" ● painted") {
		t.Errorf("screen:\n%s", strings.Join(h.m.render(200, 200), "\n"))
	}
}

func TestQueueWhileBusy(t *testing.T) {
	cfg := testConfig()
	cfg.turnDelay = time.Second
	h := newHarness(t, cfg)
	h.typ("first\r")
	h.typ("second\r")
	if got := h.hooks(); !reflect.DeepEqual(got, []string{"SessionStart", "UserPromptSubmit", "UserPromptSubmit"}) {
		t.Fatalf("hooks %v: a queued line fires UserPromptSubmit at once", got)
	}
	if h.lastHook("UserPromptSubmit").payload["prompt"] != "second" || !h.has("   ⎿  Queued · runs after this turn") {
		t.Fatal("queued line not shown")
	}
	h.at(time.Second).send(timerMsg{tag: pending[startTimer](h).tag})
	if got := h.lastHook("Stop").payload["last_assistant_message"]; got != "Received: first" {
		t.Fatalf("first Stop %v", got)
	}
	if !h.m.busy() {
		t.Fatal("the queued line did not start")
	}
	h.at(time.Second).send(timerMsg{tag: pending[startTimer](h).tag})
	want := []string{"SessionStart", "UserPromptSubmit", "UserPromptSubmit", "Stop", "Stop"}
	if got := h.hooks(); !reflect.DeepEqual(got, want) {
		t.Fatalf("hooks %v, want %v", got, want)
	}
	if got := h.lastHook("Stop").payload["last_assistant_message"]; got != "Received: second" {
		t.Fatalf("second Stop %v", got)
	}
}

func TestInterrupt(t *testing.T) {
	cfg := testConfig()
	cfg.fs = mapFS{fstest.MapFS{"w/t": {Data: []byte("run: sleep 100\n")}}}
	h := newHarness(t, cfg)
	h.typ("/w/t\r")
	h.send(hookMsg{tag: h.lastHook("PreToolUse").tag})
	run := pending[runCommand](h)
	h.typ("queued\r")
	h.typ("\x1b")
	pending[cancelCommand](h)
	if h.m.busy() || !h.has("   ⎿  Interrupted · What should Claude do instead?") {
		t.Fatalf("not interrupted:\n%s", strings.Join(h.m.render(200, 200), "\n"))
	}
	// As Claude: the interrupted prompt comes back into the box, with
	// the line queued behind it.
	if string(h.m.box) != "/w/t queued" {
		t.Errorf("the interrupted prompt and the queued line are not back in the box: %q", string(h.m.box))
	}
	n := len(h.hooks())
	h.send(commandMsg{tag: run.tag, code: 137}) // the killed command reports late
	if got := h.hooks(); len(got) != n || got[n-1] != "UserPromptSubmit" {
		t.Errorf("hooks after the interrupt: %v (Esc fires none)", got)
	}
}

func TestCtrlC(t *testing.T) {
	h := newHarness(t, testConfig())
	h.typ("\x03")
	h.at(2100 * time.Millisecond).typ("\x03") // too late: arms again
	for _, e := range h.eff {
		if _, ok := e.(exitProgram); ok {
			t.Fatal("exited on two Ctrl-C 2.1 s apart")
		}
	}
	h.at(time.Second).typ("\x03")
	if got := pending[exitProgram](h); got.code != 0 {
		t.Errorf("exit %d", got.code)
	}
	if got := h.lastHook("SessionEnd").payload["reason"]; got != "prompt_input_exit" {
		t.Errorf("SessionEnd reason %v", got)
	}
	if e := h.send(hangupMsg{}); e != nil {
		t.Errorf("effects after exit: %v", e)
	}
}

func TestHangup(t *testing.T) {
	cfg := testConfig()
	cfg.resume = true
	h := newHarness(t, cfg)
	if got := h.lastHook("SessionStart").payload["source"]; got != "resume" {
		t.Errorf("source %v", got)
	}
	h.send(hangupMsg{})
	if got := h.lastHook("SessionEnd").payload["reason"]; got != "other" {
		t.Errorf("reason %v", got)
	}
	pending[exitProgram](h)
}

func TestOutputFolding(t *testing.T) {
	cfg := testConfig()
	cfg.fs = mapFS{fstest.MapFS{"w/t": {Data: []byte("run: seq 12\n")}}}
	h := newHarness(t, cfg)
	h.typ("/w/t\r")
	h.send(hookMsg{tag: h.lastHook("PreToolUse").tag})
	h.send(commandMsg{tag: pending[runCommand](h).tag, output: "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n\x1b[31m12\x1b[0m\n"})
	got := strings.Join(h.m.render(200, 200), "\n")
	want := "   ⎿  … +2 lines\n      3\n      4\n      5\n      6\n      7\n      8\n      9\n      10\n      11\n      12\n"
	if !strings.Contains(got, want) {
		t.Errorf("screen:\n%s\nwant it to contain:\n%s", got, want)
	}
}

// TestBoxRoundTrip checks that a box wrapped at any width reads back as
// the typed text, trailing spaces stripped as tmux does.
func TestBoxRoundTrip(t *testing.T) {
	text := "Read the task file /tmp/x/task.md   and finish with st worker done --summary \"what you did\""
	for w := 12; w < 100; w += 7 {
		h := newHarness(t, testConfig())
		h.typ(text)
		var lines []string
		for _, l := range h.m.render(w, 40) {
			lines = append(lines, strings.TrimRight(l, " "))
		}
		a, _ := agent.Lookup("sim")
		v := a.Recognize(strings.Join(lines, "\n"))
		if v.Screen != agent.ScreenTyped || v.Box != text {
			t.Errorf("width %d: %v %q\n%s", w, v.Screen, v.Box, strings.Join(lines, "\n"))
		}
	}
}

func TestTranscriptWrapAndFit(t *testing.T) {
	h := newHarness(t, testConfig())
	for i := 0; i < 30; i++ {
		h.typ("a line that is rather long so that it wraps at forty columns\r")
	}
	got := h.m.render(40, 12)
	if len(got) != 12 {
		t.Fatalf("%d lines, want 12", len(got))
	}
	for _, l := range got {
		if n := len([]rune(l)); n > 40 {
			t.Errorf("line of %d columns: %q", n, l)
		}
	}
	if got[len(got)-1] != "  ? for shortcuts" || got[len(got)-3] != "❯\u00a0" {
		t.Errorf("bottom not kept:\n%s", strings.Join(got, "\n"))
	}
}

func TestParseTask(t *testing.T) {
	got := parseTask("run: a\nRun:b\n  sleep: 300ms \nsleep: soon\nask: why: because?\n" +
		"answer: x\nsummary: first\nsummary: second\nrun:\nhello\n- run: not a directive\n")
	want := task{
		directives: []directive{
			{kind: dirRun, value: "a"}, {kind: dirRun, value: "b"},
			{kind: dirSleep, value: "300ms", dur: 300 * time.Millisecond},
			{kind: dirBad, value: `sleep: bad duration "soon"`},
			{kind: dirAsk, value: "why: because?"}, {kind: dirAnswer, value: "x"},
		},
		summary: "second", hasSummary: true,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestFindTaskFile(t *testing.T) {
	fsys := mapFS{fstest.MapFS{
		"w/task.md":         {Data: []byte("run: x")},
		"w/my tasks/t 1.md": {Data: []byte("run: x")},
		"w/dir":             {Mode: fs.ModeDir},
		"opt/st":            {Data: []byte("ELF"), Mode: 0o755},
	}}
	cases := []struct{ line, want string }{
		{"Do /w/task.md.", "/w/task.md"},
		{`Read "/w/task.md", then stop`, "/w/task.md"},
		{"(see /w/task.md)", "/w/task.md"},
		{"Run /opt/st worker done after /w/task.md", "/w/task.md"},
		{"Run /opt/st only", ""}, // an executable is never a task file
		{"/w/dir /w/missing w/task.md", ""},
		{"nothing here", ""},
		// A path with spaces, quoted as st's task line quotes it.
		{orch.TaskLine("/opt/st", "/w/my tasks/t 1.md"), "/w/my tasks/t 1.md"},
	}
	for _, c := range cases {
		got, ok := findTaskFile(fsys, c.line)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("%q: %q %v, want %q", c.line, got, ok, c.want)
		}
	}
}

func TestConfigure(t *testing.T) {
	env := map[string]string{
		"ST_BIN": "/opt/st", "ST_SIM_TRUST": "1", "ST_SIM_SWALLOW_ENTER": "1", "ST_SIM_NO_HOOKS": "1",
		"ST_SIM_SLOW_START": "1s", "ST_SIM_DEAF": "300ms", "ST_SIM_LAG": "2500ms", "ST_SIM_TURN_DELAY": "2s", "ST_SIM_SESSION_ID": "env-id",
	}
	cfg, noHooks, err := configure(nil, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.stBin != "/opt/st" || !cfg.trust || !cfg.swallowEnter || !noHooks || cfg.slowStart != time.Second ||
		cfg.deaf != 300*time.Millisecond || cfg.lag != 2500*time.Millisecond || cfg.turnDelay != 2*time.Second || cfg.sessionID != "env-id" || cfg.resume {
		t.Errorf("config %+v noHooks %v", cfg, noHooks)
	}
	cfg, _, err = configure([]string{"--resume", "old-id"}, func(k string) string { return env[k] })
	if err != nil || cfg.sessionID != "old-id" || !cfg.resume {
		t.Errorf("--resume: %+v %v", cfg, err)
	}
	cfg, _, err = configure(nil, func(string) string { return "" })
	if err != nil || len(cfg.sessionID) != 36 || cfg.stBin == "" || cfg.trust {
		t.Errorf("defaults: %+v %v", cfg, err)
	}
	if _, _, err := configure(nil, func(k string) string { return map[string]string{"ST_SIM_DEAF": "soon"}[k] }); err == nil {
		t.Error("a bad duration was accepted")
	}
	if _, _, err := configure([]string{"extra"}, func(string) string { return "" }); err == nil {
		t.Error("an extra argument was accepted")
	}
}

// A usage: directive writes one response to the transcript in Claude's
// form, two records under one message.id, before the turn's Stop: st's
// ledger, reading it as it reads Claude's, counts it once.
func TestUsageWritesClaudeRecords(t *testing.T) {
	cfg := testConfig()
	cfg.transcriptPath = filepath.Join(t.TempDir(), "sess-1.jsonl")
	cfg.fs = mapFS{fstest.MapFS{"t/u.md": {Data: []byte("usage: input=120 output=30 cache_read=400 cache_write=9 model=claude-x\nusage: input=5 output=6\n")}}}
	h := newHarness(t, cfg)
	h.typ("do /t/u.md\r")
	var wrote, stopAt int
	for i, e := range h.eff {
		switch e := e.(type) {
		case appendRecords:
			appendTranscript(e)
			wrote = i
		case fireHook:
			if e.event == "Stop" {
				stopAt = i
			}
		}
	}
	if wrote == 0 || stopAt < wrote {
		t.Fatalf("records at %d, Stop at %d: the records must come before the Stop hook", wrote, stopAt)
	}
	f := &tokens.File{Path: cfg.transcriptPath, Format: tokens.FormatClaude}
	if _, err := f.Read(); err != nil {
		t.Fatal(err)
	}
	if got := f.Counts(); got != (tokens.Counts{Input: 125, Output: 36, CacheRead: 400, CacheWrite: 9}) {
		t.Fatalf("counts = %+v, want each response once", got)
	}
	if got := f.ByModel["claude-x"]; got.Total() != 559 {
		t.Fatalf("by model = %+v", f.ByModel)
	}
	if data, _ := os.ReadFile(cfg.transcriptPath); strings.Count(string(data), "\n") != 4 {
		t.Fatalf("transcript has %d records, want 4 (two blocks per response):\n%s", strings.Count(string(data), "\n"), data)
	}
}

func TestUsageRefusesBadCounts(t *testing.T) {
	tk := parseTask("usage: input=x\nusage: foo=1\nusage: input=-1\n")
	for _, d := range tk.directives {
		if d.kind != dirBad {
			t.Fatalf("%+v taken", d)
		}
	}
}
