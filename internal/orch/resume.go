package orch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/plain"
	"github.com/sophonz/st/internal/syncs"
	"github.com/sophonz/st/internal/tmux"
)

// The restore is a state machine that runs whenever st finds its
// recorded panes gone, whether st was up when tmux went down (the
// server's exit, an event) or starts after a reboot (st up finds no
// server, or another life of it, where its picture had panes):
//
//	                 panes gone
//	  ┌─────────► watching ─────────► reopening ──────────┐
//	  │               ▲                   │ sessions,     │ (a newer restore:
//	  │               │                   │ windows and   │  the server went
//	  │   no agent    │                   │ panes made    │  again meanwhile)
//	  │   to start    │                   ▼               │
//	  │               └────────────── relinking           │
//	  │                                   │ relations on  │
//	  │                                   │ the new panes │
//	  │                                   ▼               │
//	  └──────────── every agent ──── resuming ────────────┘
//	                settled
//
// Reopening makes every session, window and pane of st's picture again,
// an agent's pane with a placeholder; no server can start there (its
// socket's folder cannot be made) ends it, and every worker is gone with
// that reason. A server that exits under it (killed again, or still
// exiting when st heard it go) takes the sessions made in it along: st
// starts one again and makes those sessions again, up to reopenTries
// times. Reopening and relinking run to their end even when st stops
// meanwhile, and leave the picture of the server they made; a stop cuts
// only the resuming short, and writes no state from it. Relinking moves every relation to the new pane ids and
// sets st's options pane by pane, so that a pane that is gone fails only
// its own. Resuming starts each agent in its pane, resuming its
// conversation, each on a deadline of its own (resumeTimeout), and never
// waits for one agent to judge another:
//
//	  started ──► back   its screen is up (the agent drew its box)
//	     │
//	     ├──────► gone   its program exited: not found on st's PATH, the
//	     │               resume refused, the conversation gone; the reason
//	     │               is what it said, and its pane gets a shell
//	     │
//	     └──────► back   its deadline passed with its program running
//	                     (st watches it as any other agent from then)
//
// A worker whose agent is starting again is "starting"; back, it is idle
// (its turn died with the server) or done (its report stands); gone, it
// says why. The restore is over when the last agent settled.

// restorePhase is where the restore is.
type restorePhase int

const (
	phaseWatching restorePhase = iota
	phaseReopening
	phaseRelinking
	phaseResuming
)

func (p restorePhase) String() string {
	return [...]string{"watching", "reopening", "relinking", "resuming"}[p]
}

// phaseAllowed reports whether the diagram has an arrow from a to b.
func phaseAllowed(a, b restorePhase) bool {
	switch a {
	case phaseWatching:
		return b == phaseReopening
	case phaseReopening:
		return b == phaseRelinking || b == phaseWatching
	case phaseRelinking:
		return b == phaseResuming || b == phaseWatching
	case phaseResuming:
		return b == phaseWatching || b == phaseReopening
	}
	return false
}

// resumeTimeout is each agent's own deadline to show its screen again.
const resumeTimeout = 90 * time.Second

// resumeEvery is how often a starting agent's pane is looked at (two
// commands over the control client: about a tenth of a millisecond).
const resumeEvery = 50 * time.Millisecond

// launch is one agent to start again in its restored pane.
type launch struct {
	pane, cwd     string
	env           map[string]string
	kind, session string
	argv          []string
	// server is the server its pane was made in (tmux.Client.ServerID).
	server string
}

// resumeLook is what a look at a starting agent's pane saw.
type resumeLook struct {
	Gone   bool // the pane is not there
	Exited bool // its program exited (the pane is kept)
	Status int  // its exit status then
	Drawn  bool // the agent's screen is up
	Said   string
}

// resumeVerdict is where one agent's start is.
type resumeVerdict int

const (
	resumeStarting resumeVerdict = iota
	resumeBack
	resumeLost
)

// judgeResume is the per-agent machine: what a look at its pane means at
// now, with its deadline.
func judgeResume(l resumeLook, now, deadline time.Time) (resumeVerdict, string) {
	switch {
	case l.Gone:
		return resumeLost, "its pane closed as the agent started again"
	case l.Exited:
		why := fmt.Sprintf("the agent exited as it started again (status %d)", l.Status)
		if l.Said != "" {
			why += ": " + l.Said
		}
		return resumeLost, why
	case l.Drawn:
		return resumeBack, ""
	case !now.Before(deadline):
		return resumeBack, "no screen of its agent yet; st watches it as any other"
	}
	return resumeStarting, ""
}

// resumeAll starts every agent of a restore (each recorded as resuming,
// generation gens[i]), each in the background on its own deadline, and
// ends the making of sessions and relations. Workers whose agents start
// are "starting" meanwhile (relink made them so).
func (m *Manager) resumeAll(ctx context.Context, launches []launch, gens []int, back time.Time) {
	m.rest.end()
	for i, l := range launches {
		l, gen := l, gens[i]
		m.bg.Go(func(ctx context.Context) { m.resumeAgent(ctx, l, gen, back) })
	}
}

// resumeAgent starts one agent in its pane and follows it to its verdict.
func (m *Manager) resumeAgent(ctx context.Context, l launch, gen int, back time.Time) {
	deadline := time.Now().Add(resumeTimeout)
	var v resumeVerdict
	var why string
	if missing := missingProgram(l.argv, l.env["PATH"]); missing != "" {
		v, why = resumeLost, missing
	} else if err := m.cfg.Tmux.Respawn(ctx, l.pane, l.cwd, l.env, l.argv); err != nil {
		v, why = resumeLost, "st could not start it: "+err.Error()
	}
	ad, _ := agent.Lookup(l.kind)
	for v == resumeStarting {
		if err := syncs.Sleep(ctx, resumeEvery); err != nil {
			return
		}
		v, why = judgeResume(m.lookResume(ctx, l.pane, ad), time.Now(), deadline)
	}
	if ctx.Err() != nil {
		// st stops (st down): a command cut short by its stopping says
		// nothing of the agent ("st could not start it: context
		// canceled" made a sim that came back gone, issue 32 item 10).
		// A state is written only from what the pane showed; the next st
		// judges the pane as it finds it.
		return
	}
	if v == resumeLost && l.server != "" {
		if now, err := m.cfg.Tmux.ServerID(ctx); err == nil && now != l.server {
			// Its pane went with the whole server (killed again): that
			// says nothing of the agent, and the restore that follows
			// starts it again.
			m.logf("%s: the tmux server went as its agent started again; the next restore starts it", l.pane)
			return
		}
	}
	current, last := m.rest.settle(l.pane, gen)
	if !current {
		return // a later restore has this pane's agent now
	}
	if v == resumeBack {
		m.cfg.Tmux.UnsetOption(ctx, l.pane, "remain-on-exit")
		m.agentBack(l.pane, why)
	} else {
		m.agentLost(ctx, l, why)
	}
	if last {
		m.rest.agentsBack(time.Since(back))
		m.logf("every agent of the restore settled %s after the sessions were back", time.Since(back).Round(time.Millisecond))
	}
}

// lookResume looks at a starting agent's pane.
func (m *Manager) lookResume(ctx context.Context, pane string, ad *agent.Kind) resumeLook {
	dead, status, err := m.cfg.Tmux.Exited(ctx, pane)
	if err != nil {
		return resumeLook{Gone: errors.Is(err, tmux.ErrNoPane)}
	}
	if dead {
		// What it printed as it exited may reach the pane's screen a
		// moment after tmux marks the pane dead: look a few times.
		var said string
		for i := 0; i < 10 && said == ""; i++ {
			if i > 0 && syncs.Sleep(ctx, 50*time.Millisecond) != nil {
				break
			}
			out, _ := m.cfg.Tmux.CaptureHistory(ctx, pane, 60)
			said = lastWords(out)
		}
		return resumeLook{Exited: true, Status: status, Said: said}
	}
	if ad == nil {
		return resumeLook{Drawn: true}
	}
	view, err := m.screen(ctx, pane, ad)
	return resumeLook{Drawn: err == nil && view.Screen != agent.ScreenUnknown}
}

// agentBack makes the worker of pane, starting again, idle: its turn
// died with the server, and its agent is at its box.
func (m *Manager) agentBack(pane, note string) {
	m.settleChange(func(c *change) {
		if w := m.reg.workers[pane]; w != nil && w.State == api.Starting {
			c.setStateLocked(w, api.Idle)
		}
	})
	if note != "" {
		m.logf("%s: %s", pane, note)
	}
}

// agentLost records why the agent of l could not come back: its worker
// is gone with the reason, and its pane gets a shell in its folder (the
// window stays where the person left it) without st's options.
func (m *Manager) agentLost(ctx context.Context, l launch, why string) {
	m.logf("%s: %s could not come back: %s", l.pane, l.kind, why)
	m.settleChange(func(c *change) {
		if w := m.reg.workers[l.pane]; w != nil && w.State.Live() {
			w.Error = fmt.Sprintf("%s could not come back after the tmux server went down: %s", l.kind, why)
			c.setStateLocked(w, api.Gone)
		}
		m.facts.forget(l.pane)
	})
	// (With no command tmux would run the agent's again.)
	m.cfg.Tmux.Respawn(ctx, l.pane, l.cwd, nil, []string{userShell()})
	for _, k := range []string{"@st_run", "@st_role", "@st_parent", "@st_name", "@st_agent", "@st_agent_session", "@st_team"} {
		m.cfg.Tmux.UnsetOption(ctx, l.pane, k)
	}
	m.cfg.Tmux.UnsetOption(ctx, l.pane, "remain-on-exit")
	m.kickWatch()
}

// userShell is the person's shell, for a pane whose agent is gone.
func userShell() string {
	if sh := os.Getenv("SHELL"); filepath.IsAbs(sh) {
		return sh
	}
	return "/bin/sh"
}

// missingProgram says, when the program of argv is not on path, that it
// is not, in the words a person needs.
func missingProgram(argv []string, path string) string {
	if len(argv) == 0 {
		return ""
	}
	prog := argv[0]
	if strings.Contains(prog, "/") {
		if fi, err := os.Stat(prog); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return fmt.Sprintf("%s is not there or cannot run (Try: install it, or set ST_%s_BIN)", prog, strings.ToUpper(filepath.Base(prog)))
		}
		return ""
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		if fi, err := os.Stat(filepath.Join(dir, prog)); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return ""
		}
	}
	return fmt.Sprintf("%s is not on st's PATH (%s) (Try: put it there, or set ST_%s_BIN, then start it again: %s)",
		prog, path, strings.ToUpper(prog), tmux.ShellJoin(argv))
}

// lastWords is the end of what a program printed before it exited: its
// last few lines that are not tmux's own "Pane is dead".
func lastWords(screen string) string {
	var keep []string
	for _, l := range strings.Split(screen, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "Pane is dead") {
			continue
		}
		keep = append(keep, l)
	}
	if len(keep) > 3 {
		keep = keep[len(keep)-3:]
	}
	s := strings.Join(keep, " / ")
	if len(s) > 300 {
		s = s[len(s)-300:]
	}
	return plain.Clean(s)
}
