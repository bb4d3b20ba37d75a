package real

import (
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
)

// TestRealResumeByHandTakesItsWorker (issue 31, item 1): a worker's
// window closes, and a person resumes its conversation by hand in a
// window of their own (`claude --resume ID`, `codex resume ID`; Codex's
// hooks start at the person's first prompt). The real agent's own
// SessionStart, from its own process, whose command line resumes that
// conversation, takes the worker there: st lists it in the new pane and
// types into it. A hook speaks only for its own pane, and a
// worker moves only on that proof; this is the real agents giving it.
//
// Claude Code and Codex, as the issue names them: Gemini CLI outlives a
// window closed by hand (tmux's kill-window; st's own stop ends its
// process group), so its resume by hand is not this test's; opencode fires
// no event as a session starts, so nothing of its own proves where it is.
func TestRealResumeByHandTakesItsWorker(t *testing.T) {
	r := newRig(t)
	r.installHooks()
	var handKinds []string
	for _, k := range kinds(t) {
		if k == "claude" || k == "codex" {
			handKinds = append(handKinds, k)
		}
	}
	if len(handKinds) == 0 {
		t.Fatal("ST_COMPAT_KIND names no agent this test resumes by hand (claude, codex)")
	}
	for _, kind := range handKinds {
		task := r.writeTask("h-"+kind+".md", "SAY: by-hand-"+kind+"\n")
		r.stMust("worker", "start", "--agent", kind, "--task", task, "--name", "h-"+kind)
	}
	r.st1("worker", "wait", "--timeout", "120s")
	for _, kind := range handKinds {
		name := "h-" + kind
		var ses string
		deadline := time.Now().Add(30 * time.Second)
		for ses == "" {
			out, _ := r.tmux("show-options", "-p", "-v", "-t", "main:"+name, "@st_agent_session")
			ses = strings.TrimSpace(out)
			if ses == "" && time.Now().After(deadline) {
				t.Fatalf("%s: st never kept its conversation id", kind)
			}
			time.Sleep(100 * time.Millisecond)
		}
		cwd := strings.TrimSpace(r.tmuxMust("display-message", "-p", "-t", "main:"+name, "#{pane_current_path}"))
		r.tmuxMust("kill-window", "-t", "main:"+name)
		r.waitWorker(t, name, func(v api.WorkerView) bool { return v.State == api.Gone }, "gone")
		// A person resumes it by hand, as the agent printed when it exited.
		argv := []string{r.claude, "--permission-mode", "default", "--resume", ses}
		if kind == "codex" {
			argv = []string{r.codex, "resume", "--no-daemon", ses}
		}
		r.tmuxMust(append([]string{"new-window", "-d", "-t", "main:", "-n", "back-" + kind, "-c", cwd}, argv...)...)
		pane := strings.TrimSpace(r.tmuxMust("display-message", "-p", "-t", "main:back-"+kind, "#{pane_id}"))
		if kind == "codex" {
			// Codex fires its SessionStart at the first prompt, not at
			// launch (shared/reference/real-agents.md): the person types.
			ad := mustAdapter(t, kind)
			deadline = time.Now().Add(90 * time.Second)
			for r.view("back-"+kind, ad).Screen != agent.ScreenReady {
				if time.Now().After(deadline) {
					t.Fatalf("codex never showed its box resuming %s:\n%s", ses, r.capture("main:back-"+kind))
				}
				time.Sleep(200 * time.Millisecond)
			}
			r.prompt("back-"+kind, "SAY: typed-"+kind)
		}
		v := r.waitWorker(t, name, func(v api.WorkerView) bool { return v.ID == pane && v.State.Live() }, "live in "+pane)
		t.Logf("%s: %s back in %s (%s)", kind, name, v.ID, v.State)
		r.stMust("worker", "send", name, "SAY: again-"+kind)
		deadline = time.Now().Add(90 * time.Second)
		for !strings.Contains(r.capture("main:back-"+kind), "again-"+kind) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the line sent to %s never reached %s:\n%s", kind, name, pane, r.capture("main:back-"+kind))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// waitWorker waits for st worker list --all to show the worker named
// name as ok says.
func (r *rig) waitWorker(t *testing.T, name string, ok func(api.WorkerView) bool, what string) api.WorkerView {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		ws := r.workers()
		if v, found := ws[name]; found && ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never %s: %s\n%s", name, what, workerLines(ws), r.daemonLog())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
