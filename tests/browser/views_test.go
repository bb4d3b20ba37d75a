package browser

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/web"
	"github.com/sophonz/st/internal/web/webtest"
)

// Issue 32: every view of the web UI draws from one selection of who
// belongs where (this machine's tree, with other machines' members), and
// every row keeps its marks at every width. The state is the audit's
// (webtest.ViewsSample).

// viewsPage opens the UI of ViewsSample in a browser w x h wide (a phone
// below 700) in lang ("" for English), and waits for the sidebar.
func viewsPage(t *testing.T, w, h int, lang string) (context.Context, *webtest.Backend, string) {
	t.Helper()
	fake := webtest.New(webtest.ViewsSample(time.Now()))
	base := serveUI(t, web.Config{Backend: fake})
	ctx := newBrowserIn(t, w, h, lang)
	if w < 700 {
		do(t, ctx, chromedp.EmulateViewport(int64(w), int64(h), chromedp.EmulateScale(2), chromedp.EmulateMobile))
	}
	do(t, ctx, chromedp.Navigate(link(t, base)))
	waitJS(t, ctx, `document.querySelectorAll("#sidebar .agent-row").length > 0`, 20*time.Second)
	return ctx, fake, base
}

// sideRow finds the sidebar row of the agent named name.
func sideRow(name string) string {
	return fmt.Sprintf(`[...document.querySelectorAll("#sidebar .agent-row")].find(r => r.querySelector(".name").innerText === %q)`, name)
}

// showGraph opens the agent graph unless it is open already (as the
// first screen is: TestFirstScreenShowsTheTeam), so that the tests of the
// graph's cards test those alone.
func showGraph(t *testing.T, ctx context.Context) {
	t.Helper()
	if run(t, ctx, chromedp.Evaluate[bool](`document.querySelector("#graph").hidden`)) {
		do(t, ctx, chromedp.Click("#agents-btn"))
	}
	waitJS(t, ctx, `!document.querySelector("#graph").hidden`, 20*time.Second)
}

// rowMarks is what a sidebar row shows: each part with whether it is on
// screen whole, inside its row.
type rowMarks struct {
	Name  string          `json:"name"`
	Whole bool            `json:"whole"` // the name is not cut
	Parts map[string]bool `json:"parts"` // kind, word, time, and each mark by its text: shown whole
}

const rowMarksJS = `[...document.querySelectorAll("#sidebar .agent-row")].map(r => {
	const rr = r.getBoundingClientRect(), n = r.querySelector(".name");
	const whole = (e) => { if (!e) return false; const b = e.getBoundingClientRect(); return getComputedStyle(e).display !== "none" && b.width > 0 &&
		e.scrollWidth <= e.clientWidth + 1 && b.left >= rr.left - 0.5 && b.right <= rr.right + 0.5 && b.bottom <= rr.bottom + 0.5; };
	const parts = {kind: whole(r.querySelector(".kind")), word: whole(r.querySelector(".st-word"))};
	const time = r.querySelector(".st-time");
	if (time) parts.time = whole(time) && time.innerText.trim().length > 2;
	for (const m of r.querySelectorAll(".marks > *")) parts[m.innerText] = whole(m);
	return {name: n.innerText, whole: n.scrollWidth <= n.clientWidth, parts};
})`

// TestViewsRowsKeepTheirMarks (items 3, 1 and 2): at 1440×900 and in a
// phone's drawer 390 and 360 wide, in English and Korean, every sidebar
// row shows its kind's icon, its state's word and time, and each of its
// marks whole (team of N, the machine, whose worker it is): the name is
// what yields. The sidebar holds the workers a shell started here and on
// beta in one card at the shell's window (item 1), and the orphan with a
// worker of its own says ⚠, its gone coordinator's id and Release
// (item 2). Screenshots of each.
func TestViewsRowsKeepTheirMarks(t *testing.T) {
	for _, c := range []struct {
		lang string
		w, h int
	}{
		{"en", 1440, 900}, {"ko-KR", 1440, 900}, {"en", 390, 844}, {"ko-KR", 390, 844}, {"en", 360, 740}, {"ko-KR", 360, 740},
	} {
		t.Run(fmt.Sprintf("%s-%d", c.lang, c.w), func(t *testing.T) {
			lang := c.lang
			if lang == "en" {
				lang = ""
			}
			ctx, _, _ := viewsPage(t, c.w, c.h, lang)
			if c.w < 700 {
				do(t, ctx, chromedp.Click("#menu"))
				waitJS(t, ctx, `document.querySelector("#sidebar").getBoundingClientRect().left >= 0`, 20*time.Second)
			}
			waitJS(t, ctx, sideRow("beta-two")+` !== undefined`, 20*time.Second)
			rows := run(t, ctx, chromedp.Evaluate[[]rowMarks](rowMarksJS))
			marks := map[string][]string{
				"w1": {"3"}, "acoord": {"2", "⌂ beta", "↳ w1 · beta"}, "beta-one": {"⌂ beta", "↳ acoord · beta"},
				"shell-far": {"⌂ beta", "↳ zsh · beta"}, "orphan-worker": {},
			}
			seen := map[string]bool{}
			for _, r := range rows {
				seen[r.Name] = true
				for part, ok := range r.Parts {
					if !ok {
						t.Errorf("row %s: %q is cut or hidden (%v)", r.Name, part, r.Parts)
					}
				}
				for _, want := range marks[r.Name] {
					found := false
					for part := range r.Parts {
						found = found || strings.Contains(part, want)
					}
					if !found {
						t.Errorf("row %s shows no mark %q: %v", r.Name, want, r.Parts)
					}
				}
			}
			for _, name := range []string{"coordinator-of-the-frontend", "w1", "acoord", "beta-one", "beta-two", "shell-local", "shell-far", "orphan-lead", "orphan-worker"} {
				if !seen[name] {
					t.Errorf("the sidebar has no row for %s", name)
				}
			}
			// Item 1: both workers the shell started share its card, at its window.
			shell := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#sidebar .card.shell[data-shell="%3"] .agent-row .name')].map(n => n.innerText)`))
			if strings.Join(shell, ",") != "shell-local,shell-far" {
				t.Errorf("the shell's card holds %q, want shell-local and shell-far", shell)
			}
			// Item 2: the orphan that leads a worker says what a lone one says.
			orphan := texts(t, ctx, `#sidebar .card.orphan[data-family="%5"]`)
			if len(orphan) != 1 || !strings.Contains(orphan[0], "⚠") || !strings.Contains(orphan[0], "%9~k9xq2") ||
				count(t, ctx, `#sidebar .card.orphan[data-family="%5"] .orphan-line button`) != 1 || !strings.Contains(orphan[0], "orphan-worker") {
				t.Errorf("the orphan lead's card = %q, want ⚠, its gone coordinator %%9~k9xq2, Release, and orphan-worker under it", orphan)
			}
			screenshot(t, ctx, fmt.Sprintf("web-views-sidebar-%s-%d.png", c.lang, c.w))
		})
	}
}

// TestViewsOneTree (items 1, 4 and 6): the views draw the same tree. The
// graph, open as the first screen, offers Release only on the workers
// this machine may let go: not on beta's own team (beta-one, beta-two),
// which only beta can release; nor does their sidebar row have the menu.
// The terminal's Agents card of the coordinator's window lists the
// coordinator and its workers, not the other families of its session
// (⑂ 4, not 5 with orphan-lead's), each row's state whole. The phone's chart, in the scope "This
// machine", has both workers the shell started, the one on beta too. In
// English and Korean, with screenshots.
func TestViewsOneTree(t *testing.T) {
	for _, lang := range []string{"en", "ko-KR"} {
		t.Run(lang, func(t *testing.T) { viewsOneTree(t, lang) })
	}
}

func viewsOneTree(t *testing.T, lang string) {
	l := lang
	if l == "en" {
		l = ""
	}
	ctx, _, base := viewsPage(t, 1440, 900, l)
	showGraph(t, ctx)
	waitJS(t, ctx, `document.querySelectorAll("#graph .agent-card").length === 9`, 20*time.Second)
	releases := run(t, ctx, chromedp.Evaluate[map[string]bool](`Object.fromEntries([...document.querySelectorAll("#graph .agent-card")].map(c => [c.dataset.agent, !!c.querySelector("button.release")]))`))
	want := map[string]bool{"%1": false, "%2": true, "%4": true, "%5": true, "%6": true, "beta/%8": true, "beta/%7": true, "beta/%9": false, "beta/%10": false}
	for k, v := range want {
		if releases[k] != v {
			t.Errorf("graph card %s offers Release: %v, want %v (all: %v)", k, releases[k], v, releases)
		}
	}
	if menu := run(t, ctx, chromedp.Evaluate[bool](sideRow("beta-one")+`.querySelector(".row-menu-btn") !== null`)); menu {
		t.Errorf("beta-one's sidebar row has a menu to let it go, which only beta may do")
	}
	screenshot(t, ctx, "web-views-graph-"+lang+"-1440.png")

	// The Agents card of the coordinator's window.
	do(t, ctx, chromedp.Evaluate[chromedp.Void](sideRow("coordinator-of-the-frontend")+`.click()`))
	waitJS(t, ctx, `!document.querySelector("#agents-card").hidden`, 20*time.Second)
	card := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#agents-card .ac-row .name")].map(n => n.innerText)`))
	pill := strings.TrimSpace(texts(t, ctx, "#agents-card .ac-pill")[0])
	if strings.Join(card, ",") != "coordinator-of-the-frontend,w1,acoord,beta-one,beta-two" || pill != "4" {
		t.Errorf("the Agents card lists %q with ⑂ %s, want the coordinator and its four workers, ⑂ 4", card, pill)
	}
	// Its rows keep their badge and state whole: the name yields.
	if cut := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#agents-card .ac-row")].flatMap(r =>
		[...r.querySelectorAll(".state, .badge, .kind")].filter(e => e.scrollWidth > e.clientWidth + 1 || e.getBoundingClientRect().right > r.getBoundingClientRect().right + 0.5).map(e => e.innerText))`)); len(cut) > 0 {
		t.Errorf("the Agents card cuts %q", cut)
	}
	screenshot(t, ctx, "web-views-card-"+lang+"-1440.png")

	// The phone's chart of this machine (the second scope: This session,
	// This machine, All machines).
	phone := newBrowserIn(t, 390, 844, l)
	do(t, phone, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile), chromedp.Navigate(link(t, base)))
	waitJS(t, phone, `document.querySelectorAll("#chart-tree .agent-card").length > 0`, 20*time.Second)
	if on := run(t, phone, chromedp.Evaluate[bool](`document.querySelector("#scopes .scope:nth-child(2)").classList.contains("on")`)); !on {
		t.Fatalf("the chart's scope is %q, want This machine", texts(t, phone, "#scopes .scope.on"))
	}
	for _, k := range []string{"%4", "beta/%7", "beta/%9"} {
		if count(t, phone, agentCard("#chart-tree", k)) != 1 {
			t.Errorf("the chart of this machine has no card %s:\n%s", k, pageText(phone))
		}
	}
	screenshot(t, phone, "web-views-chart-"+lang+"-390.png")
}

// TestAdoptToastNamesTheAgent (item 7): a teammate in a pane dropped on
// the coordinator is adopted, and the toast names it as the page does
// (beta), not by its pane (%6).
func TestAdoptToastNamesTheAgent(t *testing.T) {
	fake := webtest.New(webtest.TeamSample(time.Now()))
	base := serveUI(t, web.Config{Backend: fake})
	ctx := newBrowser(t, 1440, 900)
	do(t, ctx, chromedp.Navigate(link(t, base)))
	waitJS(t, ctx, `document.querySelectorAll("#sidebar .agent-row").length > 0`, 20*time.Second)
	showGraph(t, ctx)
	waitJS(t, ctx, `document.querySelector('#graph [data-mate="%2/beta"]') !== null`, 20*time.Second)
	drag(t, ctx, `#graph [data-mate="%2/beta"]`, agentCard("#graph", "%1"))
	waitCall(t, fake, `Adopt["%1" "%6"]`)
	waitJS(t, ctx, `!document.querySelector("#toast").hidden && document.querySelector("#toast").innerText.includes("now works for")`, 20*time.Second)
	if toast := texts(t, ctx, "#toast")[0]; toast != "beta now works for claude" {
		t.Errorf("the toast says %q, want %q", toast, "beta now works for claude")
	}
}

// TestFirstScreenShowsTheTeam (item 12): with no window open, the main
// area shows the agent graph on a desktop (the chart on a phone), not
// only "pick a window"; a person drags the sidebar's edge wider, the
// coordinator's long name shows whole, and the width is kept across a
// reload. In English and Korean, with screenshots.
func TestFirstScreenShowsTheTeam(t *testing.T) {
	for _, lang := range []string{"en", "ko-KR"} {
		t.Run(lang, func(t *testing.T) {
			l := lang
			if l == "en" {
				l = ""
			}
			ctx, _, base := viewsPage(t, 1440, 900, l)
			waitJS(t, ctx, `!document.querySelector("#graph").hidden && document.querySelectorAll("#graph .agent-card").length === 9`, 20*time.Second)
			name := sideRow("coordinator-of-the-frontend") + `.querySelector(".name")`
			whole := name + `.scrollWidth <= ` + name + `.clientWidth`
			if run(t, ctx, chromedp.Evaluate[bool](whole)) {
				t.Fatalf("the coordinator's name shows whole before the sidebar is widened: the test needs a longer one")
			}
			screenshot(t, ctx, "web-views-first-"+lang+"-1440.png")
			w0 := run(t, ctx, chromedp.Evaluate[float64](`document.querySelector("#sidebar").getBoundingClientRect().width`))
			x, y := center(t, ctx, "#side-grip")
			steps := []chromedp.Action[chromedp.Void]{chromedp.MouseEvent(chromedp.MousePressed, x, y, leftDown)}
			for i := 1; i <= 8; i++ {
				steps = append(steps, chromedp.MouseEvent(chromedp.MouseMoved, x+float64(i)*20, y, leftDown))
			}
			do(t, ctx, append(steps, chromedp.MouseEvent(chromedp.MouseReleased, x+160, y, leftDown))...)
			waitJS(t, ctx, whole, 20*time.Second)
			w1 := run(t, ctx, chromedp.Evaluate[float64](`document.querySelector("#sidebar").getBoundingClientRect().width`))
			if w1 < w0+150 {
				t.Errorf("the sidebar is %.0f px wide after a drag of 160 px from %.0f", w1, w0)
			}
			screenshot(t, ctx, "web-views-wide-"+lang+"-1440.png")
			do(t, ctx, chromedp.Navigate(base+"/"))
			waitJS(t, ctx, sideRow("coordinator-of-the-frontend")+` !== undefined`, 20*time.Second)
			if w2 := run(t, ctx, chromedp.Evaluate[float64](`document.querySelector("#sidebar").getBoundingClientRect().width`)); w2 != w1 {
				t.Errorf("after a reload the sidebar is %.0f px wide, want the %.0f px it was dragged to", w2, w1)
			}
			// A phone opens on the chart of the team.
			phone, _, _ := viewsPage(t, 390, 844, l)
			waitJS(t, phone, `document.querySelectorAll("#chart-tree .agent-card").length > 0 && document.querySelector("#chart").offsetParent !== null`, 20*time.Second)
			screenshot(t, phone, "web-views-first-"+lang+"-390.png")
		})
	}
}

// TestOfflineMachineKeepsItsWorkers (item 5): alpha's coordinator has a
// worker lead on beta, which started a worker sub of its own there (a
// remote lead's team). When beta goes offline, alpha's sidebar keeps sub
// under lead, marked unreachable, as st worker list keeps lead: the page
// does not lose what it can no longer ask about. Before, alpha's graph
// offers Release on lead and not on sub (item 6: the authorization model
// decides what is drawn).
func TestOfflineMachineKeepsItsWorkers(t *testing.T) {
	c := testutil.NewCluster(t)
	c.Extra = []string{"ST_HEARTBEAT=1s"}
	a, b := c.Machine("alpha", "127.0.0.2"), c.Machine("beta", "127.0.0.3")
	for _, m := range []*testutil.Machine{a, b} {
		m.Login("acme")
	}
	a.Up()
	b.Up()
	b.MustST("", "orch", "accept-remote", "on")
	boss := a.HandAgent("boss")
	slow := c.TaskFile("slow.md", "sleep: 300s\nsummary: slept\n")
	out := a.MustST(boss, "worker", "start", "--machine", "beta", "--agent", "sim", "--task", slow, "--name", "lead")
	lead := regexp.MustCompile(`(?m)^beta/(%\d+) lead$`).FindStringSubmatch(out)
	if lead == nil {
		t.Fatalf("no lead on beta: %s", out)
	}
	out = b.MustST(lead[1], "worker", "start", "--agent", "sim", "--task", slow, "--name", "sub")
	sub := regexp.MustCompile(`(?m)^(%\d+) sub$`).FindStringSubmatch(out)
	if sub == nil {
		t.Fatalf("no sub worker of lead: %s", out)
	}

	ctx := newBrowser(t, 1440, 900)
	do(t, ctx, chromedp.Navigate(strings.TrimSpace(a.MustST("", "web"))))
	subUnder := `(() => { const l = ` + sideRow("lead") + `, s = ` + sideRow("sub") + `;
		return !!l && !!s && !!l.closest(".card.family") && l.closest(".card.family").contains(s); })()`
	waitJS(t, ctx, subUnder, 30*time.Second)
	// Item 6 with real daemons: alpha's graph offers Release on lead (its
	// own worker) and not on sub, which only beta may let go.
	showGraph(t, ctx)
	leadCard, subCard := agentCard("#graph", "beta/"+lead[1]), agentCard("#graph", "beta/"+sub[1])
	waitJS(t, ctx, `document.querySelector('`+leadCard+`') !== null && document.querySelector('`+subCard+`') !== null`, 30*time.Second)
	if n, m := count(t, ctx, leadCard+" button.release"), count(t, ctx, subCard+" button.release"); n != 1 || m != 0 {
		t.Errorf("alpha's graph offers Release %d times on lead and %d on sub, want once on lead, never on beta's own sub", n, m)
	}
	screenshot(t, ctx, "web-views-remote-team-online.png")

	b.KillDaemon()
	testutil.WaitFor(t, 30*time.Second, func() (bool, string) {
		out, _ := a.ST("machines")
		return regexp.MustCompile(`beta\s+host-beta\s+beta\s+offline`).MatchString(out), out
	})
	// The page has seen beta offline (its rows dimmed) and still has sub,
	// unreachable, under lead.
	waitJS(t, ctx, sideRow("lead")+` !== undefined && `+sideRow("lead")+`.classList.contains("offline")`, 30*time.Second)
	waitJS(t, ctx, subUnder+` && `+sideRow("sub")+`.querySelector(".st-word").innerText === "unreachable"`, 30*time.Second)
	screenshot(t, ctx, "web-views-remote-team-offline.png")
}

// TestShellWorkersOnTwoMachines (item 1, with real daemons): a person at
// alpha's shell starts one worker there and one on beta. alpha's sidebar
// holds both in one card at the shell's window, the one on beta with its
// machine's mark; the phone's chart of this machine has both too.
func TestShellWorkersOnTwoMachines(t *testing.T) {
	c := testutil.NewCluster(t)
	c.Extra = []string{"ST_HEARTBEAT=1s"}
	a, b := c.Machine("alpha", "127.0.0.2"), c.Machine("beta", "127.0.0.3")
	for _, m := range []*testutil.Machine{a, b} {
		m.Login("acme")
	}
	shell := a.Up()
	b.Up()
	b.MustST("", "orch", "accept-remote", "on")
	slow := c.TaskFile("slow.md", "sleep: 300s\nsummary: slept\n")
	out := a.MustST(shell, "worker", "start", "--machine", "beta", "--agent", "sim", "--task", slow, "--name", "far")
	far := regexp.MustCompile(`(?m)^beta/(%\d+) far$`).FindStringSubmatch(out)
	if far == nil {
		t.Fatalf("no far worker on beta: %s", out)
	}
	out = a.MustST(shell, "worker", "start", "--agent", "sim", "--task", slow, "--name", "near")
	near := regexp.MustCompile(`(?m)^(%\d+) near$`).FindStringSubmatch(out)
	if near == nil {
		t.Fatalf("no near worker: %s", out)
	}

	url := strings.TrimSpace(a.MustST("", "web"))
	ctx := newBrowser(t, 1440, 900)
	do(t, ctx, chromedp.Navigate(url))
	card := `#sidebar .card.shell[data-shell="` + shell + `"]`
	waitJS(t, ctx, `document.querySelector('`+card+`') !== null && document.querySelector('`+card+`').querySelectorAll(".agent-row").length === 2`, 30*time.Second)
	if txt := texts(t, ctx, card)[0]; !strings.Contains(txt, "near") || !strings.Contains(txt, "far") || !strings.Contains(txt, "⌂ beta") {
		t.Errorf("the shell's card says %q, want near and far, far with ⌂ beta", txt)
	}
	screenshot(t, ctx, "web-views-shell-workers-en-1440.png")

	phone := newBrowser(t, 390, 844)
	do(t, phone, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile), chromedp.Navigate(url))
	waitJS(t, phone, `document.querySelector('`+agentCard("#chart-tree", near[1])+`') !== null && document.querySelector('`+agentCard("#chart-tree", "beta/"+far[1])+`') !== null`, 30*time.Second)
	screenshot(t, phone, "web-views-shell-workers-en-390.png")
}
