package browser

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/testutil/fakemodel"
	"github.com/sophonz/st/internal/testutil/realagent"
)

// kindMark is what the page draws of a worker's kind: the icon, and the
// title a person reads when pointing at it.
type kindMark struct{ Icon, Title string }

// toyKind is the agent a person described in config.toml for
// TestKindIconsInBrowser: a shell script with no hooks (as
// testdata/script/described.txtar's), its title and icon its own.
const toyKind = `[agents.toy]
title = "Toy agent"
icon = "▲"
program = "%s"
ready = ["toy> "]
busy = ["working on it"]
`

const toyScript = `#!/bin/sh
# A toy agent: a prompt, a line of work, a report through st; no hooks.
while :; do
  printf 'toy> '
  IFS= read -r line || exit 0
  [ -n "$line" ] || continue
  echo "working on it"
  task=$(printf '%s\n' "$line" | sed -n 's/^Your task is in the file \([^ ]*\) - .*/\1/p')
  [ -z "$task" ] || st worker done --summary "toy ok" >/dev/null
  echo "done: $line"
done
`

// TestKindIconsInBrowser (issue 33, item 4): the real daemon with a
// coordinator (a sim agent) and a worker of each kind: the real Claude
// Code, Codex, Gemini CLI and opencode (offline against the fake model
// server), and an agent a person described in config.toml. The graph's
// cards, the Agents card beside a terminal and the phone's chart draw
// each worker with its kind's icon and, on it, its kind's title: st's
// own kinds' from their descriptions (agent.Kind), the described one's
// from config.toml.
func TestKindIconsInBrowser(t *testing.T) {
	r, want := kindsEnv(t)
	r.coord = r.handAgent("boss", "I coordinate here")
	r.waitScreen(r.coord, `Received: I coordinate here`, 30*time.Second)
	url := regexp.MustCompile(`http://127\.0\.0\.1:\d+/\S*token=\S+`).FindString(r.webURL())
	if url == "" {
		t.Fatal("st web printed no URL with its token")
	}
	panes := r.startKinds(t, want)
	if list := r.st("worker", "list"); !kindsListed(list, panes) {
		t.Errorf("st worker list does not name each worker's kind:\n%s", list)
	}

	ctx := newBrowser(t, 1440, 900)
	do(t, ctx, chromedp.Navigate(url))
	waitJS(t, ctx, `document.querySelector("#agents-btn") !== null`, 30*time.Second)
	do(t, ctx, chromedp.Click("#agents-btn"))
	waitJS(t, ctx, fmt.Sprintf(`!document.querySelector("#graph").hidden && document.querySelectorAll("#graph .agent-card").length === %d`, len(panes)+1), 60*time.Second)
	checkKindMarks(t, ctx, "the graph", func(pane string) string { return agentCard("#graph", pane) + " .gc-head .kind" }, panes, want)
	screenshot(t, ctx, "web-graph-kinds.png")

	// The Agents card, at the top right of a worker's terminal.
	do(t, ctx, chromedp.Click(agentCard("#graph", panes["codex"])+" .gc-name"))
	waitJS(t, ctx, fmt.Sprintf(`!document.querySelector("#agents-card").hidden && document.querySelectorAll("#agents-card .ac-row").length === %d`, len(panes)+1), 30*time.Second)
	checkKindMarks(t, ctx, "the Agents card", func(pane string) string { return fmt.Sprintf(`#agents-card .ac-row[data-key=%q] .kind`, pane) }, panes, want)
	screenshot(t, ctx, "web-agents-card-kinds.png")

	phone := newBrowser(t, 390, 844)
	do(t, phone, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile), chromedp.Navigate(url))
	waitJS(t, phone, fmt.Sprintf(`document.querySelectorAll("#chart-tree .agent-card").length === %d`, len(panes)+1), 30*time.Second)
	checkKindMarks(t, phone, "the phone's chart", func(pane string) string { return agentCard("#chart-tree", pane) + " .gc-head .kind" }, panes, want)
	screenshot(t, phone, "web-phone-kinds.png")
}

// kindsEnv is the real daemon's environment for TestKindIconsInBrowser:
// the four real agents' settings in one HOME, pointed at a fake model
// server, st's hooks installed for each, and the toy described in
// config.toml. It returns the marks each worker's kind should have.
func kindsEnv(t *testing.T) (*realEnv, map[string]kindMark) {
	r := newRealEnv(t)
	claude, codex := realagent.Binaries(t)
	gemini, opencode := realagent.Gemini(t), realagent.Opencode(t)
	fake := fakemodel.Start(t)
	home := filepath.Join(r.dir, "a")
	var env []string
	env = append(env, realagent.ClaudeHome(t, home, fake.URL(), r.work)...)
	env = append(env, realagent.CodexHome(t, home, fake.URL(), r.work)...)
	env = append(env, realagent.GeminiHome(t, home, fake.URL(), r.work)...)
	env = append(env, realagent.OpencodeHome(t, home, fake.URL())...)
	realagent.MergeClaudeSettings(t, home, map[string]any{"permissions": map[string]any{"allow": []string{"Bash"}}})
	env = append(env, "ST_CLAUDE_BIN="+claude, "ST_CODEX_BIN="+codex, "ST_GEMINI_BIN="+gemini, "ST_OPENCODE_BIN="+opencode,
		// Gemini asks before a command with a redirection otherwise;
		// opencode draws its box slowly on a loaded machine (as tests/real's rig).
		"ST_GEMINI_PERMISSION_MODE=yolo", "ST_BLOCKED_TIMEOUT=240s", "ST_HOOK_TIMEOUT=120s")
	r.extra = env
	toy := filepath.Join(r.work, "toy.sh")
	if err := os.WriteFile(toy, []byte(toyScript), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(r.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.home, "config.toml"), []byte(fmt.Sprintf(toyKind, toy)), 0o600); err != nil {
		t.Fatal(err)
	}
	r.start(env...)
	r.st("hooks", "install")
	want := map[string]kindMark{"toy": {"▲", "Toy agent"}}
	for _, k := range []string{"claude", "codex", "gemini", "opencode"} {
		kd, err := agent.Lookup(k)
		if err != nil {
			t.Fatal(err)
		}
		want[k] = kindMark{kd.Icon, kd.Title}
	}
	return r, want
}

// startKinds starts a worker of each kind of want from the coordinator's
// pane, all at once (each start returns once its task is in), each with a
// task that reports at once, and returns their panes by kind.
func (r *realEnv) startKinds(t *testing.T, want map[string]kindMark) map[string]string {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	panes, errs := map[string]string{}, []string{}
	for kind := range want {
		text := fmt.Sprintf("RUN: %s worker done --summary \"%s ok\"\nSAY: done\n", r.bin, kind)
		task := filepath.Join(r.work, kind+".md")
		if err := os.WriteFile(task, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(r.bin, "worker", "start", "--agent", kind, "--task", task, "--name", kind+"-1")
			cmd.Dir, cmd.Env = r.work, r.env(r.coord)
			out, err := cmd.CombinedOutput()
			mu.Lock()
			defer mu.Unlock()
			if f := strings.Fields(string(out)); err == nil && len(f) == 2 && f[1] == kind+"-1" {
				panes[kind] = f[0]
			} else {
				errs = append(errs, fmt.Sprintf("st worker start --agent %s: %v\n%s", kind, err, out))
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%s\n%s", strings.Join(errs, "\n"), r.st("worker", "list"))
	}
	return panes
}

// kindsListed reports whether st worker list has a line for each worker
// with its kind after its name.
func kindsListed(list string, panes map[string]string) bool {
	for kind, pane := range panes {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(pane) + ` +` + kind + `-1 +` + kind + ` `).MatchString(list) {
			return false
		}
	}
	return true
}

// checkKindMarks checks the icon and its title that sel(pane) finds for
// each worker in one view of the page.
func checkKindMarks(t *testing.T, ctx context.Context, view string, sel func(pane string) string, panes map[string]string, want map[string]kindMark) {
	t.Helper()
	for kind, pane := range panes {
		got := run(t, ctx, chromedp.Evaluate[[]kindMark](fmt.Sprintf(
			`[...document.querySelectorAll(%q)].map(e => ({Icon: e.innerText, Title: e.title}))`, sel(pane))))
		if len(got) != 1 || got[0] != want[kind] {
			t.Errorf("%s draws the %s worker (%s) with %+v, want %+v", view, kind, pane, got, want[kind])
		}
	}
}
