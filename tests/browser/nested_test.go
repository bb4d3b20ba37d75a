package browser

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sophonz/st/internal/testutil"
)

// TestNestedWorkerIsNoLead (issue 25, item 2): a coordinator's worker w1
// that starts a worker of its own (st worker start from w1's pane) stays
// a worker: st orch show says so, and so does the page: no team box and
// no "team of" in the sidebar, a "worker" card in the graph and the
// chart, its worker hanging under it. A team lead is what an adoption
// with workers of its own makes: an agent adopted with its worker shows
// "team of 1" in a box beside it.
func TestNestedWorkerIsNoLead(t *testing.T) {
	r, w1, w2, lead := nestedRun(t)
	url := regexp.MustCompile(`http://127\.0\.0\.1:\d+/\S*token=\S+`).FindString(r.st("web"))
	ctx := newBrowser(t, 1440, 900)
	do(t, ctx, chromedp.Navigate(url))
	rowOf := func(name string) string {
		return `[...document.querySelectorAll("#sidebar .agent-row")].find(r => r.querySelector(".name").innerText === ` + strconv.Quote(name) + `)`
	}
	waitJS(t, ctx, rowOf("w2")+` !== undefined && `+rowOf("helper")+` !== undefined`, 30*time.Second)

	// The sidebar: w1 in no team box, with no "team of"; w2 on the guide
	// line under it; lead in its box with "team of 1".
	side := run(t, ctx, chromedp.Evaluate[map[string]string](`(() => {
		const w1 = `+rowOf("w1")+`, w2 = `+rowOf("w2")+`, lead = `+rowOf("lead")+`;
		return {
			w1Row: w1.innerText, w1Box: w1.closest(".team") ? "team" : "",
			w2Under: w1.parentElement.classList.contains("nested") && w1.parentElement.querySelector(".tree").contains(w2) ? "yes" : "no",
			leadRow: lead.innerText, leadBox: lead.closest(".team") ? "team" : "",
		};
	})()`))
	if side["w1Box"] != "" || strings.Contains(side["w1Row"], "team of") || side["w2Under"] != "yes" {
		t.Errorf("sidebar: w1 %q in box %q, w2 under it: %s; want w1 a worker with no box and no team of, w2 under it", side["w1Row"], side["w1Box"], side["w2Under"])
	}
	if side["leadBox"] != "team" || !strings.Contains(side["leadRow"], "team of 1") {
		t.Errorf("sidebar: lead %q in box %q, want a team box with team of 1", side["leadRow"], side["leadBox"])
	}
	screenshot(t, ctx, "web-nested-sidebar.png")

	// The graph: w1's card says worker, lead's team lead · team of 1.
	do(t, ctx, chromedp.Click("#agents-btn"))
	waitJS(t, ctx, `document.querySelector(`+strconv.Quote(agentCard("#graph", w2))+`) !== null`, 20*time.Second)
	if role := texts(t, ctx, agentCard("#graph", w1)+" .gc-role"); len(role) != 1 || !strings.Contains(role[0], "worker") || strings.Contains(role[0], "team") {
		t.Errorf("w1's graph card says %q, want worker with no team", role)
	}
	if role := texts(t, ctx, agentCard("#graph", lead)+" .gc-role"); len(role) != 1 || !strings.Contains(role[0], "team lead") || !strings.Contains(role[0], "team of 1") {
		t.Errorf("lead's graph card says %q, want team lead · team of 1", role)
	}
	to := run(t, ctx, chromedp.Evaluate[int](`[...document.querySelectorAll("#graph path.edge-worker")].filter(e => e.dataset.to === `+strconv.Quote(w2)+`).length`))
	if to != 1 {
		t.Errorf("%d lines to w2, want one, from w1", to)
	}
	screenshot(t, ctx, "web-nested-graph.png")

	// The phone chart says the same.
	phone := newBrowser(t, 390, 844)
	do(t, phone, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile), chromedp.Navigate(url))
	waitJS(t, phone, `document.querySelector(`+strconv.Quote(agentCard("#chart-tree", w2))+`) !== null`, 30*time.Second)
	if role := texts(t, phone, agentCard("#chart-tree", w1)+" .gc-role"); len(role) != 1 || !strings.Contains(role[0], "worker") {
		t.Errorf("w1's chart card says %q, want worker", role)
	}
	if head := texts(t, phone, agentCard("#chart-tree", w1)+" .gc-head"); len(head) != 1 || strings.Contains(head[0], "team of") {
		t.Errorf("w1's chart card head says %q, want no team of", head)
	}
}

// nestedRun starts a coordinator (a sim agent) whose worker w1 starts w2,
// and an agent lead with a worker of its own, adopted by the coordinator's
// session's shell: a team of 1. It returns their panes.
func nestedRun(t *testing.T) (r *realEnv, w1, w2, lead string) {
	r = newRealEnv(t)
	// Its sim agents start sim workers: a person allows that.
	r.extra = append(r.extra, "ST_AGENTS_START_SIM=1")
	r.start()
	work := r.work
	r.coord = r.handAgent("boss", "I coordinate here")
	r.waitScreen(r.coord, `Received: I coordinate here`, 30*time.Second)
	for name, task := range map[string]string{
		// st's path written out: st's guard refuses a program named by a
		// variable.
		"w1":     "run: " + r.bin + " worker start --agent sim --task w2.md --name w2 > w1.out 2>&1\nanswer: I started w2\n",
		"w2":     "sleep: 120s\n",
		"lead":   "run: " + r.bin + " worker start --agent sim --task helper.md --name helper > lead.out 2>&1\nanswer: I lead a helper now\n",
		"helper": "sleep: 120s\n",
	} {
		if err := os.WriteFile(filepath.Join(work, name+".md"), []byte(task), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w1 = strings.Fields(r.st("worker", "start", "--agent", "sim", "--task", filepath.Join(work, "w1.md"), "--name", "w1"))[0]
	testutil.WaitFor(t, 30*time.Second, func() (bool, string) {
		b, _ := os.ReadFile(filepath.Join(work, "w1.out"))
		m := regexp.MustCompile(`(%\d+) w2`).FindSubmatch(b)
		if m != nil {
			w2 = string(m[1])
		}
		return m != nil, "w1.out: " + string(b)
	})
	// st orch show: w1 a worker at level 1, w2 at level 2, no team.
	show := r.st("orch", "show")
	if !regexp.MustCompile(`(?m)^\s*`+regexp.QuoteMeta(w1)+`\s+w1\s`).MatchString(show) || strings.Contains(show, "team of") {
		t.Fatalf("st orch show should list w1 as a worker, no team:\n%s", show)
	}
	// A lead for contrast: an agent with a worker of its own, adopted.
	lead = r.handAgent("lead", "Your task is in the file "+filepath.Join(work, "lead.md")+" - do it.")
	testutil.WaitFor(t, 30*time.Second, func() (bool, string) {
		b, _ := os.ReadFile(filepath.Join(work, "lead.out"))
		return regexp.MustCompile(`%\d+ helper`).Match(b), "lead.out: " + string(b)
	})
	if out := r.st("worker", "adopt", lead); !strings.Contains(out, "a team of 1") {
		t.Fatalf("st worker adopt %s: %s, want a team of 1", lead, out)
	}
	return r, w1, w2, lead
}
