//go:build realclients

package machines

import (
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

// TestMachinesGeminiWorker: a coordinator's pane on alpha starts a real
// Gemini CLI (tests/realclients, offline against the fake model server on
// 127.0.0.1) as a worker on beta. Beta's own settings launch it (its
// ST_GEMINI_BIN, its ~/.gemini, its hooks: st hooks install there); it
// writes a file in beta's folder through its shell tool and reports with
// st worker done, and alpha sees what a user there would: st worker wait
// ends with the summary, st worker list names its kind (gemini), its state
// (done) and its machine, st worker read shows its last answer. The
// build tag is the real tier's: the machines tier runs sim agents
// otherwise.
func TestMachinesGeminiWorker(t *testing.T) { eachWay(t, geminiWorker) }

func geminiWorker(t *testing.T, way string) {
	fake := fakemodel.Start(t)
	gemini := realagent.Gemini(t)
	c := testutil.NewClusterWay(t, way)
	c.Extra = []string{"ST_HEARTBEAT=1s", "ST_PEER_RETRY=20s"}
	a, b := c.Machine("alpha", "127.0.0.2"), c.Machine("beta", "127.0.0.3")
	work := geminiSetUp(t, c, b, fake.URL(), gemini)
	for _, m := range []*testutil.Machine{a, b} {
		m.Login("acme")
	}
	pa := a.Up()
	b.Up()
	b.MustST("", "orch", "accept-remote", "on")
	has(t, b.MustST("", "hooks", "install"), `gemini`)

	out := filepath.Join(work, "out-gemini.txt")
	task := c.TaskFile("gemini.md", "Write the file.\n"+
		"RUN: echo made-by-gemini-on-beta > "+out+"\n"+
		"RUN: "+c.Bin+" worker done --summary \"wrote out-gemini.txt on beta, checked it with cat\"\n"+
		"SAY: I wrote out-gemini.txt on beta.\n")
	started := must(t)(a.In(pa, "worker", "start", "--machine", "beta", "--agent", "gemini", "--task", task, "--cwd", work, "--name", "gem"))
	id := has(t, started, `(?m)^(beta/%\d+) gem$`)[1]
	_, bpane, _ := strings.Cut(id, "/")

	wait, err := a.In(pa, "worker", "wait", id, "--timeout", "200s")
	if err != nil {
		t.Fatalf("st worker wait on alpha: %v\nbeta's window:\n%s\nfake model requests: %d", err, b.Capture(bpane), len(fake.Requests()))
	}
	has(t, wait, regexp.QuoteMeta(id)+`\s+gem\s+done\s+wrote out-gemini.txt on beta, checked it with cat`)
	data, err := os.ReadFile(out)
	if err != nil || strings.TrimSpace(string(data)) != "made-by-gemini-on-beta" {
		t.Fatalf("the Gemini worker did not write its file on beta: %q %v", data, err)
	}
	// Alpha's list: its kind and state, on beta.
	has(t, must(t)(a.In(pa, "worker", "list")), regexp.QuoteMeta(id)+`\s+gem\s+gemini\s+done.*on beta`)
	read := must(t)(a.In(pa, "worker", "read", "beta/gem"))
	has(t, read, `summary: wrote out-gemini.txt on beta, checked it with cat`)
	has(t, read, `I wrote out-gemini.txt on beta.`)
	// Beta's own list says the same of the worker it hosts.
	has(t, must(t)(b.ST("worker", "list", "--all")), `gem\s+gemini\s+done.*worker of \S+ on alpha`)
	// The model was Gemini's API (generateContent, the router's and the
	// stream's), asked by the Gemini CLI on beta.
	gem := 0
	for _, q := range fake.Requests() {
		if strings.HasPrefix(q.Endpoint, "/v1beta/") {
			gem++
		}
	}
	if gem == 0 {
		t.Fatalf("the fake model got no Gemini API request")
	}
	// The relay carried TLS records only (relayed), or nothing (direct).
	streams := relayedOnly(t, c, []string{"Write the file.", "made-by-gemini-on-beta", "wrote out-gemini.txt on beta", "I wrote out-gemini.txt on beta."})
	if (way == "direct") != (streams == 0) {
		t.Errorf("%s: %d streams went through the relay", way, streams)
	}
	// Stopping it from alpha ends Gemini's process tree on beta (it
	// outlives tmux kill-window otherwise).
	if len(geminiProcesses(b.Home)) == 0 {
		t.Fatal("no Gemini process of beta's window found before the stop")
	}
	must(t)(a.In(pa, "worker", "stop", id, "--yes"))
	testutil.WaitFor(t, 60*time.Second, func() (bool, string) {
		ps, _ := b.Tmux.Run("list-panes", "-a", "-F", "#{pane_id}")
		return !regexp.MustCompile(`(?m)^` + bpane + `$`).MatchString(ps), "beta's worker pane is still there:\n" + ps
	})
	testutil.WaitFor(t, 30*time.Second, func() (bool, string) {
		left := geminiProcesses(b.Home)
		return len(left) == 0, "Gemini's processes outlived the stop on beta: " + strings.Join(left, "; ")
	})
}

// geminiSetUp is what beta's person did to use Gemini CLI there
// (reference §11): signed in with a key, updates off, a work folder
// trusted. st's settings for it are beta's, not alpha's (a start from
// another machine runs with the hosting machine's agent settings). It
// returns the work folder.
func geminiSetUp(t *testing.T, c *testutil.Cluster, b *testutil.Machine, fakeURL, gemini string) string {
	t.Helper()
	work := filepath.Join(b.UserDir, "work")
	tmp := filepath.Join(c.Dir, "beta", "tmp")
	for _, d := range []string{work, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	genv := realagent.GeminiHome(t, b.UserDir, fakeURL, work)
	b.Extra = append(genv, "ST_GEMINI_BIN="+gemini, "ST_GEMINI_PERMISSION_MODE=yolo", "TMPDIR="+tmp,
		// Gemini's first turn was slow at a load of 25 on 2 cores.
		"ST_BLOCKED_TIMEOUT=240s", "ST_HOOK_TIMEOUT=120s")
	return work
}

// geminiProcesses are the running processes of Gemini CLI (a node whose
// command line names gemini) that beta's windows started, known by the
// ST_HOME they inherited: a stopped worker leaves none.
func geminiProcesses(stHome string) []string {
	var left []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		env, err := os.ReadFile(filepath.Join(p, "environ"))
		if err != nil || !strings.Contains("\x00"+string(env)+"\x00", "\x00ST_HOME="+stHome+"\x00") {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		if line := strings.ReplaceAll(string(cmd), "\x00", " "); strings.Contains(line, "gemini") {
			left = append(left, filepath.Base(p)+": "+line)
		}
	}
	return left
}
