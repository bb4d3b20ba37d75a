package browser

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sophonz/st/internal/web"
	"github.com/sophonz/st/internal/web/webtest"
)

// edgeStyles reads the stroke of each edge of a class in the graph, as
// "width colour opacity".
func edgeStyles(t *testing.T, ctx context.Context, cls string) []string {
	t.Helper()
	return run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#graph path.`+cls+`")].map(e => {
		const cs = getComputedStyle(e); return cs.strokeWidth + " " + cs.stroke + " " + cs.opacity; })`))
}

// TestTeamsInTheUI: a Claude worker that leads an agent team of two and a
// coordinator with a subagent, on the fake backend. The graph draws blue
// lines to the teammates (strong only to the one at work) and a thin grey
// one to the subagent; every card says its kind, state and for how long;
// a click on a teammate or subagent shows its kind, state, parent, start
// and path, and a teammate's pane opens from there; the sidebar card, the
// Agents card and the phone chart show the same; a teammate may be
// dropped on a coordinator, and nothing is dropped on a teammate.
func TestTeamsInTheUI(t *testing.T) {
	fake := webtest.New(webtest.TeamSample(time.Now()))
	base := serveUI(t, web.Config{Backend: fake})
	ctx := newBrowser(t, 1440, 900)
	do(t, ctx, chromedp.Navigate(link(t, base)))
	waitJS(t, ctx, `document.querySelector("#sidebar .card.family") !== null`, 20*time.Second)

	// The sidebar: api-tests' box holds its teammates, on a blue guide
	// strong beside alpha, who works.
	if rows := texts(t, ctx, "#sidebar .mate-row"); len(rows) != 2 || !strings.Contains(rows[0], "alpha") ||
		!strings.Contains(rows[0], "working") || !strings.Contains(rows[1], "beta") || !strings.Contains(rows[1], "idle") {
		t.Errorf("sidebar teammate rows = %q", rows)
	}
	if n := count(t, ctx, `#sidebar .team .mate-row.working[title="alpha: teammate of api-tests (%5)"]`); n != 1 {
		t.Errorf("%d teammate rows at work in api-tests' box, want 1", n)
	}
	if s := texts(t, ctx, "#sidebar .team .row.agent-row"); len(s) != 1 || !strings.Contains(s[0], "2 teammates") {
		t.Errorf("api-tests' row = %q, want it to say 2 teammates", s)
	}

	do(t, ctx, chromedp.Click("#agents-btn"))
	waitJS(t, ctx, `!document.querySelector("#graph").hidden && document.querySelectorAll("#graph .mate-card").length === 2`, 20*time.Second)
	for sel, want := range map[string]int{
		"#graph .agent-card":                 3,
		"#graph path.edge-worker":            2,
		"#graph path.edge-team":              2,
		"#graph path.edge-team.active":       1,
		"#graph path.edge-subagent":          1,
		"#graph path.edge-subagent.active":   1,
		"#graph .mate-card.working":          1,
		"#graph .subagent-card":              1,
		"#graph .mate-card button.release":   0, // a teammate is not a worker
		`#graph .legend .lg-team`:            1,
		`#graph [data-mate="%2/alpha"] .dot`: 1,
	} {
		if got := count(t, ctx, sel); got != want {
			t.Errorf("%s: %d, want %d", sel, got, want)
		}
	}
	team := edgeStyles(t, ctx, "edge-team")
	if len(team) != 2 || !strings.HasPrefix(team[0], "3px rgb(88, 166, 255) 1") || !strings.HasPrefix(team[1], "3px rgb(88, 166, 255) 0.4") {
		t.Errorf("teammate edges = %q, want blue, strong to alpha (at work) and faint to beta (idle)", team)
	}
	if sub := edgeStyles(t, ctx, "edge-subagent"); len(sub) != 1 || !strings.HasPrefix(sub[0], "1.25px rgb(125, 133, 144)") {
		t.Errorf("subagent edge = %q, want a thin grey line", sub)
	}
	// Each card says its kind, its state and for how long.
	cards := map[string]string{
		agentCard("#graph", "%1"):       "coordinator",
		agentCard("#graph", "%2"):       "worker",
		`#graph [data-mate="%2/alpha"]`: "teammate",
		`#graph [data-sub^="%1/"]`:      "subagent",
		`#graph [data-mate="%2/beta"]`:  "teammate",
		agentCard("#graph", "%3"):       "worker",
	}
	for sel, kind := range cards {
		s := texts(t, ctx, sel)
		if len(s) != 1 || !strings.Contains(s[0], kind) || !strings.Contains(s[0], " · ") || !strings.ContainsAny(s[0], "0123456789") {
			t.Errorf("%s reads %q, want its kind %s, its state and for how long", sel, s, kind)
		}
	}
	screenshot(t, ctx, "web-graph-team.png")

	// A click on a teammate's card: its details, and its pane from there.
	do(t, ctx, chromedp.Click(`#graph [data-mate="%2/alpha"] .gc-name`))
	waitJS(t, ctx, `!document.querySelector("#detail").hidden`, 20*time.Second)
	detail := texts(t, ctx, "#detail")[0]
	for _, want := range []string{"alpha", "teammate", "working", "api-tests (worker, %2)", "Main › claude › api-tests › alpha", "ago", "Open its pane"} {
		if !strings.Contains(detail, want) {
			t.Errorf("the teammate's details lack %q:\n%s", want, detail)
		}
	}
	if len(fake.Calls()) != 0 {
		t.Errorf("a click called the backend: %v", fake.Calls())
	}
	// A subagent's details: no pane to open.
	do(t, ctx, chromedp.Click(`#graph [data-sub^="%1/"] .gc-name`))
	waitJS(t, ctx, `document.querySelector("#detail .dt-kind").innerText === "subagent"`, 20*time.Second)
	detail = texts(t, ctx, "#detail")[0]
	for _, want := range []string{"general-purpose", "working", "claude (coordinator, %1)", "Main › claude › general-purpose"} {
		if !strings.Contains(detail, want) {
			t.Errorf("the subagent's details lack %q:\n%s", want, detail)
		}
	}
	if strings.Contains(detail, "Open its pane") || strings.Contains(detail, "null") {
		t.Errorf("a subagent offers a pane, or the sheet shows a hole:\n%s", detail)
	}

	// Live: alpha goes idle; its line fades and the open details follow.
	do(t, ctx, chromedp.Click(`#graph [data-mate="%2/alpha"] .gc-name`))
	fake.Update(func(s *web.Snapshot) {
		s.Agents[1].Teammates[0].State = "idle"
		s.Agents[1].Teammates[0].Since = time.Now()
	})
	waitJS(t, ctx, `document.querySelectorAll("#graph path.edge-team.active").length === 0 &&
		document.querySelector("#detail .dt-state").innerText.includes("idle")`, 2*time.Second)

	// Dropping a worker on a teammate adopts nothing; a teammate dropped
	// on the coordinator is adopted, as a person asked.
	drag(t, ctx, agentCard("#graph", "%3"), `#graph [data-mate="%2/beta"]`)
	if c := fake.Calls(); len(c) != 0 {
		t.Errorf("a drop on a teammate called %v", c)
	}
	drag(t, ctx, `#graph [data-mate="%2/beta"]`, agentCard("#graph", "%1"))
	waitCall(t, fake, `Adopt["%1" "%6"]`)

	// Open alpha's pane from its details: the terminal of api-tests' window.
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector("#detail").hidden = true`))
	do(t, ctx, chromedp.Click(`#graph [data-mate="%2/alpha"] .gc-name`))
	waitJS(t, ctx, `document.querySelector("#detail .dt-open") !== null`, 20*time.Second)
	do(t, ctx, chromedp.Click("#detail .dt-open"))
	waitJS(t, ctx, `document.querySelector("#graph").hidden && document.querySelector("#term-title").innerText.includes("api-tests")`, 20*time.Second)
	// The Agents card lists the teammates and the subagent under their leads.
	waitJS(t, ctx, `!document.querySelector("#agents-card").hidden`, 20*time.Second)
	if n, m := count(t, ctx, "#agents-card .ac-row.mate"), count(t, ctx, "#agents-card .ac-row.sub"); n != 2 || m != 1 {
		t.Errorf("the Agents card has %d teammate rows and %d subagent rows, want 2 and 1", n, m)
	}
}

// TestTeamsOnThePhone: the phone chart of a coordinator, two st workers,
// a team of two and a subagent, each line in its colour.
func TestTeamsOnThePhone(t *testing.T) {
	fake := webtest.New(webtest.TeamSample(time.Now()))
	base := serveUI(t, web.Config{Backend: fake})
	ctx := newBrowser(t, 390, 844)
	do(t, ctx,
		chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Navigate(link(t, base)))
	waitJS(t, ctx, `document.querySelectorAll("#chart-tree .mate-card").length === 2`, 20*time.Second)
	lines := run(t, ctx, chromedp.Evaluate[map[string]string](`(() => {
		const c = s => { const e = document.querySelector("#chart-tree .cnode." + s); return e ? getComputedStyle(e).borderLeftColor + " " + getComputedStyle(e).borderLeftWidth : ""; };
		return {worker: c("line-worker.active"), team: c("line-team.active"), teamIdle: c("line-team:not(.active)"), sub: c("line-sub.active")};
	})()`))
	if !strings.HasPrefix(lines["worker"], "rgb(63, 185, 80) 4px") || !strings.HasPrefix(lines["team"], "rgb(88, 166, 255) 3px") ||
		!strings.Contains(lines["teamIdle"], "rgba(88, 166, 255, 0.35)") || !(lines["sub"] == "rgb(125, 133, 144) 1px" || lines["sub"] == "rgb(125, 133, 144) 1.5px") {
		t.Errorf("chart lines = %v, want green 4px to a worker at work, blue 3px to a teammate (faint when idle), a thin grey one to a subagent", lines)
	}
	if n := count(t, ctx, "#chart-tree .agent-card"); n != 3 {
		t.Errorf("%d agent cards, want the coordinator and two workers", n)
	}
	screenshot(t, ctx, "web-phone-team.png")
	do(t, ctx, chromedp.Click(`#chart-tree [data-mate="%2/beta"] .gc-name`))
	waitJS(t, ctx, `!document.querySelector("#detail").hidden && document.querySelector("#detail .dt-path").innerText === "Main › claude › api-tests › beta"`, 20*time.Second)
}
