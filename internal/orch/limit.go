package orch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/syncs"
)

// A worker whose agent reaches its plan's usage limit is paused, not
// failed (issue 35, reference §13): it shows as paused until the reset,
// and its turn goes on after it. Claude goes on by itself 30-90 s after
// the reset unless its user turned that off: st then only watches, and
// types the agent's continue line itself when nothing came by the end of
// the kind's grace. Codex never goes on by itself: st types once its
// composer is up. The line goes through the one delivery (deliver.go): it
// waits for a box st recognizes, so nothing is typed into a modal or over
// the agent's own going on, and it is typed once (Pause.Typed, on disk
// before the keys).

// limitee is one whom a usage limit pauses: a worker, or the
// coordinator of a run on this machine, whose pause is its run's (issue
// 35: "a coordinator at its limit is handled the same way"). The rules
// of this file go through it, whichever it is; only what a pause does to
// a worker's state, and --on-limit, are a worker's alone.
type limitee struct {
	pane string
	w    *Worker // the worker; nil for a coordinator
	r    *Run    // the worker's run, or the run it coordinates
}

// limiteeLocked is the one at pane a usage limit pauses: its live
// worker, or else the coordinator of a run here (a worker that also
// coordinates a run of its own is paused as the worker it is; a pane
// whose worker is gone or failed is its coordinator's, as its hooks are:
// applyEvent).
func (m *Manager) limiteeLocked(pane string) (limitee, bool) {
	syncs.AssertLocked(&m.reg.mu)
	w := m.reg.workers[pane]
	if w != nil && w.State.Live() {
		return limitee{pane: pane, w: w, r: m.reg.runOf[w.ID]}, true
	}
	if r := m.coordRunLocked(pane); r != nil {
		return limitee{pane: pane, r: r}, true
	}
	if w != nil {
		return limitee{pane: pane, w: w, r: m.reg.runOf[w.ID]}, true
	}
	return limitee{}, false
}

// workerLimitee is worker w as a limitee.
func (m *Manager) workerLimiteeLocked(w *Worker) limitee {
	syncs.AssertLocked(&m.reg.mu)
	return limitee{pane: w.ID, w: w, r: m.reg.runOf[w.ID]}
}

// pause is its pause while it is paused, else nil.
func (l limitee) pause() *api.Pause {
	if l.w != nil {
		if l.w.State != api.Paused {
			return nil
		}
		return l.w.Pause
	}
	return l.r.CoordPause
}

// kind is its agent's kind.
func (l limitee) kind() string {
	if l.w != nil {
		return l.w.Agent
	}
	return l.r.CoordAgent
}

func (l limitee) transcript() string {
	if l.w != nil {
		return l.w.Transcript
	}
	return l.r.CoordTranscript
}

// seen is the reset of the last usage limit it was paused for.
func (l limitee) seen() time.Time {
	if l.w != nil {
		return l.w.LimitSeen
	}
	return l.r.CoordLimitSeen
}

func (l limitee) setSeen(t time.Time) {
	if l.w != nil {
		l.w.LimitSeen = t
	} else {
		l.r.CoordLimitSeen = t
	}
}

// String names it in st's log: "worker %3 (fix)", "coordinator %1 of
// run-ab12".
func (l limitee) String() string {
	if l.w != nil {
		return "worker " + l.w.ID + " (" + l.w.Name + ")"
	}
	return "coordinator " + l.pane + " of " + l.r.ID
}

// limitOfLocked reads whether the turn of who's agent ended at its usage
// limit.
func (m *Manager) limitOfLocked(who limitee, ev agent.Event) (agent.UsageLimit, bool) {
	syncs.AssertLocked(&m.reg.mu)
	ad, err := agent.Lookup(who.kind())
	if err != nil || (who.w != nil && who.w.Remote()) {
		// (A worker on another machine is its machine's to pause.)
		return agent.UsageLimit{}, false
	}
	if ev.Transcript == "" {
		ev.Transcript = who.transcript()
	}
	l, ok := ad.LimitOf(ev, m.cfg.Now())
	if seen := who.seen(); ok && !seen.IsZero() && !l.Resets.After(seen) {
		m.logf("%s: its records still end at the usage limit it was paused for (resets %s): not paused again", who, l.Resets.Format(time.RFC3339))
		return agent.UsageLimit{}, false
	}
	return l, ok
}

// newPause is the pause of an agent of kind at its usage limit l: who
// goes on after the reset, and when st looks.
func newPause(kind string, l agent.UsageLimit) *api.Pause {
	p := &api.Pause{Reason: "usage limit", Resets: l.Resets, Exact: l.Exact, Text: l.Text, By: "st", GoesOnBy: l.Resets}
	if !l.Exact {
		// The screen's minute is the reset's, rounded down (measured:
		// Claude 2.1.332 said "resets 1:33pm" of 13:33:13): the minute's
		// end, unless the records say better by then (goOnAfterLimit).
		p.GoesOnBy = l.Resets.Add(time.Minute)
	}
	if ad, err := agent.Lookup(kind); err == nil && ad.Limits != nil && ad.Limits.ContinuesItself != nil && ad.Limits.ContinuesItself() {
		p.By = "agent"
		setItself(p, ad.Limits)
	}
	return p
}

// pauseLocked pauses w at its agent's usage limit l, or, with --on-limit
// fail, ends its turn as a failed one.
func (m *Manager) pauseLocked(c *change, w *Worker, l agent.UsageLimit) {
	syncs.AssertLocked(&m.reg.mu)
	if w.OnLimit == api.OnLimitFail {
		w.LastAnswer = l.Text
		c.touchLocked(m.reg.runOf[w.ID])
		c.setStateLocked(w, api.Idle)
		return
	}
	p := newPause(w.Agent, l)
	if w.OnLimit == api.OnLimitMove {
		if to := m.cfg.OnLimitMove; to != "" {
			p.By, p.MoveTo, p.GoesOnBy = "move", to, m.cfg.Now()
		} else {
			w.Error = "--on-limit move: no agent kind to move to (set on_limit_move in st's config.toml); it waits for the reset instead"
		}
	}
	if l.Text != "" && p.By != "move" {
		// (A moved task names the answer before the limit: kept.)
		w.LastAnswer = l.Text
	}
	m.logf("worker %s (%s): at its usage limit, resets %s (%s goes on)", w.ID, w.Name, l.Resets.Format(time.RFC3339), p.By)
	w.Pause, w.LimitSeen = p, l.Resets
	c.touchLocked(m.reg.runOf[w.ID])
	c.setStateLocked(w, api.Paused)
	c.pauses = append(c.pauses, w.ID)
}

// setItself sets when st looks at a paused agent that goes on by
// itself: the end of its kind's grace after the reset, counted from the
// end of the reset's minute when only the screen's minute is known (a
// grace counted from the minute's start could end inside the agent's own
// window: two continues), and the window in which its kind was measured
// to go on.
func setItself(p *api.Pause, lim *agent.Limits) {
	last := p.Resets
	if !p.Exact {
		last = p.Resets.Add(time.Minute)
	}
	p.GoesOnBy = last.Add(lim.Grace)
	if lim.Itself[1] > 0 {
		p.ItselfFrom, p.ItselfBy = p.Resets.Add(lim.Itself[0]), last.Add(lim.Itself[1])
	}
}

// wentOnLocked notes that who, paused at its usage limit, went on (how:
// the hook or the screen that showed it) before st typed anything: an
// agent that goes on by itself did, and st confirms it in its log.
func (m *Manager) wentOnLocked(who limitee, how string) {
	syncs.AssertLocked(&m.reg.mu)
	p := who.pause()
	if p == nil || p.Typed {
		return
	}
	what := who.kind() + " went on by itself"
	if p.By != "agent" {
		what = "it went on before st typed (a person, say)"
	}
	m.logf("%s: %s after its usage limit (%s), %s after the reset; st typed nothing",
		who, what, how, m.cfg.Now().Sub(p.Resets).Round(time.Second))
}

// goOnLocked ends who's pause: its agent went on (its hook or screen
// showed it at work). A worker is working again; a coordinator's pause
// is over and its item closes.
func (m *Manager) goOnLocked(c *change, who limitee, how string) {
	syncs.AssertLocked(&m.reg.mu)
	m.wentOnLocked(who, how)
	if who.w != nil {
		c.setStateLocked(who.w, api.Working)
		return
	}
	m.coordGoesOnLocked(c, who.r, who.pane, how)
}

// pauseAt is a copy of the pause of the one at pane, and its agent's
// kind; ok is false when none is paused there.
func (m *Manager) pauseAt(pane string) (p api.Pause, kind string, ok bool) {
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	who, found := m.limiteeLocked(pane)
	if !found || who.pause() == nil {
		return api.Pause{}, "", false
	}
	return *who.pause(), who.kind(), true
}

// samePauseLocked is who at pane while it is still paused by the limit
// that resets at resets, and st has typed nothing for it.
func (m *Manager) samePauseLocked(pane string, resets time.Time) (limitee, *api.Pause, bool) {
	syncs.AssertLocked(&m.reg.mu)
	who, ok := m.limiteeLocked(pane)
	if !ok {
		return limitee{}, nil, false
	}
	p := who.pause()
	if p == nil || !p.Resets.Equal(resets) || p.Typed {
		return limitee{}, nil, false
	}
	return who, p, true
}

// goOnAfterLimit waits for the usage limit of pane's agent (a worker's or
// a coordinator's) to reset and, when its agent has not gone on by
// itself by then, types its continue line once.
func (m *Manager) goOnAfterLimit(ctx context.Context, pane string) {
	p, kind, ok := m.pauseAt(pane)
	if !ok || p.Resets.IsZero() || p.Typed {
		return
	}
	if p.By == "move" {
		m.moveAfterLimit(ctx, pane, p)
		return
	}
	ad, err := agent.Lookup(kind)
	if err != nil || ad.Limits == nil {
		return
	}
	if !p.Exact && ad.Limits.FromRecords != nil {
		if err := syncs.Sleep(ctx, 2*time.Second); err != nil {
			return
		}
		p = m.exactReset(pane, ad, p)
	}
	if err := syncs.Sleep(ctx, p.GoesOnBy.Sub(m.cfg.Now())); err != nil {
		return
	}
	if p.By == "agent" && m.wentOnOnScreen(ctx, pane, ad, p) {
		return
	}
	// Still paused by the same limit, and not typed for: mark it typed
	// on disk first, so that no restart of st types it again.
	var label string
	m.settleIfChanged(func(c *change) {
		who, cur, ok := m.samePauseLocked(pane, p.Resets)
		if !ok {
			return
		}
		cur.Typed = true
		c.touchLocked(who.r)
		label = who.String()
	})
	if label == "" {
		return
	}
	m.logf("%s: its usage limit reset at %s and %s did not go on: typing %q", label, p.Resets.Format(time.RFC3339), ad.Name, ad.Limits.ContinueLine)
	m.closeLimitMenu(ctx, pane, ad)
	d := delivery{pane: pane, adapter: ad, text: ad.Limits.ContinueLine, blockedTimeout: sendTimeout, hookTimeout: DefaultHookTimeout}
	if err := m.deliver(ctx, &d); err != nil {
		m.logf("%s: st could not type %q after its usage limit: %v", label, ad.Limits.ContinueLine, err)
		why := "st could not type " + ad.Limits.ContinueLine + " after its usage limit: " + err.Error() + " (type it in its window)"
		m.settleIfChanged(func(c *change) {
			who, ok := m.limiteeLocked(pane)
			switch {
			case !ok || who.pause() == nil:
			case who.w != nil:
				who.w.Error = why
			default:
				who.r.CoordError = why
			}
			c.touchLocked(who.r)
		})
	}
}

// exactReset reads the records of pane's agent again after a pause whose
// reset came from the screen's minute: its hook came before its records
// had the limit (measured: Claude's StopFailure can come before its
// transcript's record). It returns p with the exact reset, and when st
// looks after it, and keeps them in the pause; p as it was when the
// records have no better word.
func (m *Manager) exactReset(pane string, ad *agent.Kind, p api.Pause) api.Pause {
	m.reg.mu.Lock()
	var tr string
	if who, ok := m.limiteeLocked(pane); ok {
		tr = who.transcript()
	}
	m.reg.mu.Unlock()
	l, ok := ad.Limits.FromRecords(tr)
	if !ok || !l.Resets.After(p.Resets.Add(-time.Minute)) {
		return p
	}
	old := p.Resets
	p.Resets, p.Exact, p.GoesOnBy = l.Resets, true, l.Resets
	if p.By == "agent" {
		setItself(&p, ad.Limits)
	}
	if p.By == "move" {
		p.GoesOnBy = m.cfg.Now()
	}
	m.settleIfChanged(func(c *change) {
		who, ok := m.limiteeLocked(pane)
		cur := who.pause()
		if !ok || cur == nil || !cur.Resets.Equal(old) {
			return
		}
		cur.Resets, cur.Exact, cur.GoesOnBy = p.Resets, true, p.GoesOnBy
		cur.ItselfFrom, cur.ItselfBy = p.ItselfFrom, p.ItselfBy
		who.setSeen(l.Resets)
		c.touchLocked(who.r)
	})
	return p
}

// wentOnOnScreen looks, at the end of the grace of an agent that goes on
// by itself, whether its screen shows it at work: then it went on and no
// hook of its turn has come yet (a long first answer), and a continue
// typed now would be a second one, queued behind its own. It reports
// whether the agent went on, and ends its pause.
func (m *Manager) wentOnOnScreen(ctx context.Context, pane string, ad *agent.Kind, p api.Pause) bool {
	v, err := m.screen(ctx, pane, ad)
	if err != nil || v.Screen != agent.ScreenWorking {
		return false
	}
	went := false
	m.settleIfChanged(func(c *change) {
		who, _, ok := m.samePauseLocked(pane, p.Resets)
		if !ok {
			return
		}
		m.goOnLocked(c, who, "its screen shows it at work")
		went = true
	})
	return went
}

// closeLimitMenu closes the menu an agent put up over its box at its
// limit (Claude with its own going on turned off), with the key that
// chooses nothing, so that the one delivery finds the box. It presses
// the key only on a screen the kind recognizes as that menu: any other
// screen is left alone, and the delivery waits for the box as always.
func (m *Manager) closeLimitMenu(ctx context.Context, pane string, ad *agent.Kind) {
	if ad.Limits.Menu == nil || ad.Limits.MenuKey == "" {
		return
	}
	out, err := m.cfg.Tmux.Capture(ctx, pane)
	if err != nil || !ad.Limits.Menu(out) {
		return
	}
	m.logf("%s: closing %s's usage-limit menu with %s before typing", pane, ad.Name, ad.Limits.MenuKey)
	if err := m.cfg.Tmux.SendKeys(ctx, pane, ad.Limits.MenuKey); err != nil {
		m.logf("%s: st could not close the usage-limit menu: %v", pane, err)
	}
}

// moveAfterLimit starts the task of pane's worker, paused at its usage
// limit, on the agent kind p.MoveTo (--on-limit move): in the same
// folder (its worktree, when it has one), so that its work so far is
// where the new worker starts, with a task file that names that folder
// and its last answer and quotes the task as it was. The coordinator is
// told. The first worker is left paused, not stopped: its window and
// records are the work so far, for the new worker and for a person to
// read, and st types nothing more into it (a person stops it with st
// worker stop once they no longer need it).
func (m *Manager) moveAfterLimit(ctx context.Context, pane string, p api.Pause) {
	var w Worker
	still := false
	m.settleIfChanged(func(c *change) {
		cur := m.reg.workers[pane]
		if cur == nil || cur.State != api.Paused || cur.Pause == nil || cur.Pause.By != "move" || cur.Pause.Typed {
			return
		}
		// On disk before the start: no restart of st moves it twice.
		cur.Pause.Typed = true
		c.touchLocked(m.reg.runOf[cur.ID])
		w, still = *cur, true
	})
	if !still {
		return
	}
	fail := func(err error) {
		m.logf("worker %s: st could not move its task to %s: %v", pane, p.MoveTo, err)
		m.settleIfChanged(func(c *change) {
			if cur := m.reg.workers[pane]; cur != nil {
				cur.Error = "st could not move its task to " + p.MoveTo + ": " + err.Error() + " (start it again with st worker start --agent " + p.MoveTo + ")"
				c.touchLocked(m.reg.runOf[cur.ID])
			}
		})
	}
	m.cancelGoingOn(ctx, pane, w.Agent)
	p = m.exactBeforeMove(ctx, pane, w.Agent, p)
	task, err := writeMovedTask(w, p)
	if err != nil {
		fail(err)
		return
	}
	name := w.Name + "-" + p.MoveTo
	v, err := m.startWorker(ctx, startPlan{StartRequest: api.StartRequest{
		Pane: w.Parent, Agent: p.MoveTo, Task: task, Name: name, Cwd: w.Cwd,
		// The new worker waits at a limit of its own: a move does not
		// chain.
		OnLimit: api.OnLimitWait,
	}})
	if err != nil {
		fail(err)
		return
	}
	moved := v.ID + " " + v.Name
	m.logf("worker %s (%s): at its usage limit; its task moved to %s (%s)", pane, w.Name, moved, p.MoveTo)
	m.settleIfChanged(func(c *change) {
		if cur := m.reg.workers[pane]; cur != nil && cur.Pause != nil {
			cur.Pause.MovedTo = moved
			c.touchLocked(m.reg.runOf[cur.ID])
		}
	})
	m.notices.queue(w.Parent, "moved "+pane+" "+moved, fmt.Sprintf(
		"st: worker %s (%s) reached its usage limit (resets %s), so its task moved to worker %s (%s), in %s where its work so far is.",
		w.Name, w.Agent, p.Resets.Local().Format("15:04"), v.Name, p.MoveTo, w.Cwd))
}

// exactBeforeMove is p with the exact reset from the records of pane's
// agent, when its pause has only the screen's: a move comes at once,
// before Claude's transcript may have its record (its StopFailure can
// come first, measured), and the moved task and the coordinator's
// notice say the reset to the minute ("resets 1pm" on the screen was
// 13:33). The records are read now, and once more two seconds later
// when they have no word yet; without one, p stays as the screen said.
func (m *Manager) exactBeforeMove(ctx context.Context, pane, kind string, p api.Pause) api.Pause {
	ad, err := agent.Lookup(kind)
	if p.Exact || err != nil || ad.Limits == nil || ad.Limits.FromRecords == nil {
		return p
	}
	for i := 0; ; i++ {
		if p = m.exactReset(pane, ad, p); p.Exact || i == 1 {
			return p
		}
		if syncs.Sleep(ctx, 2*time.Second) != nil {
			return p
		}
	}
}

// cancelGoingOn calls off the going on by itself of pane's agent, whose
// task moved to another: a Claude with its own going on turned on would
// take its turn up again after the reset, in the folder the new worker
// works in (measured: "Continuing automatically at 5:13pm · Esc to
// cancel"). The key goes only to a screen the kind recognizes as that
// wait; any other screen is left alone.
func (m *Manager) cancelGoingOn(ctx context.Context, pane, kind string) {
	ad, err := agent.Lookup(kind)
	if err != nil || ad.Limits == nil || ad.Limits.Waiting == nil || ad.Limits.CancelKey == "" ||
		ad.Limits.ContinuesItself == nil || !ad.Limits.ContinuesItself() {
		return
	}
	// Its hook can come before its screen says so: look for a few
	// seconds.
	for i := 0; ; i++ {
		out, err := m.cfg.Tmux.Capture(ctx, pane)
		if err == nil && ad.Limits.Waiting(out) {
			break
		}
		if i == 15 || syncs.Sleep(ctx, 300*time.Millisecond) != nil {
			m.logf("worker %s: its task moves, and %s's screen never showed it waiting to go on by itself: nothing called off", pane, ad.Name)
			return
		}
	}
	m.logf("worker %s: its task moves, so st calls off %s's own going on after the reset with %s", pane, ad.Name, ad.Limits.CancelKey)
	if err := m.cfg.Tmux.SendKeys(ctx, pane, ad.Limits.CancelKey); err != nil {
		m.logf("worker %s: st could not call off its going on: %v (it may take its turn up again after the reset)", pane, err)
	}
}

// writeMovedTask writes the task file of a moved task beside the first
// one (the folder its agents could read it in): what happened, where the
// work so far is, the first worker's last answer, and its task quoted.
// The quote's lines start with "| ", so that a line of the old task is
// read as part of it and not as the new task's own words.
func writeMovedTask(w Worker, p api.Pause) (string, error) {
	if w.Task == "" || !filepath.IsAbs(w.Task) {
		return "", fmt.Errorf("the worker has no task file to move (it was adopted)")
	}
	old, err := os.ReadFile(w.Task)
	if err != nil {
		return "", fmt.Errorf("read its task: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "This task was started by worker %s (%s), which reached its usage limit (resets %s); it is yours now.\n",
		w.Name, w.Agent, p.Resets.Local().Format("15:04"))
	fmt.Fprintf(&b, "Its work so far is in %s, where you are: look at what it changed (git status, git diff) and go on from there.\n", w.Cwd)
	if a := strings.TrimSpace(w.LastAnswer); a != "" && a != strings.TrimSpace(p.Text) {
		b.WriteString("Its last answer was:\n")
		for _, l := range strings.Split(a, "\n") {
			b.WriteString("| " + l + "\n")
		}
	}
	b.WriteString("\nThe task, as it was given:\n")
	for _, l := range strings.Split(strings.TrimRight(string(old), "\n"), "\n") {
		b.WriteString("| " + l + "\n")
	}
	ext := filepath.Ext(w.Task)
	path := strings.TrimSuffix(w.Task, ext) + ".moved-" + p.MoveTo + ext
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return "", fmt.Errorf("write the moved task: %w", err)
	}
	return path, nil
}
