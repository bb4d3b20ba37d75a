package real

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
)

// TestRealClaudeThatCannotComeBack (issue 24, item 1): after a tmux
// restart, one real Claude Code worker whose `claude --resume` cannot run
// (claude is not on st's own PATH, and no ST_CLAUDE_BIN: the worker was
// started from a shell that had them) is gone, saying why, while the sim
// workers beside it come back with their relations; st ls answers all
// the while; and st down; st up keeps every relation. Before, this one
// agent held up everything: "relink: set st's options on 3 panes:
// context deadline exceeded", then "tmux list-panes: context deadline
// exceeded" every 10 s, st ls failing, and after st down; st up every
// worker "gone ⚠ (parent gone: %0)".
func TestRealClaudeThatCannotComeBack(t *testing.T) {
	r := newRig(t)
	r.installHooks()
	// st itself runs without claude: its PATH has st and the system's
	// folders only, and no ST_CLAUDE_BIN.
	r.stMust("down")
	stEnv := withoutClaude(r.env, filepath.Dir(r.claude))
	up := r.stCmd(stEnv, "up")
	if out, err := up.CombinedOutput(); err != nil {
		t.Fatalf("st up without claude: %v\n%s", err, out)
	}
	// The person's shell has claude: the worker starts.
	r.stMust("worker", "start", "--agent", "claude", "--task", r.writeTask("c.md", "SAY: claude was here\n"), "--name", "lost")
	for _, n := range []string{"s1", "s2"} {
		r.stMust("worker", "start", "--agent", "sim", "--task", r.writeTask(n+".md", "sleep: 600s\nsummary: never\n"), "--name", n)
	}
	r.st1("worker", "wait", "lost", "--timeout", "120s")
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, _ := os.ReadFile(filepath.Join(r.stHome, "tmux-layout.json"))
		if strings.Count(string(data), `"@st_agent_session"`) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("st never kept the three conversation ids:\n%s", data)
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.tmuxMust("kill-server")

	// The sims back, the Claude gone with its reason, st ls answering.
	var slowest time.Duration
	deadline = time.Now().Add(90 * time.Second)
	for {
		t0 := time.Now()
		_, errs, code := r.st1("ls")
		slowest = max(slowest, time.Since(t0))
		if code != 0 && !strings.Contains(errs, "no server") {
			t.Errorf("st ls during the restore: exit %d %s", code, errs)
		}
		vs := r.workers()
		if vs["lost"].State == api.Gone && vs["s1"].State == api.Idle && vs["s2"].State == api.Idle {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the restart: %+v\n%s", vs, r.daemonLog())
		}
		time.Sleep(100 * time.Millisecond)
	}
	vs := r.workers()
	if !strings.Contains(vs["lost"].Error, "claude is not on st's PATH") {
		t.Errorf("the Claude that cannot come back is gone without its reason: %q", vs["lost"].Error)
	}
	for _, n := range []string{"s1", "s2"} {
		if !regexp.MustCompile(`(?m)^❯`).MatchString(r.capture(vs[n].ID)) || vs[n].ParentGone || vs[n].Parent != vs["lost"].Parent {
			t.Errorf("%s after the restart: %+v\n%s", n, vs[n], r.capture(vs[n].ID))
		}
	}
	if slowest > 5*time.Second {
		t.Errorf("st ls took %s during the restore", slowest)
	}
	// st down; st up: every relation kept.
	before := workerLines(vs)
	r.stMust("down")
	if out, err := r.stCmd(stEnv, "up").CombinedOutput(); err != nil {
		t.Fatalf("st up: %v\n%s", err, out)
	}
	if after := workerLines(r.workers()); after != before {
		t.Errorf("st down; st up changed the workers:\nbefore %s\nafter  %s", before, after)
	}
	t.Logf("the Claude gone with: %s; slowest st ls during the restore %s", vs["lost"].Error, slowest.Round(time.Millisecond))
}

// withoutClaude is env with no ST_CLAUDE_BIN and claude's folder out of
// its PATH.
func withoutClaude(env []string, claudeDir string) []string {
	var out []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "ST_CLAUDE_BIN":
			continue
		case "PATH":
			var keep []string
			for _, d := range filepath.SplitList(v) {
				if d != claudeDir {
					keep = append(keep, d)
				}
			}
			kv = "PATH=" + strings.Join(keep, string(os.PathListSeparator))
		}
		out = append(out, kv)
	}
	return out
}

// workers is st worker list --all, by name.
func (r *rig) workers() map[string]api.WorkerView {
	out, _, _ := r.st1("worker", "list", "--all", "--json")
	var vs []api.WorkerView
	json.Unmarshal([]byte(out), &vs)
	m := map[string]api.WorkerView{}
	for _, v := range vs {
		m[v.Name] = v
	}
	return m
}

func workerLines(vs map[string]api.WorkerView) string {
	var lines []string
	for _, v := range vs {
		lines = append(lines, v.Name+" "+v.ID+" "+string(v.State)+" parent="+v.Parent)
	}
	sort.Strings(lines)
	return strings.Join(lines, "; ")
}

// stCmd is st run with env as the rig's coordinator pane.
func (r *rig) stCmd(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(r.st, args...)
	cmd.Dir = r.work()
	cmd.Env = append(append([]string{}, env...), "TMUX_PANE="+r.coord, "TMUX="+r.sock+",1,0")
	return cmd
}
