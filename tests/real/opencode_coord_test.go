package real

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/testutil"
)

// TestOpencodeCoordinator: st setup, with the real opencode on PATH (it
// has run here: its config folder is there), puts its commands
// /sophonz-orchestrate and /sophonz-worker in opencode's command folder
// beside a command of the user's own; an opencode in a tmux pane, the ask
// typed after /sophonz-orchestrate, gets st's coordinator instructions
// with st's absolute path as its prompt, and as coordinator runs st orch
// start, starts a sim worker through its bash tool, waits for it, reads
// its report and answers with its summary; st orch show in its pane shows
// the worker done. st setup --undo then leaves opencode's folder as it
// was, byte for byte.
func TestOpencodeCoordinator(t *testing.T) {
	r := newRig(t)
	ocDir, before := opencodeSetUp(t, r)
	task := r.writeTask("api-tests.md", "Write the API tests.\nrun: echo tests > api-tests.txt\nanswer: API tests written.\nsummary: sim wrote api-tests.txt\n")

	// opencode as st would start it (its update check and models fetch
	// off), in a window of its own.
	argv := mustAdapter(t, "opencode").Command(launchFor(r, "opencode"))
	r.tmuxMust(append([]string{"new-window", "-d", "-t", "main:", "-n", "coord", "-c", r.work()}, argv...)...)
	ad := mustAdapter(t, "opencode")
	waitScreen(t, r, "coord", ad, 240*time.Second)
	st := r.st
	ask := strings.Join([]string{
		"/sophonz-orchestrate Give the API tests to a sim worker, then tell me.",
		"RUN: " + st + " orch start --objective 'API tests'",
		"RUN: " + st + " worker start --agent sim --task " + task + " --name api-tests",
		"RUN: " + st + " worker wait --timeout 100s",
		"RUN: " + st + " worker read api-tests",
		"SAY: The worker is done: {summaries}",
	}, " ")
	r.prompt("coord", ask)

	var answer, prompt string
	testutil.WaitFor(t, 4*time.Minute, func() (bool, string) {
		// The line still in the box, its Enter lost: press it again.
		if ad.Recognize(r.capture("main:coord")).Screen == agent.ScreenTyped {
			r.tmux("send-keys", "-t", "main:coord", "Enter")
		}
		for _, q := range r.fake.Requests() {
			// (Not opencode's title request, which offers no tools and
			// gets the SAY text as it stands.)
			if strings.HasPrefix(q.Answer, "The worker is done:") && !q.Side {
				answer, prompt = q.Answer, q.Prompt
			}
		}
		return answer != "", "the opencode coordinator never answered:\n" + r.capture("main:coord") + "\n" + r.screens("api") + r.daemonLog()
	})
	// The ask reached the model as the command made it: st's
	// instructions, with st's path, and the job where $ARGUMENTS stood.
	for _, want := range []string{
		"# Orchestrate with st",
		"The person asked you to coordinate this job: Give the API tests to a sim worker, then tell me.",
		"st is `" + st + "`: always run it by that absolute path",
		st + " worker wait --timeout 100s",
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the prompt the model got is not st's /sophonz-orchestrate (no %q):\n%.600s", want, prompt)
		}
	}
	if !strings.Contains(answer, "sim wrote api-tests.txt") {
		t.Errorf("the coordinator's answer %q lacks the worker's summary", answer)
	}
	coord := strings.TrimSpace(r.tmuxMust("display-message", "-p", "-t", "main:coord", "#{pane_id}"))
	if out, _, _ := r.stIn(coord, "orch", "show"); !regexp.MustCompile(`api-tests +sim +done`).MatchString(out) {
		t.Errorf("st orch show in the opencode coordinator's pane:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(r.work(), "api-tests.txt")); err != nil {
		t.Errorf("the worker's file: %v", err)
	}

	r.tmuxMust("kill-window", "-t", "main:coord")
	undoLeaves(t, r, ocDir, before)
}

// opencodeSetUp lets agents start the sim (the worker here, so that the
// test is about the coordinator), puts a command of the user's own in
// opencode's folder, runs st setup and st doctor and checks what they
// say of opencode's commands. It returns opencode's folder and its files
// before st setup.
func opencodeSetUp(t *testing.T, r *rig) (ocDir string, before map[string]string) {
	t.Helper()
	// A person allows agents to start the sim agent: the worker is the
	// sim, so that the test is about the coordinator.
	r.stMust("down")
	if err := os.WriteFile(filepath.Join(r.stHome, "config.toml"), []byte("agents_start_sim = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ocDir = filepath.Join(r.home, ".config", "opencode")
	mine := filepath.Join(ocDir, "command", "review.md")
	if err := os.MkdirAll(filepath.Dir(mine), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mine, []byte("---\ndescription: my review\n---\nReview $ARGUMENTS\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	before = snapshot(t, ocDir)

	out := r.stMust("setup")
	cmds := filepath.Join(ocDir, "command")
	for _, want := range []string{"ok    agent opencode: opencode 1.18.33", "ok    hooks opencode: ",
		"ok    commands opencode: the commands /sophonz-orchestrate, /sophonz-worker in " + cmds + ": current for this st"} {
		if !strings.Contains(out, want) {
			t.Fatalf("st setup does not say %q:\n%s", want, out)
		}
	}
	if doc, _, code := r.st1("doctor"); !strings.Contains(doc, "ok    commands opencode: ") {
		t.Fatalf("st doctor (exit %d) does not check opencode's commands:\n%s", code, doc)
	}
	return ocDir, before
}

// undoLeaves runs st setup --undo and checks that opencode's folder is
// as it was before st setup (but for what opencode itself wrote as it
// ran: the package files and node_modules of its start-up install).
func undoLeaves(t *testing.T, r *rig, ocDir string, before map[string]string) {
	t.Helper()
	undo := r.stMust("setup", "--undo")
	cmds := filepath.Join(ocDir, "command")
	if !strings.Contains(undo, "ok    plugin opencode: removed the commands /sophonz-orchestrate and /sophonz-worker from "+cmds) {
		t.Errorf("st setup --undo does not say it removed opencode's commands:\n%s", undo)
	}
	after := snapshot(t, ocDir)
	for p, b := range before {
		if after[p] != b {
			t.Errorf("st setup --undo left %s changed", p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok && !opencodesOwn(p) {
			t.Errorf("st setup --undo left %s behind", p)
		}
	}
}

// opencodesOwn: a file opencode's start-up install writes in its folder.
func opencodesOwn(p string) bool {
	for _, name := range []string{"package.json", ".gitignore", "bun.lock", "package-lock.json"} {
		if filepath.Base(p) == name {
			return true
		}
	}
	return strings.Contains(p, "node_modules")
}

// snapshot is every file under dir, by path, with its bytes.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		if strings.Contains(p, string(filepath.Separator)+"node_modules"+string(filepath.Separator)) {
			return nil
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
