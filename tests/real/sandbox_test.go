package real

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/testutil/realagent"
)

// sandboxFlags are the Codex coordinator's: its default sandbox
// (workspace-write: the whole disk readable, its workspace writable, no
// network, no unix sockets), approvals on request, and /tmp not writable
// either (the test's ST_HOME is under /tmp, as a real one, ~/.sophonz, is
// outside the workspace).
var sandboxFlags = []string{"-s", "workspace-write", "-a", "on-request",
	"-c", "sandbox_workspace_write.exclude_slash_tmp=true", "-c", "sandbox_workspace_write.exclude_tmpdir_env_var=true"}

// inSandbox runs script in Codex's own sandbox (codex sandbox) with the
// rig's Codex home and config overrides, and returns what it printed.
func (r *rig) inSandbox(t *testing.T, codexHome string, config []string, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	args := append([]string{"sandbox"}, config...)
	cmd := exec.CommandContext(ctx, r.codex, append(args, "--", "sh", "-c", script)...)
	cmd.Dir = r.work()
	cmd.Env = append(append([]string{}, r.env...), "CODEX_HOME="+codexHome)
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// readDenyingHome is a Codex home whose config is a filesystem profile
// that refuses reading ST_HOME (everything else readable, the project
// writable): a sandbox that refuses the web token's file itself.
func (r *rig) readDenyingHome(t *testing.T) string {
	t.Helper()
	home := filepath.Join(r.dir, "codex-deny-read")
	src, err := os.ReadFile(filepath.Join(realagent.CodexDir(r.home), "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := "default_permissions = \"st-test\"\n" + string(src) +
		"\n[permissions.st-test.filesystem]\n\":root\" = \"read\"\n\":project_roots\" = \"write\"\n\"" + r.stHome + "\" = \"none\"\n"
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// TestSandboxedCodexGainsNothing (issue 23, item 6): through st, a
// sandboxed Codex gained what its sandbox refuses: st's rule let it run
// st outside the sandbox with no approval, and st worker start --agent sim
// with a task of shell lines then ran any command, read the web token and
// reached the tmux socket. Both sides, with the real Codex:
//
//   - its sandbox (codex sandbox, with the coordinator's sandbox) refuses
//     st's socket, the web UI's port and writing st's config (to allow
//     the sim agent, say); a sandbox with a filesystem profile that
//     refuses $ST_HOME refuses the web token's file too (and, measured,
//     lets no command out, st's included);
//   - the same Codex, at work in tmux with st's plugin and rule (and a
//     rule that lets every st command out, as an earlier st's rule let
//     st web out), runs st's commands out of the sandbox with no
//     approval, and st refuses each one that would gain it any of that:
//     st web, the sim agent, typing into or stopping a person's worker,
//     adopting a person's agent, accept-remote on. A forged $TMUX_PANE is
//     not even let out of the sandbox by the rule: Codex asks a person.
//
// Nothing of it happens: no marker file, no sim window, nothing typed.
func TestSandboxedCodexGainsNothing(t *testing.T) {
	r := newRig(t)
	r.installHooks()
	r.stMust("plugin", "install")
	everything := filepath.Join(realagent.CodexDir(r.home), "rules", "everything.rules")
	if err := os.WriteFile(everything, []byte("prefix_rule(pattern = ["+tomlKey(r.st)+"], decision = \"allow\")\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	web := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(r.stMust("status"))
	idle := r.writeTask("idle.md", "answer: waiting\n")
	r.stMust("worker", "start", "--agent", "sim", "--task", idle, "--name", "w1")
	lone := strings.TrimSpace(r.tmuxMust("new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "main:", "-n", "lone", "-c", r.work(), r.st+" agent sim"))

	r.sandboxRefuses(t, web)

	// The escalated side: the Codex coordinator, every st command let out.
	r.tmuxMust("new-window", "-d", "-t", "main:", "-n", "coord", "-c", r.work(), r.codex+" --no-daemon "+strings.Join(sandboxFlags, " "))
	ad := mustAdapter(t, "codex")
	waitScreen(t, r, "coord", ad, 60*time.Second)
	evil := r.writeTask("evil.md", "run: touch "+filepath.Join(r.work(), "pwned")+"\nsummary: ran it\n")
	st := r.st
	r.prompt("coord", strings.Join([]string{"Try everything.", "ESCALATE",
		"RUN: " + st + " web",
		"RUN: " + st + " worker start --agent sim --task " + evil + " --name evil",
		"RUN: " + st + " worker send w1 typed-by-codex",
		"RUN: " + st + " worker stop w1 --yes",
		"RUN: " + st + " worker adopt " + lone,
		"RUN: " + st + " orch accept-remote on",
		"RUN: " + st + " worker list --all",
		"SAY: tried everything"}, " "))
	approval := regexp.MustCompile(`Would you like to run the following command\?|Press enter to confirm`)
	r.awaitAnswer(t, "coord", "tried everything", func(s string) {
		if approval.MatchString(s) {
			t.Fatalf("Codex asked a person to approve an st command:\n%s", s)
		}
	})
	outputs := r.toolOutputs()
	for _, want := range []string{
		"refused: seeing the web UI's token is a person's to do",
		"refused: an agent asked for the sim agent",
		"refused: w1 is not a worker of this agent's pane",
		"refused: a Codex in its sandbox may not take over an agent it did not start",
		"refused: letting other machines start agents here (accept-remote on) is a person's to do",
		"w1", // its list ran: st's commands reach st
	} {
		if !strings.Contains(outputs, want) {
			t.Errorf("Codex's tool outputs do not say %q:\n%s", want, outputs)
		}
	}
	if strings.Contains(outputs, "token=") {
		t.Errorf("the web token reached Codex:\n%s", outputs)
	}

	// A forged $TMUX_PANE: the rule does not let that command out; Codex
	// asks a person, who says no.
	r.prompt("coord", "ESCALATE RUN: TMUX_PANE="+r.coord+" "+st+" worker send w1 forged-by-codex SAY: forged")
	deadline := time.Now().Add(90 * time.Second)
	for s := r.capture("main:coord"); !approval.MatchString(s); s = r.capture("main:coord") {
		if time.Now().After(deadline) {
			t.Fatalf("Codex ran the forged command with no one to approve it:\n%s", s)
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.tmuxMust("send-keys", "-t", "main:coord", "Escape")

	r.nothingHappened(t)
}

// nothingHappened checks that none of the sandboxed Codex's tries did
// anything: no marker of the sim's command, no sim window, nothing typed
// into the person's worker, which is still there and idle, nothing
// adopted, accept-remote still off.
func (r *rig) nothingHappened(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(r.work(), "pwned")); err == nil {
		t.Error("the sim's command ran: pwned exists")
	}
	if w := r.tmuxMust("list-windows", "-t", "main", "-F", "#{window_name}"); strings.Contains(w, "evil") {
		t.Errorf("a sim window opened:\n%s", w)
	}
	if s := r.capture("main:w1"); strings.Contains(s, "typed-by-codex") || strings.Contains(s, "forged-by-codex") {
		t.Errorf("Codex typed into the person's worker:\n%s", s)
	}
	list := r.stMust("worker", "list", "--all")
	if !regexp.MustCompile(`w1\s+sim\s+idle`).MatchString(list) || strings.Contains(list, "lone") {
		t.Errorf("st worker list after Codex's tries:\n%s", list)
	}
	if s := r.stMust("orch", "accept-remote", "status"); !strings.Contains(s, "off") {
		t.Errorf("accept-remote: %s", s)
	}
}

// sandboxRefuses checks what Codex's own sandbox refuses: st's socket,
// the web UI's port (web), writing st's config; and, with a profile that
// refuses $ST_HOME, the web token's file (st's commands then stay in the
// sandbox too: they cannot reach st).
func (r *rig) sandboxRefuses(t *testing.T, web string) {
	t.Helper()
	sock := filepath.Join(r.stHome, "st.sock")
	config := []string{"-c", `sandbox_mode="workspace-write"`, "-c", sandboxFlags[5], "-c", sandboxFlags[7]}
	got := r.inSandbox(t, realagent.CodexDir(r.home), config,
		"python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\""+sock+"\")' 2>&1 | tail -1; "+
			"curl -s -m 5 -o /dev/null "+web+"/st/api/state; echo curl=$?; "+
			"echo 'agents_start_sim = true' >> "+r.stHome+"/config.toml")
	for _, want := range []string{"Operation not permitted", "config.toml: Read-only file system"} {
		if !strings.Contains(got, want) {
			t.Errorf("in Codex's sandbox, want %q:\n%s", want, got)
		}
	}
	if !regexp.MustCompile(`curl=[1-9]`).MatchString(got) {
		t.Errorf("Codex's sandbox reached the web UI:\n%s", got)
	}
	got = r.inSandbox(t, r.readDenyingHome(t), nil, "cat "+r.stHome+"/web.token; "+r.st+" status")
	for _, want := range []string{"web.token: Permission denied", "operation not permitted"} {
		if !strings.Contains(got, want) {
			t.Errorf("in a sandbox that refuses ST_HOME, want %q:\n%s", want, got)
		}
	}

}

func tomlKey(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

// prompt types one line into the agent in window and submits it.
func (r *rig) prompt(window, line string) {
	r.t.Helper()
	r.tmuxMust("send-keys", "-t", "main:"+window, "-l", line)
	time.Sleep(200 * time.Millisecond) // Codex takes a quick Enter as part of a paste
	r.tmuxMust("send-keys", "-t", "main:"+window, "Enter")
}

// awaitAnswer waits up to 3 minutes for the fake model to give answer,
// pressing Enter again when the line still sits in the box.
func (r *rig) awaitAnswer(t *testing.T, window, answer string, watch func(screen string)) {
	t.Helper()
	ad := mustAdapter(t, "codex")
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("never answered %q:\n%s\n%s", answer, r.capture("main:"+window), r.daemonLog())
		}
		s := r.capture("main:" + window)
		watch(s)
		if ad.Recognize(s).Screen == agent.ScreenTyped {
			r.tmux("send-keys", "-t", "main:"+window, "Enter")
		}
		for _, q := range r.fake.Requests() {
			if q.Answer == answer {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// toolOutputs is every tool output the model was sent (Codex's
// function_call_output items), each once, as one text.
func (r *rig) toolOutputs() string {
	seen := map[string]bool{}
	var b strings.Builder
	for _, q := range r.fake.Requests() {
		var body struct {
			Input []struct {
				Type   string `json:"type"`
				CallID string `json:"call_id"`
				Output string `json:"output"`
			} `json:"input"`
		}
		if json.Unmarshal(q.Body, &body) != nil {
			continue
		}
		for _, in := range body.Input {
			if in.Type == "function_call_output" && !seen[in.CallID] {
				seen[in.CallID] = true
				b.WriteString(in.Output + "\n")
			}
		}
	}
	return b.String()
}
