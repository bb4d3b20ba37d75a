package browser

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"

	"github.com/sophonz/st/internal/web"
	"github.com/sophonz/st/internal/web/webtest"
)

// needsSample is the sample run with two agents that need a person: the
// worker readme (%3) asks leave to run a command (the newest), api-tests
// (%2) ended its turn without a report.
func needsSample(now time.Time) web.Snapshot {
	s := webtest.Sample(now)
	s.Attention = []web.Attention{
		{ID: "att-2", Kind: "permission", Pane: "%3", Name: "readme", Agent: "claude", Text: "rm -rf build", Command: "rm -rf build", Opened: now.Add(-42 * time.Second)},
		{ID: "att-1", Kind: "no-report", Pane: "%2", Name: "api-tests", Agent: "codex", Text: "I stopped here.", Opened: now.Add(-3 * time.Minute)},
	}
	return s
}

// TestNeedsYou (issue 34): the Needs you list at the top, the newest first
// with its age; the agents' rows and graph cards marked; the page's title
// counting them; a dismissal takes one off; a new one asks, once and
// with its reason, to notify while the page is hidden.
func TestNeedsYou(t *testing.T) {
	fake := webtest.New(needsSample(time.Now()))
	base := serveUI(t, web.Config{Backend: fake})
	ctx := newBrowser(t, 1440, 900)
	do(t, ctx, chromedp.Navigate(link(t, base)))
	waitJS(t, ctx, `!document.querySelector("#needs").hidden`, 20*time.Second)

	if h := texts(t, ctx, "#needs .needs-head"); len(h) != 1 || h[0] != "Needs you (2)" {
		t.Errorf("the list's head = %q", h)
	}
	rows := texts(t, ctx, "#needs .need")
	if len(rows) != 2 || !strings.Contains(rows[0], "readme asks leave to run") || !strings.Contains(rows[0], "rm -rf build") ||
		!strings.Contains(rows[1], "api-tests ended its turn without a report") || !strings.Contains(rows[1], "3m") {
		t.Errorf("rows (newest first, with their age) = %q", rows)
	}
	if title := run(t, ctx, chromedp.Title()); title != "(2) st · needs you" {
		t.Errorf("title = %q", title)
	}
	if n := count(t, ctx, "#sidebar .agent-row .needs-mark"); n != 2 {
		t.Errorf("%d sidebar rows marked, want 2", n)
	}
	do(t, ctx, chromedp.Click("#agents-btn"))
	waitJS(t, ctx, `document.querySelectorAll("#graph .agent-card.needs").length === 2`, 20*time.Second)

	// Dismissed: off the list, the title counts one.
	do(t, ctx, chromedp.Click(`#needs [data-attention="att-1"] button.dismiss`))
	waitCall(t, fake, `DismissAttention["att-1"]`)
	waitJS(t, ctx, `document.title === "(1) st · needs you" && document.querySelectorAll("#needs .need").length === 1`, 20*time.Second)
	if n := count(t, ctx, "#graph .agent-card.needs"); n != 1 {
		t.Errorf("%d graph cards marked after the dismissal, want 1", n)
	}

	// A new item: the page asks once, saying why, to notify; "Not now"
	// is kept, and the next item asks nothing.
	perm := run(t, ctx, chromedp.Evaluate[string](`Notification.permission`))
	fake.Update(func(s *web.Snapshot) {
		s.Attention = append([]web.Attention{{ID: "att-3", Kind: "question", Pane: "%1", Name: "claude", Text: "Which DB?", Options: []string{"Postgres", "SQLite"}, Opened: time.Now()}}, s.Attention...)
	})
	waitJS(t, ctx, `document.querySelectorAll("#needs .need").length === 2`, 20*time.Second)
	if rows := texts(t, ctx, "#needs .need"); !strings.Contains(rows[0], "claude asks") || !strings.Contains(rows[0], "Postgres · SQLite") {
		t.Errorf("the new row = %q", rows[0])
	}
	if perm == "default" {
		waitJS(t, ctx, `document.querySelector("#needs .need-ask") !== null`, 20*time.Second)
		if ask := texts(t, ctx, "#needs .need-ask"); !strings.Contains(ask[0], "st can tell you when an agent needs you while this page is in the background.") {
			t.Errorf("the ask = %q", ask)
		}
		do(t, ctx, chromedp.Click(`#needs .need-ask button:not(.allow)`))
		waitJS(t, ctx, `document.querySelector("#needs .need-ask") === null && localStorage.getItem("st.notifyAsked") === "1"`, 20*time.Second)
		fake.Update(func(s *web.Snapshot) {
			s.Attention = append([]web.Attention{{ID: "att-4", Kind: "failed", Pane: "%4", Name: "lint", Text: "API Error: 500", Opened: time.Now()}}, s.Attention...)
		})
		waitJS(t, ctx, `document.querySelectorAll("#needs .need").length === 3`, 20*time.Second)
		if n := count(t, ctx, "#needs .need-ask"); n != 0 {
			t.Error("the page asked a second time")
		}
	} else {
		t.Logf("Notification.permission is %q in this Chromium: the ask is not shown", perm)
	}

	// Every item gone: the list hides, the title is the page's own.
	fake.Update(func(s *web.Snapshot) { s.Attention = nil })
	waitJS(t, ctx, `document.querySelector("#needs").hidden && document.title === "st"`, 20*time.Second)
}

// TestNeedsYouKorean: the list speaks the browser's language.
func TestNeedsYouKorean(t *testing.T) {
	fake := webtest.New(needsSample(time.Now()))
	base := serveUI(t, web.Config{Backend: fake})
	ctx := newBrowserIn(t, 1280, 800, "ko")
	do(t, ctx, chromedp.Navigate(link(t, base)))
	waitJS(t, ctx, `!document.querySelector("#needs").hidden`, 20*time.Second)
	if h := texts(t, ctx, "#needs .needs-head"); len(h) != 1 || h[0] != "확인 필요 (2)" {
		t.Errorf("head = %q", h)
	}
	if rows := texts(t, ctx, "#needs .need"); len(rows) != 2 || !strings.Contains(rows[0], "readme가 실행 허락을 구합니다") {
		t.Errorf("rows = %q", rows)
	}
	if title := run(t, ctx, chromedp.Title()); title != "(2) st · 확인 필요" {
		t.Errorf("title = %q", title)
	}
}

// TestNeedsYouNotifiesWhenHidden: with notifications allowed, an item
// that opens while the page is in the background shows a notification
// naming the agent and what it asks; one that opens while it is in front
// does not (the list is on screen). The page's calls of the browser's
// Notification are noted by a wrapper around it; the browser's own
// background state is set as a hidden tab reports it.
func TestNeedsYouNotifiesWhenHidden(t *testing.T) {
	fake := webtest.New(webtest.Sample(time.Now()))
	base := serveUI(t, web.Config{Backend: fake})
	ctx := newBrowser(t, 1280, 800)
	do(t, ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, browser.SetPermission, browser.SetPermissionParams{
			Permission: &browser.PermissionDescriptor{Name: "notifications"}, Setting: browser.PermissionSettingGranted, Origin: base})
		return err
	}))
	do(t, ctx, chromedp.Navigate(link(t, base)))
	waitJS(t, ctx, `Notification.permission === "granted" && document.querySelector("#sidebar .agent-row") !== null`, 20*time.Second)
	run(t, ctx, chromedp.Evaluate[bool](`(() => {
		window.__notes = [];
		const N = window.Notification;
		window.Notification = class extends N { constructor(title, o) { super(title, o); window.__notes.push(title + " | " + (o && o.body)); } };
		return true; })()`))
	fake.Update(func(s *web.Snapshot) {
		s.Attention = []web.Attention{{ID: "att-1", Kind: "permission", Pane: "%3", Name: "readme", Text: "make deploy", Command: "make deploy", Opened: time.Now()}}
	})
	waitJS(t, ctx, `document.querySelectorAll("#needs .need").length === 1`, 20*time.Second)
	run(t, ctx, chromedp.Evaluate[bool](`(() => {
		Object.defineProperty(document, "hidden", { configurable: true, get: () => true });
		return true; })()`))
	fake.Update(func(s *web.Snapshot) {
		s.Attention = append([]web.Attention{{ID: "att-2", Kind: "failed", Pane: "%2", Name: "api-tests", Text: "API Error: 500", Opened: time.Now()}}, s.Attention...)
	})
	waitJS(t, ctx, `window.__notes.length > 0`, 20*time.Second)
	notes := run(t, ctx, chromedp.Evaluate[[]string](`window.__notes`))
	if len(notes) != 1 || notes[0] != "api-tests failed | API Error: 500" {
		t.Errorf("notifications = %q, want one for att-2 alone (att-1 opened with the page in front)", notes)
	}
}
