package real

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/testutil"
)

// TestSandboxedCodexCannotReportForAnother (issue 23, item 6, at the
// report queue): Codex's sandbox refuses st's socket, so st worker done
// inside it queues the report in the temp folder, which every sandboxed
// Codex may write, and the agent's hook hands it to st. A Codex worker in
// its default sandbox (workspace-write: /tmp writable, no sockets) queues
// reports for two other workers' panes, a sim and a Codex of the same
// coordinator, all three in one workspace: neither one's hooks may hand
// them in (on the code before, the next hooks of both did, and the
// coordinator read "forged by codex" as their reports). Each one's own
// report still arrives: the forger's, queued from its sandbox, and the
// other Codex's, queued from its own sandbox while the forged one waits
// beside it.
func TestSandboxedCodexCannotReportForAnother(t *testing.T) {
	r := newRig(t)
	r.installHooks()
	// The queue in the test's own temp folder (st-UID under $TMPDIR), not
	// the machine's /tmp: the forged reports stay there, unclaimed.
	tmp := filepath.Join(r.dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	r.tmuxMust("set-environment", "-g", "TMPDIR", tmp)
	idle := r.writeTask("victim.md", "answer: waiting\n")
	victim := strings.Fields(r.stMust("worker", "start", "--agent", "sim", "--task", idle, "--name", "victim"))[0]
	ready := r.writeTask("coder.md", "SAY: ready for more.\n")
	coder := strings.Fields(r.stMust("worker", "start", "--agent", "codex", "--task", ready, "--name", "coder"))[0]
	r.waitTurn(t, "coder", "ready for more.")

	forge := func(pane string) string {
		return "RUN: TMUX_PANE=" + pane + " " + r.st + " worker done --summary \"forged by codex\""
	}
	task := r.writeTask("forger.md", strings.Join([]string{"Report for two other workers, then for yourself.",
		forge(victim), forge(coder), "RUN: " + r.st + " worker done --summary \"the forger's own report\"", "SAY: reported three times."}, "\n")+"\n")
	r.stMust("worker", "start", "--agent", "codex", "--task", task, "--name", "forger")
	r.waitTurn(t, "forger", "reported three times.")
	if n := strings.Count(r.toolOutputs(), "queued: a sandbox keeps this command from reaching st, so the report waits in "+tmp+"/"); n != 3 {
		t.Fatalf("%d of the forger's reports were queued by its sandbox in %s, want 3 (the test needs the queue):\n%s", n, tmp, r.toolOutputs())
	}

	// The victims' next hooks: a person types into each, and their turns
	// end (the Codex one runs a command: every hook of a tool call fires).
	r.stMust("worker", "send", victim, "hello-from-a-person")
	r.stMust("worker", "send", coder, "RUN: echo still-working SAY: not done yet.")
	r.waitTurn(t, "coder", "not done yet.")
	testutil.WaitFor(t, 60*time.Second, func() (bool, string) {
		v := r.read(victim)
		return v.LastAnswer == "Received: hello-from-a-person", "the sim's turn did not end: " + v.LastAnswer
	})
	for _, id := range []string{victim, coder} {
		if v := r.read(id); v.State == "done" || v.Summary != "" {
			t.Errorf("%s's hooks handed in the report a sandboxed Codex forged for it: %+v\n%s", id, v, r.daemonLog())
		}
	}
	if v := r.read("forger"); v.State != "done" || v.Summary != "the forger's own report" {
		t.Errorf("the sandboxed Codex's own report did not arrive: %+v\n%s", v, r.daemonLog())
	}

	// The other Codex's own report, from its own sandbox.
	r.stMust("worker", "send", coder, "RUN: "+r.st+" worker done --summary \"the coder's own report\" SAY: reported.")
	r.waitTurn(t, "coder", "reported.")
	if v := r.read(coder); v.State != "done" || v.Summary != "the coder's own report" {
		t.Errorf("the other Codex's own report did not arrive: %+v\n%s", v, r.daemonLog())
	}
}

// waitTurn waits up to 2.5 minutes for the fake model to give answer to
// the worker named window, then for st to see its turn end (st worker
// wait: done, or idle with no report, which exits 2).
func (r *rig) waitTurn(t *testing.T, window, answer string) {
	t.Helper()
	testutil.WaitFor(t, 150*time.Second, func() (bool, string) {
		for _, q := range r.fake.Requests() {
			if q.Answer == answer {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%s never answered %q:\n%s\n%s", window, answer, r.capture("main:"+window), r.daemonLog())
	})
	if o, e, code := r.st1("worker", "wait", window, "--timeout", "60s"); code != 0 && code != 2 {
		t.Fatalf("st worker wait %s: exit %d\n%s%s", window, code, o, e)
	}
}
