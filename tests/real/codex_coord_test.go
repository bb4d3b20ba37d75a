package real

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/agent"
)

// TestCodexCoordinatorHandsFree: a real Codex in its default sandbox
// (workspace-write, approvals on request), with st's plugin installed (so
// its rule for st's absolute path is in $CODEX_HOME/rules), asked once,
// runs st orch start, starts a Codex and a Claude worker, waits and reads
// both reports, each st command escalated as the skill says, and nobody
// approves anything: no approval prompt ever shows on its screen, and its
// answer holds both workers' summaries.
func TestCodexCoordinatorHandsFree(t *testing.T) {
	r := newRig(t)
	r.installHooks()
	r.stMust("plugin", "install")
	rule := filepath.Join(r.home, ".codex", "rules", "sophonz.rules")
	if b, err := os.ReadFile(rule); err != nil || !strings.Contains(string(b), r.st) {
		t.Fatalf("st plugin install wrote no rule for %s in %s: %v\n%s", r.st, rule, err, b)
	}
	cx := r.writeTask("api-tests.md", fmt.Sprintf("RUN: echo tests > api-tests.txt\nRUN: %s worker done --summary \"codex wrote api-tests.txt\"\nSAY: API tests written.\n", r.st))
	cl := r.writeTask("readme.md", fmt.Sprintf("RUN: echo readme > readme.txt\nRUN: %s worker done --summary \"claude tidied readme.txt\"\nSAY: README tidied.\n", r.st))
	r.tmuxMust("new-window", "-d", "-t", "main:", "-n", "coord", "-c", r.work(),
		r.codex+" --no-daemon -s workspace-write -a on-request")
	ad := mustAdapter(t, "codex")
	waitScreen(t, r, "coord", ad, 60*time.Second)
	st := r.st
	// ESCALATE: every command of this turn asks to leave the sandbox, as
	// the sophonz-orchestrate skill tells Codex to do with st's commands.
	prompt := strings.Join([]string{
		"Give the API tests to Codex and the README to Claude, then check both and tell me.",
		"ESCALATE",
		"RUN: " + st + " orch start --objective 'API tests and README'",
		"RUN: " + st + " worker start --agent codex --task " + cx + " --name api-tests",
		"RUN: " + st + " worker start --agent claude --task " + cl + " --name readme",
		"RUN: " + st + " worker wait --timeout 100s",
		"RUN: " + st + " worker read api-tests",
		"RUN: " + st + " worker read readme",
		"SAY: Both workers are done: {summaries}",
	}, " ")
	r.tmuxMust("send-keys", "-t", "main:coord", "-l", prompt)
	time.Sleep(200 * time.Millisecond) // Codex takes a quick Enter as part of a paste
	r.tmuxMust("send-keys", "-t", "main:coord", "Enter")

	approval := regexp.MustCompile(`Would you like to run the following command\?|You approved|Press enter to confirm`)
	deadline := time.Now().Add(4 * time.Minute)
	var answer string
	for answer == "" {
		if time.Now().After(deadline) {
			t.Fatalf("the coordinator never answered:\n%s\n%s", r.capture("main:coord"), r.daemonLog())
		}
		screen := r.capture("main:coord")
		if v := ad.Recognize(screen); v.Screen == agent.ScreenPrompt || approval.MatchString(screen) {
			t.Fatalf("the Codex coordinator asked a person to approve a command:\n%s", screen)
		}
		if v := ad.Recognize(screen); v.Screen == agentTyped() {
			r.tmux("send-keys", "-t", "main:coord", "Enter")
		}
		for _, q := range r.fake.Requests() {
			if strings.HasPrefix(q.Answer, "Both workers are done:") {
				answer = q.Answer
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, want := range []string{"codex wrote api-tests.txt", "claude tidied readme.txt"} {
		if !strings.Contains(answer, want) {
			t.Errorf("the coordinator's answer %q lacks %q", answer, want)
		}
	}
	// Every st command of the coordinator went out escalated, and reached st.
	var calls int
	for _, q := range r.fake.Requests() {
		if !strings.HasPrefix(q.Prompt, "Give the API tests") {
			continue // a worker's turn, or Codex's title request
		}
		for _, c := range q.Calls {
			if strings.HasPrefix(c.Command, st+" ") {
				calls++
				if !c.Escalated {
					t.Errorf("not escalated: %s", c.Command)
				}
			}
		}
	}
	if calls < 6 {
		t.Errorf("the coordinator ran %d st commands, want 6", calls)
	}
	coord := strings.TrimSpace(r.tmuxMust("display-message", "-p", "-t", "main:coord", "#{pane_id}"))
	out, _, _ := r.stIn(coord, "orch", "show")
	if !regexp.MustCompile(`api-tests +codex +done`).MatchString(out) || !regexp.MustCompile(`readme +claude +done`).MatchString(out) {
		t.Errorf("st orch show in the coordinator's pane:\n%s", out)
	}
	if s := r.capture("main:coord"); approval.MatchString(s) || !strings.Contains(s, "Both workers are done") {
		t.Errorf("the coordinator's screen at the end:\n%s", s)
	}
}
