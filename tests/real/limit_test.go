package real

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/testutil/fakemodel"
	"github.com/sophonz/st/internal/testutil/realagent"
)

// limitFor is how long the fake model keeps a worker at its usage limit:
// long enough for st to show it paused after a slow start (a busy machine
// can take half a minute to get a task into Claude), short enough to wait out.
const limitFor = 45

// subscriberEnv makes Claude a claude.ai subscriber: its token, not the
// API's.
func subscriberEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "ANTHROPIC_AUTH_TOKEN=") {
			out = append(out, kv)
		}
	}
	return append(out, "CLAUDE_CODE_OAUTH_TOKEN=dummy")
}

// TestUsageLimitPausesAndGoesOn (issue 35): the fake model answers as
// the services do at a plan's usage limit (reference §13): Claude as a
// subscriber, with its own going on turned off (autoContinueAtUsageLimit
// false), and Codex. Each worker is paused with its reset, not failed;
// after the reset st types continue once (Claude: past the menu it puts
// up, Codex: once its composer is up), the turn finishes the task, and
// the agents' screens show one continue each, with Codex's model never
// switched by a line typed into a modal.
func TestUsageLimitPausesAndGoesOn(t *testing.T) {
	r := newRigWith(t, subscriberEnv)
	r.installHooks()
	realagent.MergeClaudeSettings(t, r.home, map[string]any{"autoContinueAtUsageLimit": false})
	var ks []string
	for _, k := range kinds(t) {
		if k == "claude" || k == "codex" {
			ks = append(ks, k)
		}
	}
	if len(ks) == 0 {
		t.Skip("neither Claude nor Codex in this run")
	}
	for _, kind := range ks {
		out := "after-" + kind + ".txt"
		task := r.writeTask("limit-"+kind+".md", fmt.Sprintf(
			"Go on after the limit.\nLIMIT: %d RUN: echo went-on > %s RUN: %s worker done --summary \"went on after the limit\" SAY: I went on.\n",
			limitFor, out, r.st))
		if o, e, code := r.st1("worker", "start", "--agent", kind, "--task", task, "--name", "l-"+kind); code != 0 {
			t.Fatalf("st worker start %s: exit %d %s%s\n%s\n%s\n%s", kind, code, o, e, r.capture("main:l-"+kind), r.daemonLog(), r.fakeLog())
		}
	}
	// Paused, with its reset, in the listing.
	deadline := time.Now().Add(90 * time.Second)
	paused := map[string]bool{}
	for len(paused) < len(ks) {
		list := r.stMust("worker", "list")
		for _, kind := range ks {
			if regexp.MustCompile(`l-` + kind + `\s+` + kind + `\s+paused \(usage limit, resets ~?\d\d:\d\d`).MatchString(list) {
				paused[kind] = true
			}
			// (Not st worker read: it waits for a worker at work.)
			if regexp.MustCompile(`l-`+kind+`\s+`+kind+`\s+done`).MatchString(list) && !paused[kind] {
				t.Fatalf("%s: done without being seen paused:\n%s\n%s\n%s", kind, list, r.daemonLog(), r.fakeLog())
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every worker paused at its limit (%v):\n%s\n%s\n%s", paused, list, r.screens("l-"), r.daemonLog())
		}
		time.Sleep(300 * time.Millisecond)
	}
	// After the reset, st types continue and the task finishes.
	if o, e, code := r.st1("worker", "wait", "--timeout", "150s"); code != 0 {
		t.Fatalf("st worker wait: exit %d\n%s%s\n%s\n%s", code, o, e, r.screens("l-"), r.daemonLog())
	}
	for _, kind := range ks {
		v := r.read("l-" + kind)
		if v.State != "done" || v.Summary != "went on after the limit" {
			t.Errorf("%s: after the reset: %+v\n%s", kind, v, r.capture("main:l-"+kind))
		}
		data, err := os.ReadFile(filepath.Join(r.work(), "after-"+kind+".txt"))
		if err != nil || strings.TrimSpace(string(data)) != "went-on" {
			t.Errorf("%s did not go on with its task: %q %v", kind, data, err)
		}
		screen, _ := r.tmux("capture-pane", "-p", "-S", "-", "-t", "main:l-"+kind)
		if n := len(regexp.MustCompile(`(?m)^\s*[❯›] continue\s*$`).FindAllString(screen, -1)); n != 1 {
			t.Errorf("%s: %d continues on its screen, want 1:\n%s\n%s\n%s", kind, n, screen, r.daemonLog(), r.fakeLog())
		}
	}
	var limited int
	for _, l := range r.fake.Requests() {
		if !l.Limited.IsZero() {
			limited++
		}
		if strings.HasPrefix(l.Endpoint, "/v1/responses") && l.Model != "" && l.Model != "gpt-fake" {
			t.Errorf("Codex asked with model %q: a line went into its model-switch modal", l.Model)
		}
	}
	if limited < len(ks) {
		t.Errorf("the fake model refused %d requests at the limit, want %d or more", limited, len(ks))
	}
}

// fakeLog lists the fake model's requests, for a failure's message.
func (r *rig) fakeLog() string {
	var b strings.Builder
	b.WriteString("fake model's requests:\n")
	for _, l := range r.fake.Requests() {
		fmt.Fprintf(&b, "  %s %s %s %d limited=%v prompt=%.60q\n", l.Time.Format("15:04:05.000"), l.Method, l.Endpoint, l.Status, !l.Limited.IsZero(), l.Prompt)
	}
	return b.String()
}

// TestClaudeGoesOnByItselfAfterLimit (issue 35): a Claude subscriber
// with its own going on left on (autoContinueAtUsageLimit, the default)
// reaches its limit, which resets a few seconds later. st shows it
// paused with its reset and when Claude will go on, and does not race
// it: Claude goes on by itself 30-90 s after the reset (reference §13),
// st sees it go on, and types nothing. The turn finishes its task, and
// the model was asked to go on exactly once.
func TestClaudeGoesOnByItselfAfterLimit(t *testing.T) {
	if !hasKind(t, "claude") {
		t.Skip("Claude is not in this run")
	}
	r := newRigWith(t, subscriberEnv)
	r.installHooks()
	task := r.writeTask("limit-itself.md", fmt.Sprintf(
		"Go on after the limit.\nLIMIT: 5 RUN: echo went-on > after-itself.txt RUN: %s worker done --summary \"claude went on by itself\" SAY: I went on.\n", r.st))
	if o, e, code := r.st1("worker", "start", "--agent", "claude", "--task", task, "--name", "itself"); code != 0 {
		t.Fatalf("st worker start: exit %d %s%s\n%s\n%s", code, o, e, r.capture("main:itself"), r.daemonLog())
	}
	// Paused, with its reset and when Claude goes on by itself.
	shown := regexp.MustCompile(`itself\s+claude\s+paused \(usage limit, resets ~?\d\d:\d\d; claude goes on by itself \d\d:\d\d:\d\d-\d\d:\d\d:\d\d, st types continue at \d\d:\d\d:\d\d if not\)`)
	deadline := time.Now().Add(120 * time.Second)
	for {
		list := r.stMust("worker", "list")
		if shown.MatchString(list) {
			break
		}
		if strings.Contains(list, "done") || time.Now().After(deadline) {
			t.Fatalf("never shown paused with Claude's own going on:\n%s\n%s\n%s\n%s", list, r.capture("main:itself"), r.daemonLog(), r.fakeLog())
		}
		time.Sleep(300 * time.Millisecond)
	}
	if o, e, code := r.st1("worker", "wait", "--timeout", "240s"); code != 0 {
		t.Fatalf("st worker wait: exit %d\n%s%s\n%s\n%s\n%s", code, o, e, r.capture("main:itself"), r.daemonLog(), r.fakeLog())
	}
	v := r.read("itself")
	if v.State != "done" || v.Summary != "claude went on by itself" {
		t.Errorf("after the reset: %+v\n%s", v, r.capture("main:itself"))
	}
	if data, err := os.ReadFile(filepath.Join(r.work(), "after-itself.txt")); err != nil || strings.TrimSpace(string(data)) != "went-on" {
		t.Errorf("Claude did not go on with its task: %q %v", data, err)
	}
	log := r.daemonLog()
	if strings.Contains(log, `typing "continue"`) {
		t.Errorf("st typed continue while Claude went on by itself:\n%s", log)
	}
	if i := strings.Index(log, "claude went on by itself after its usage limit"); i < 0 {
		t.Errorf("st did not confirm that Claude went on by itself:\n%s", log)
	} else {
		line, _, _ := strings.Cut(log[i:], "\n")
		t.Logf("st's log: %s", line)
	}
	screen, _ := r.tmux("capture-pane", "-p", "-S", "-", "-t", "main:itself")
	if n := len(regexp.MustCompile(`(?m)^\s*❯ continue\s*$`).FindAllString(screen, -1)); n != 0 {
		t.Errorf("%d lines typed into Claude's box after its limit, want none:\n%s", n, screen)
	}
	if n := continuesAsked(t, r.fake.Requests(), "after-itself.txt"); n != 1 {
		t.Errorf("the model was asked to go on %d times, want 1:\n%s", n, r.fakeLog())
	}
}

// hasKind reports whether kind is among this run's agents.
func hasKind(t *testing.T, kind string) bool {
	for _, k := range kinds(t) {
		if k == kind {
			return true
		}
	}
	return false
}

// continuesAsked counts the user messages that ask to go on ("continue",
// or Claude's own "Your claude.ai usage limit has reset...") in the last
// request of the conversation whose task names mark: each request carries
// the whole conversation, so its last one holds every message the model
// was sent.
func continuesAsked(t *testing.T, reqs []fakemodel.Logged, mark string) int {
	t.Helper()
	var last []byte
	for _, q := range reqs {
		if q.Endpoint == "/v1/messages" && !q.Side && strings.Contains(string(q.Body), mark) {
			last = q.Body
		}
	}
	if last == nil {
		t.Fatalf("no request of the conversation that names %s", mark)
	}
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(last, &body); err != nil {
		t.Fatalf("the last request's body: %v", err)
	}
	n := 0
	for _, m := range body.Messages {
		if m.Role != "user" {
			continue
		}
		var texts []string
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			texts = append(texts, s)
		} else {
			var blocks []struct{ Type, Text string }
			json.Unmarshal(m.Content, &blocks)
			for _, b := range blocks {
				if b.Type == "text" {
					texts = append(texts, b.Text)
				}
			}
		}
		for _, x := range texts {
			x = strings.ToLower(strings.TrimSpace(x))
			if x == "continue" || strings.HasPrefix(x, "your claude.ai usage limit has reset") {
				n++
			}
		}
	}
	return n
}

// TestOnLimitMoveToAnotherKind (issue 35, --on-limit move): a Claude
// worker in a worktree of its own, working for a real Claude coordinator,
// answers a first turn, then reaches its usage limit on the next one. st
// starts its task at once on the kind config names (Codex), in the first
// worker's worktree, with a task that names that worktree and quotes the
// first worker's last answer; the first worker is left paused with
// nothing typed into it, the listing says where its task went, Codex
// does the task in the same worktree, and the coordinator is told
// between its turns.
func TestOnLimitMoveToAnotherKind(t *testing.T) {
	if !hasKind(t, "claude") || !hasKind(t, "codex") {
		t.Skip("this run has not both Claude and Codex")
	}
	r := newRigWith(t, func(env []string) []string { return append(subscriberEnv(env), "ST_ON_LIMIT_MOVE=codex") })
	r.installHooks()
	repo := r.work()
	gitIn(t, repo, "init", "-q", "-b", "main")
	gitIn(t, repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "init")

	// The coordinator: a real Claude, seen by st through its hooks.
	r.tmuxMust("new-window", "-d", "-t", "main:", "-n", "coord", "-c", repo, r.claude)
	waitScreen(t, r, "coord", mustAdapter(t, "claude"), 90*time.Second)
	r.tmuxMust("send-keys", "-t", "main:coord", "-l", "SAY: Ready to coordinate.")
	time.Sleep(300 * time.Millisecond) // Claude drops an Enter that follows a line at once
	r.tmuxMust("send-keys", "-t", "main:coord", "Enter")
	r.waitAnswer(t, "Ready to coordinate.", "coord")
	coord := strings.TrimSpace(r.tmuxMust("display-message", "-p", "-t", "main:coord", "#{pane_id}"))

	// Outside the repository, so that the worktree does not hold it.
	task := filepath.Join(r.dir, "mv.md")
	if err := os.WriteFile(task, []byte("RUN: echo ran >> parts.txt SAY: Part one is written.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if o, e, code := r.stIn(coord, "worker", "start", "--agent", "claude", "--task", task, "--name", "mv", "--worktree", "--on-limit", "move"); code != 0 {
		t.Fatalf("st worker start: exit %d %s%s\n%s", code, o, e, r.daemonLog())
	}
	// (Exit 2: idle without a report, which asks for attention.)
	if o, e, code := r.stIn(coord, "worker", "wait", "mv", "--timeout", "180s"); code != 0 && code != 2 {
		t.Fatalf("the first turn: exit %d %s%s\n%s\n%s", code, o, e, r.capture("main:mv"), r.daemonLog())
	}
	first := r.read("mv")
	if first.LastAnswer != "Part one is written." {
		t.Fatalf("the first turn's answer: %+v\n%s", first, r.capture("main:mv"))
	}
	// The next turn reaches the limit, for longer than the test lasts.
	if o, e, code := r.stIn(coord, "worker", "send", "mv", "LIMIT: 3600 RUN: echo never >> parts.txt SAY: never"); code != 0 {
		t.Fatalf("st worker send: exit %d %s%s", code, o, e)
	}
	moved := regexp.MustCompile(`mv\s+claude\s+paused \(usage limit, resets ~?\d\d:\d\d; its task moved to (%\d+) mv-codex\)`)
	var m []string
	deadline := time.Now().Add(150 * time.Second)
	for m == nil {
		list, _, _ := r.stIn(coord, "worker", "list")
		m = moved.FindStringSubmatch(list)
		if m == nil && time.Now().After(deadline) {
			t.Fatalf("the task never moved:\n%s\n%s\n%s\n%s", list, r.capture("main:mv"), r.daemonLog(), r.fakeLog())
		}
		time.Sleep(500 * time.Millisecond)
	}
	r.checkMovedTask(t, task)
	// Claude's own going on after the reset is called off: two agents
	// would work one folder.
	testutil.WaitFor(t, 30*time.Second, func() (bool, string) {
		s := r.capture("main:mv")
		return !strings.Contains(s, "Continuing automatically at"), "Claude still waits to go on by itself:\n" + s
	})
	// Codex does the task, in the first worker's worktree.
	if o, e, code := r.stIn(coord, "worker", "wait", "mv-codex", "--timeout", "240s"); code != 0 && code != 2 {
		t.Fatalf("the moved task: exit %d %s%s\n%s\n%s", code, o, e, r.capture("main:mv-codex"), r.daemonLog())
	}
	wt := worktreeOf(t, repo)
	if data, err := os.ReadFile(filepath.Join(wt, "parts.txt")); err != nil || string(data) != "ran\nran\n" {
		t.Errorf("parts.txt in the worktree %s after both workers: %q %v (want the first worker's line, then Codex's)", wt, data, err)
	}
	if _, err := os.Stat(filepath.Join(repo, "parts.txt")); err == nil {
		t.Errorf("a worker wrote parts.txt in the repository, not in the worktree")
	}
	// The coordinator is told, in a turn of its own.
	told := "st: worker mv (claude) reached its usage limit"
	r.waitAnswer(t, "", "coord", told)
	// Nothing more was typed into the first worker.
	if s, _ := r.tmux("capture-pane", "-p", "-S", "-", "-t", "main:mv"); regexp.MustCompile(`(?m)^\s*❯ continue\s*$`).MatchString(s) {
		t.Errorf("st typed continue into the worker whose task moved:\n%s", s)
	}
	if o, _, _ := r.stIn(coord, "worker", "list"); !moved.MatchString(o) {
		t.Errorf("the first worker after the move:\n%s", o)
	}
}

// checkMovedTask checks the task st wrote for the worker that took over:
// it names the first worker, its worktree and its last answer, and quotes
// its task.
func (r *rig) checkMovedTask(t *testing.T, task string) {
	t.Helper()
	data, err := os.ReadFile(strings.TrimSuffix(task, ".md") + ".moved-codex.md")
	if err != nil {
		t.Fatalf("the moved task: %v", err)
	}
	text := string(data)
	wt := worktreeOf(t, r.work())
	for _, want := range []string{
		"This task was started by worker mv (claude), which reached its usage limit",
		"Its work so far is in " + wt + ", where you are",
		"Its last answer was:\n| Part one is written.\n",
		"The task, as it was given:\n| RUN: echo ran >> parts.txt SAY: Part one is written.\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the moved task lacks %q:\n%s", want, text)
		}
	}
}

// worktreeOf is the one worktree of repo besides repo itself.
func worktreeOf(t *testing.T, repo string) string {
	t.Helper()
	var wts []string
	for _, l := range strings.Split(gitIn(t, repo, "worktree", "list", "--porcelain"), "\n") {
		if p, ok := strings.CutPrefix(l, "worktree "); ok && p != repo {
			wts = append(wts, p)
		}
	}
	if len(wts) != 1 {
		t.Fatalf("worktrees of %s: %v, want one", repo, wts)
	}
	return wts[0]
}

// waitAnswer waits until the fake model answered say (when given) or was
// asked a prompt that starts with prompt (when given), pressing Enter
// again in window while a line still sits in its box.
func (r *rig) waitAnswer(t *testing.T, say, window string, prompt ...string) {
	t.Helper()
	deadline := time.Now().Add(180 * time.Second)
	ad := mustAdapter(t, "claude")
	for {
		for _, q := range r.fake.Requests() {
			if say != "" && q.Answer == say {
				return
			}
			for _, p := range prompt {
				if strings.HasPrefix(strings.TrimSpace(q.Prompt), p) {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("never answered %q / asked %q:\n%s\n%s\n%s", say, prompt, r.capture("main:"+window), r.daemonLog(), r.fakeLog())
		}
		if v := r.view(window, ad); v.Screen == agentTyped() {
			r.tmux("send-keys", "-t", "main:"+window, "Enter")
		}
		time.Sleep(300 * time.Millisecond)
	}
}
