package browser

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sophonz/st/internal/web"
	"github.com/sophonz/st/internal/web/webtest"
)

// shownTextJS is every text a person sees on the page now: the text of
// the elements on screen (not the terminal's, which is the agent's), and
// their titles and labels.
const shownTextJS = `(() => {
	const out = [];
	const seen = e => e && e.getClientRects().length > 0 && !e.closest("[hidden], #term");
	const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
	for (let n; (n = w.nextNode());) if (seen(n.parentElement) && n.data.trim()) out.push(n.data);
	for (const e of document.querySelectorAll("[title], [aria-label]")) {
		if (!seen(e)) continue;
		if (e.title) out.push(e.title);
		if (e.getAttribute("aria-label")) out.push(e.getAttribute("aria-label"));
	}
	return out;
})()`

// sampleData are the texts of webtest.Sample that are the agents' and
// tmux's own (names, a question, a summary), not the page's.
var sampleData = []string{"Drop the old v1 endpoints from the tests?", "Fixed 12 lint warnings; go vet and the linter pass.",
	"README rewritten; links checked.", "api-tests", "readme", "claude", "codex", "lint", "sim", "main", "scratch", "zsh", "bash",
	"devbox", "ci-mac", "ios-sim", "Explore", "general-purpose", "alpha", "beta", "Yes", "No",
	"refused: lint is already a worker of %1"} // st's refusal: its words are st's

// Words of Korean texts that are names, not English: st and its commands,
// the Esc key, the spec's "Main › …" path and its word pane, and the
// agents' names (Claude Code, Codex, Gemini CLI), written as they are.
var koreanKeeps = []string{"st", "orch", "accept", "remote", "on", "Esc", "Main", "pane", "tmux", "web", "URL", "Claude", "Code", "Codex", "Gemini", "CLI"}

var latinWord = regexp.MustCompile(`[A-Za-z]{2,}`)

// strays returns the words of shown that are not in the page's language:
// Hangul on an English page, English words (past the data) on a Korean one.
func strays(shown []string, lang string) []string {
	data := slices.Clone(sampleData)
	sort.Slice(data, func(i, j int) bool { return len(data[i]) > len(data[j]) })
	var out []string
	for _, s := range shown {
		if lang == "en" {
			if strings.ContainsFunc(s, func(r rune) bool { return r >= 0xac00 && r <= 0xd7a3 }) {
				out = append(out, s)
			}
			continue
		}
		rest := s
		for _, d := range data {
			rest = strings.ReplaceAll(rest, d, "")
		}
		for _, w := range latinWord.FindAllString(rest, -1) {
			if !slices.Contains(koreanKeeps, w) {
				out = append(out, fmt.Sprintf("%q in %q", w, s))
			}
		}
	}
	return out
}

// langTexts are what each language says in the same places.
var langTexts = map[string]map[string]string{
	"en": {
		"fold": "Workers · 2 working, 1 done", "completed": "Completed (1)", "badge": "coordinator", "side": "SESSIONS",
		"title": "No window open", "ro": "Read-only", "agents": "◇ Agents", "conn": "live",
		"legend": "worker teammate subagent", "roles": "coordinator worker worker worker", "release": "Release",
		"menu": "Open Let go", "toast": "Released lint", "orphan": "⚠ coordinator %9 is gone",
		"scopes": "This session This machine", "empty": "No agent is handing work to another.",
		"refusal": "refused: lint is already a worker of %1", "detail": "Kind State Parent Started Path",
		"state": "working · ", "machine": "⌂ ci-mac (offline)",
	},
	"ko": {
		"fold": "워커 · 작업 중 2, 끝남 1", "completed": "끝난 워커 1명", "badge": "코디네이터", "side": "세션",
		"title": "열린 창 없음", "ro": "읽기 전용", "agents": "◇ 에이전트", "conn": "연결됨",
		"legend": "워커 팀원 서브에이전트", "roles": "코디네이터 워커 워커 워커", "release": "놓아 주기",
		"menu": "열기 놓아 주기", "toast": "lint를 놓아 주었습니다", "orphan": "⚠ 코디네이터 %9가 사라졌습니다",
		"scopes": "이 세션 이 머신", "empty": "다른 에이전트에게 일을 맡긴 에이전트가 없습니다.",
		"refusal": "st의 답: refused: lint is already a worker of %1", "detail": "종류 상태 부모 시작 경로",
		"state": "작업 중 · ", "machine": "⌂ ci-mac (오프라인)",
	},
}

// TestLanguages (issue 25, item 1): the page in the browser's language,
// Korean or English, and English when the browser asks for neither: the
// sidebar card (the spec's "워커 · 작업 중 2, 끝남 1" and "끝난 워커 N명"),
// the header, the graph, menus, toasts, a refusal st sent (its words stay
// st's), a teammate's details, the phone chart and its empty text; and
// nothing of the other language on screen. Screenshots of each.
func TestLanguages(t *testing.T) {
	if en, ko := slices.Sorted(maps.Keys(langTexts["en"])), slices.Sorted(maps.Keys(langTexts["ko"])); !slices.Equal(en, ko) {
		t.Fatalf("langTexts' English and Korean check different places: a key missing in one fails (English %q, Korean %q)", en, ko)
	}
	for _, c := range []struct{ name, browser, want string }{
		{"ko", "ko-KR", "ko"},
		{"en", "", "en"},
		{"fr-then-ko", "fr-FR,ko-KR", "ko"},
		{"fr", "fr-FR,de-DE", "en"},
	} {
		t.Run(c.name, func(t *testing.T) { languageTest(t, c.browser, c.want, c.name == c.want) })
	}
}

func languageTest(t *testing.T, browser, lang string, full bool) {
	want := langTexts[lang]
	snap := webtest.Sample(time.Now())
	fake := webtest.New(snap)
	base := serveUI(t, web.Config{Backend: fake})
	ctx := newBrowserIn(t, 1440, 900, browser)
	do(t, ctx, chromedp.Navigate(link(t, base)))
	waitJS(t, ctx, `document.querySelector("#sidebar .fold-line") !== null`, 20*time.Second)
	got := run(t, ctx, chromedp.Evaluate[[]string](`[navigator.language, document.documentElement.lang]`))
	if first, _, _ := strings.Cut(browser, ","); (browser != "" && got[0] != first) || got[1] != lang {
		t.Fatalf("navigator.language %q, page language %q; want %q and %q", got[0], got[1], first, lang)
	}
	joined := func(sel string) string {
		return strings.Join(strings.Fields(strings.Join(texts(t, ctx, sel), " ")), " ")
	}
	check := func(what, got string) {
		t.Helper()
		if w := wantText(t, want, what); !strings.Contains(got, w) {
			t.Errorf("%s: the page shows %q, want %q", what, got, w)
		}
	}
	check("fold", joined("#sidebar .fold-line"))
	check("completed", joined("#sidebar details.completed > summary"))
	check("badge", joined("#sidebar .card.family .badge"))
	check("side", joined("#sidebar .side-title"))
	check("title", joined("#term-title"))
	check("ro", joined(".ro-toggle"))
	check("agents", joined("#agents-btn"))
	check("conn", joined("#conn"))
	check("state", joined("#sidebar .agent-row .state"))
	if !full {
		return // the choice of language is what the fallbacks show
	}
	if s := strays(run(t, ctx, chromedp.Evaluate[[]string](shownTextJS)), lang); len(s) > 0 {
		t.Errorf("the sidebar page shows words not in %s: %q", lang, s)
	}
	screenshot(t, ctx, "web-"+lang+"-sidebar.png")

	// The row menu, and a toast.
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll("#sidebar .agent-row")].find(r => r.querySelector(".name").innerText === "api-tests").querySelector(".row-menu-btn").click()`))
	waitJS(t, ctx, `document.querySelector("#sidebar .row-menu") !== null`, 20*time.Second)
	check("menu", joined("#sidebar .row-menu button"))
	languageGraph(t, ctx, fake, lang, check, joined)
	languagePhone(t, base, browser, fake, lang, want)
}

// languageGraph is languageTest's graph: its legend and cards, a toast, a
// refusal of st, an orphan, another machine, a teammate's details.
func languageGraph(t *testing.T, ctx context.Context, fake *webtest.Backend, lang string, check func(string, string), joined func(string) string) {
	t.Helper()
	// The graph.
	do(t, ctx, chromedp.Click("#agents-btn"))
	waitJS(t, ctx, `!document.querySelector("#graph").hidden && document.querySelectorAll("#graph .agent-card").length === 4`, 20*time.Second)
	check("legend", joined("#graph .legend"))
	check("roles", joined("#graph .agent-card .gc-role .badge"))
	check("release", joined(agentCard("#graph", "%4")+" button.release"))
	if s := strays(run(t, ctx, chromedp.Evaluate[[]string](shownTextJS)), lang); len(s) > 0 {
		t.Errorf("the graph shows words not in %s: %q", lang, s)
	}
	screenshot(t, ctx, "web-"+lang+"-graph.png")
	do(t, ctx, chromedp.Click(agentCard("#graph", "%4")+" button.release"))
	waitJS(t, ctx, `!document.querySelector("#toast").hidden`, 20*time.Second)
	check("toast", joined("#toast"))

	// A refusal from st: its words are st's, in the page's frame.
	fake.Err = errors.New("refused: lint is already a worker of %1")
	drag(t, ctx, agentCard("#graph", "%3"), agentCard("#graph", "%2"))
	waitJS(t, ctx, `document.querySelector("#toast").classList.contains("bad")`, 20*time.Second)
	check("refusal", joined("#toast"))
	fake.Err = nil

	// A gone coordinator, and a machine that is offline.
	fake.Update(func(s *web.Snapshot) {
		s.Agents[3].Parent, s.Agents[3].ParentGone = "%9", true
		s.Machines = []web.Machine{{Slug: "devbox", Name: "devbox", Online: true, This: true}, {Slug: "ci-mac", Name: "ci-mac"}}
		s.Agents = append(s.Agents, web.Agent{Pane: "%3", Name: "ios-sim", Kind: "claude", Role: web.RoleWorker, State: "working",
			Since: time.Now(), Parent: "devbox/%1", Machine: "ci-mac"})
	})
	do(t, ctx, chromedp.Click("#graph-close"))
	waitJS(t, ctx, `document.querySelector("#sidebar .card.orphan") !== null`, 20*time.Second)
	check("orphan", joined("#sidebar .card.orphan .warn"))
	check("machine", joined("#sidebar .machine"))
	if s := strays(run(t, ctx, chromedp.Evaluate[[]string](shownTextJS)), lang); len(s) > 0 {
		t.Errorf("the sidebar with an orphan and another machine shows words not in %s: %q", lang, s)
	}

	// A teammate's details.
	fake.Set(webtest.TeamSample(time.Now()))
	do(t, ctx, chromedp.Click("#agents-btn"))
	waitJS(t, ctx, `document.querySelector('#graph [data-mate="%2/alpha"]') !== null`, 20*time.Second)
	do(t, ctx, chromedp.Click(`#graph [data-mate="%2/alpha"] .gc-name`))
	waitJS(t, ctx, `!document.querySelector("#detail").hidden`, 20*time.Second)
	check("detail", joined("#detail .dt-k"))
	if s := strays(run(t, ctx, chromedp.Evaluate[[]string](shownTextJS)), lang); len(s) > 0 {
		t.Errorf("a teammate's details show words not in %s: %q", lang, s)
	}
	screenshot(t, ctx, "web-"+lang+"-detail.png")
}

// languagePhone is languageTest's phone chart, and its empty text.
func languagePhone(t *testing.T, base, browser string, fake *webtest.Backend, lang string, want map[string]string) {
	t.Helper()
	phone := newBrowserIn(t, 390, 844, browser)
	do(t, phone, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile), chromedp.Navigate(link(t, base)))
	waitJS(t, phone, `document.querySelectorAll("#chart-tree .agent-card").length === 3`, 20*time.Second)
	phoneCheck(t, "scopes", strings.Join(texts(t, phone, "#scopes button"), " "), want)
	screenshot(t, phone, "web-"+lang+"-phone.png")
	fake.Set(web.Snapshot{Machine: "devbox"})
	waitJS(t, phone, `document.querySelector("#chart-tree .empty") !== null`, 20*time.Second)
	phoneCheck(t, "empty", strings.Join(texts(t, phone, "#chart-tree"), " "), want)
	screenshot(t, phone, "web-"+lang+"-phone-empty.png")
}

func phoneCheck(t *testing.T, what, got string, want map[string]string) {
	t.Helper()
	if w := wantText(t, want, what); !strings.Contains(got, w) {
		t.Errorf("phone %s: the page shows %q, want %q", what, got, w)
	}
}

// wantText is what the page must show at what. A place langTexts does not
// name fails: "" is in every text, so a missing key passed any page.
func wantText(t *testing.T, want map[string]string, what string) string {
	t.Helper()
	w := want[what]
	if strings.TrimSpace(w) == "" {
		t.Fatalf("langTexts has no text for %q in this language: add it (in both languages)", what)
	}
	return w
}
