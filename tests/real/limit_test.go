package real

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

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
