package real

import (
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
// answer holds both workers' summaries. (Without the rule, it stops at
// the first command's approval prompt.)
func TestCodexCoordinatorHandsFree(t *testing.T) {
	r := newRig(t)
	r.installHooks()
	r.stMust("plugin", "install")
	rule := filepath.Join(r.home, ".codex", "rules", "sophonz.rules")
	if b, err := os.ReadFile(rule); err != nil || !strings.Contains(string(b), r.st) {
		t.Fatalf("st plugin install wrote no rule for %s in %s: %v\n%s", r.st, rule, err, b)
	}
	r.tmuxMust("new-window", "-d", "-t", "main:", "-n", "coord", "-c", r.work(),
		r.codex+" --no-daemon -s workspace-write -a on-request")
	ad := mustAdapter(t, "codex")
	waitScreen(t, r, "coord", ad, 60*time.Second)
	// ESCALATE: every command of the turn asks to leave the sandbox, as
	// the sophonz-orchestrate skill tells Codex to do with st's commands.
	r.tmuxMust("send-keys", "-t", "main:coord", "-l", r.coordPrompt("ESCALATE"))
	time.Sleep(200 * time.Millisecond) // Codex takes a quick Enter as part of a paste
	r.tmuxMust("send-keys", "-t", "main:coord", "Enter")

	approval := regexp.MustCompile(`Would you like to run the following command\?|You approved|Press enter to confirm`)
	answer := r.awaitCoordinator(t, "coord", ad, func(screen string) {
		if ad.Recognize(screen).Screen == agent.ScreenPrompt || approval.MatchString(screen) {
			t.Fatalf("the Codex coordinator asked a person to approve a command:\n%s", screen)
		}
	})
	r.checkCoordRun(t, "coord", answer)
	// Every st command of the coordinator went out escalated.
	var calls int
	for _, q := range r.fake.Requests() {
		if !strings.HasPrefix(q.Prompt, coordAsk) {
			continue // a worker's turn, or Codex's title request
		}
		for _, c := range q.Calls {
			if strings.HasPrefix(c.Command, r.st+" ") {
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
	if s := r.capture("main:coord"); approval.MatchString(s) || !strings.Contains(s, "Both workers are done") {
		t.Errorf("the coordinator's screen at the end:\n%s", s)
	}
}
