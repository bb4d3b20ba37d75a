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

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/testutil/fakemodel"
)

// mixedAsk is how the Claude coordinator's one line begins.
const mixedAsk = "Hand the API to Codex, the UI to Gemini and the docs to opencode once the API is done, each in a worktree; ask me before merging, then tell me."

// mixedGate is the question the Claude coordinator asks the person.
const mixedGate = "Merge the three parts?"

// TestMixedTeamClaudeCoordinator (issue 33, item 4): TestMixedTeam's run,
// its coordinator a real Claude Code in a tmux pane, asked once. Through
// its Bash tool it makes the run and its three tasks (a Codex, a Gemini CLI
// and an opencode worker, each in a worktree of its own, the opencode part
// after the Codex part), waits for them, asks a gate that the person
// answers with st gate answer from a shell, reads the three reports and
// answers with them. The test checks what the person would: each part in
// a worktree of its own, docs waiting with no worker while api works (api
// holds until the test has seen that), then started only once api was
// done, st worker list in the coordinator's pane naming each worker's
// kind, and the coordinator's answer holding the three workers' summaries
// after it got the gate's answer.
func TestMixedTeamClaudeCoordinator(t *testing.T) {
	r := newRig(t)
	r.installHooks()
	// The api part holds until the test has seen docs wait for it.
	hold := filepath.Join(r.dir, "go-api")
	repo, parts := r.mixedParts(hold)
	r.tmuxMust("new-window", "-d", "-t", "main:", "-n", "coord", "-c", repo, r.claude+" --permission-mode default")
	ad := mustAdapter(t, "claude")
	waitScreen(t, r, "coord", ad, 60*time.Second)
	coord := strings.TrimSpace(r.tmuxMust("display-message", "-p", "-t", "main:coord", "#{pane_id}"))

	start := time.Now()
	r.tmuxMust("send-keys", "-t", "main:coord", "-l", r.mixedPrompt())
	time.Sleep(500 * time.Millisecond) // Claude drops an Enter right after a line typed at once
	r.tmuxMust("send-keys", "-t", "main:coord", "Enter")
	// Once it makes ui, api is at work and docs is made. (api holds only
	// briefly: Codex's shell tool gives back a command still running after
	// 30 s, and the fake model then goes on with the task.)
	r.awaitPrompt(t, "coord", ad, r.st+" task create ui")

	// What the coordinator sees of its run: st in its pane. docs waits on
	// api, which holds; once let go, docs starts only after api is done.
	seen := *r
	seen.coord = coord
	seen.docsWaits(t)
	if err := os.WriteFile(hold, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if early := seen.waitTasksDone(t, "docs", "api"); early != "" {
		t.Error(early)
	}
	partsDone := time.Since(start)
	r.answerGate(t, mixedGate, "merge")
	answer := r.awaitAnswerPrefix(t, "coord", "All three parts are in:")
	t.Logf("the Claude coordinator's run: its three parts done in %s, its answer after %s",
		partsDone.Round(time.Second), time.Since(start).Round(time.Second))

	for name, kind := range parts {
		if want := kind + " wrote part-" + name + ".txt"; !strings.Contains(answer, want) {
			t.Errorf("the coordinator's answer %q lacks the %s worker's report %q", answer, kind, want)
		}
	}
	if got := r.gateResult(t, r.st+" worker read api"); !regexp.MustCompile(`(?m)^merge$`).MatchString(got) {
		t.Errorf("the coordinator's st gate ask did not print the person's answer; its tool result:\n%s", got)
	}
	list, _, _ := r.stIn(coord, "worker", "list")
	for name, kind := range parts {
		if !regexp.MustCompile(`\b` + name + `\S* +` + kind + ` +done\b`).MatchString(list) {
			t.Errorf("st worker list in the coordinator's pane does not show %s as a done %s worker:\n%s\n%s", name, kind, list, r.daemonLog())
		}
	}
	checkPartsInWorktrees(t, repo, parts)
}

// docsWaits checks, in st task list --json of the rig's coordinator pane,
// that the docs task waits on api, with no worker, while api runs.
func (r *rig) docsWaits(t *testing.T) {
	t.Helper()
	out := r.stMust("task", "list", "--json")
	var ts []struct{ Name, State, Worker string }
	if err := json.Unmarshal([]byte(out), &ts); err != nil {
		t.Fatalf("st task list --json: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, tv := range ts {
		got[tv.Name] = tv.State + " " + tv.Worker
	}
	if !strings.HasPrefix(got["api"], "running %") || got["docs"] != "waiting " {
		t.Errorf("while api holds, st task list --json says %v, want api running and docs waiting with no worker:\n%s", got, out)
	}
}

// mixedPrompt is the Claude coordinator's one line: the run, its three
// tasks, the waits, the gate, the three reads, then an answer with the
// summaries the reads printed.
func (r *rig) mixedPrompt() string {
	st := r.st
	task := func(name string) string { return filepath.Join(r.dir, name+".md") }
	return strings.Join([]string{
		mixedAsk,
		// A wait runs for minutes: the longest Claude's Bash tool allows,
		// as st's skill tells Claude to give it.
		"TIMEOUT: 600",
		"RUN: " + st + " orch start --objective 'API by Codex, UI by Gemini, docs by opencode after the API'",
		"RUN: " + st + " task create api --agent codex --task " + task("api") + " --worktree",
		"RUN: " + st + " task create docs --agent opencode --task " + task("docs") + " --worktree --deps api",
		"RUN: " + st + " task create ui --agent gemini --task " + task("ui") + " --worktree",
		"RUN: " + st + " worker wait api ui --timeout 9m",
		// docs' worker is started once api is done, a moment after that
		// wait may return; a wait for a worker not there yet fails at
		// once, and the skill says waiting again is always safe.
		"RUN: " + st + " worker wait docs --timeout 9m",
		"RUN: " + st + " worker wait docs --timeout 9m",
		"RUN: " + st + " gate ask '" + mixedGate + "' --option merge --option hold --timeout 5m",
		"RUN: " + st + " worker read api",
		"RUN: " + st + " worker read ui",
		"RUN: " + st + " worker read docs",
		"SAY: All three parts are in: {summaries}",
	}, " ")
}

// awaitPrompt waits until the model, asked the line typed into window,
// called the command first, pressing Enter again while the line still
// sits in the agent's box.
func (r *rig) awaitPrompt(t *testing.T, window string, ad *agent.Kind, first string) {
	t.Helper()
	testutil.WaitFor(t, 4*time.Minute, func() (bool, string) {
		for _, q := range r.fake.Requests() {
			if len(q.Calls) == 1 && strings.HasPrefix(q.Calls[0].Command, first) {
				return true, ""
			}
		}
		if ad.Recognize(r.capture("main:"+window)).Screen == agent.ScreenTyped {
			r.tmux("send-keys", "-t", "main:"+window, "Enter")
		}
		return false, "the model never called " + first + ":\n" + r.capture("main:"+window) + "\n" + r.daemonLog()
	})
}

// awaitAnswerPrefix waits for the fake model's answer that begins with prefix,
// and returns it.
func (r *rig) awaitAnswerPrefix(t *testing.T, window, prefix string) string {
	t.Helper()
	var answer string
	testutil.WaitFor(t, 4*time.Minute, func() (bool, string) {
		for _, q := range r.fake.Requests() {
			if strings.HasPrefix(q.Answer, prefix) {
				answer = q.Answer
			}
		}
		return answer != "", "the coordinator never answered:\n" + r.capture("main:"+window) + "\n" + r.daemonLog()
	})
	return answer
}

// answerGate waits for the gate that asks question, and answers it as
// a person at a shell does: st gate answer, in the rig's first pane.
func (r *rig) answerGate(t *testing.T, question, option string) {
	t.Helper()
	var id string
	testutil.WaitFor(t, 2*time.Minute, func() (bool, string) {
		var gs []struct{ ID, Question string }
		out, _, _ := r.st1("gate", "list", "--json")
		if json.Unmarshal([]byte(out), &gs) == nil {
			for _, g := range gs {
				if g.Question == question {
					id = g.ID
				}
			}
		}
		return id != "", fmt.Sprintf("the gate %q never opened:\n%s\n%s", question, out, r.daemonLog())
	})
	r.stMust("gate", "answer", id, option)
}

// gateResult is the text of the tool result the model got just before it
// called next: what the call before it printed.
func (r *rig) gateResult(t *testing.T, next string) string {
	t.Helper()
	for _, q := range r.fake.Requests() {
		if len(q.Calls) == 1 && q.Calls[0].Command == next {
			return lastToolResult(t, q)
		}
	}
	t.Fatalf("the model never called %q", next)
	return ""
}

// lastToolResult is the text of the tool results in the last message of
// a Messages API request that has any (a system message may follow it).
func lastToolResult(t *testing.T, q fakemodel.Logged) string {
	t.Helper()
	var body struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(q.Body, &body); err != nil {
		t.Fatalf("a request of the fake model's log: %v\n%.500s", err, q.Body)
	}
	for i := len(body.Messages) - 1; i >= 0; i-- {
		if s := toolResultText(body.Messages[i].Content); s != "" {
			return s
		}
	}
	return ""
}

// toolResultText is the text of the tool_result blocks of one message's
// content, whether each holds a string or text blocks.
func toolResultText(content json.RawMessage) string {
	var blocks []struct {
		Type    string          `json:"type"`
		Content json.RawMessage `json:"content"`
	}
	json.Unmarshal(content, &blocks)
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type != "tool_result" {
			continue
		}
		var s string
		if json.Unmarshal(bl.Content, &s) == nil {
			b.WriteString(s + "\n")
			continue
		}
		var parts []struct{ Text string }
		json.Unmarshal(bl.Content, &parts)
		for _, p := range parts {
			b.WriteString(p.Text + "\n")
		}
	}
	return b.String()
}
