package real

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/testutil"
)

// TestGeminiCoordinator: st setup, with the real Gemini CLI on PATH, puts
// its command /sophonz:orchestrate in ~/.gemini/commands; a Gemini CLI in
// a tmux pane, the ask typed after that command, gets st's coordinator
// instructions with st's absolute path as its prompt, and as coordinator
// runs st orch start, starts a sim worker through its shell (which a
// person allowed agents to), waits for
// it, reads its report and answers with its summary. (Its shell runs
// without asking: the rig's ST_GEMINI_PERMISSION_MODE=yolo, which a
// person who lets the coordinator run st chooses.)
func TestGeminiCoordinator(t *testing.T) {
	r := newRig(t)
	// A person allows agents to start the sim agent (st refuses an
	// agent that asks otherwise): the worker here is the sim, so that
	// the test is about the coordinator.
	r.stMust("down")
	if err := os.WriteFile(filepath.Join(r.stHome, "config.toml"), []byte("agents_start_sim = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := r.stMust("setup")
	cmds := filepath.Join(r.home, ".gemini", "commands", "sophonz")
	for _, want := range []string{"ok    agent gemini: gemini 0.61.0", "ok    hooks gemini: ",
		"ok    commands gemini: the commands /sophonz:orchestrate, /sophonz:worker in " + cmds + ": current for this st"} {
		if !strings.Contains(out, want) {
			t.Fatalf("st setup does not say %q:\n%s", want, out)
		}
	}
	task := r.writeTask("api-tests.md", "Write the API tests.\nrun: echo tests > api-tests.txt\nanswer: API tests written.\nsummary: sim wrote api-tests.txt\n")

	r.tmuxMust("new-window", "-d", "-t", "main:", "-n", "coord", "-c", r.work(), r.gemini+" --approval-mode yolo")
	ad := mustAdapter(t, "gemini")
	waitScreen(t, r, "coord", ad, 60*time.Second)
	st := r.st
	ask := strings.Join([]string{
		"/sophonz:orchestrate Give the API tests to a sim worker, then tell me.",
		"RUN: " + st + " orch start --objective 'API tests'",
		"RUN: " + st + " worker start --agent sim --task " + task + " --name api-tests",
		"RUN: " + st + " worker wait --timeout 100s",
		"RUN: " + st + " worker read api-tests",
		"SAY: The worker is done: {summaries}",
	}, " ")
	r.prompt("coord", ask)

	var answer, prompt string
	var enter time.Time
	testutil.WaitFor(t, 3*time.Minute, func() (bool, string) {
		// The whole line sits in the box, its Enter lost: press it again
		// (at most every 2 s: the box may take a while to show a line).
		if time.Since(enter) > 2*time.Second && geminiBoxHolds(r.capture("main:coord"), "{summaries}") {
			r.tmux("send-keys", "-t", "main:coord", "Enter")
			enter = time.Now()
		}
		for _, q := range r.fake.Requests() {
			if strings.HasPrefix(q.Answer, "The worker is done:") {
				answer, prompt = q.Answer, q.Prompt
			}
		}
		return answer != "", "the Gemini coordinator never answered:\n" + r.capture("main:coord") + "\n" + r.screens("api") + r.daemonLog()
	})
	// The ask reached the model as the command made it: st's
	// instructions, with st's path, and the job where {{args}} stood.
	for _, want := range []string{
		"# Orchestrate with st",
		"The person asked you to coordinate this job: Give the API tests to a sim worker, then tell me.",
		"st is `" + st + "`: always run it by that absolute path",
		st + " worker wait --timeout 4m",
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the prompt the model got is not st's /sophonz:orchestrate (no %q):\n%.600s", want, prompt)
		}
	}
	if !strings.Contains(answer, "sim wrote api-tests.txt") {
		t.Errorf("the coordinator's answer %q lacks the worker's summary", answer)
	}
	coord := strings.TrimSpace(r.tmuxMust("display-message", "-p", "-t", "main:coord", "#{pane_id}"))
	if out, _, _ := r.stIn(coord, "orch", "show"); !regexp.MustCompile(`api-tests +sim +done`).MatchString(out) {
		t.Errorf("st orch show in the Gemini coordinator's pane:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(r.work(), "api-tests.txt")); err != nil {
		t.Errorf("the worker's file: %v", err)
	}
}

// geminiBoxHolds reports whether Gemini's input box, the lines between the
// last rule and its footer, holds text: the line typed is not submitted
// yet. (In yolo mode the box starts " * ", not the " > " that
// agent.Gemini's screen reading knows, so it would read the box as empty.)
func geminiBoxHolds(screen, text string) bool {
	lines := strings.Split(screen, "\n")
	rule, foot := -1, -1
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "────"):
			rule = i
		case strings.HasPrefix(strings.TrimSpace(l), "workspace (/directory)"):
			foot = i
		}
	}
	if rule < 0 || foot < rule {
		return false
	}
	return strings.Contains(strings.Join(strings.Fields(strings.Join(lines[rule+1:foot], " ")), " "), text)
}
