// Package browser is st's browser tier: the web UI (internal/web) served
// on 127.0.0.1 and driven in headless Chromium (Debian's chromium, which
// scripts/test installs) with chromedp. It checks what a person sees and
// does: the token, the agent graph and the sidebar card, live updates
// without a reload, gates, drop-to-adopt and Release, the phone's chart,
// and typing into a real tmux window through the page. Screenshots of the
// graph and of the phone view go to $ST_ARTIFACTS (default artifacts/).
package browser

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/tmux"
	"github.com/sophonz/st/internal/web"
	"github.com/sophonz/st/internal/web/webtest"
)

const secret = "browser-test-secret-0123456789abcdef"

// serveUI serves the UI on 127.0.0.1 as the daemon does, and returns its
// address.
func serveUI(t *testing.T, cfg web.Config) string {
	t.Helper()
	if cfg.Secret == "" {
		cfg.Secret = secret
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: web.New(cfg), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return "http://" + ln.Addr().String()
}

// link is the address st web would print for the UI at base: the page
// with the token made for base's port.
func link(t *testing.T, base string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	return base + "/?token=" + web.LinkToken(secret, p)
}

// newBrowser starts a headless Chromium of this test only, with a window
// of w x h, and returns its context. It fails, never skips, without
// chromium: the tier exists to be run.
func newBrowser(t *testing.T, w, h int) context.Context {
	t.Helper()
	return newBrowserIn(t, w, h, "")
}

// newBrowserIn is newBrowser with the browser's languages set
// (webtest.Chromium).
func newBrowserIn(t *testing.T, w, h int, lang string) context.Context {
	t.Helper()
	return webtest.Chromium(t, w, h, lang)
}

func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, a)
	if err != nil {
		t.Fatalf("%v\npage text:\n%s", err, pageText(ctx))
	}
	return v
}

func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	run(t, ctx, chromedp.Steps(steps...))
}

func pageText(ctx context.Context) string {
	c, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	s, _ := chromedp.Run(c, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	return s
}

// waitJS waits until a JavaScript expression is true.
func waitJS(t *testing.T, ctx context.Context, expr string, d time.Duration) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, d+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(c, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(d), chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		t.Fatalf("waiting %s for %s: %v\npage text:\n%s", d, expr, err, pageText(ctx))
	}
}

func count(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	return run(t, ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
}

func texts(t *testing.T, ctx context.Context, sel string) []string {
	t.Helper()
	return run(t, ctx, chromedp.Evaluate[[]string](fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.innerText)`, sel)))
}

func artifacts(t *testing.T) string {
	dir := os.Getenv("ST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(testutil.ModuleRoot(), "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png := run(t, ctx, chromedp.CaptureScreenshot())
	path := filepath.Join(artifacts(t), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// center returns the middle of the first element sel matches, in the
// viewport's coordinates.
func center(t *testing.T, ctx context.Context, sel string) (float64, float64) {
	t.Helper()
	xy := run(t, ctx, chromedp.Evaluate[[]float64](fmt.Sprintf(
		`(() => { const e = document.querySelector(%q); e.scrollIntoView({block: "center", inline: "center"});
		const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()`, sel)))
	return xy[0], xy[1]
}

func leftDown(p *input.DispatchMouseEventParams) {
	p.Button = input.MouseButtonLeft
	p.Buttons = 1
	p.ClickCount = 1
}

// drag presses the mouse on one element, moves it in steps as a hand
// would, and lets go on another.
func drag(t *testing.T, ctx context.Context, from, to string) {
	t.Helper()
	// Scroll once: a second scroll (to bring the target to the middle)
	// would move the first card from under the pointer's start.
	x1, y1 := center(t, ctx, from)
	xy := run(t, ctx, chromedp.Evaluate[[]float64](fmt.Sprintf(
		`(() => { const r = document.querySelector(%q).getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()`, to)))
	x2, y2 := xy[0], xy[1]
	steps := []chromedp.Action[chromedp.Void]{chromedp.MouseEvent(chromedp.MousePressed, x1, y1, leftDown)}
	for i := 1; i <= 12; i++ {
		f := float64(i) / 12
		steps = append(steps, chromedp.MouseEvent(chromedp.MouseMoved, x1+(x2-x1)*f, y1+(y2-y1)*f, leftDown))
	}
	steps = append(steps, chromedp.MouseEvent(chromedp.MouseReleased, x2, y2, leftDown))
	do(t, ctx, steps...)
}

// typeKeys types as a keyboard does: a keydown that carries the text, which
// the page may take (xterm.js does) or leave to become input, then a keyup.
// chromedp.KeyEvent sends the text again in a separate char event, which a
// real keyboard never does, and xterm.js would see every key twice.
func typeKeys(s string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for _, r := range s {
			evs := kb.Encode(r)
			var text, unmod string
			for _, e := range evs {
				if e.Type == kb.KeyChar {
					text, unmod = e.Text, e.UnmodifiedText
				}
			}
			for _, e := range evs {
				if e.Type == kb.KeyChar {
					continue
				}
				if e.Type == kb.KeyDown {
					e.Text, e.UnmodifiedText = text, unmod
				}
				if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, *e); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// waitCall waits until the fake backend was asked for want.
func waitCall(t *testing.T, fake *webtest.Backend, want string) {
	t.Helper()
	testutil.WaitFor(t, 20*time.Second, func() (bool, string) {
		calls := fake.Calls()
		return slices.ContainsFunc(calls, func(c webtest.Call) bool { return c.String() == want }),
			fmt.Sprintf("backend calls %v, want %s", calls, want)
	})
}

func agentCard(scope, pane string) string {
	return fmt.Sprintf(`%s .agent-card[data-agent=%q]`, scope, pane)
}

// TestWithoutTokenIs401: a wrong token, or one made for another port,
// gets the 401 page; the page without a link in a browser that never
// opened one shows nothing of st's and says to open st web's address.
func TestWithoutTokenIs401(t *testing.T) {
	base := serveUI(t, web.Config{Backend: webtest.New(webtest.Sample(time.Now()))})
	ctx := newBrowser(t, 1280, 800)
	other := base + "/?token=" + web.LinkToken(secret, 7766)
	for _, u := range []string{base + "/?token=wrong", other, base + "/st/?token=" + secret} {
		do(t, ctx, chromedp.Navigate(u))
		if text := pageText(ctx); !strings.Contains(text, "401") || !strings.Contains(text, "st web") || strings.Contains(text, "Agents") {
			t.Errorf("%s shows %q, want the 401 page", u, text)
		}
	}
	do(t, ctx, chromedp.Navigate(base+"/"))
	waitJS(t, ctx, `document.querySelector("#conn").innerText === "token refused: open the URL st web prints"`, 20*time.Second)
	if text := pageText(ctx); strings.Contains(text, "api-tests") || strings.Contains(text, "devbox") {
		t.Errorf("the page without its link shows st's state:\n%s", text)
	}
}

// TestDesktop walks the desktop UI on the sample run: a coordinator with a
// subagent, three workers (two working, one done) and a gate.
func TestDesktop(t *testing.T) {
	fake := webtest.New(webtest.Sample(time.Now()))
	base := serveUI(t, web.Config{Backend: fake})
	ctx := newBrowser(t, 1440, 900)
	do(t, ctx, chromedp.Navigate(link(t, base)))
	waitJS(t, ctx, `document.querySelector("#sidebar .fold-line") !== null`, 20*time.Second)

	// The token left the address bar; the page's session carries on.
	if loc := run(t, ctx, chromedp.Location()); strings.Contains(loc, "token") {
		t.Errorf("the address still shows the token: %s", loc)
	}

	// The sidebar card: the coordinator and its workers share one card.
	if got := count(t, ctx, "#sidebar .card.family"); got != 1 {
		t.Errorf("%d family cards in the sidebar, want 1", got)
	}
	if fold := texts(t, ctx, "#sidebar .fold-line"); len(fold) != 1 || !strings.Contains(fold[0], "Workers · 2 working") {
		t.Errorf("fold line = %q, want Workers · 2 working...", fold)
	}
	if c := texts(t, ctx, "#sidebar details.completed > summary"); len(c) != 1 || c[0] != "Completed (1)" {
		t.Errorf("completed group = %q, want Completed (1)", c)
	}
	if open := run(t, ctx, chromedp.Evaluate[bool](`document.querySelector("#sidebar details.completed").open`)); open {
		t.Error("the Completed group starts open; it should be closed until opened")
	}
	if b := texts(t, ctx, "#sidebar .card.family .badge"); len(b) != 1 || b[0] != "coordinator" {
		t.Errorf("badges in the card = %q, want one coordinator badge", b)
	}

	// The graph.
	do(t, ctx, chromedp.Click("#agents-btn"))
	waitJS(t, ctx, `!document.querySelector("#graph").hidden && document.querySelectorAll("#graph .agent-card").length > 0`, 20*time.Second)
	for sel, want := range map[string]int{
		"#graph .agent-card":                    4,
		"#graph path.edge-worker":               3,
		"#graph path.edge-subagent":             1,
		"#graph .subagent-card":                 1,
		"#graph .agent-card.working":            3,
		"#graph .agent-card .dot.pulse":         3,
		"#graph .agent-card .gc-summary":        1,
		"#graph .agent-card button.release":     3,
		"#graph .agent-card [data-gate] button": 2,
	} {
		if got := count(t, ctx, sel); got != want {
			t.Errorf("%s: %d, want %d", sel, got, want)
		}
	}
	// Thick green and thin grey, as drawn.
	widths := run(t, ctx, chromedp.Evaluate[[]string](`[".edge-worker", ".edge-subagent"].map(s => {
		const cs = getComputedStyle(document.querySelector("#graph " + s)); return cs.strokeWidth + " " + cs.stroke; })`))
	if !strings.HasPrefix(widths[0], "4.5px rgb(63, 185, 80)") || !strings.HasPrefix(widths[1], "1.25px") {
		t.Errorf("edge styles = %q, want a thick green worker line and a thin grey subagent line", widths)
	}
	if s := texts(t, ctx, agentCard("#graph", "%4")+" .gc-summary"); len(s) != 1 || !strings.Contains(s[0], "Fixed 12 lint warnings") {
		t.Errorf("the done worker's card shows %q, want its summary", s)
	}
	screenshot(t, ctx, "web-graph.png")

	// Live: a worker finishing shows without a reload. (That the news is
	// pushed, not polled, is internal/web's TestSnapshotPushedOnChange;
	// how fast it shows is a figure for bench, not a check here.)
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`window.__sameDocument = true`))
	start := time.Now()
	fake.Update(func(s *web.Snapshot) {
		s.Agents[2].State = "done"
		s.Agents[2].Since = time.Now()
		s.Agents[2].Summary = "README rewritten; links checked."
	})
	waitJS(t, ctx, `[...document.querySelectorAll("#sidebar details.completed > summary")].some(e => e.innerText === "Completed (2)")`, 20*time.Second)
	t.Logf("the change showed %s after it was made", time.Since(start).Round(time.Millisecond))
	if fold := texts(t, ctx, "#sidebar .fold-line"); len(fold) != 1 || !strings.Contains(fold[0], "Workers · 1 working, 2 done") {
		t.Errorf("fold line after the change = %q", fold)
	}
	waitJS(t, ctx, `document.querySelectorAll("#graph .agent-card .gc-summary").length === 2`, 20*time.Second)
	if !run(t, ctx, chromedp.Evaluate[bool](`window.__sameDocument === true`)) {
		t.Error("the page reloaded")
	}

	// A gate answered with its button.
	if got := count(t, ctx, "#gates [data-gate] button"); got != 2 {
		t.Errorf("the gate banner has %d buttons, want 2", got)
	}
	do(t, ctx, chromedp.Click(agentCard("#graph", "%2")+` [data-gate="g-1"] button.opt`))
	waitCall(t, fake, `AnswerGate["g-1" "Yes"]`)
	waitJS(t, ctx, `document.querySelectorAll("[data-gate]").length === 0`, 20*time.Second)

	// Drop readme's card on api-tests': api-tests adopts readme.
	drag(t, ctx, agentCard("#graph", "%3"), agentCard("#graph", "%2"))
	waitCall(t, fake, `Adopt["%2" "%3"]`)
	// The fake made readme api-tests' worker, as st does: a worker of a
	// worker in the coordinator's run, under api-tests. api-tests stays a
	// worker: only an adoption with workers of its own makes a team lead.
	waitJS(t, ctx, `[...document.querySelectorAll("#graph path.edge-worker")].some(e => e.dataset.to === "%3") &&
		document.querySelector(`+strconv.Quote(agentCard("#graph", "%3"))+`).getBoundingClientRect().top > document.querySelector(`+strconv.Quote(agentCard("#graph", "%2"))+`).getBoundingClientRect().bottom`, 20*time.Second)
	if role := texts(t, ctx, agentCard("#graph", "%2")+" .gc-role"); len(role) != 1 || !strings.Contains(role[0], "worker") || strings.Contains(role[0], "team") {
		t.Errorf("api-tests' card says %q after it adopted readme, want a worker (no team lead, no team of N)", role)
	}

	// Release on lint's card.
	do(t, ctx, chromedp.Click(agentCard("#graph", "%4")+" button.release"))
	waitCall(t, fake, `Release["%4"]`)
	waitJS(t, ctx, `document.querySelectorAll("#graph path.edge-worker").length === 2`, 20*time.Second)

	// A click on a card opens its window's terminal.
	do(t, ctx, chromedp.Click(agentCard("#graph", "%2")+" .gc-name"))
	waitJS(t, ctx, `document.querySelector("#graph").hidden && document.querySelector("#term-title").innerText.includes("api-tests")`, 20*time.Second)
	if n := len(fake.Calls()); n != 3 {
		t.Errorf("backend calls = %v, want 3 (a click is not a drop)", fake.Calls())
	}
	// The Agents card at the terminal's top right, on this session with delegation.
	waitJS(t, ctx, `!document.querySelector("#agents-card").hidden`, 20*time.Second)
	// lint was released: the coordinator, its subagent, and api-tests and
	// readme under it.
	if rows := count(t, ctx, "#agents-card .ac-row"); rows != 4 || count(t, ctx, "#agents-card .ac-row.sub") != 1 {
		t.Errorf("the Agents card has %d rows, want 4 (one a subagent)", rows)
	}
}

// TestSidebarTeamsAndOrphans: a worker that leads a team, and a worker
// whose coordinator is gone: it went with a tmux server that restarted,
// so st names it by its retired id, %9~mx4egnk7, and so does every mark
// of the page (a new pane may be %9 now: issue 25, item 4).
func TestSidebarTeamsAndOrphans(t *testing.T) {
	snap := webtest.Sample(time.Now())
	snap.Agents[1].TeamOf = 1 // api-tests leads readme
	snap.Agents[2].Parent = "%2"
	snap.Agents[3].Parent, snap.Agents[3].ParentGone = "%9~mx4egnk7", true // lint's coordinator is gone
	fake := webtest.New(snap)
	base := serveUI(t, web.Config{Backend: fake})
	ctx := newBrowser(t, 1280, 800)
	do(t, ctx, chromedp.Navigate(link(t, base)))
	waitJS(t, ctx, `document.querySelector("#sidebar .card.orphan") !== null`, 20*time.Second)
	if team := texts(t, ctx, "#sidebar .team"); len(team) != 1 || !strings.Contains(team[0], "api-tests") ||
		!strings.Contains(team[0], "team of 1") || !strings.Contains(team[0], "readme") {
		t.Errorf("team box = %q, want api-tests, team of 1, with readme under it", team)
	}
	orphan := texts(t, ctx, "#sidebar .card.orphan")
	if len(orphan) != 1 || !strings.Contains(orphan[0], "⚠") || !strings.Contains(orphan[0], "%9~mx4egnk7 is gone") || !strings.Contains(orphan[0], "Release") {
		t.Errorf("orphan card = %q, want ⚠, the gone coordinator %%9~mx4egnk7 and Release", orphan)
	}
	// The graph's card says the same.
	do(t, ctx, chromedp.Click("#agents-btn"))
	waitJS(t, ctx, `document.querySelector(`+strconv.Quote(agentCard("#graph", "%4"))+`) !== null`, 20*time.Second)
	if w := texts(t, ctx, agentCard("#graph", "%4")+" .warn"); len(w) != 1 || !strings.Contains(w[0], "coordinator %9~mx4egnk7 is gone") {
		t.Errorf("the orphan's graph card says %q, want its coordinator's retired id %%9~mx4egnk7", w)
	}
	do(t, ctx, chromedp.Click("#graph-close"))
	// The orphan line's own Release (the row has its menu button too).
	do(t, ctx, chromedp.Click("#sidebar .card.orphan .orphan-line button"))
	waitCall(t, fake, `Release["%4"]`)
}

func TestPhone(t *testing.T) {
	snap := webtest.Sample(time.Now())
	fake := webtest.New(snap)
	base := serveUI(t, web.Config{Backend: fake})
	ctx := newBrowser(t, 390, 844)
	do(t, ctx,
		chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Navigate(link(t, base)))
	waitJS(t, ctx, `document.querySelectorAll("#chart-tree .agent-card").length === 4`, 20*time.Second)
	if vis := run(t, ctx, chromedp.Evaluate[bool](`document.querySelector("#chart").offsetParent !== null && document.querySelector("#sidebar").getBoundingClientRect().right <= 0`)); !vis {
		t.Error("the phone view does not show the chart first, with the sidebar tucked away")
	}
	if s := texts(t, ctx, "#scopes button"); !slices.Equal(s, []string{"This session", "This machine"}) {
		t.Errorf("scopes = %q, want This session, This machine", s)
	}
	// A tree top to bottom: each worker's card is below its coordinator's.
	below := run(t, ctx, chromedp.Evaluate[bool](`(() => {
		const top = e => e.getBoundingClientRect().top;
		const c = document.querySelector('#chart-tree .agent-card[data-agent="%1"]') || document.querySelectorAll("#chart-tree .agent-card")[0];
		return [...document.querySelectorAll("#chart-tree .cnode.line-worker > .agent-card")].every(w => top(w) > top(c));
	})()`))
	if !below || count(t, ctx, "#chart-tree .cnode.line-worker") != 3 || count(t, ctx, "#chart-tree .cnode.line-sub") != 1 {
		t.Errorf("the chart is not a tree of the coordinator over 3 workers and a subagent:\n%s", pageText(ctx))
	}
	screenshot(t, ctx, "web-phone.png")

	// A tap on a card opens its terminal full screen; ← Agents comes back.
	do(t, ctx, chromedp.Click(agentCard("#chart-tree", "%3")+" .gc-name"))
	waitJS(t, ctx, `document.body.dataset.view === "term" && document.querySelector("#term-title").innerText.includes("readme")`, 20*time.Second)
	do(t, ctx, chromedp.Click("#back"))
	waitJS(t, ctx, `document.body.dataset.view === "chart"`, 20*time.Second)
	// The session of that window is now "this session".
	do(t, ctx, chromedp.Click(`#scopes button:nth-child(1)`))
	waitJS(t, ctx, `document.querySelectorAll("#chart-tree .agent-card").length === 4`, 20*time.Second)

	// Another machine's worker brings All machines.
	fake.Update(func(s *web.Snapshot) {
		s.Agents = append(s.Agents, web.Agent{Pane: "%3", Name: "ios-sim", Kind: "claude", Role: web.RoleWorker, State: "working",
			Since: time.Now(), Parent: "devbox/%1", Machine: "mac", Session: "$1", Window: "@1"})
	})
	waitJS(t, ctx, `[...document.querySelectorAll("#scopes button")].some(b => b.innerText === "All machines")`, 20*time.Second)
	do(t, ctx, chromedp.Click(`#scopes button:nth-child(3)`))
	waitJS(t, ctx, `document.querySelectorAll("#chart-tree .agent-card").length === 5`, 20*time.Second)

	// No delegation at all.
	fake.Set(web.Snapshot{Machine: "devbox"})
	waitJS(t, ctx, `document.querySelector("#chart-tree").innerText.trim() === "No agent is handing work to another."`, 20*time.Second)
	screenshot(t, ctx, "web-phone-empty.png")
}

// TestTerminalInBrowser opens a real window's terminal from its card and
// types into it through the page.
func TestTerminalInBrowser(t *testing.T) {
	t.Setenv("TMUX", "")
	t.Setenv("TMUX_PANE", "")
	os.Unsetenv("TMUX")
	os.Unsetenv("TMUX_PANE")
	dir := testutil.ShortTempDir(t)
	tm := testutil.NewTmux(t, dir)
	if err := os.MkdirAll(filepath.Dir(tm.Socket), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"new-session", "-d", "-s", "main", "-x", "120", "-y", "35", "-n", "lead", "sh"},
		{"new-window", "-d", "-t", "main:", "-n", "worker", "sh"},
	} {
		if _, err := tm.Run(args...); err != nil {
			t.Fatal(err)
		}
	}
	ids, err := tm.Run("list-panes", "-s", "-t", "main", "-F", "#{session_id} #{window_id} #{pane_id}")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(ids), "\n")
	lead, worker := strings.Fields(lines[0]), strings.Fields(lines[1])
	for _, p := range []string{lead[2], worker[2]} {
		tm.Run("send-keys", "-t", p, "PS1='$ '", "Enter")
	}
	now := time.Now()
	fake := webtest.New(web.Snapshot{
		Machine: "devbox",
		// No Sessions: the server lists the tmux server itself.
		Agents: []web.Agent{
			{Pane: lead[2], Name: "lead", Kind: "sim", Role: web.RoleCoordinator, State: "idle", Since: now, Session: lead[0], Window: lead[1]},
			{Pane: worker[2], Name: "worker", Kind: "sim", Role: web.RoleWorker, State: "working", Since: now, Parent: lead[2], Session: worker[0], Window: worker[1]},
		},
	})
	base := serveUI(t, web.Config{Backend: fake, Tmux: tmux.New(tm.Socket)})
	ctx := newBrowser(t, 1280, 800)
	do(t, ctx, chromedp.Navigate(link(t, base)))
	waitJS(t, ctx, `document.querySelector("#sidebar .card.family") !== null`, 20*time.Second)
	do(t, ctx, chromedp.Click("#agents-btn"))
	waitJS(t, ctx, `document.querySelectorAll("#graph .agent-card").length === 2`, 20*time.Second)
	do(t, ctx, chromedp.Click(agentCard("#graph", worker[2])+" .gc-name"))
	waitJS(t, ctx, `document.querySelector("#term .xterm-rows") !== null && document.querySelector("#term .xterm-rows").innerText.includes("$")`, 20*time.Second)
	do(t, ctx,
		chromedp.Focus("#term .xterm-helper-textarea"),
		typeKeys("echo hi-from-browser\r"))
	testutil.WaitFor(t, 20*time.Second, func() (bool, string) {
		out, err := tm.Run("capture-pane", "-p", "-t", worker[2])
		return err == nil && strings.Contains(out, "\nhi-from-browser"), "pane:\n" + out
	})
	// The echo's output, on a line of its own, reached the page too.
	waitJS(t, ctx, `/^hi-from-browser\s/m.test(document.querySelector("#term .xterm-rows").innerText)`, 20*time.Second)
	if text := run(t, ctx, chromedp.Evaluate[string](`document.querySelector("#term .xterm-rows").innerText`)); !strings.Contains(text, "[main]") {
		t.Errorf("the status line does not name the session main:\n%s", text)
	}
	if out, _ := tm.Run("capture-pane", "-p", "-t", lead[2]); strings.Contains(out, "hi-from-browser") {
		t.Errorf("the lead's window got the typing:\n%s", out)
	}
	screenshot(t, ctx, "web-terminal.png")

	// Leaving the page takes its grouped session away.
	do(t, ctx, chromedp.Navigate("about:blank"))
	testutil.WaitFor(t, 20*time.Second, func() (bool, string) {
		out, err := tm.Run("list-sessions", "-F", "#{session_name}")
		return err == nil && strings.TrimSpace(out) == "main", "sessions: " + out
	})
}
