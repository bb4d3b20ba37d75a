package browser

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sophonz/st/internal/web"
	"github.com/sophonz/st/internal/web/webtest"
)

// rowFit is what a sidebar row shows of its agent.
type rowFit struct {
	Name      string  `json:"name"`
	NameWhole bool    `json:"nameWhole"` // the name is not cut
	State     string  `json:"state"`
	StateFits bool    `json:"stateFits"` // the state is whole and inside its row
	InSidebar bool    `json:"inSidebar"` // the row ends inside the sidebar
	Left      float64 `json:"left"`      // how far in the row starts
	Width     float64 `json:"width"`
}

const rowFitsJS = `[...document.querySelectorAll("#sidebar .agent-row")].map(r => {
	const side = document.querySelector("#sidebar").getBoundingClientRect();
	const rr = r.getBoundingClientRect(), s = r.querySelector(".state"), n = r.querySelector(".name");
	const w = s.querySelector(".st-word"), wr = w.getBoundingClientRect();
	const last = [...r.children].at(-1).getBoundingClientRect(); // the row's last item (its menu) is inside it too
	return {name: n.innerText, nameWhole: n.scrollWidth <= n.clientWidth, state: w.innerText,
		stateFits: wr.width > 0 && w.scrollWidth <= w.clientWidth + 1 && wr.left >= rr.left && wr.right <= rr.right + 0.5 && last.right <= rr.right + 0.5,
		inSidebar: rr.right <= side.right + 0.5, left: rr.left - side.left, width: rr.width};
})`

// TestSidebarDepths: a chain four levels deep, with long names and the
// longest states, in the desktop sidebar and in a phone's drawer at a
// few widths, in English and Korean: every row keeps its state whole;
// the name is what gives way (issue 25, item 6: the state was cut to
// "i…" in deep rows).
func TestSidebarDepths(t *testing.T) {
	states := map[string][]string{
		"en":    {"working", "working", "unreachable", "starting", "waiting"},
		"ko-KR": {"작업 중", "작업 중", "연결 안 됨", "시작하는 중", "입력 대기"},
	}
	for _, c := range []struct {
		lang  string
		w, h  int
		phone bool
	}{
		{"en", 1280, 800, false},
		{"en", 390, 844, true},
		{"en", 320, 640, true},
		{"ko-KR", 1280, 800, false},
		{"ko-KR", 320, 640, true},
	} {
		t.Run(fmt.Sprintf("%s-%d", c.lang, c.w), func(t *testing.T) {
			fake := webtest.New(webtest.DeepSample(time.Now()))
			base := serveUI(t, web.Config{Backend: fake})
			lang := c.lang
			if lang == "en" {
				lang = ""
			}
			ctx := newBrowserIn(t, c.w, c.h, lang)
			if c.phone {
				do(t, ctx, chromedp.EmulateViewport(int64(c.w), int64(c.h), chromedp.EmulateScale(2), chromedp.EmulateMobile))
			}
			do(t, ctx, chromedp.Navigate(link(t, base)))
			waitJS(t, ctx, `document.querySelectorAll("#sidebar .agent-row").length === 5`, 20*time.Second)
			if c.phone {
				do(t, ctx, chromedp.Click("#menu"))
				waitJS(t, ctx, `document.querySelector("#sidebar").getBoundingClientRect().left >= 0`, 20*time.Second)
			}
			rows := run(t, ctx, chromedp.Evaluate[[]rowFit](rowFitsJS))
			if len(rows) != 5 {
				t.Fatalf("%d rows, want 5", len(rows))
			}
			for i, r := range rows {
				if !r.StateFits || !r.InSidebar || !strings.Contains(r.State, states[c.lang][i]) {
					t.Errorf("row %d (%q, %.0f px in, %.0f px wide): state %q whole and inside: %v, row inside the sidebar: %v; want %q whole",
						i, r.Name, r.Left, r.Width, r.State, r.StateFits, r.InSidebar, states[c.lang][i])
				}
			}
			// Deeper rows start further in, and the deepest name gave way.
			for i := 1; i < len(rows); i++ {
				if rows[i].Left <= rows[i-1].Left {
					t.Errorf("row %d starts %.0f px in, row %d %.0f px: the tree does not step in", i, rows[i].Left, i-1, rows[i-1].Left)
				}
			}
			// A row with room keeps the state's time too.
			if whole := run(t, ctx, chromedp.Evaluate[bool](`(() => { const t = document.querySelector("#sidebar .agent-row .st-time"); return t.scrollWidth <= t.clientWidth && t.innerText.length > 2; })()`)); !whole {
				t.Errorf("the top row's state lost its time")
			}
			if rows[4].NameWhole {
				t.Errorf("the deepest row shows its whole long name %q: the test needs a row too narrow for both", rows[4].Name)
			}
			screenshot(t, ctx, fmt.Sprintf("web-sidebar-depth-%s-%d.png", c.lang, c.w))
		})
	}
}
