package browser

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/web"
	"github.com/sophonz/st/internal/web/webtest"
)

// TestTokensOnCards (issue 35): what a worker's agent spent shows on its
// row, its card in the agent graph and its card in the phone's chart, in
// short units of the page's language with its estimated cost, and every
// kind in the title, in English and in Korean.
func TestTokensOnCards(t *testing.T) {
	for _, c := range []struct{ lang, want, title string }{
		{"", "12.3K tokens · ~$0.42", "input 1200, output 345, cache read 10500, cache write 300"},
		{"ko-KR", "토큰 1.2만 · 약 US$0.42", "입력 1200, 출력 345, 캐시 읽기 10500, 캐시 쓰기 300"},
	} {
		t.Run(orEn(c.lang), func(t *testing.T) {
			snap := webtest.ViewsSample(time.Now())
			cost := 0.42
			for i := range snap.Agents {
				if snap.Agents[i].Name == "w1" {
					snap.Agents[i].Tokens = &api.Tokens{Input: 1200, Output: 345, CacheRead: 10500, CacheWrite: 300, Total: 12345,
						CostUSD: &cost, CostEstimated: true, PriceDate: "2026-12-01"}
				}
			}
			for _, size := range [][2]int{{1440, 900}, {390, 844}} {
				base := serveUI(t, web.Config{Backend: webtest.New(snap)})
				ctx := newBrowserIn(t, size[0], size[1], c.lang)
				if size[0] < 700 {
					do(t, ctx, chromedp.EmulateViewport(int64(size[0]), int64(size[1]), chromedp.EmulateScale(2), chromedp.EmulateMobile))
				}
				do(t, ctx, chromedp.Navigate(link(t, base)))
				where := map[bool]string{true: "#graph .agent-card", false: "#chart-tree .agent-card"}[size[0] >= 700]
				card := fmt.Sprintf(`[...document.querySelectorAll(%q)].find(c => c.querySelector(".gc-name").innerText === "w1")`, where)
				waitJS(t, ctx, card+` !== undefined && `+card+`.querySelector(".tokens") !== null`, 20*time.Second)
				got := run(t, ctx, chromedp.Evaluate[[]string](`[`+card+`.querySelector(".tokens").innerText, `+card+`.querySelector(".tokens").title]`))
				if got[0] != c.want || !strings.Contains(got[1], c.title) {
					t.Errorf("%s at %d px: w1's card shows %q (title %q), want %q with %q", where, size[0], got[0], got[1], c.want, c.title)
				}
				row := sideRow("w1")
				waitJS(t, ctx, row+` !== undefined`, 20*time.Second)
				if txt := run(t, ctx, chromedp.Evaluate[string](row+`.querySelector(".tokens")?.innerText ?? ""`)); txt != c.want {
					t.Errorf("at %d px: w1's row shows %q, want %q", size[0], txt, c.want)
				}
				// A worker with no tokens read shows none.
				if n := run(t, ctx, chromedp.Evaluate[int](sideRow("orphan-worker")+`.querySelectorAll(".tokens").length`)); n != 0 {
					t.Errorf("a worker with no tokens has %d token marks", n)
				}
			}
		})
	}
}

func orEn(lang string) string {
	if lang == "" {
		return "en"
	}
	return lang
}

// TestAgentCostAndNearLimit (issue 35): a cost the agent gave itself
// (Claude's status line) shows as it is, with no ~, and its title says it
// is the agent's own; an agent account near a usage limit (its 5-hour
// window 92 % used) has its line under Needs you, and one that is not
// near (its 7-day window, 40 %) none; a second login of the same kind is
// a line of its own, named by its account; in English and in Korean.
func TestAgentCostAndNearLimit(t *testing.T) {
	for _, c := range []struct{ lang, want, title, limit, account string }{
		{"", "12.3K tokens · $0.42", "The cost is the agent's own figure", "claude: 5-hour limit 92 % used, resets ",
			"claude (ann@example.com): 5-hour limit 88 % used, resets "},
		{"ko-KR", "토큰 1.2만 · US$0.42", "비용은 에이전트가 직접 밝힌 값입니다", "claude: 5시간 한도의 92% 사용, ",
			"claude (ann@example.com): 5시간 한도의 88% 사용, "},
	} {
		t.Run(orEn(c.lang), func(t *testing.T) {
			now := time.Now()
			snap := webtest.ViewsSample(now)
			cost := 0.42
			for i := range snap.Agents {
				if snap.Agents[i].Name == "w1" {
					snap.Agents[i].Tokens = &api.Tokens{Input: 1200, Output: 345, CacheRead: 10500, CacheWrite: 300, Total: 12345,
						CostUSD: &cost, CostBy: api.CostByAgent}
				}
			}
			snap.Limits = []api.AgentLimit{
				{Agent: "claude", Window: "5-hour", UsedPercent: 92, Resets: now.Add(2 * time.Hour), Seen: now, Near: true},
				{Agent: "claude", Account: "ann@example.com", Window: "5-hour", UsedPercent: 88, Resets: now.Add(time.Hour), Seen: now, Near: true},
				{Agent: "claude", Window: "7-day", UsedPercent: 40, Resets: now.Add(48 * time.Hour), Seen: now},
			}
			base := serveUI(t, web.Config{Backend: webtest.New(snap)})
			ctx := newBrowserIn(t, 1440, 900, c.lang)
			do(t, ctx, chromedp.Navigate(link(t, base)))
			row := sideRow("w1")
			waitJS(t, ctx, row+` !== undefined && `+row+`.querySelector(".tokens") !== null`, 20*time.Second)
			got := run(t, ctx, chromedp.Evaluate[[]string](`[`+row+`.querySelector(".tokens").innerText, `+row+`.querySelector(".tokens").title]`))
			if got[0] != c.want || !strings.Contains(got[1], c.title) {
				t.Errorf("w1's row shows %q (title %q), want %q with %q", got[0], got[1], c.want, c.title)
			}
			waitJS(t, ctx, `!document.querySelector("#limits").hidden`, 20*time.Second)
			lines := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#limits .near-limit")].map(e => e.innerText)`))
			if len(lines) != 2 || !strings.HasPrefix(lines[0], c.limit) || !strings.HasPrefix(lines[1], c.account) {
				t.Errorf("the near-limit lines are %q, want two, that start %q and %q", lines, c.limit, c.account)
			}
			// The phone's chart: w1's card shows the agent's own cost as
			// the row does (no ~, the agent's title), and the lines too.
			phone := newBrowserIn(t, 390, 844, c.lang)
			do(t, phone, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile))
			do(t, phone, chromedp.Navigate(link(t, base)))
			card := `[...document.querySelectorAll("#chart-tree .agent-card")].find(c => c.querySelector(".gc-name").innerText === "w1")`
			waitJS(t, phone, card+` !== undefined && `+card+`.querySelector(".tokens") !== null`, 20*time.Second)
			got = run(t, phone, chromedp.Evaluate[[]string](`[`+card+`.querySelector(".tokens").innerText, `+card+`.querySelector(".tokens").title, `+card+`.querySelector(".tokens").dataset.cost]`))
			if got[0] != c.want || !strings.Contains(got[1], c.title) || got[2] != "agent" {
				t.Errorf("the phone's chart: w1's card shows %q (title %q, cost by %q), want %q with %q, by the agent", got[0], got[1], got[2], c.want, c.title)
			}
			waitJS(t, phone, `!document.querySelector("#limits").hidden`, 20*time.Second)
			if n := run(t, phone, chromedp.Evaluate[int](`document.querySelectorAll("#limits .near-limit").length`)); n != 2 {
				t.Errorf("the phone shows %d near-limit lines, want 2", n)
			}
		})
	}
}
