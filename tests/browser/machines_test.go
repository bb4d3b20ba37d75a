package browser

import (
	"regexp"
	"strings"
	"testing"
	"time"

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
