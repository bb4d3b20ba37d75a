package browser

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/sophonz/st/internal/testutil"
)

// TestAllMachines opens the web UI of one machine of an account of three
// (real daemons, sim agents, a control plane) and shows the "All machines"
// scope: the other machines' agents with their machine, and an offline
// machine dimmed.
func TestAllMachines(t *testing.T) {
	c := testutil.NewCluster(t)
	c.Extra = []string{"ST_HEARTBEAT=1s"}
	a, b, g := c.Machine("alpha", "127.0.0.2"), c.Machine("beta", "127.0.0.3"), c.Machine("gamma", "127.0.0.4")
	for _, m := range []*testutil.Machine{a, b, g} {
		m.Login("acme")
	}
	pa := a.Up()
	b.Up()
	g.Up()
	g.MustST("", "orch", "accept-remote", "on")

	// beta has a run of its own: a lead with a worker.
	lead := b.HandAgent("lead")
	slow := c.TaskFile("slow.md", "sleep: 120s\nsummary: slept\n")
	out := b.MustST(lead, "worker", "start", "--agent", "sim", "--task", slow, "--name", "sub")
	sub := regexp.MustCompile(`(?m)^(%\d+) sub$`).FindStringSubmatch(out)
	if sub == nil {
		t.Fatalf("no sub worker: %s", out)
	}
	// alpha's coordinator has a worker on gamma, and gamma goes offline.
	out = a.MustST(pa, "worker", "start", "--machine", "gamma", "--agent", "sim", "--task", slow, "--name", "far")
	far := regexp.MustCompile(`(?m)^gamma/(%\d+) far$`).FindStringSubmatch(out)
	if far == nil {
		t.Fatalf("no far worker: %s", out)
	}
	g.KillDaemon()
	testutil.WaitFor(t, 20*time.Second, func() (bool, string) {
		out, _ := a.ST("machines")
		return regexp.MustCompile(`gamma\s+host-gamma\s+gamma\s+offline`).MatchString(out), out
	})

	url := strings.TrimSpace(a.MustST("", "web"))
	ctx := newBrowser(t, 390, 844)
	do(t, ctx,
		chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Navigate(url))
	waitJS(t, ctx, `[...document.querySelectorAll("#scopes button")].some(b => b.innerText === "All machines")`, 15*time.Second)
	do(t, ctx, chromedp.Click(`#scopes button:nth-child(3)`))
	farCard := `#chart-tree .agent-card[data-agent="gamma/` + far[1] + `"]`
	// beta takes no workers from other machines (accept-remote off), so it
	// shows them nothing of its own: alpha's view has gamma's card (alpha
	// keeps that record) but none of beta's.
	waitJS(t, ctx, `document.querySelector('`+farCard+`') !== null && [...document.querySelectorAll(".mchip")].some(c => c.dataset.machine === "beta")`, 15*time.Second)
	if n := count(t, ctx, `#chart-tree .agent-card[data-agent^="beta/"]`); n != 0 {
		t.Fatalf("beta, with accept-remote off, showed %d agents to alpha:\n%s", n, pageText(ctx))
	}
	// With it on, its agents show.
	b.MustST("", "orch", "accept-remote", "on")
	// beta's lead and its worker, under beta's name; alpha's worker on
	// gamma, dimmed with gamma's chip.
	waitJS(t, ctx, `document.querySelector('#chart-tree .agent-card[data-agent="beta/`+lead+`"]') !== null &&
		document.querySelector('#chart-tree .agent-card[data-agent="beta/`+sub[1]+`"]') !== null`, 15*time.Second)
	waitJS(t, ctx, `document.querySelector('`+farCard+`') !== null && document.querySelector('`+farCard+`').classList.contains("offline")`, 20*time.Second)
	if txt := run(t, ctx, chromedp.Evaluate[string](`document.querySelector('#chart-tree .agent-card[data-agent="beta/`+sub[1]+`"]').innerText`)); !strings.Contains(txt, "⌂ beta") {
		t.Errorf("beta's worker card does not name its machine:\n%s", txt)
	}
	if dim := run(t, ctx, chromedp.Evaluate[bool](`document.querySelector('.mchip[data-machine="gamma"]').classList.contains("offline") && !document.querySelector('.mchip[data-machine="beta"]').classList.contains("offline")`)); !dim {
		t.Errorf("gamma's chip is not dimmed, or beta's is:\n%s", pageText(ctx))
	}
	if n := count(t, ctx, `#chart-tree .agent-card.offline`); n != 1 {
		t.Errorf("%d dimmed cards, want 1 (gamma's worker):\n%s", n, pageText(ctx))
	}
	screenshot(t, ctx, "web-all-machines.png")
	// This machine's scope leaves the other machines out.
	do(t, ctx, chromedp.Click(`#scopes button:nth-child(2)`))
	waitJS(t, ctx, `document.querySelector('#chart-tree .agent-card[data-agent="beta/`+lead+`"]') === null`, 20*time.Second)
}

// TestCrossMachineMarks (issue 15, item 7): a worker on another machine
// shows in its coordinator's sidebar card with the machine's mark and
// "↳ parent · machine"; on the worker's own machine, its row says whose
// worker it is: "worker of NAME on MACHINE".
func TestCrossMachineMarks(t *testing.T) {
	c := testutil.NewCluster(t)
	c.Extra = []string{"ST_HEARTBEAT=1s"}
	a, b := c.Machine("alpha", "127.0.0.2"), c.Machine("beta", "127.0.0.3")
	for _, m := range []*testutil.Machine{a, b} {
		m.Login("acme")
	}
	a.Up()
	b.Up()
	b.MustST("", "orch", "accept-remote", "on")
	// alpha's coordinator is an agent (a sim by hand), so that it is drawn.
	boss := a.HandAgent("boss")
	slow := c.TaskFile("slow.md", "sleep: 120s\nsummary: slept\n")
	out := a.MustST(boss, "worker", "start", "--machine", "beta", "--agent", "sim", "--task", slow, "--name", "far")
	far := regexp.MustCompile(`(?m)^beta/(%\d+) far$`).FindStringSubmatch(out)
	if far == nil {
		t.Fatalf("no far worker: %s", out)
	}

	// alpha: the coordinator's card holds far, with beta's mark.
	ctx := newBrowser(t, 1280, 800)
	do(t, ctx, chromedp.Navigate(strings.TrimSpace(a.MustST("", "web"))))
	waitJS(t, ctx, `[...document.querySelectorAll("#sidebar .agent-row")].some(r => r.innerText.includes("far") && r.innerText.includes("↳ boss · beta") && r.innerText.includes("⌂ beta"))`, 30*time.Second)
	screenshot(t, ctx, "web-cross-machine-coordinator.png")

	// beta: far's row says whose worker it is.
	ctx2 := newBrowser(t, 1280, 800)
	do(t, ctx2, chromedp.Navigate(strings.TrimSpace(b.MustST("", "web"))))
	waitJS(t, ctx2, `[...document.querySelectorAll("#sidebar .agent-row")].some(r => r.innerText.includes("far") && r.innerText.includes("worker of boss on alpha"))`, 30*time.Second)
	screenshot(t, ctx2, "web-cross-machine-worker.png")
	// And the CLI there says the same.
	if out := b.MustST("", "worker", "list", "--all"); !regexp.MustCompile(`far .*worker of boss on alpha \(alpha/%\d+\)`).MatchString(out) {
		t.Errorf("st worker list --all on beta:\n%s", out)
	}
}

// keepSockets makes the page keep every websocket it opens, in order, in
// window.__sockets (before its own scripts run), so that a test can wait
// for the window's socket to be open and send on it.
func keepSockets() chromedp.Action[chromedp.Void] {
	const src = `window.__sockets = [];
window.WebSocket = class extends WebSocket {
	constructor(...args) { super(...args); window.__sockets.push(this); }
};
window.__termSocket = () => window.__sockets.filter((s) => new URL(s.url).pathname.endsWith('/term')).at(-1);`
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: src})
		return err
	})
}

// termSocketOpen is a JavaScript test that the window's latest socket is
// open, read-only or not.
func termSocketOpen(readOnly bool) string {
	ro := "0"
	if readOnly {
		ro = "1"
	}
	return `(() => { const s = window.__termSocket(); return !!s && s.readyState === WebSocket.OPEN && new URL(s.url).searchParams.get('ro') === '` + ro + `'; })()`
}

// TestWindowOfAnotherMachine (issue 17): a click on an agent of another
// machine in the graph opens its window in the same page, bridged over
// the two machines' peer connection, both ways the machines reach each
// other (directly, and through the control plane's relay with no
// listener at all). Typing reaches that agent and its echo comes back;
// with read-only on, nothing typed arrives; the other machine opens no
// window that is not an agent's; and once it stops taking workers
// (accept-remote off), the open window closes saying why, the card of
// this machine's own worker there says why, and a click opens nothing.
func TestWindowOfAnotherMachine(t *testing.T) {
	for _, way := range testutil.Ways {
		t.Run(way, func(t *testing.T) { windowOfAnotherMachine(t, way) })
	}
}

// handLone opens beta's agent lone in alpha's page as it is handed over
// (issue 23, item 1): refused while handed to no one, read-only once a
// person on beta offers it to alpha (beta decides), typed into once alpha
// adopts it.
func handLone(t *testing.T, ctx context.Context, a, b *testutil.Machine, boss, lone, loneCard string) {
	t.Helper()
	rows := `document.querySelector("#term .xterm-rows")`
	closedSays := func(s string) string {
		return `!document.querySelector("#term-closed").hidden && document.querySelector("#term-closed-msg").innerText.includes("` + s + `")`
	}
	// Handed to no one: beta opens nothing of it, and says what its
	// person does.
	do(t, ctx, chromedp.Click(loneCard+" .gc-name"))
	waitJS(t, ctx, closedSays(lone+" was not handed to alpha"), 20*time.Second)
	if log, _ := os.ReadFile(filepath.Join(b.Home, "daemon.log")); strings.Contains(string(log), "opens the window of "+lone) {
		t.Errorf("beta opened lone's window for alpha before anyone offered it:\n%s", log)
	}
	// Offered to alpha, it opens read-only, as beta decides whatever the
	// page's switch says: what is typed never arrives.
	b.MustST("", "worker", "offer", lone, "--machine", "alpha")
	do(t, ctx, chromedp.Click("#agents-btn"), chromedp.Click(loneCard+" .gc-name"))
	waitJS(t, ctx, rows+` !== null && `+rows+`.innerText.includes("❯") && document.querySelector("#term-title").innerText === "lone on beta" && document.querySelector("#term-closed").hidden`, 20*time.Second)
	do(t, ctx, chromedp.Focus("#term .xterm-helper-textarea"), typeKeys("yy-offered-yy"))
	// Adopted by alpha, it is alpha's worker: typed keys go through.
	a.MustST(boss, "worker", "adopt", "beta/"+lone)
	do(t, ctx, chromedp.Click("#agents-btn"), chromedp.Click(loneCard+" .gc-name"))
	waitJS(t, ctx, rows+` !== null && `+rows+`.innerText.includes("❯") && document.querySelector("#term-title").innerText === "lone on beta"`, 20*time.Second)
	do(t, ctx, chromedp.Focus("#term .xterm-helper-textarea"), typeKeys("hi-from-alpha"))
	testutil.WaitFor(t, 10*time.Second, func() (bool, string) {
		s := b.Capture(lone)
		return strings.Contains(s, "hi-from-alpha"), "beta's pane:\n" + s
	})
	if s := b.Capture(lone); strings.Contains(s, "yy") {
		t.Fatalf("keys typed into an offer not yet adopted reached beta's agent:\n%s", s)
	}
}

func windowOfAnotherMachine(t *testing.T, way string) {
	c := testutil.NewClusterWay(t, way)
	c.Extra = []string{"ST_HEARTBEAT=1s"}
	a, b := c.Machine("alpha", "127.0.0.2"), c.Machine("beta", "127.0.0.3")
	for _, m := range []*testutil.Machine{a, b} {
		m.Login("acme")
	}
	a.Up()
	shell := b.Up() // beta's main window: a shell, no agent
	b.MustST("", "orch", "accept-remote", "on")
	boss := a.HandAgent("boss")
	slow := c.TaskFile("slow.md", "sleep: 300s\nsummary: slept\n")
	out := a.MustST(boss, "worker", "start", "--machine", "beta", "--agent", "sim", "--task", slow, "--name", "far")
	far := regexp.MustCompile(`(?m)^beta/(%\d+) far$`).FindStringSubmatch(out)
	if far == nil {
		t.Fatalf("no far worker: %s", out)
	}
	lone := b.HandAgent("lone")

	ctx := newBrowser(t, 1280, 800)
	do(t, ctx, keepSockets(), chromedp.Navigate(strings.TrimSpace(a.MustST("", "web"))))
	do(t, ctx, chromedp.Click("#agents-btn"))
	loneCard := `#graph .agent-card[data-agent="beta/` + lone + `"]`
	farCard := `#graph .agent-card[data-agent="beta/` + far[1] + `"]`
	waitJS(t, ctx, `document.querySelector('`+loneCard+`') !== null && document.querySelector('`+farCard+`') !== null`, 30*time.Second)
	handLone(t, ctx, a, b, boss, lone, loneCard)
	rows := `document.querySelector("#term .xterm-rows")`
	waitJS(t, ctx, rows+`.innerText.includes("hi-from-alpha") && `+rows+`.innerText.includes("[main]")`, 10*time.Second)
	screenshot(t, ctx, "web-window-of-another-machine-"+way+".png")

	// Read-only: the window's socket opens again, read-only; once it is
	// open, neither what a person types nor bytes sent on that socket
	// (what a page that ignored the box would send) reach beta's agent.
	// Keys typed while no socket is open are dropped anyway, and would
	// prove nothing.
	do(t, ctx, chromedp.Click("#ro"))
	waitJS(t, ctx, `document.querySelector("#ro").checked && `+termSocketOpen(true), 10*time.Second)
	do(t, ctx, chromedp.Focus("#term .xterm-helper-textarea"), typeKeys("zz-ro-zz"))
	run(t, ctx, chromedp.Evaluate[bool](`(() => { window.__termSocket().send(new TextEncoder().encode("zz-raw-zz")); return true; })()`))
	// Read-write again: once its socket is open, a key typed arrives (the
	// way keys came in read-only works), after what was sent read-only.
	do(t, ctx, chromedp.Click("#ro"))
	waitJS(t, ctx, `!document.querySelector("#ro").checked && `+termSocketOpen(false), 10*time.Second)
	testutil.WaitFor(t, 10*time.Second, func() (bool, string) {
		do(t, ctx, chromedp.Focus("#term .xterm-helper-textarea"), typeKeys("+"))
		s := b.Capture(lone)
		if strings.Contains(s, "zz") {
			t.Fatalf("keys typed or sent read-only reached beta's agent:\n%s", s)
		}
		return strings.Contains(s, "hi-from-alpha+"), "beta's pane:\n" + s
	})
	if s := b.Capture(lone); strings.Contains(s, "zz") {
		t.Fatalf("keys typed or sent read-only reached beta's agent:\n%s", s)
	}

	// beta opens no window that was not handed to alpha, even to a page
	// that asks for it by hand: its shell is refused before tmux is
	// touched.
	refusal := run(t, ctx, chromedp.Evaluate[string](`new Promise((done) => {
		const u = new URL('term', location.href);
		u.protocol = 'ws:';
		u.search = new URLSearchParams({ machine: 'beta', pane: '`+shell+`', cols: 80, rows: 24 }).toString();
		const ws = new WebSocket(u, ['st', 'st-session.' + localStorage.getItem('st-session')]); // as the page's own
		ws.onclose = (e) => done(e.code + ' ' + e.reason);
	})`, chromedp.EvalAwaitPromise))
	if !strings.HasPrefix(refusal, "4403 ") || !strings.Contains(refusal, shell+" was not handed to alpha") {
		t.Errorf("a page asking for beta's shell: %s", refusal)
	}

	// beta stops taking workers: the open window closes, saying why.
	b.MustST("", "orch", "accept-remote", "off")
	waitJS(t, ctx, `!document.querySelector("#term-closed").hidden && document.querySelector("#term-closed-msg").innerText.includes("accept-remote is off there")`, 15*time.Second)
	// alpha's own workers there stay in the graph (lone is one now), and
	// their cards say why they do not open; a click opens nothing.
	do(t, ctx, chromedp.Click("#agents-btn"))
	waitJS(t, ctx, `document.querySelector('`+farCard+` .gc-note') !== null &&
		document.querySelector('`+farCard+` .gc-note').innerText.includes("beta takes no workers from other machines now") &&
		document.querySelector('`+loneCard+` .gc-note') !== null &&
		document.querySelector('`+loneCard+` .gc-note').innerText.includes("beta takes no workers from other machines now")`, 15*time.Second)
	screenshot(t, ctx, "web-window-of-another-machine-refused-"+way+".png")
	do(t, ctx, chromedp.Click(farCard+" .gc-name"))
	waitJS(t, ctx, `!document.querySelector("#toast").hidden && document.querySelector("#toast").innerText.includes("Run st orch accept-remote on on beta")`, 5*time.Second)
	if title := run(t, ctx, chromedp.Evaluate[string](`document.querySelector("#term-title").innerText`)); strings.Contains(title, "far") {
		t.Errorf("far's window opened with accept-remote off on beta: %q", title)
	}
	if log, _ := os.ReadFile(filepath.Join(b.Home, "daemon.log")); strings.Contains(string(log), "opens the window of "+far[1]) {
		t.Errorf("beta was asked for far's window:\n%s", log)
	}
}

// TestNeedsOfAnotherMachine (issue 34, item 3): alpha's worker on beta
// stops at a permission prompt. alpha's page lists it in Needs you,
// marked with beta, with no answer of its own (beta's prompt is answered
// on beta: "Answer it in its window"); Open opens that window on beta
// through the peer link, where the person answers it; the item closes on
// beta and is gone from alpha's list.
func TestNeedsOfAnotherMachine(t *testing.T) {
	c := testutil.NewCluster(t)
	c.Extra = []string{"ST_HEARTBEAT=1s"}
	a, b := c.Machine("alpha", "127.0.0.2"), c.Machine("beta", "127.0.0.3")
	for _, m := range []*testutil.Machine{a, b} {
		m.Login("acme")
	}
	pa := a.Up()
	b.Up()
	b.MustST("", "orch", "accept-remote", "on")
	task := c.TaskFile("permit.md", "permit: echo hi > permitted.txt\nanswer: Wrote it.\nsummary: wrote permitted.txt\n")
	out := a.MustST(pa, "worker", "start", "--machine", "beta", "--agent", "sim", "--task", task, "--name", "asker")
	w := regexp.MustCompile(`(?m)^beta/(%\d+) asker$`).FindStringSubmatch(out)
	if w == nil {
		t.Fatalf("no worker on beta: %s", out)
	}

	url := strings.TrimSpace(a.MustST("", "web"))
	ctx := newBrowser(t, 1280, 800)
	do(t, ctx, chromedp.Navigate(url))
	waitJS(t, ctx, `document.querySelectorAll("#needs .need").length === 1`, 60*time.Second)
	row := texts(t, ctx, "#needs .need")[0]
	for _, want := range []string{"asker asks leave to run", "⌂ beta", "echo hi > permitted.txt", "Answer it in its window", "Open"} {
		if !strings.Contains(row, want) {
			t.Errorf("alpha's Needs you row does not say %q:\n%s", want, row)
		}
	}
	if n := count(t, ctx, "#needs .need button.allow, #needs .need button.deny"); n != 0 {
		t.Errorf("alpha offers %d answer buttons for a prompt on beta (beta answers its own)", n)
	}
	// One click: beta's window, through the peer link.
	rows := `document.querySelector("#term .xterm-rows")`
	do(t, ctx, chromedp.Click("#needs .need button.open"))
	waitJS(t, ctx, rows+` !== null && document.querySelector("#term-title").innerText === "asker on beta" && `+rows+`.innerText.includes("echo hi > permitted.txt")`, 30*time.Second)
	do(t, ctx, chromedp.Focus("#term .xterm-helper-textarea"), typeKeys("1"))
	testutil.WaitFor(t, 30*time.Second, func() (bool, string) {
		got, err := os.ReadFile(filepath.Join(c.Dir, "beta", "home", "permitted.txt"))
		return err == nil && strings.TrimSpace(string(got)) == "hi", "beta's pane:\n" + b.Capture(w[1])
	})
	// The prompt's row goes. (The worker then reports, and with it the
	// run's only worker is done: alpha's own run-done row may come in its
	// place, a moment later.)
	waitJS(t, ctx, `![...document.querySelectorAll("#needs .need")].some(e => e.innerText.includes("echo hi > permitted.txt"))`, 30*time.Second)
}
