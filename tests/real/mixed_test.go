package real

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/testutil"
)

// TestMixedTeam (issue 33, item 4): one run whose parts go to a Codex, a
// Gemini CLI and an opencode worker, each in a git worktree of its own;
// the opencode part depends on the Codex part; a gate asks the person
// before the run ends. The coordinator is scripted: the st commands a
// Claude coordinator runs through its shell tool, run from the
// coordinator's pane (TestMixedTeamClaudeCoordinator has a real Claude
// run them). st worker list says each worker's kind, and the dependency
// holds: the opencode worker starts only once the Codex part is done.
func TestMixedTeam(t *testing.T) {
	r := newRig(t)
	r.installHooks()
	repo, parts := r.mixedParts("")
	start := time.Now()
	r.stMust("orch", "start", "--objective", "API by Codex, UI by Gemini, docs by opencode after the API")
	r.stMust("task", "create", "api", "--agent", "codex", "--task", filepath.Join(r.dir, "api.md"), "--worktree")
	r.stMust("task", "create", "ui", "--agent", "gemini", "--task", filepath.Join(r.dir, "ui.md"), "--worktree")
	r.stMust("task", "create", "docs", "--agent", "opencode", "--task", filepath.Join(r.dir, "docs.md"), "--worktree", "--deps", "api")
	if early := r.waitTasksDone(t, "docs", "api"); early != "" {
		t.Error(early)
	}
	t.Logf("three parts done in %s", time.Since(start).Round(time.Second))

	// st worker list says each one's kind.
	list := r.stMust("worker", "list")
	for name, kind := range parts {
		if !regexp.MustCompile(`\b` + name + `\S* +` + kind + ` +done\b`).MatchString(list) {
			t.Errorf("st worker list does not show %s as a done %s worker:\n%s", name, kind, list)
		}
	}
	checkPartsInWorktrees(t, repo, parts)
	r.gateAnswered(t, "Merge the three parts?", "merge", "hold")
}

// mixedParts makes the work folder a git repository and writes the task
// files of the mixed team's three parts (outside the repository, so that
// no worktree starts with them): each writes part-NAME.txt and reports
// "KIND wrote part-NAME.txt"; the api part first waits for the file
// hold, when one is named. It returns the repository and the parts'
// kinds by name.
func (r *rig) mixedParts(hold string) (string, map[string]string) {
	t := r.t
	t.Helper()
	repo := r.work()
	gitIn(t, repo, "init", "-q", "-b", "main")
	gitIn(t, repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "init")
	parts := map[string]string{"api": "codex", "ui": "gemini", "docs": "opencode"}
	for name, kind := range parts {
		text := ""
		if name == "api" && hold != "" {
			text = "RUN: while [ ! -e " + hold + " ]; do sleep 0.2; done\n"
		}
		text += fmt.Sprintf("RUN: echo made-by-%s > part-%s.txt\nRUN: %s worker done --summary \"%s wrote part-%s.txt\"\nSAY: %s part done.\n",
			kind, name, r.st, kind, name, name)
		if err := os.WriteFile(filepath.Join(r.dir, name+".md"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return repo, parts
}

func gitIn(t testing.TB, repo string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v %s", args, err, out)
	}
	return string(out)
}

// waitTasksDone polls st task list --json until every task of the run is
// done, failing at once when one failed or was cancelled; it returns what
// went wrong with the order (task after started while dep was not done),
// or "".
func (r *rig) waitTasksDone(t *testing.T, after, dep string) string {
	t.Helper()
	type taskView struct{ Name, Agent, State, Worker string }
	var early string
	testutil.WaitFor(t, 10*time.Minute, func() (bool, string) {
		var ts []taskView
		out := r.stMust("task", "list", "--json")
		if err := json.Unmarshal([]byte(out), &ts); err != nil {
			t.Fatalf("st task list --json: %v\n%s", err, out)
		}
		by := map[string]taskView{}
		done := true
		for _, tv := range ts {
			by[tv.Name] = tv
			done = done && tv.State == "done"
			if tv.State == "failed" || tv.State == "cancelled" {
				// It never gets done: say so now, not at the deadline.
				t.Fatalf("task %s %s:\n%s\n%s\n%s", tv.Name, tv.State, out, r.screens(""), r.daemonLog())
			}
		}
		if by[after].Worker != "" && by[dep].State != "done" && early == "" {
			early = fmt.Sprintf("the %s worker started while the %s task was %s", after, dep, by[dep].State)
		}
		l, _, _ := r.st1("worker", "list")
		return done && len(ts) > 0, fmt.Sprintf("the tasks never all got done:\n%s\nst worker list:\n%s\n%s\n%s", out, l, r.screens(""), r.daemonLog())
	})
	return early
}

// checkPartsInWorktrees: each part's file is in a worktree of its own,
// none in the repository's checkout.
func checkPartsInWorktrees(t *testing.T, repo string, parts map[string]string) {
	t.Helper()
	trees := map[string]string{}
	for _, l := range strings.Split(gitIn(t, repo, "worktree", "list", "--porcelain"), "\n") {
		if p, ok := strings.CutPrefix(l, "worktree "); ok && p != repo {
			for name, kind := range parts {
				if data, err := os.ReadFile(filepath.Join(p, "part-"+name+".txt")); err == nil && strings.TrimSpace(string(data)) == "made-by-"+kind {
					trees[name] = p
				}
			}
		}
	}
	seen := map[string]bool{}
	for name := range parts {
		if _, err := os.Stat(filepath.Join(repo, "part-"+name+".txt")); err == nil {
			t.Errorf("part %s was written in the repository, not in a worktree", name)
		}
		if trees[name] == "" {
			t.Errorf("no worktree holds part %s:\n%s", name, gitIn(t, repo, "worktree", "list"))
		} else if seen[trees[name]] {
			t.Errorf("two parts shared a worktree: %v", trees)
		}
		seen[trees[name]] = true
	}
}

// gateAnswered: the coordinator asks a gate, the person answers it with
// st gate answer, and the coordinator's st gate ask prints the answer.
func (r *rig) gateAnswered(t *testing.T, question, answer, other string) {
	t.Helper()
	asked := make(chan string, 1)
	go func() {
		out, errs, code := r.stIn(r.coord, "gate", "ask", question, "--option", answer, "--option", other, "--timeout", "3m")
		asked <- fmt.Sprintf("%d %s%s", code, out, errs)
	}()
	var id string
	testutil.WaitFor(t, 60*time.Second, func() (bool, string) {
		var gs []struct{ ID, Question string }
		out, _, _ := r.st1("gate", "list", "--json")
		if json.Unmarshal([]byte(out), &gs) == nil {
			for _, g := range gs {
				if g.Question == question {
					id = g.ID
				}
			}
		}
		return id != "", "the gate never opened:\n" + out
	})
	r.stMust("gate", "answer", id, answer)
	select {
	case got := <-asked:
		if !strings.HasPrefix(got, "0 ") || !strings.Contains(got, answer) {
			t.Errorf("st gate ask: %q", got)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("st gate ask never returned the answer")
	}
}
