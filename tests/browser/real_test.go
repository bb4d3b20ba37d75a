package browser

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sophonz/st/internal/testutil"
)

// realEnv is the environment of the real st binary against a private tmux
// server and ST_HOME.
type realEnv struct {
	t     *testing.T
	bin   string
	dir   string // the test's temp folder
	home  string
	tm    *testutil.Tmux
	work  string
	coord string   // the coordinator's pane
	tmux  string   // TMUX for acting in the coordinator's pane
	extra []string // more KEY=VALUE for st (a real agent's HOME...)
}

func (r *realEnv) env(pane string) []string {
	set := []string{"ST_HOME=" + r.home, "TMUX_TMPDIR=" + r.tm.Dir, "ST_WEB_PORT=auto", "ST_BIN=" + r.bin,
		"PATH=" + filepath.Dir(r.bin) + string(os.PathListSeparator) + os.Getenv("PATH")}
	set = append(set, r.extra...)
	if pane != "" {
		set = append(set, "TMUX="+r.tmux, "TMUX_PANE="+pane)
	}
	return testutil.Env(os.Environ(), set...)
}

// st runs st in the coordinator's pane and returns its stdout.
func (r *realEnv) st(args ...string) string {
	r.t.Helper()
	cmd := exec.Command(r.bin, args...)
	cmd.Dir = r.work
	cmd.Env = r.env(r.coord)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		r.t.Fatalf("st %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
	}
	return string(out)
}

// webURL is what st web prints to a person at a shell (st web is a
// person's: from the coordinator's pane, an agent's, it is refused).
func (r *realEnv) webURL() string {
	r.t.Helper()
	cmd := exec.Command(r.bin, "web")
	cmd.Dir = r.work
	cmd.Env = r.env("")
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("st web: %v\n%s", err, out)
	}
	return string(out)
}

func (r *realEnv) capture(pane string) string {
	out, _ := r.tm.Run("capture-pane", "-p", "-t", pane)
	return out
}

func (r *realEnv) waitScreen(pane, re string, d time.Duration) {
	r.t.Helper()
	rx := regexp.MustCompile(re)
	testutil.WaitFor(r.t, d, func() (bool, string) {
		s := r.capture(pane)
		return rx.MatchString(s), "screen of " + pane + " never matched " + re + ":\n" + s
	})
}

// handAgent starts a sim agent by hand in a new window of main, types a
// line into it, and returns its pane.
func (r *realEnv) handAgent(name, line string) string {
	r.t.Helper()
	path := filepath.Dir(r.bin) + string(os.PathListSeparator) + os.Getenv("PATH")
	out, err := r.tm.Run("new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "main:", "-c", r.work, "-n", name,
		"-e", "ST_BIN="+r.bin, "-e", "ST_HOME="+r.home, "-e", "PATH="+path, r.bin, "agent", "sim")
	if err != nil {
		r.t.Fatal(err)
	}
	pane := strings.TrimSpace(out)
	r.waitScreen(pane, `❯`, 10*time.Second)
	r.tm.Run("send-keys", "-t", pane, "-l", line)
	r.tm.Run("send-keys", "-t", pane, "Enter")
	return pane
}

// newRealEnv makes the folders of a test of the real daemon (ST_HOME,
// a work folder, a private tmux server's TMUX_TMPDIR) under a short temp
// folder, and the cleanups that stop its daemon; start opens its tmux
// session and starts the daemon.
func newRealEnv(t *testing.T) *realEnv {
	t.Helper()
	os.Unsetenv("TMUX")
	os.Unsetenv("TMUX_PANE")
	dir := testutil.ShortTempDir(t)
	r := &realEnv{t: t, bin: testutil.BuildST(t), dir: dir, home: filepath.Join(dir, "h"), work: filepath.Join(dir, "w")}
	r.tm = testutil.NewTmux(t, filepath.Join(dir, "t"))
	for _, d := range []string{r.work, filepath.Dir(r.tm.Socket)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { testutil.StopDaemon(r.home) })
	t.Cleanup(func() {
		if data, err := os.ReadFile(filepath.Join(r.home, "daemon.log")); err == nil && t.Failed() {
			t.Logf("daemon.log:\n%s", data)
		}
	})
	return r
}

// start opens session main with a shell (the coordinator's seat), with
// sessionEnv (KEY=VALUE) in its environment, which the windows st opens
// there get too, and starts the daemon.
func (r *realEnv) start(sessionEnv ...string) {
	r.t.Helper()
	path := filepath.Dir(r.bin) + string(os.PathListSeparator) + os.Getenv("PATH")
	args := []string{"-f", "/dev/null", "new-session", "-d", "-s", "main", "-x", "200", "-y", "50", "-c", r.work,
		"-e", "ST_HOME=" + r.home, "-e", "PATH=" + path}
	for _, kv := range sessionEnv {
		args = append(args, "-e", kv)
	}
	if _, err := r.tm.Run(append(args, "sh")...); err != nil {
		r.t.Fatal(err)
	}
	out, err := r.tm.Run("display-message", "-p", "-t", "main:", "#{pane_id} #{pid}")
	if err != nil {
		r.t.Fatal(err)
	}
	f := strings.Fields(out)
	r.coord, r.tmux = f[0], r.tm.Socket+","+f[1]+",0"
	r.st("up")
}

// TestRealDaemon drives the web UI of the real daemon (st up) in Chromium:
// a coordinator (a sim agent) with three sim workers, live updates, a
// terminal, drop-to-adopt, Release, a worker row's menu (Let go), a
// worker started from a shell (no line from a shell: it is not an
// agent), and a gate.
func TestRealDaemon(t *testing.T) {
	r := newRealEnv(t)
	// Its lead (a sim agent) starts a sim worker: a person allows that.
	r.extra = append(r.extra, "ST_AGENTS_START_SIM=1")
	r.start()
	bin, work := r.bin, r.work
	// The coordinator is an agent (a sim started by hand); the session's
	// first pane stays a person's shell.
	shellPane := r.coord
	r.coord = r.handAgent("boss", "I coordinate here")
	r.waitScreen(r.coord, `Received: I coordinate here`, 30*time.Second)
	for name, task := range map[string]string{
		"slow-a": "sleep: 60s\n",
		"slow-b": "sleep: 60s\n",
		// quick holds its turn until the test lets it go (a file), so
		// the page is seen with three at work first however slow the
		// machine is.
		"quick": "run: i=0; until [ -e quick.go ] || [ $i -ge 1200 ]; do sleep 0.1; i=$((i+1)); done\nsummary: quick one\n",
		// st's path written out: st's guard refuses a program named by a
		// variable ("$ST_BIN"), as it cannot tell what that runs.
		"lead":   "run: " + bin + " worker start --agent sim --task helper.md --name helper > lead.out 2>&1\nanswer: I lead a helper now\n",
		"helper": "sleep: 60s\n",
	} {
		if err := os.WriteFile(filepath.Join(work, name+".md"), []byte(task), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	url := strings.TrimSpace(r.webURL())
	if m := regexp.MustCompile(`http://127\.0\.0\.1:\d+/\S*token=\S+`).FindString(url); m != "" {
		url = m
	} else {
		t.Fatalf("st web printed %q, want a URL with its token", url)
	}
	// The page is open, on the graph, before the workers start.
	ctx := newBrowser(t, 1440, 900)
	do(t, ctx, chromedp.Navigate(url))
	waitJS(t, ctx, `document.querySelector("#agents-btn") !== null && document.querySelector("#sidebar .sess") !== null`, 30*time.Second)
	do(t, ctx, chromedp.Click("#agents-btn"))
	waitJS(t, ctx, `!document.querySelector("#graph").hidden`, 20*time.Second)

	workers := map[string]string{}
	for _, name := range []string{"slow-a", "slow-b", "quick"} {
		out := r.st("worker", "start", "--agent", "sim", "--task", filepath.Join(work, name+".md"), "--name", name)
		fs := strings.Fields(out)
		if len(fs) < 2 || fs[1] != name {
			t.Fatalf("st worker start printed %q", out)
		}
		workers[name] = fs[0]
	}

	// The graph: the coordinator over three workers, with thick green
	// lines; the sidebar's card says 3 working.
	waitJS(t, ctx, `document.querySelectorAll("#graph .agent-card").length === 4 &&
		document.querySelectorAll("#graph path.edge-worker.active").length === 3 &&
		[...document.querySelectorAll("#sidebar .fold-line")].some(e => e.innerText.includes("Workers · 3 working"))`, 30*time.Second)
	if got := count(t, ctx, agentCard("#graph", r.coord)); got != 1 {
		t.Errorf("no card for the coordinator %s in the graph:\n%s", r.coord, pageText(ctx))
	}
	for name, pane := range workers {
		if got := count(t, ctx, agentCard("#graph", pane)); got != 1 {
			t.Errorf("no card for worker %s (%s) in the graph", name, pane)
		}
	}
	if got := count(t, ctx, "#graph path.edge-worker"); got != 3 {
		t.Errorf("%d worker edges, want 3", got)
	}
	widths := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#graph path.edge-worker")].map(e => {
		const cs = getComputedStyle(e); return cs.strokeWidth + " " + cs.stroke + " " + cs.opacity; })`))
	for _, w := range widths {
		if !strings.HasPrefix(w, "4.5px rgb(63, 185, 80) 1") {
			t.Errorf("worker edge style %q, want thick green at full strength", w)
		}
	}
	if b := texts(t, ctx, "#sidebar .card.family .badge"); len(b) != 1 || b[0] != "coordinator" {
		t.Errorf("badges in the sidebar card = %q, want one coordinator badge", b)
	}

	// Live: the quick one finishes, no reload.
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`window.__sameDocument = true`))
	if err := os.WriteFile(filepath.Join(work, "quick.go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, `[...document.querySelectorAll("#sidebar details.completed > summary")].some(e => e.innerText === "Completed (1)")`, 30*time.Second)
	if !run(t, ctx, chromedp.Evaluate[bool](`window.__sameDocument === true`)) {
		t.Error("the page reloaded")
	}
	waitJS(t, ctx, `[...document.querySelectorAll("#graph .agent-card .gc-summary")].some(e => e.innerText.includes("quick one"))`, 20*time.Second)

	// A click on a worker's card opens its terminal; typing reaches the sim.
	slow := workers["quick"] // done, so idle: a busy sim queues what it is typed
	do(t, ctx, chromedp.Click(agentCard("#graph", slow)+" .gc-name"))
	waitJS(t, ctx, `document.querySelector("#graph").hidden && document.querySelector("#term-title").innerText.includes("quick")`, 20*time.Second)
	waitJS(t, ctx, `document.querySelector("#term .xterm-rows") !== null && document.querySelector("#term .xterm-rows").innerText.includes("❯")`, 30*time.Second)
	do(t, ctx, chromedp.Focus("#term .xterm-helper-textarea"), typeKeys("hello-from-browser\r"))
	r.waitScreen(slow, `Received: hello-from-browser`, 30*time.Second)

	// An agent started by hand, mid-conversation, with no coordinator and
	// no worker: st knows it by its hooks, so it has a card, to be dropped
	// on a coordinator.
	solo := r.handAgent("solo", "hello, I was here first")
	r.waitScreen(solo, `Received: hello, I was here first`, 30*time.Second)
	do(t, ctx, chromedp.Click("#agents-btn"))
	waitJS(t, ctx, `!document.querySelector("#graph").hidden && document.querySelector('[data-agent="`+solo+`"]') !== null &&
		document.querySelectorAll("#graph .agent-card").length === 5`, 20*time.Second)
	// Dropped on the shell coordinator's card, it becomes its worker;
	// released again (with st), it stays on the page as an agent of its own.
	drag(t, ctx, agentCard("#graph", solo), agentCard("#graph", r.coord))
	testutil.WaitFor(t, 20*time.Second, func() (bool, string) {
		out := r.st("worker", "list")
		return regexp.MustCompile(`solo +sim`).MatchString(out), "st worker list:\n" + out
	})
	r.st("worker", "release", solo)
	waitJS(t, ctx, `document.querySelector('[data-agent="`+solo+`"]') !== null && document.querySelectorAll("#graph path.edge-worker").length === 3`, 20*time.Second)

	// Drop-to-adopt: an agent started by hand that leads a worker of its
	// own is a coordinator in the snapshot, so it has a card; dropped on
	// the shell coordinator's card, it comes in as a team.
	lead := r.handAgent("lead", "Your task is in the file "+filepath.Join(work, "lead.md")+" - do it.")
	testutil.WaitFor(t, 30*time.Second, func() (bool, string) {
		b, _ := os.ReadFile(filepath.Join(work, "lead.out"))
		return regexp.MustCompile(`%\d+ helper`).Match(b), "lead.out: " + string(b) + "\nscreen:\n" + r.capture(lead)
	})
	waitJS(t, ctx, `document.querySelector(`+strconv.Quote(agentCard("#graph", lead))+`) !== null &&
		document.querySelectorAll("#graph path.edge-worker").length === 4`, 30*time.Second)
	if out := r.st("worker", "list"); regexp.MustCompile(`\blead\b`).MatchString(out) {
		t.Fatalf("lead is a worker of the coordinator before the drop:\n%s", out)
	}
	screenshot(t, ctx, "real-before-drop.png")
	drag(t, ctx, agentCard("#graph", lead), agentCard("#graph", r.coord))
	screenshot(t, ctx, "real-after-drop.png")
	testutil.WaitFor(t, 20*time.Second, func() (bool, string) {
		out := r.st("worker", "list")
		return regexp.MustCompile(`lead \(team 1\) +sim`).MatchString(out), "st worker list:\n" + out
	})
	waitJS(t, ctx, `document.querySelectorAll("#graph path.edge-worker").length === 5 &&
		[...document.querySelectorAll("#graph .team-of")].some(e => e.innerText === "team of 1")`, 20*time.Second)
	screenshot(t, ctx, "real-graph.png")

	// Release on its card.
	do(t, ctx, chromedp.Click(agentCard("#graph", lead)+" button.release"))
	testutil.WaitFor(t, 20*time.Second, func() (bool, string) {
		out := r.st("worker", "list")
		return !regexp.MustCompile(`\blead\b`).MatchString(out), "st worker list:\n" + out
	})
	waitJS(t, ctx, `document.querySelectorAll("#graph path.edge-worker").length === 4`, 20*time.Second)

	// A worker row's menu in the sidebar lets it go (issue 15, item 6).

	do(t, ctx, chromedp.Click("#agents-btn"))
	waitJS(t, ctx, `document.querySelector("#graph").hidden`, 20*time.Second)
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll("#sidebar .agent-row")].find(r => r.querySelector(".name") && r.querySelector(".name").innerText === "slow-a").querySelector(".row-menu-btn").click()`))
	waitJS(t, ctx, `document.querySelector("#sidebar .row-menu .let-go") !== null`, 20*time.Second)
	screenshot(t, ctx, "real-row-menu.png")
	do(t, ctx, chromedp.Click("#sidebar .row-menu .let-go"))
	testutil.WaitFor(t, 20*time.Second, func() (bool, string) {
		out := r.st("worker", "list")
		return !regexp.MustCompile(`\bslow-a\b`).MatchString(out), "st worker list:\n" + out
	})

	// A worker started by a person at a shell (issue 15, item 5): it shows,
	// but a shell is not an agent: no card for the shell, no line from it,
	// and no orphan mark on the worker.
	cmd := exec.Command(r.bin, "worker", "start", "--agent", "sim", "--task", filepath.Join(work, "slow-b.md"), "--name", "by-hand")
	cmd.Dir, cmd.Env = work, r.env(shellPane)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("st worker start from the shell: %v\n%s", err, out)
	}
	byHand := strings.Fields(string(out))[0]
	do(t, ctx, chromedp.Click("#agents-btn"))
	waitJS(t, ctx, `!document.querySelector("#graph").hidden && document.querySelector(`+strconv.Quote(agentCard("#graph", byHand))+`) !== null`, 20*time.Second)
	if n := count(t, ctx, agentCard("#graph", shellPane)); n != 0 {
		t.Errorf("the shell %s has a card in the graph (a shell is not an agent):\n%s", shellPane, pageText(ctx))
	}
	if n := count(t, ctx, agentCard("#graph", byHand)+".orphan"); n != 0 {
		t.Errorf("the shell's worker is marked as an orphan")
	}
	lines := run(t, ctx, chromedp.Evaluate[int](`[...document.querySelectorAll("#graph path.edge-worker")].filter(e => e.dataset.to === `+strconv.Quote(byHand)+`).length`))
	if lines != 0 {
		t.Errorf("%d lines drawn to the shell's worker, want none", lines)
	}
	screenshot(t, ctx, "real-shell-worker.png")

	// A gate, answered in the page. st gate ask runs itself (no shell
	// between), so that the cleanup ends the very process it started.
	var askOut, askErr bytes.Buffer
	ask := exec.Command(bin, "gate", "ask", "Ship it?", "--option", "yes", "--option", "no")
	ask.Dir = work
	ask.Env = r.env(r.coord)
	ask.Stdout, ask.Stderr = &askOut, &askErr
	if err := ask.Start(); err != nil {
		t.Fatal(err)
	}
	var askExit error
	finished := make(chan struct{})
	go func() { askExit = ask.Wait(); close(finished) }()
	t.Cleanup(func() {
		select {
		case <-finished:
		default:
			ask.Process.Kill()
			<-finished
		}
	})
	waitJS(t, ctx, `[...document.querySelectorAll("[data-gate] button")].some(b => b.innerText.trim() === "yes")`, 30*time.Second)
	if n := count(t, ctx, "#gates [data-gate] button"); n < 2 {
		t.Errorf("the gate banner has %d buttons, want 2:\n%s", n, pageText(ctx))
	}
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll("#gates [data-gate] button")].find(b => b.innerText.trim() === "yes").click()`))
	select {
	case <-finished:
		if askExit != nil || askOut.String() != "yes\n" {
			t.Errorf("st gate ask: %v, printed %q (stderr %q), want yes and exit 0", askExit, askOut.String(), askErr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("st gate ask has not returned 30s after the answer in the page")
	}
	waitJS(t, ctx, `document.querySelectorAll("[data-gate]").length === 0`, 20*time.Second)

	// The phone's view of the same run, in a browser of its own.
	phone := newBrowser(t, 390, 844)
	do(t, phone, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile), chromedp.Navigate(url))
	// The coordinator and its two workers left (slow-b, quick), lead with
	// its helper, and the shell's worker: six cards (the agents in no run,
	// slow-a let go and solo, hand no work out); lines only from agents to
	// their workers.
	waitJS(t, phone, `document.body.dataset.view === "chart" && document.querySelectorAll("#chart-tree .agent-card").length === 6 &&
		document.querySelectorAll("#chart-tree .cnode.line-worker").length === 3`, 30*time.Second)
	ctx = phone
	screenshot(t, ctx, "real-phone.png")
}
