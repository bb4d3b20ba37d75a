package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/sophonz/st/internal/testutil"
)

// TestHookGuard runs the real st binary as both agents' PreToolUse hook
// (`st hook claude PreToolUse`, `st hook codex PreToolUse`) with every
// spelling of testdata/guard/spellings.txtar, each as its own case: the
// spellings that stop the agent's tmux server, or have tmux run st, are
// refused with the deny answer both agents take, the look-alikes pass.
// The agent's server is a real tmux server of one session, solo, of one
// pane, which the hook asks (read-only); $TMUX names its real pid. No
// daemon runs: the guard needs none. A payload over 1 MiB is refused, not
// cut.
func TestHookGuard(t *testing.T) {
	bin := testutil.BuildST(t)
	dir := testutil.ShortTempDir(t)
	tm := testutil.NewTmux(t, dir)
	if err := os.MkdirAll(filepath.Dir(tm.Socket), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := tm.Run("-f", "/dev/null", "new-session", "-d", "-s", "solo", "sleep 600"); err != nil {
		t.Fatal(err)
	}
	out, err := tm.Run("display-message", "-p", "-t", "solo:", "#{pid} #{pane_id}")
	if err != nil {
		t.Fatal(err)
	}
	pid, pane, _ := strings.Cut(strings.TrimSpace(out), " ")
	sock := tm.Socket
	a, err := txtar.ParseFile(filepath.Join(testutil.ModuleRoot(), "testdata", "guard", "spellings.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range a.Files {
		if name, ok := strings.CutPrefix(f.Name, "file/"); ok {
			if err := os.WriteFile(filepath.Join(dir, name), f.Data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	env := testutil.Env(os.Environ(), "ST_HOME="+filepath.Join(dir, "home"), "TMUX="+sock+","+pid+",0", "TMUX_PANE="+pane,
		"TMUX_TMPDIR="+dir, "HOME="+dir)
	// The hook asks st about the agent's server (it runs no tmux itself):
	// st drives the server solo is on.
	stEnv := testutil.Env(env, "ST_TMUX_SOCKET="+sock, "ST_WEB_PORT=auto")
	st := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = stEnv
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := st("up"); err != nil {
		t.Fatalf("st up: %v\n%s", err, out)
	}
	t.Cleanup(func() { st("down") })
	hook := func(t *testing.T, agent string, payload []byte) (deny bool, reason string) {
		cmd := exec.Command(bin, "hook", agent, "PreToolUse")
		cmd.Env = env
		cmd.Stdin = bytes.NewReader(payload)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("st hook %s PreToolUse: %v\n%s", agent, err, errb.String())
		}
		if out.Len() == 0 {
			return false, ""
		}
		var ans struct {
			Out struct {
				Event    string `json:"hookEventName"`
				Decision string `json:"permissionDecision"`
				Reason   string `json:"permissionDecisionReason"`
			} `json:"hookSpecificOutput"`
		}
		if err := json.Unmarshal(out.Bytes(), &ans); err != nil {
			t.Fatalf("the hook's answer %q: %v", out.String(), err)
		}
		if ans.Out.Event != "PreToolUse" || ans.Out.Decision != "deny" {
			t.Fatalf("the hook answered %q", out.String())
		}
		return true, ans.Out.Reason
	}
	payload := func(agent, command string) []byte {
		in := map[string]any{"command": command}
		if agent == "claude" {
			in["description"] = "run it"
		}
		b, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": in, "cwd": dir})
		return b
	}
	n := 0
	for _, agent := range []string{"claude", "codex"} {
		for _, f := range a.Files {
			kind, name, _ := strings.Cut(f.Name, "/")
			if kind == "file" {
				continue
			}
			command := strings.ReplaceAll(strings.TrimSuffix(string(f.Data), "\n"), "SOCKET", sock)
			t.Run(agent+"/"+kind+"/"+name, func(t *testing.T) {
				deny, reason := hook(t, agent, payload(agent, command))
				switch {
				case kind == "refused" && !deny:
					t.Errorf("st hook %s let %.80q through", agent, command)
				case kind == "refused" && !strings.HasPrefix(reason, "st guard: "):
					t.Errorf("reason %q", reason)
				case kind == "allowed" && deny:
					t.Errorf("st hook %s refused the look-alike %q: %s", agent, command, reason)
				}
			})
			n++
		}
		t.Run(agent+"/refused/payload-over-1MiB", func(t *testing.T) {
			big := payload(agent, "echo "+strings.Repeat("a", 1<<20)+"; tmux kill-server")
			if deny, reason := hook(t, agent, big); !deny || !strings.HasPrefix(reason, "st guard: ") {
				t.Errorf("a %d-byte payload was not refused (%q)", len(big), reason)
			}
		})
	}
	if n < 60 {
		t.Fatalf("only %d cases", n)
	}
	// The reasons show the hook asked the real server: its only session,
	// its only pane's process.
	panePid, err := tm.Run("display-message", "-p", "-t", pane, "#{pane_pid}")
	if err != nil {
		t.Fatal(err)
	}
	for command, why := range map[string]string{
		"tmux kill-session -t solo":                  "solo may be the last session of the server",
		"kill -9 " + strings.TrimSpace(panePid):      "is the process of pane " + pane,
		"kill " + pid:                                "is the tmux server's pid",
		"tmux run-shell 'st gate answer gate-1 yes'": "would run st",
	} {
		for _, agent := range []string{"claude", "codex"} {
			if deny, reason := hook(t, agent, payload(agent, command)); !deny || !strings.Contains(reason, why) {
				t.Errorf("st hook %s on %q: deny=%v %q, want a reason saying %q", agent, command, deny, reason, why)
			}
		}
	}
	// With st down nothing can say whether a session is the server's last
	// or a pid its last pane's: such a kill is refused, saying so; what
	// needs no answer passes.
	if out, err := st("down"); err != nil {
		t.Fatalf("st down: %v\n%s", err, out)
	}
	for command, want := range map[string]string{
		"tmux kill-session -t other": "st is not running",
		"kill 424242":                "st is not running",
		"kill %1":                    "",
		"tmux ls":                    "",
	} {
		deny, reason := hook(t, "claude", payload("claude", command))
		if deny != (want != "") || !strings.Contains(reason, want) {
			t.Errorf("st down, st hook claude on %q: deny=%v %q, want a refusal saying %q (none for \"\")", command, deny, reason, want)
		}
	}
}
