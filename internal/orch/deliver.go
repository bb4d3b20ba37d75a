package orch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/plain"
	"github.com/sophonz/st/internal/syncs"
	"github.com/sophonz/st/internal/tmux"
)

// delivery is one line to type into an agent's pane and see submitted.
//
// Typing is confirmed, never assumed: st waits for the input box, types
// the text, checks that the text sits in the box, presses Enter after the
// agent's pause, and then waits for the agent's UserPromptSubmit hook.
// While the text still sits in the box, Enter is pressed again; when the
// text never reached the box (input ignored), it is typed again. Nothing
// is ever typed over a trust, login or permission screen or a question.
type delivery struct {
	pane string
	// label is how the one who asked names the pane, when not by pane:
	// machine/%7 for a start asked by another machine, where %7 alone
	// names another pane (issue 25, item 5). Errors say label.
	label   string
	adapter *agent.Kind
	text    string
	// fresh marks the task line of a window st just opened: no one else
	// types there, so stray text in its box may be cleared.
	fresh bool
	// whileWorking lets the line go into the box during a turn (an agent
	// queues it); notices to coordinators never set it.
	whileWorking   bool
	blockedTimeout time.Duration // for the box to be ready
	hookTimeout    time.Duration // for the hook after Enter
	onBlocked      func(agent.Screen)

	// The delivery's progress, kept by deliver.
	want        string       // the text, squashed
	readyBy     time.Time    // the box must be ready by then
	typings     int          // times typed
	blockedSeen agent.Screen // the last blocking screen told of
}

// Delivery bounds.
const (
	// pollFirst is the first look again at a box st waits for: the sim
	// draws its box, and text typed shows in it, within a few
	// milliseconds, and a first look 25 ms later was a fifth of what st
	// added to a start. Looks then slow down to pollFast (the text) and
	// pollSlow (the box, which an agent's hook wakes early).
	pollFirst    = 5 * time.Millisecond
	pollFast     = 25 * time.Millisecond
	pollSlow     = 100 * time.Millisecond
	appearWait   = time.Second            // for typed text to show in the box (unless the kind says)
	reEnterAfter = 400 * time.Millisecond // before Enter is pressed again
	maxEnters    = 6
	maxTypings   = 30
	// maxTypeWaitDoublings bounds a try's wait for its line to show
	// at appearWait (or the kind's TypeWait) times 2^3.
	maxTypeWaitDoublings = 3
)

// squash drops all white space, so that a line soft-wrapped in the box
// compares equal to the line typed.
func squash(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

// capture reads the screen for a delivery. Only a pane that is gone ends
// it: a read that failed for a passing reason (a busy server, a deadline
// overrun on a loaded machine) is tried again, for up to transientFor.
func (m *Manager) capture(ctx context.Context, d *delivery) (agent.View, error) {
	until := time.Now().Add(transientFor)
	for {
		v, err := m.screen(ctx, d.pane, d.adapter)
		if err == nil {
			return v, nil
		}
		if goneErr(err) {
			return agent.View{}, errorf(api.KindNotFound, "", "the pane %s closed before the line was delivered", d.id())
		}
		if ctx.Err() != nil || time.Now().After(until) {
			return agent.View{}, err
		}
		m.logf("deliver %s: reading the screen failed, trying again: %v", d.pane, err)
		if err := syncs.Sleep(ctx, pollSlow); err != nil {
			return agent.View{}, err
		}
	}
}

// transientFor is how long a tmux command that failed for a passing
// reason is tried again before the failure counts.
const transientFor = 15 * time.Second

// goneErr reports whether err says the pane (or its server) is gone,
// which no retry mends.
func goneErr(err error) bool {
	return errors.Is(err, tmux.ErrNoPane) || errors.Is(err, tmux.ErrNoServer)
}

// keys types into a pane for a delivery. A failure that may have typed
// nothing, or all of it, is not the end: the screen says what arrived,
// and the delivery goes on from there. Only a pane that is gone ends it.
func (m *Manager) keys(ctx context.Context, d *delivery, send func() error) error {
	err := send()
	if err == nil {
		return nil
	}
	if goneErr(err) {
		return errorf(api.KindNotFound, "", "the pane %s closed before the line was delivered", d.id())
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	m.logf("deliver %s: typing failed (the screen will tell what arrived): %v", d.pane, err)
	return nil
}

// screen reads what an agent's pane shows, with escapes for the kinds
// that need them.
func (m *Manager) screen(ctx context.Context, pane string, ad *agent.Kind) (agent.View, error) {
	var out string
	var err error
	if ad.WantsEscapes() {
		out, err = m.cfg.Tmux.CaptureEscapes(ctx, pane)
	} else {
		out, err = m.cfg.Tmux.Capture(ctx, pane)
	}
	if err != nil {
		return agent.View{}, err
	}
	return ad.Recognize(out), nil
}

// deliver types d.text into d.pane and returns once the agent's hook shows
// that its turn started: it waits for an empty box (waitBox), types the
// line and sees it there (typeLine), and presses Enter until the hook
// comes (submit).
func (m *Manager) deliver(ctx context.Context, d *delivery) error {
	// Every line st types passes the one check, whoever made it (a task
	// line, a notice naming a worker of another machine, st worker send):
	// a control character would be a key to the agent.
	if err := plain.Line(d.text); err != nil {
		return errorf(api.KindUsage, "", "refused to type into %s: the line %v", d.id(), err)
	}
	d.want = squash(d.text)
	d.readyBy = time.Now().Add(d.blockedTimeout)
	d.blockedSeen = agent.ScreenUnknown
	for {
		already, err := m.waitBox(ctx, d)
		if err != nil {
			return err
		}
		seq0, _ := m.facts.turnSeq(d.pane)
		appeared, err := m.typeLine(ctx, d, already)
		if err != nil {
			return err
		}
		if !appeared {
			// The agent ignored the keys (or some of them), or a screen
			// came up: go back to waiting for an empty box.
			m.logf("deliver %s: the line did not show in the box (try %d)", d.pane, d.typings)
			continue
		}
		return m.submit(ctx, d, seq0)
	}
}

// waitBox waits for an empty input box. already reports that an earlier
// try of this delivery showed up late in the box: only Enter is missing.
func (m *Manager) waitBox(ctx context.Context, d *delivery) (already bool, err error) {
	poll := pollFirst
	for {
		changed := m.reg.Changed() // before the look: a hook after it wakes the next
		v, err := m.capture(ctx, d)
		if err != nil {
			return false, err
		}
		ok := v.Screen == agent.ScreenReady || (d.whileWorking && v.Screen == agent.ScreenWorking && v.Box == "")
		noSession := false
		if ok && d.adapter.Screen.SessionFirst {
			// Its box is up before the agent has settled: no line goes
			// in before its SessionStart hook (a dialog may still come).
			if _, sess := m.facts.agentOf(d.pane); sess == "" {
				ok, noSession = false, true
			}
		}
		if ok && (v.Screen != agent.ScreenReady || d.adapter.Screen.BoxUnderDialog) && m.facts.waiting(d.pane) {
			// Its hooks say a prompt is up (or about to be drawn).
			ok = false
			v.Screen = agent.ScreenPrompt
		}
		if ok {
			return false, nil
		}
		if v.Screen.Blocking() && d.blockedSeen != v.Screen {
			d.blockedSeen = v.Screen
			if d.onBlocked != nil && v.Screen != agent.ScreenPrompt {
				d.onBlocked(v.Screen)
			}
		}
		if d.fresh && v.Screen == agent.ScreenTyped && d.typings > 0 {
			if squash(v.Box) == d.want {
				return true, nil
			}
			// Part of our own earlier try: clear it and type again.
			if err := m.clearBox(ctx, d, v.Box); err != nil {
				return false, err
			}
			continue
		}
		if time.Now().After(d.readyBy) {
			if noSession {
				// The box stood there, and no hook ever came.
				return false, errorf(api.KindNoHooks, "run st hooks install, then start the worker again (st worker stop "+d.id()+" --yes closes this one)",
					"the agent's input box is up in %s, but no hook came from the agent within %s, so st cannot see it start: its hooks are missing", d.id(), d.blockedTimeout)
			}
			return false, m.notReady(ctx, d, v.Screen)
		}
		if err := sleepOrChange(ctx, poll, changed); err != nil {
			return false, err
		}
		if poll < pollSlow {
			poll += pollFast / 5
		}
	}
}

// sleepOrChange waits for d, or for changed to close (an agent's hook:
// its SessionStart comes as its box is drawn), but at least pollFirst,
// so that a burst of hooks from other panes costs few looks.
func sleepOrChange(ctx context.Context, d time.Duration, changed <-chan struct{}) error {
	if err := syncs.Sleep(ctx, pollFirst); err != nil || d <= pollFirst {
		return err
	}
	t := time.NewTimer(d - pollFirst)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	case <-changed:
	}
	return nil
}

// typeLine types the line (unless it is already in the box) and reports
// whether it showed in the box.
func (m *Manager) typeLine(ctx context.Context, d *delivery, already bool) (bool, error) {
	if d.typings >= maxTypings {
		return false, errorf(api.KindTimeout, "look at the window; the agent may be stuck", "st typed the line %d times into %s and it never showed in the input box", d.typings, d.id())
	}
	if already {
		return true, nil
	}
	if d.typings > 0 && d.fresh {
		// The earlier try's keys may not be lost but late: on a loaded
		// machine an agent's event loop takes keys seconds after they
		// came (Claude at a load of 20), and they keep their order. One
		// line's worth of Backspace first takes a late copy out before
		// this one lands, so the line is never sent twice; on an empty
		// box it does nothing. Only in a window st just opened, where no
		// one else types.
		if err := m.clearBox(ctx, d, d.text); err != nil {
			return false, err
		}
	}
	d.typings++
	if err := m.sendLine(ctx, d); err != nil {
		return false, err
	}
	wait := d.adapter.Screen.TypeWait
	if wait <= 0 {
		wait = appearWait
	}
	// Each try waits twice as long as the one before (up to 8 times the
	// first): an agent that takes keys late is given the time to show
	// them, rather than a line typed again on top of one on its way.
	wait <<= min(d.typings-1, maxTypeWaitDoublings)
	shown, _, err := m.watchBox(ctx, d, time.Now().Add(wait), func(v agent.View) bool { return squash(v.Box) == d.want })
	return shown, err
}

// watchBox looks at d's pane, more slowly as it goes on, until its box
// shows what wanted looks for (shown), a dialog comes up over the box
// (blocked), or until passes (neither).
func (m *Manager) watchBox(ctx context.Context, d *delivery, until time.Time, wanted func(agent.View) bool) (shown, blocked bool, err error) {
	for poll := pollFirst; time.Now().Before(until); poll = min(poll+pollFirst, pollFast) {
		v, err := m.capture(ctx, d)
		if err != nil {
			return false, false, err
		}
		if v.Screen.Blocking() {
			return false, true, nil
		}
		if wanted(v) {
			return true, false, nil
		}
		if err := syncs.Sleep(ctx, poll); err != nil {
			return false, false, err
		}
	}
	return false, false, nil
}

// sendLine types d.text: in one burst, or, for a kind whose empty box
// takes some keys as commands (Screen.FirstAlone), its first character
// alone and the rest once the box shows it (or its wait is over: the
// check of the whole line in the box decides then). A line that starts
// with such a key still loses it.
func (m *Manager) sendLine(ctx context.Context, d *delivery) error {
	_, n := utf8.DecodeRuneInString(d.text)
	if !d.adapter.Screen.FirstAlone || n >= len(d.text) {
		return m.keys(ctx, d, func() error { return m.cfg.Tmux.SendLiteral(ctx, d.pane, d.text) })
	}
	if err := m.keys(ctx, d, func() error { return m.cfg.Tmux.SendLiteral(ctx, d.pane, d.text[:n]) }); err != nil {
		return err
	}
	// The rest goes only once the box shows the first character: keys
	// sent before Gemini drew it find its box still empty. With a bound
	// of 5 s (its TypeWait), after which the rest went anyway, a CI run
	// at a load of 10-20 lost "Good!" to shell mode.
	t0 := time.Now()
	shown, blocked, err := m.watchBox(ctx, d, t0.Add(firstAloneWait), func(v agent.View) bool { return v.Box != "" })
	switch {
	case err != nil:
		return err
	case blocked:
		// A dialog came up over the box: the rest is not typed into it.
		// The check of the whole line fails, and the delivery goes back
		// to waiting for an empty box.
		return nil
	case !shown:
		// Not drawn: the rest would meet an empty box. The check of the
		// whole line fails, and the delivery tries again.
		m.logf("deliver %s: the first character did not show in the box within %s", d.pane, firstAloneWait)
		return nil
	}
	if took := time.Since(t0); took > time.Second {
		m.logf("deliver %s: the first character took %s to show in the box", d.pane, took.Round(time.Millisecond))
	}
	return m.keys(ctx, d, func() error { return m.cfg.Tmux.SendLiteral(ctx, d.pane, d.text[n:]) })
}

// firstAloneWait bounds the wait for a FirstAlone kind to draw a line's
// first character: long, since sending the rest early spoils the line.
const firstAloneWait = 60 * time.Second

// submit presses Enter and waits for the hook of a turn after seq0; it
// presses Enter again while the text still sits in the box.
func (m *Manager) submit(ctx context.Context, d *delivery, seq0 int) error {
	if err := syncs.Sleep(ctx, d.adapter.EnterDelay()); err != nil {
		return err
	}
	if err := m.keys(ctx, d, func() error { return m.cfg.Tmux.SendKeys(ctx, d.pane, d.submitKey()) }); err != nil {
		return err
	}
	enters := 1
	lastEnter := time.Now()
	hookBy := time.Now().Add(d.hookTimeout)
	for {
		if _, turn := m.facts.turnSeq(d.pane); turn > seq0 {
			return nil
		}
		now := time.Now()
		if now.After(hookBy) && d.adapter.ScreenStates() {
			return errorf(api.KindTimeout, "look at the window of "+d.id()+": check its description's submit key and ready marker (st doctor)",
				"the line was typed into %s, but it did not leave the input box within %s (the agent has no hooks: st reads its screen)", d.id(), d.hookTimeout)
		}
		if now.After(hookBy) {
			return errorf(api.KindNoHooks, "run st hooks install, then start the worker again (st worker stop "+d.id()+" --yes closes this one)",
				"the line was typed into %s, but no hook came from the agent within %s, so st cannot see it start: its hooks are missing", d.id(), d.hookTimeout)
		}
		// Each Enter again waits twice as long as the one before: on a
		// loaded machine the agent takes keys late, and the line still
		// in the box may be one whose Enter is on its way (Gemini 0.59
		// took a task twice after Enters 400 ms apart under load).
		if now.Sub(lastEnter) >= reEnterAfter<<min(enters-1, maxTypeWaitDoublings) {
			v, err := m.capture(ctx, d)
			if err != nil {
				return err
			}
			if d.adapter.ScreenStates() && squash(v.Box) != d.want &&
				(v.Screen == agent.ScreenWorking || v.Screen == agent.ScreenReady || v.Screen == agent.ScreenPrompt) {
				// No hook will come: the line left the box, and its screen
				// shows the agent took it.
				m.applyEvent(d.pane, d.adapter, agent.Event{Kind: agent.EvTurnStart, Name: "screen", Prompt: d.text}, nil)
				return nil
			}
			if squash(v.Box) == d.want && !v.Screen.Blocking() && enters < maxEnters {
				m.logf("deliver %s: the line is still in the box; pressing Enter again", d.pane)
				if err := m.keys(ctx, d, func() error { return m.cfg.Tmux.SendKeys(ctx, d.pane, d.submitKey()) }); err != nil {
					return err
				}
				enters++
			}
			lastEnter = now
		}
		ch := m.reg.Changed()
		t := time.NewTimer(pollSlow)
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		t.Stop()
	}
}

// id is the pane as the one who asked names it.
func (d *delivery) id() string {
	if d.label != "" {
		return d.label
	}
	return d.pane
}

func (m *Manager) clearBox(ctx context.Context, d *delivery, box string) error {
	n := len([]rune(box)) + 2
	keys := make([]string, 0, n)
	for i := 0; i < n; i++ {
		keys = append(keys, "BSpace")
	}
	return m.keys(ctx, d, func() error { return m.cfg.Tmux.SendKeys(ctx, d.pane, keys...) })
}

func (m *Manager) notReady(ctx context.Context, d *delivery, s agent.Screen) error {
	switch s {
	case agent.ScreenTrust, agent.ScreenLogin:
		what := "folder-trust"
		if s == agent.ScreenLogin {
			what = "login"
		}
		return errorf(api.KindBlocked, fmt.Sprintf("get past the screen in that window (the worker then needs its task again), or close it with st worker stop %s --yes", d.id()),
			"a %s screen kept the task from being typed for %s; the window is left open", what, d.blockedTimeout)
	case agent.ScreenPrompt:
		return errorf(api.KindBlocked, "answer the question in that window, then try again",
			"a question or permission prompt is on the screen of %s, and st does not type over it", d.id())
	case agent.ScreenTyped:
		return errorf(api.KindBlocked, "send it again once the input box of "+d.id()+" is empty",
			"the input box of %s holds text that st did not type, and st does not type over it", d.id())
	case agent.ScreenWorking:
		return errorf(api.KindTimeout, "try again when its turn has ended", "%s was busy for %s", d.id(), d.blockedTimeout)
	}
	return m.noBox(ctx, d)
}

// noBox says why no input box was found: a blank window means the agent
// did not start, but a screen with text on it may hold a box st does not
// recognise (a release that draws it differently), which "did not appear"
// would hide from the person looking at a box.
func (m *Manager) noBox(ctx context.Context, d *delivery) error {
	out, err := m.cfg.Tmux.Capture(ctx, d.pane)
	last := lastLine(out)
	if err != nil || last == "" {
		return errorf(api.KindTimeout, "look at the window: the agent may have failed to start",
			"the window of %s stayed without an input box for %s", d.id(), d.blockedTimeout)
	}
	return errorf(api.KindTimeout, "look at the window: if an input box is there, st does not recognise how this agent draws it (st doctor names the tested releases and a described agent's ready markers); close the window with st worker stop "+d.id()+" --yes",
		"st did not recognise an input box on the screen of %s within %s (its lowest line reads %q)", d.id(), d.blockedTimeout, last)
}

// lastLine is the lowest line of a screen with text on it, trimmed and
// cut to 80 characters, for a message.
func lastLine(screen string) string {
	lines := strings.Split(screen, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" {
			continue
		}
		if r := []rune(l); len(r) > 80 {
			l = string(r[:80]) + "…"
		}
		return l
	}
	return ""
}

// submitKey is the key that submits a typed line to the agent.
func (d *delivery) submitKey() string {
	if k := d.adapter.Screen.Submit; k != "" {
		return k
	}
	return "Enter"
}
