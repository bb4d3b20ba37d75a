package simagent

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a HookFunc that keeps what it was given and refuses any
// command that mentions "forbidden".
type recorder struct {
	mu     sync.Mutex
	events []string
	loads  []map[string]any
}

func (r *recorder) hook(event string, payload map[string]any) (bool, string) {
	r.mu.Lock()
	r.events = append(r.events, event)
	r.loads = append(r.loads, payload)
	r.mu.Unlock()
	if in, ok := payload["tool_input"].(map[string]any); ok && event == "PreToolUse" {
		if c, _ := in["command"].(string); strings.Contains(c, "forbidden") {
			return true, "st policy: forbidden"
		}
	}
	return false, ""
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

func (r *recorder) count(event string) int {
	n := 0
	for _, e := range r.list() {
		if e == event {
			n++
		}
	}
	return n
}

func waitUntil(t *testing.T, what string, cond func() bool, seen func() []string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; hooks so far: %v", what, seen())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestDriver(t *testing.T) {
	dir := t.TempDir()
	task := filepath.Join(dir, "task.md")
	if err := os.WriteFile(task, []byte("run: echo one > a.txt\nrun: echo forbidden > b.txt\nsleep: 20ms\nrun: exit 3\nsummary: did it\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.cwd, cfg.fs, cfg.stBin = dir, osFS{}, "true"
	rec := &recorder{}
	var out bytes.Buffer
	d := newDriver(newModel(cfg), rec.hook, shellRunner(dir, os.Environ()), realClock{}, &out, func() (int, int) { return 80, 24 })
	code := make(chan int)
	go func() { code <- d.loop() }()

	d.send(inputMsg{data: []byte("do " + task + "\r"), at: time.Now()})
	waitUntil(t, "Stop", func() bool { return rec.count("Stop") == 1 }, rec.list)
	want := []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreToolUse",
		"PreToolUse", "PostToolUseFailure", "PreToolUse", "PostToolUse", "Stop"}
	if got := rec.list(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("hooks %v\nwant  %v", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(b) != "one\n" {
		t.Errorf("a.txt: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "b.txt")); err == nil {
		t.Error("the denied command ran")
	}

	// Esc stops a running command, with everything it started.
	long := filepath.Join(dir, "long.md")
	if err := os.WriteFile(long, []byte("run: touch started; sleep 30; echo late > late.txt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d.send(inputMsg{data: []byte(long + "\r"), at: time.Now()})
	waitUntil(t, "the command to start", func() bool {
		_, err := os.Stat(filepath.Join(dir, "started"))
		return err == nil
	}, rec.list)
	start := time.Now()
	d.send(inputMsg{data: []byte{0x1b}, at: time.Now()})
	d.send(inputMsg{data: []byte{0x03}, at: time.Now()})
	d.send(inputMsg{data: []byte{0x03}, at: time.Now()})
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit %d", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the sim did not exit on Ctrl-C twice")
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("exit took %v: the command was not stopped", time.Since(start))
	}
	got := rec.list()
	if got[len(got)-1] != "SessionEnd" || rec.count("Stop") != 1 || rec.count("PostToolUse") != 2 {
		t.Errorf("hooks after Esc and exit: %v", got)
	}
	if !strings.Contains(out.String(), "Interrupted · What should Claude do instead?") {
		t.Errorf("no Interrupted on screen")
	}
	if _, err := os.Stat(filepath.Join(dir, "late.txt")); err == nil {
		t.Error("the interrupted command finished")
	}
}

// TestMainOverPipe runs Main as the CLI would, with a pipe for a terminal
// and a fake st for the hooks: the end of input is a hangup.
func TestMainOverPipe(t *testing.T) {
	dir := t.TempDir()
	st := filepath.Join(dir, "st")
	if err := os.WriteFile(st, []byte("#!/bin/sh\n{ printf '%s\\t' \"$*\"; cat; printf '\\n'; } >> \""+dir+"/calls.log\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := w.WriteString("hello\r"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	var out bytes.Buffer
	env := map[string]string{"ST_BIN": st, "ST_SIM_SESSION_ID": "pipe-id", "HOME": dir} // its record in dir, not the temp folder
	if code := Main(nil, r, &out, func(k string) string { return env[k] }); code != 0 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	log, _ := os.ReadFile(filepath.Join(dir, "calls.log"))
	var events []string
	for _, line := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		args, body, _ := strings.Cut(line, "\t")
		var p map[string]any
		if err := json.Unmarshal([]byte(body), &p); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if p["session_id"] != "pipe-id" || "hook sim "+p["hook_event_name"].(string) != args {
			t.Errorf("call %s: %v", args, p)
		}
		events = append(events, strings.TrimPrefix(args, "hook sim "))
	}
	if got := strings.Join(events, " "); got != "SessionStart UserPromptSubmit Stop SessionEnd" {
		t.Errorf("hooks: %s", got)
	}
	if !strings.Contains(out.String(), " ● Received: hello") || !strings.Contains(out.String(), "--resume pipe-id") {
		t.Errorf("screen: %q", out.String())
	}

	// With ST_SIM_NO_HOOKS nothing is called.
	os.Remove(filepath.Join(dir, "calls.log"))
	r2, w2, _ := os.Pipe()
	defer r2.Close()
	w2.WriteString("hello\r")
	w2.Close()
	env["ST_SIM_NO_HOOKS"] = "1"
	if code := Main(nil, r2, &out, func(k string) string { return env[k] }); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "calls.log")); err == nil {
		t.Error("a hook ran under ST_SIM_NO_HOOKS")
	}
}

func TestCommandHooksDecision(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\ncat >/dev/null\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name, body, event string
		deny              bool
		reason            string
	}{
		{"allow", "exit 0\n", "PreToolUse", false, ""},
		{"exit2", "echo 'BLOCKED by st hook: no' >&2\nexit 2\n", "PreToolUse", true, "BLOCKED by st hook: no"},
		{"exit1", "echo oops >&2\nexit 1\n", "PreToolUse", false, ""},
		{"json", `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"st policy"}}'` + "\n", "PreToolUse", true, "st policy"},
		{"jsonallow", `echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'` + "\n", "PreToolUse", false, ""},
		{"notpre", "exit 2\n", "Stop", false, ""},
	}
	for _, c := range cases {
		deny, reason := commandHooks(script(c.name, c.body), os.Environ())(c.event, map[string]any{"x": 1})
		if deny != c.deny || reason != c.reason {
			t.Errorf("%s: %v %q, want %v %q", c.name, deny, reason, c.deny, c.reason)
		}
	}
	// A missing st is no decision, and no hang.
	if deny, _ := commandHooks(filepath.Join(dir, "missing"), nil)("PreToolUse", nil); deny {
		t.Error("a missing st denied")
	}
	if deny, _ := preToolDecision(errors.New("x"), nil, nil); deny {
		t.Error("a start error denied")
	}
}

func TestShellRunner(t *testing.T) {
	dir := t.TempDir()
	run := shellRunner(dir, append(os.Environ(), "SIM_X=fromenv"))
	out, code := run(t.Context(), "pwd; echo $SIM_X; echo err >&2; exit 4")
	if code != 4 || out != dir+"\nfromenv\nerr\n" {
		t.Errorf("got %q %d", out, code)
	}
	// stdin is not the terminal: a command cannot eat the keys.
	if out, code := run(t.Context(), "cat; echo done"); code != 0 || out != "done\n" {
		t.Errorf("got %q %d", out, code)
	}
}
