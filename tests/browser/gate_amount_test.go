package browser

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sophonz/st/internal/web"
	"github.com/sophonz/st/internal/web/webtest"
)

// TestBudgetGateAmount (issue 35): a run's budget gate, whose go on takes
// an amount, has a field for it beside its buttons, in English and
// Korean; the amount typed there answers the gate with the option and
// that amount, which st then checks.
func TestBudgetGateAmount(t *testing.T) {
	for _, c := range []struct{ lang, placeholder, button string }{
		{"en", "Amount: 5M, $20", "Go on with this budget"},
		{"ko-KR", "양: 5M, $20", "이 예산으로 계속"},
	} {
		t.Run(c.lang, func(t *testing.T) {
			s := webtest.Sample(time.Now())
			s.Gates = []web.Gate{{ID: "gate-b", Question: "Run run-1 (docs) has spent its budget: 3.6k of 3k.", Pane: "",
				Options: []string{"go on with a budget of 6k", "stop the run's workers"}, Asked: time.Now(),
				Value: &web.GateValue{Prefix: "go on with a budget of "}}}
			fake := webtest.New(s)
			base := serveUI(t, web.Config{Backend: fake})
			ctx := newBrowserIn(t, 1440, 900, c.lang)
			do(t, ctx, chromedp.Navigate(link(t, base)))
			field := `#gates [data-gate="gate-b"] input.amount`
			waitJS(t, ctx, `document.querySelector('`+field+`') !== null`, 20*time.Second)
			if p := run(t, ctx, chromedp.Evaluate[string](`document.querySelector('`+field+`').placeholder`)); p != c.placeholder {
				t.Errorf("the field's placeholder = %q, want %q", p, c.placeholder)
			}
			if b := texts(t, ctx, `#gates [data-gate="gate-b"] button.set-amount`); len(b) != 1 || strings.TrimSpace(b[0]) != c.button {
				t.Errorf("the amount's button = %q, want %q", b, c.button)
			}
			do(t, ctx, chromedp.Click(field), typeKeys("5M"), chromedp.Click(`#gates [data-gate="gate-b"] button.set-amount`))
			waitCall(t, fake, `AnswerGate["gate-b" "go on with a budget of 5M"]`)
			screenshot(t, ctx, "budget-gate-amount-"+c.lang)
		})
	}
}
