package real

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/testutil"
)

// TestSandboxedCodexCannotReportForAnother (issue 23, item 6, at the
// report queue): Codex's sandbox refuses st's socket, so st worker done
// inside it queues the report in the temp folder, which every sandboxed
// Codex may write, and the agent's next hook hands it to st. A Codex
// worker in its default sandbox (workspace-write: /tmp writable, no
// sockets) queues a report for another worker's pane (a sim, started by a
// person): that worker's next hook must not hand it in. Its own report
// still arrives.
//
// In the same sandbox it also looks for other agents' environments
// (where st keeps each worker's seal) in /proc: measured, Codex 0.171.0
// runs its commands in a PID namespace of their own, so no other
// process is there to read.
func TestSandboxedCodexCannotReportForAnother(t *testing.T) {
	r := newRig(t)
	r.installHooks()
	idle := r.writeTask("victim.md", "answer: waiting\n")
	victim := strings.Fields(r.stMust("worker", "start", "--agent", "sim", "--task", idle, "--name", "victim"))[0]

	task := r.writeTask("forger.md", strings.Join([]string{
		"Report for another worker, then for yourself.",
		"RUN: TMUX_PANE=" + victim + " " + r.st + " worker done --summary \"forged by codex\"",
		"RUN: cat /proc/[0-9]*/environ | tr '\\0' '\\n' | grep ST_REPORT_SEAL; ls /proc | grep -c '^[0-9]'",
		"RUN: " + r.st + " worker done --summary \"the forger's own report\"",
		"SAY: reported twice.",
	}, "\n")+"\n")
	if o, e, code := r.st1("worker", "start", "--agent", "codex", "--task", task, "--name", "forger"); code != 0 {
		t.Fatalf("st worker start codex: exit %d\n%s%s\n%s\n%s", code, o, e, r.capture("main:forger"), r.daemonLog())
	}
	if o, e, code := r.st1("worker", "wait", "forger", "--timeout", "150s"); code != 0 {
		t.Fatalf("st worker wait forger: exit %d\n%s%s\n%s\n%s", code, o, e, r.capture("main:forger"), r.daemonLog())
	}
	outputs := r.toolOutputs()
	if !strings.Contains(outputs, "queued: a sandbox keeps this command from reaching st") {
		t.Fatalf("the forger's st worker done was not queued by its sandbox (the test needs the queue):\n%s", outputs)
	}

	// The victim's next hook: a person types into it, and its turn ends.
	r.stMust("worker", "send", victim, "hello-from-a-person")
	testutil.WaitFor(t, 60*time.Second, func() (bool, string) {
		v := r.read(victim)
		return v.LastAnswer == "Received: hello-from-a-person", "the victim's turn did not end: " + v.LastAnswer
	})
	if v := r.read(victim); v.State == "done" || strings.Contains(v.Summary, "forged") {
		t.Errorf("the victim's hook handed in the report the sandboxed Codex forged: %+v", v)
	}
	if v := r.read("forger"); v.State != "done" || v.Summary != "the forger's own report" {
		t.Errorf("the sandboxed Codex's own report did not arrive: %+v\n%s", v, r.daemonLog())
	}

	// What its sandbox could read of the others: its own seal at most,
	// never the victim's.
	pid := strings.TrimSpace(r.tmuxMust("display-message", "-p", "-t", victim, "#{pane_pid}"))
	env, err := os.ReadFile("/proc/" + pid + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	seal := regexp.MustCompile(`ST_REPORT_SEAL=([^\x00]+)`).FindSubmatch(env)
	if seal == nil {
		t.Fatalf("st started the victim with no seal in its environment:\n%s", strings.ReplaceAll(string(env), "\x00", "\n"))
	}
	if strings.Contains(outputs, string(seal[1])) {
		t.Errorf("the sandboxed Codex read the victim's seal:\n%s", outputs)
	}
	t.Logf("what the forger's sandbox saw of /proc:\n%s", outputs)
}
