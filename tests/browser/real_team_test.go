package browser

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sophonz/st/internal/testutil/fakemodel"
	"github.com/sophonz/st/internal/testutil/realagent"
)

// TestRealTeamInBrowser: the real daemon, a coordinator (a sim agent: a
// shell coordinator has no card and no lines, as a shell is not an
// agent) and two st workers, a sim agent and a real Claude Code 2.1.332 (offline against the
// fake model server) that leads an agent team of two teammates in tmux
// panes and runs a subagent. The page draws green lines to the workers,
// blue ones to the teammates and a thin grey one to the subagent, strong
// while the one below works; the teammates' cards say what they are, then
// go idle when their turns end; the subagent's card shows its path; a
// teammate's pane opens from its card. The phone chart's screenshot shows
// every line in its colour.
func TestRealTeamInBrowser(t *testing.T) {
	r := newRealEnv(t)
	claude, _ := realagent.Binaries(t)
	fake := fakemodel.Start(t)
	bin, work, chome := r.bin, r.work, filepath.Join(r.dir, "c")
	cenv := realagent.ClaudeHome(t, chome, fake.URL(), work)
	realagent.MergeClaudeSettings(t, chome, map[string]any{"permissions": map[string]any{"allow": []string{"Bash"}}})
	realagent.MergeClaudeSettings(t, chome, realagent.AgentTeams("tmux"))
	// st runs as the agents do, with their HOME; the workers' windows
	// open in session main, with its environment.
	r.extra = append([]string{"ST_CLAUDE_BIN=" + claude}, cenv...)
	r.start(cenv...)
	r.st("hooks", "install")
	r.coord = r.handAgent("boss", "I coordinate here")
	r.waitScreen(r.coord, `Received: I coordinate here`, 30*time.Second)

	task := func(name, text string) string {
		p := filepath.Join(work, name+".md")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Teammates and the subagent work until the test lets them go.
	hold := func(name string) string {
		return task(name, fmt.Sprintf("RUN: while [ ! -e go-%s ]; do sleep 0.2; done\nSAY: %s finished\n", name, name))
	}
	alpha, beta, sub := hold("alpha"), hold("beta"), hold("sub")
	lead := task("lead", strings.Join([]string{
		"TEAMMATE: alpha Your task is in the file " + alpha,
		"TEAMMATE: beta Your task is in the file " + beta,
		"AGENT: Your task is in the file " + sub,
		"RUN: " + bin + ` worker done --summary "started a team of two and a subagent"`,
		"SAY: my team is at work",
	}, "\n")+"\n")
	helper := task("helper", "sleep: 300s\n")
	url := regexp.MustCompile(`http://127\.0\.0\.1:\d+/\S*token=\S+`).FindString(r.webURL())
	if url == "" {
		t.Fatal("st web printed no URL with its token")
	}
	ctx := newBrowser(t, 1440, 900)
	do(t, ctx, chromedp.Navigate(url))
	waitJS(t, ctx, `document.querySelector("#agents-btn") !== null && document.querySelector("#sidebar .sess") !== null`, 30*time.Second)
	do(t, ctx, chromedp.Click("#agents-btn"))
	waitJS(t, ctx, `!document.querySelector("#graph").hidden`, 20*time.Second)

	r.st("worker", "start", "--agent", "sim", "--task", helper, "--name", "helper")
	leadPane := strings.Fields(r.st("worker", "start", "--agent", "claude", "--task", lead, "--name", "lead"))[0]

	// The coordinator over its two workers (green), the lead over its two
	// teammates at work (blue, strong) and its subagent (grey, strong).
	waitJS(t, ctx, `document.querySelectorAll("#graph .agent-card").length === 3 &&
		document.querySelectorAll("#graph path.edge-worker").length === 2 &&
		document.querySelectorAll("#graph .mate-card.working").length === 2 &&
		document.querySelectorAll("#graph path.edge-team.active").length === 2 &&
		document.querySelectorAll("#graph path.edge-subagent.active").length === 1`, 120*time.Second)
	team := edgeStyles(t, ctx, "edge-team")
	for _, s := range team {
		if !strings.HasPrefix(s, "3px rgb(88, 166, 255) 1") {
			t.Errorf("teammate edge %q, want blue at full strength", s)
		}
	}
	for _, name := range []string{"alpha", "beta"} {
		sel := `#graph [data-mate="` + leadPane + `/` + name + `"]`
		if s := texts(t, ctx, sel); len(s) != 1 || !strings.Contains(s[0], "teammate") || !strings.Contains(s[0], "working · ") {
			t.Errorf("%s's card reads %q", name, s)
		}
	}
	if s := texts(t, ctx, agentCard("#graph", leadPane)); len(s) != 1 || !strings.Contains(s[0], "2 teammates") {
		t.Errorf("the lead's card reads %q", s)
	}
	// The sidebar card holds the teammates under the lead.
	if n := count(t, ctx, "#sidebar .card.family .mate-row.working"); n != 2 {
		t.Errorf("%d teammate rows at work in the sidebar card, want 2", n)
	}
	// The subagent's card: its details and its path.
	do(t, ctx, chromedp.Click(`#graph [data-sub^="`+leadPane+`/"] .gc-name`))
	waitJS(t, ctx, `!document.querySelector("#detail").hidden`, 20*time.Second)
	detail := texts(t, ctx, "#detail")[0]
	for _, want := range []string{"subagent", "working", "lead (worker, " + leadPane + ")", "› lead › general-purpose", "ago"} {
		if !strings.Contains(detail, want) {
			t.Errorf("the subagent's details lack %q:\n%s", want, detail)
		}
	}
	if !strings.HasPrefix(texts(t, ctx, "#detail .dt-path")[0], "Main › ") {
		t.Errorf("path %q", texts(t, ctx, "#detail .dt-path"))
	}
	screenshot(t, ctx, "real-graph-team.png")

	// The phone's chart: a coordinator, two st workers, a team of two and
	// a subagent, each line in its colour.
	phone := newBrowser(t, 390, 844)
	do(t, phone, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile), chromedp.Navigate(url))
	waitJS(t, phone, `document.querySelectorAll("#chart-tree .agent-card").length === 3 &&
		document.querySelectorAll("#chart-tree .cnode.line-worker").length === 2 &&
		document.querySelectorAll("#chart-tree .cnode.line-team.active").length === 2 &&
		document.querySelectorAll("#chart-tree .cnode.line-sub.active").length === 1`, 30*time.Second)
	screenshot(t, phone, "real-phone-team.png")

	// The teammates' turns end: idle, from their own hooks; their lines fade.
	for _, name := range []string{"alpha", "beta", "sub"} {
		os.WriteFile(filepath.Join(work, "go-"+name), nil, 0o644)
	}
	waitJS(t, ctx, `document.querySelectorAll("#graph .mate-card").length === 2 &&
		document.querySelectorAll("#graph .mate-card.working").length === 0 &&
		document.querySelectorAll("#graph path.edge-team.active").length === 0 &&
		[...document.querySelectorAll("#graph .mate-card")].every(c => c.innerText.includes("idle · ")) &&
		document.querySelectorAll("#graph path.edge-subagent.active").length === 0`, 60*time.Second)
	waitJS(t, phone, `document.querySelectorAll("#chart-tree .cnode.line-team").length === 2 &&
		document.querySelectorAll("#chart-tree .cnode.line-team.active").length === 0`, 10*time.Second)
	screenshot(t, ctx, "real-graph-team-idle.png")

	// A teammate's pane opens from its card: the lead's window, which holds it.
	do(t, ctx, chromedp.Click(`#graph [data-mate="`+leadPane+`/alpha"] .gc-name`))
	waitJS(t, ctx, `document.querySelector("#detail .dt-open") !== null && document.querySelector("#detail .dt-kind").innerText === "teammate"`, 20*time.Second)
	do(t, ctx, chromedp.Click("#detail .dt-open"))
	waitJS(t, ctx, `document.querySelector("#graph").hidden && document.querySelector("#term-title").innerText.includes("lead")`, 20*time.Second)
	waitJS(t, ctx, `document.querySelector("#term .xterm-rows") !== null && document.querySelector("#term .xterm-rows").innerText.includes("alpha finished")`, 20*time.Second)
}
