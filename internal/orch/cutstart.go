package orch

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
)

// cutStart is a worker whose start st's end cut short: its window was
// open, its task not yet seen typed (Worker.Typing), when st went down
// (kill -9, a crash, a reboot).
type cutStart struct {
	w              *Worker
	id, kind, task string
	state          api.State
}

// settleCutStarts settles, as st starts, every start that st's end cut
// short. Left alone, such a worker read "starting" for good, its task
// never typed, and st worker wait without a timeout never returned. Its
// task is typed now when its agent's box comes up (as the start would
// have done), its turn taken as started when the agent is already at
// work, and the worker failed, saying why, when its window is gone or
// its agent never gets ready. It runs after st's first look at the
// server (Watch), so that a restore of a server that went down with st
// has given the panes their new ids.
func (m *Manager) settleCutStarts() {
	var cut []cutStart
	m.reg.mu.Lock()
	for id, w := range m.reg.workers {
		// Only a start of an earlier st: one this st began (a request
		// served before the watcher's first look, on a loaded machine)
		// is typed by its own delivery, and a second would type over it.
		if w.Typing && !w.Remote() && m.cutAtLoad[w] {
			cut = append(cut, cutStart{w: w, id: id, kind: w.Agent, task: w.Task, state: w.State})
		}
	}
	m.reg.mu.Unlock()
	for _, c := range cut {
		m.logf("worker %s: its start was cut short when st went down; typing its task now", c.id)
		m.bg.Go(func(ctx context.Context) { m.finishStart(ctx, c) })
	}
}

// finishStart types a cut start's task, or fails it with why.
func (m *Manager) finishStart(ctx context.Context, c cutStart) {
	switch c.state {
	case api.Starting, api.Blocked, api.Gone:
	default:
		// Its hooks told of a turn (working, idle, done) before st went
		// down: the task was typed and taken.
		m.settleDelivery(c.w, nil)
		return
	}
	ad, err := agent.Lookup(c.kind)
	if err != nil {
		m.settleDelivery(c.w, errorf(api.KindInternal, "", "st went down while it started this worker, and its agent %q is not one st knows now: %v", c.kind, err))
		return
	}
	d := delivery{
		pane: c.id, adapter: ad, text: TaskLine(m.cfg.STBin, c.task), fresh: true,
		blockedTimeout: envTimeout("ST_BLOCKED_TIMEOUT", DefaultBlockedTimeout),
		hookTimeout:    envTimeout("ST_HOOK_TIMEOUT", DefaultHookTimeout),
		// The st before may have typed it already: text of it in the box
		// is this delivery's own earlier try (waitBox), not another's.
		typings: 1,
		onBlocked: func(agent.Screen) {
			m.settleChange(func(ch *change) { ch.setStateLocked(c.w, api.Blocked) })
		},
	}
	if v, err := m.screen(ctx, c.id, ad); err == nil && v.Screen == agent.ScreenWorking {
		// Its turn began before st went down: the task was typed.
		m.settleDelivery(c.w, nil)
		return
	}
	err = m.deliver(ctx, &d)
	if ctx.Err() != nil {
		return // st is going down again: the next st settles it
	}
	var oe *api.Error
	if errors.As(err, &oe) && oe.Kind == api.KindNotFound {
		err = errorf(api.KindNotFound, "start the worker again (st worker start)", "st went down while it started this worker, and its window %s closed before st was back, its task never typed", c.id)
	} else if err != nil {
		err = errorf(api.KindInternal, "start the worker again (st worker start), or look at its window", "st went down while it started this worker, and its task could not be typed when st came back: %v", err)
	}
	m.settleDelivery(c.w, err)
}

// envTimeout is a delivery bound for a cut start: the start's own came
// with its request, which ended with the st before; the daemon's
// environment (the shell's that started st) is the next best, else def.
func envTimeout(key string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(key)); err == nil && d > 0 {
		return d
	}
	return def
}
