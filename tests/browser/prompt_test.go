package browser

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/testutil/fakemodel"
	"github.com/sophonz/st/internal/testutil/realagent"
)

// TestRealPermissionPromptInBrowser (issue 34, item 3): a real Claude
// Code 2.1.332 (offline, against the fake model server) in a pane of st's
// tmux server, with st's hooks, in its default permission mode: each Bash
// command and its question wait at its own dialog. The web UI shows each
// one above the gates; a person answers in Chromium, and Claude's
// PermissionRequest hook, which asked st and waited, takes the answer:
// Allow once -> the command ran (the screen says the hook allowed it: no
// key reached the pane); Deny -> the command did not run and the model
// was told a person denied it; the question's option "No" -> the model got
// that answer. With st down the hook answers nothing at once, and Claude's
// own dialog decides, answered in the window as before st.
func TestRealPermissionPromptInBrowser(t *testing.T) {
	r, fake, pane, ctx := claudeAsker(t)
	work := r.work

	// One turn: three tool calls, each stopped at Claude's dialog.
	r.typeLine(pane, "RUN: echo allowed > allowed.txt RUN: echo denied > denied.txt ASK: Pick one please SAY: all three answered")

	// answer waits for the page's prompt that shows what, checks that
	// Claude's own dialog is on its screen meanwhile, and clicks button.
	answer := func(what, button, dialog string) {
		t.Helper()
		// Its attention item in the Needs you list, with the answers.
		sel := `[...document.querySelectorAll("#needs [data-prompt]")].find(e => e.innerText.includes(` + jsString(what) + `))`
		waitJS(t, ctx, sel+` !== undefined`, 90*time.Second)
		r.waitScreen(pane, regexp.QuoteMeta(dialog), 30*time.Second)
		do(t, ctx, chromedp.Evaluate[chromedp.Void](`[...(`+sel+`).querySelectorAll("button.opt")].find(b => b.innerText === `+jsString(button)+`).click()`))
		waitJS(t, ctx, sel+` === undefined`, 30*time.Second)
	}
	answer("echo allowed > allowed.txt", "Allow once", "Do you want to proceed?")
	testutil.WaitFor(t, 60*time.Second, func() (bool, string) {
		_, err := os.Stat(filepath.Join(work, "allowed.txt"))
		return err == nil, "the allowed command never ran:\n" + r.capture(pane)
	})
	answer("echo denied > denied.txt", "Deny", "Do you want to proceed?")
	answer("Pick one please", "No", "Enter to select")
	testutil.WaitFor(t, 60*time.Second, func() (bool, string) {
		// The answer's line, not the typed prompt that holds its words.
		return strings.Contains(r.capture(pane), "● all three answered"), "the turn never ended:\n" + r.capture(pane)
	})
	if _, err := os.Stat(filepath.Join(work, "denied.txt")); err == nil {
		t.Error("the denied command ran")
	}
	var results []string
	for _, l := range fake.Requests() {
		results = append(results, string(l.Body))
	}
	all := strings.Join(results, "\n")
	for _, want := range []string{
		`A person denied this through st (web)`,
		`Your questions have been answered: \"Pick one please\"=\"No\"`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the model was never told %s; its tool results:\n%s", want, strings.Join(regexp.MustCompile(`"tool_result","content":"[^"]{0,200}`).FindAllString(all, -1), "\n"))
		}
	}
	// The screen says the hook decided: no key was typed into the dialog.
	if s, _ := r.tm.Run("capture-pane", "-p", "-S", "-300", "-t", pane); !strings.Contains(s, "PermissionRequest hook") {
		t.Errorf("the pane does not say the hook answered:\n%s", s)
	}

	r.answeredInWindow(pane)
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`).Replace(s) + "'"
}

// claudeAsker is the real daemon with st's hooks installed, a real Claude
// in its default permission mode in a window of its own (its pane), the
// fake model it asks, and a browser on st's web UI.
func claudeAsker(t *testing.T) (*realEnv, *fakemodel.Server, string, context.Context) {
	r := newRealEnv(t)
	claude, _ := realagent.Binaries(t)
	fake := fakemodel.Start(t)
	work, chome := r.work, filepath.Join(r.dir, "c")
	cenv := realagent.ClaudeHome(t, chome, fake.URL(), work)
	r.extra = append([]string{"ST_CLAUDE_BIN=" + claude}, cenv...)
	r.start(cenv...)
	r.st("hooks", "install")
	out, err := r.tm.Run("new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "main:", "-c", work, "-n", "asker",
		claude, "--permission-mode", "default")
	if err != nil {
		t.Fatal(err)
	}
	pane := strings.TrimSpace(out)
	r.waitScreen(pane, "(?m)^❯\u00a0", 60*time.Second)

	url := regexp.MustCompile(`http://127\.0\.0\.1:\d+/\S*token=\S+`).FindString(r.webURL())
	if url == "" {
		t.Fatal("st web printed no URL with its token")
	}
	ctx := newBrowser(t, 1440, 900)
	do(t, ctx, chromedp.Navigate(url))
	waitJS(t, ctx, `document.querySelector("#sidebar .sess") !== null`, 30*time.Second)

	return r, fake, pane, ctx
}

// answeredInWindow stops st and has Claude in pane ask again: the hook
// answers nothing at once, and a person answers Claude's own dialog in
// the window.
func (r *realEnv) answeredInWindow(pane string) {
	t := r.t
	t.Helper()
	// st down: the hook answers nothing, and Claude's own dialog is
	// answered in the window.
	r.st("down")
	r.typeLine(pane, "RUN: echo by-hand > by-hand.txt SAY: done by hand")
	r.waitScreen(pane, "Do you want to proceed", 90*time.Second)
	// The person presses 1 while the dialog is up: Claude drops a key
	// pressed the instant its dialog is drawn, so again if it stays.
	var pressed time.Time
	testutil.WaitFor(t, 60*time.Second, func() (bool, string) {
		if _, err := os.Stat(filepath.Join(r.work, "by-hand.txt")); err == nil {
			return true, ""
		}
		if time.Since(pressed) > 700*time.Millisecond && strings.Contains(r.capture(pane), "Do you want to proceed") {
			r.tm.Run("send-keys", "-t", pane, "1")
			pressed = time.Now()
		}
		return false, "the command answered in the window never ran:\n" + r.capture(pane)
	})
}

// typeLine types line into Claude's box in pane and submits it once the
// box shows it (an Enter right behind the text may be dropped: reference
// §3.5).
func (r *realEnv) typeLine(pane, line string) {
	r.t.Helper()
	r.tm.Run("send-keys", "-t", pane, "-l", line)
	r.waitScreen(pane, regexp.QuoteMeta("❯\u00a0"+line[:20]), 30*time.Second)
	r.tm.Run("send-keys", "-t", pane, "Enter")
}
