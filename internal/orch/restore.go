package orch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/syncs"
	"github.com/sophonz/st/internal/tmux"
)

// observe records the server's layout, and restores it when the server
// is gone. It runs from the watcher, once a second while st has work.
func (m *Manager) observe(ctx context.Context) {
	listed := m.cfg.Now()
	seq := m.rest.gen()
	l, err := m.readLayoutRoots(ctx)
	if err != nil {
		m.logf("read tmux layout: %v", err)
		return
	}
	if len(l.Sessions) == 0 {
		if m.hasLive() && !m.rest.busy() && !m.cfg.Tmux.Running(ctx) {
			// No server, and st has panes on record: the server went while
			// st was down (a reboot), or with no events, this is how st
			// learns it went. Either way its panes are gone: restore.
			m.serverGone(ctx, m.cfg.Now())
		}
		return
	}
	known, busy, restored := m.rest.up()
	if busy {
		return // the restore records the new server when it is done
	}
	if known != "" && l.Server != "" && l.Server != known && !restored {
		// Another life of the server, which st did not bring back itself
		// (it was down, or the server came and went between its looks):
		// the pane ids it knew mean other panes now. Its sessions come
		// back in this server, next to whatever it runs.
		m.logf("the tmux server was restarted (%s, was %s): its old panes are gone", l.Server, known)
		if m.hasLive() {
			m.serverGone(ctx, m.cfg.Now())
			return
		}
		m.relink(ctx, map[string]string{}, nil, true)
	}
	// (No mark kept here: a layout does not say which panes are dead, so
	// only reconcile's own reading judges every pane.)
	m.reconcileLayout(l, listed, seq)
	if err := m.rest.record(l); err != nil {
		m.logf("keep the tmux layout: %v", err)
	}
}

// reconcileLayout is reconcile for a layout already read.
// It reports whether it judged the panes.
func (m *Manager) reconcileLayout(l tmux.Layout, listed time.Time, seq int) bool {
	var panes []tmux.Pane
	for _, s := range l.Sessions {
		for _, w := range s.Windows {
			for _, p := range w.Panes {
				panes = append(panes, tmux.Pane{ID: p.ID, StRun: p.Options["@st_run"], StAgent: p.Options["@st_agent"],
					StAgentSession: p.Options["@st_agent_session"]})
			}
		}
	}
	return m.reconcilePanes(panes, listed, seq)
}

// restore brings back the sessions of the last picture, puts every
// relation back on the new panes, and then starts each agent again, each
// on a deadline of its own (resume.go). It returns once the sessions and
// relations are back; the agents come back in the background, and one
// that cannot holds up none of the others. It reports false when it
// found st's sessions there (a word of a going that was not true, or
// not any more): then it changes nothing.
func (m *Manager) restore(ctx context.Context) bool {
	t0 := time.Now()
	old := m.rest.picture()
	if !m.rest.begin() {
		return true // one is under way
	}
	// The making of sessions and relations runs to its end even when st
	// stops meanwhile (st down): cut short, it left sessions without
	// their relations, relations retired for panes it had not made yet,
	// and a picture of the server that was gone, from which the next st
	// invented states (issue 32, item 10). Its own bounds end it.
	ctx = context.WithoutCancel(ctx)
	m.logf("the tmux server is gone: bringing back %d sessions", len(old.Sessions))
	moved, newOpts, launches, server := m.reopen(ctx, old)
	if len(moved) == 0 && server != "" && m.sessionsThere(ctx, old) {
		// Nothing made, and the server runs with the sessions of the
		// picture: a restore now would retire every relation to panes
		// that are there (issue 32, item 10). Nothing is gone.
		m.logf("the tmux server runs with st's sessions: nothing to bring back")
		m.rest.to(phaseWatching)
		return false
	}
	back := time.Now()
	if len(moved) > 0 {
		m.rest.serverBack()
	}
	m.rest.to(phaseRelinking)
	// The options st knows of each pane go back with it, whatever the
	// picture holds (it may have been taken before they were set).
	m.reg.mu.Lock()
	var panes []string
	for o, n := range moved {
		if newOpts[n] == nil {
			newOpts[n] = map[string]string{}
		}
		for k, v := range m.paneOptionsLocked(o) {
			if v != "" {
				newOpts[n][k] = v
			}
		}
		panes = append(panes, n)
	}
	m.reg.mu.Unlock()
	m.rest.broughtBack(panes)
	// The agents to start are known before the relations move, so that
	// their workers go from their old state to "starting" in one step (a
	// wait sees no "idle" that is not true yet).
	gens := make([]int, len(launches))
	for i, l := range launches {
		gens[i] = m.rest.resume(l.pane)
	}
	m.relink(ctx, moved, newOpts, true)
	if len(moved) > 0 {
		m.recordRestored(ctx, old, moved, newOpts, server)
	}
	relations := time.Since(back)
	m.logf("restored the tmux sessions in %s; relations back %s after the sessions (%d panes moved); %d agents start again",
		back.Sub(t0).Round(time.Millisecond), relations.Round(time.Microsecond), len(moved), len(launches))
	m.rest.done(api.RestoreStats{At: back, Sessions: back.Sub(t0), Relations: relations, Panes: len(moved), Agents: len(launches)})
	m.resumeAll(ctx, launches, gens, back)
	return true
}

// sessionsThere reports whether the running server is the life of it
// that picture old is of, with every pane of the picture: st's own
// server, not gone.
func (m *Manager) sessionsThere(ctx context.Context, old tmux.Layout) bool {
	l, err := m.cfg.Tmux.ReadLayout(ctx)
	if err != nil || len(l.Sessions) == 0 || l.Server == "" || l.Server != old.Server {
		return false
	}
	have := map[string]string{}
	for _, s := range l.Sessions {
		for _, w := range s.Windows {
			for _, p := range w.Panes {
				have[p.ID] = s.Name
			}
		}
	}
	for _, s := range old.Sessions {
		for _, w := range s.Windows {
			for _, p := range w.Panes {
				if have[p.ID] != s.Name {
					return false
				}
			}
		}
	}
	return true
}

// recordRestored keeps the picture of the server the restore made, with
// the relations on its panes, at once: st may stop before its watcher
// looks again, and the next st must not take st's own server for
// another life of it; and the relations name the new panes now, so a
// server that goes again before the watcher looks must be restored from
// a picture of those panes, not of the ones before (pane ids start again
// from %0 in every server: the old picture's ids name other panes).
func (m *Manager) recordRestored(ctx context.Context, old tmux.Layout, moved map[string]string, opts map[string]map[string]string, server string) {
	l, err := m.cfg.Tmux.ReadLayout(ctx)
	if err != nil || len(l.Sessions) == 0 || l.Server != server {
		// Gone again before it could be read: what the restore made.
		l = madePicture(old, moved, opts, server)
	}
	if err := m.rest.record(l); err != nil {
		m.logf("keep the tmux layout: %v", err)
	}
}

// madePicture is picture old with the panes a restore made in their
// place (old id -> new in moved, their options in opts), in server.
func madePicture(old tmux.Layout, moved map[string]string, opts map[string]map[string]string, server string) tmux.Layout {
	l := tmux.Layout{Server: server}
	for _, s := range old.Sessions {
		ns := tmux.LayoutSession{Name: s.Name}
		for _, w := range s.Windows {
			nw := w
			nw.Panes = nil
			for _, p := range w.Panes {
				if n, ok := moved[p.ID]; ok {
					p.ID, p.Options = n, opts[n]
					nw.Panes = append(nw.Panes, p)
				}
			}
			if len(nw.Panes) > 0 {
				ns.Windows = append(ns.Windows, nw)
			}
		}
		if len(ns.Windows) > 0 {
			l.Sessions = append(l.Sessions, ns)
		}
	}
	return l
}

// reopenTries bounds the restore's starts of a server: a server that
// exits under the restore (killed again, or still exiting when st heard
// it go) takes the sessions made in it along, and st starts one again
// and makes those sessions again, this many times in all.
const reopenTries = 5

// reopened is what the making of one session gave: the server it was
// made in, old pane id -> new, the options the picture held for each new
// pane, and the agents to start.
type reopened struct {
	server   string
	moved    map[string]string
	newOpts  map[string]map[string]string
	launches []launch
}

// reopen makes the sessions, windows and panes of layout old again; a
// pane whose agent is to come back is opened with a placeholder, and its
// agent started after the relations are back (resumeAll). A server that
// exits under it is one more state of the restore: every session that
// is not in the server that runs at the end is made again there, up to
// reopenTries times. It returns old pane id -> new, the options the
// picture held for each new pane, the agents to start, and the server
// they are in.
func (m *Manager) reopen(ctx context.Context, old tmux.Layout) (map[string]string, map[string]map[string]string, []launch, string) {
	env := m.windowEnv()
	made := make([]*reopened, len(old.Sessions))
	// failed are the sessions that could not be made (the server went as
	// they were made, most often): made again with the lost ones.
	failed := make([]bool, len(old.Sessions))
	for try := 1; ; try++ {
		stuck := false // no server can start there
		for i, s := range old.Sessions {
			if made[i] != nil || (try > 1 && !failed[i]) {
				continue
			}
			r, err := m.reopenSession(ctx, s, env)
			failed[i] = err != nil
			if stuck = noServerThere(err) && try > 1 && !m.cfg.Tmux.Running(ctx); stuck {
				// Twice no server, and none runs: none can start there
				// (its socket's folder cannot be made); every worker's
				// wait should know.
				break
			}
			made[i] = r
		}
		now, _ := m.cfg.Tmux.ServerID(ctx)
		lost := 0
		for i, r := range made {
			if r != nil && (r.server == "" || r.server != now) {
				made[i], failed[i] = nil, true // made in a server that exited since
			}
			if failed[i] {
				lost++
			}
		}
		if lost == 0 || stuck || try == reopenTries {
			if lost > 0 {
				m.logf("restore: %d sessions are not back after %d tries (the tmux server exited under the restore, or would not make them)", lost, try)
			}
			moved, opts, launches := joinReopened(made)
			return moved, opts, launches, now
		}
		m.logf("restore: the tmux server exited under the restore, taking %d sessions st had made; making them again (try %d of %d)", lost, try+1, reopenTries)
	}
}

// noServerThere says that err is a server that could not start at all,
// not one that exited as the session was made (which is tried again).
func noServerThere(err error) bool {
	return errors.Is(err, tmux.ErrNoServer) && !strings.Contains(err.Error(), "server exited unexpectedly")
}

// joinReopened gathers the sessions made.
func joinReopened(made []*reopened) (map[string]string, map[string]map[string]string, []launch) {
	moved := map[string]string{}
	newOpts := map[string]map[string]string{}
	var launches []launch
	for _, r := range made {
		if r == nil {
			continue
		}
		for o, n := range r.moved {
			moved[o] = n
		}
		for n, o := range r.newOpts {
			newOpts[n] = o
		}
		launches = append(launches, r.launches...)
	}
	return moved, newOpts, launches
}

// reopenSession makes one session of the picture again, with its
// windows and panes, and says which server it is in. A session that
// could not be made at all is nil, with why.
func (m *Manager) reopenSession(ctx context.Context, s tmux.LayoutSession, env map[string]string) (*reopened, error) {
	r := &reopened{moved: map[string]string{}, newOpts: map[string]map[string]string{}}
	for wi, w := range s.Windows {
		var winPane string
		for pi, p := range w.Panes {
			l := m.relaunch(p)
			argv := l.argv
			if argv != nil {
				argv = tmux.Placeholder
			}
			var np tmux.Pane
			var err error
			switch {
			case wi == 0 && pi == 0:
				np, err = m.newSession(ctx, s.Name, w.Name, p.Path, env, argv)
				m.cfg.Tmux.Kick() // a server again: its control client, for the rest
				if err == nil {
					r.server, _ = m.cfg.Tmux.ServerID(ctx)
				}
			case pi == 0:
				np, err = m.cfg.Tmux.NewWindow(ctx, tmux.NewWindowOpts{Target: s.Name + ":" + strconv.Itoa(w.Index), Name: w.Name, Cwd: p.Path, Env: env, Command: argv})
			default:
				np, err = m.cfg.Tmux.NewWindow(ctx, tmux.NewWindowOpts{Target: winPane, Split: true, Cwd: p.Path, Env: env, Command: argv})
			}
			if err != nil {
				m.logf("restore %s:%d.%d: %v", s.Name, w.Index, p.Index, err)
				if wi == 0 && pi == 0 {
					// No session to put its windows in. (A server that
					// exits as the session is made may also answer
					// nothing at all: it is made again with the lost.)
					return nil, err
				}
				continue
			}
			if pi == 0 {
				winPane = np.ID
			}
			r.moved[p.ID] = np.ID
			r.newOpts[np.ID] = p.Options
			if l.argv != nil {
				l.pane, l.cwd, l.env = np.ID, p.Path, env
				r.launches = append(r.launches, l)
			}
		}
		if len(w.Panes) > 1 && winPane != "" {
			m.cfg.Tmux.SelectLayout(ctx, winPane, w.Layout)
		}
		if w.Active && winPane != "" {
			m.cfg.Tmux.MakeCurrent(ctx, winPane)
		}
	}
	for i := range r.launches {
		r.launches[i].server = r.server
	}
	return r, nil
}

// newSession makes a session of the restore, and with the first one a
// server. A server that is still exiting when st heard it go, or that
// exits as the session is made, makes tmux say "server exited
// unexpectedly": st asks again for a few seconds. Whatever else stops it
// (a socket folder st refuses) is not asked again.
func (m *Manager) newSession(ctx context.Context, name, window, cwd string, env map[string]string, argv []string) (tmux.Pane, error) {
	start := time.Now()
	deadline := start.Add(5 * time.Second)
	ended := false
	for {
		p, err := m.cfg.Tmux.NewSession(ctx, name, window, cwd, env, argv)
		if err == nil || !strings.Contains(err.Error(), "server exited unexpectedly") || time.Now().After(deadline) {
			return p, err
		}
		m.logf("restore: the tmux server exited as session %s was made (%v); trying again", name, err)
		if !ended && time.Since(start) > time.Second && m.cfg.Tmux.EndWedgedServer() {
			// A second of it: not a server on its way out, but one
			// that takes no client and will not go (seen once in 50
			// kills under a restore). It is st's own (started on this
			// socket by st's restore): ended, and a new one started.
			ended = true
			m.logf("restore: a tmux server on %s took no client for a second; st ended it", m.cfg.Tmux.Socket())
		}
		if syncs.Sleep(ctx, 50*time.Millisecond) != nil {
			return p, err
		}
	}
}

// windowEnv is the environment of the windows st opens: its own home and
// binary, and a PATH that finds st.
func (m *Manager) windowEnv() map[string]string {
	return map[string]string{"ST_HOME": m.cfg.Home, "ST_BIN": m.cfg.STBin, "PATH": withDir(filepath.Dir(m.cfg.STBin), os.Getenv("PATH"))}
}

// relaunch is how the agent of a pane comes back, resuming its
// conversation: its kind and command; no command (a shell) for a pane
// without one. st starts an agent again only in a pane of its own: a
// worker's (st opened it, or a person adopted its agent) or a run's
// coordinator's. Any other pane's options are anyone's to set, and a
// conversation id that is not its agent's form is never put on a
// command line (issue 31, item 1): such a pane comes back with a shell.
func (m *Manager) relaunch(p tmux.LayoutPane) launch {
	kind, sess := p.Options["@st_agent"], p.Options["@st_agent_session"]
	m.reg.mu.Lock()
	w := m.reg.workers[p.ID]
	if w != nil {
		if kind == "" {
			kind = w.Agent
		}
		if w.AgentSession != "" {
			sess = w.AgentSession
		}
	}
	ours := w != nil || m.reg.currentRunLocked(p.ID) != nil
	m.reg.mu.Unlock()
	if kind == "" || !ours {
		return launch{}
	}
	ad, err := agent.Lookup(kind)
	if err != nil {
		return launch{}
	}
	if sess != "" && !agent.ValidSession(kind, sess) {
		m.logf("restore %s: its conversation id %.80q is not a %s one: st does not start it", p.ID, sess, kind)
		return launch{}
	}
	if ad.StopTree && p.PID > 1 {
		// The old server is gone, but an agent that outlives its
		// window may still run its conversation on the dead terminal:
		// it ends before the same conversation starts again (bounded).
		endGroup(p.PID, kind, 3*time.Second)
	}
	o := launchOptions(kind, m.cfg.STBin, p.Options["@st_name"], nil)
	o.ResumeSession = sess
	return launch{kind: kind, session: sess, argv: ad.Command(o)}
}

// relink moves every relation from old pane ids to new ones: workers,
// coordinators, parents, tasks, gates, what the hooks told about each
// pane, and st's options on the new panes. restarted marks a restart of
// the whole server: turns in progress were cut short.
func (m *Manager) relink(ctx context.Context, moved map[string]string, opts map[string]map[string]string, restarted bool) {
	now := m.cfg.Now()
	// After a restart of the server its pane ids mean nothing: a new
	// pane may have the id of one that did not come back. A relation to
	// such a pane is retired (pane~gen), so that it can never be taken for
	// the new pane's: a gone coordinator stays gone, and an id given to a
	// command means one pane.
	gen := strconv.FormatInt(now.UnixNano()/int64(time.Millisecond), 36)
	follow := func(id string) (string, bool) {
		if n, ok := moved[id]; ok {
			return n, true
		}
		if restarted && tmux.ValidPaneID(id) {
			return id + api.RetiredMark + gen, true
		}
		return id, false
	}
	retire := func(id string) string {
		if restarted && tmux.ValidPaneID(id) {
			return id + api.RetiredMark + gen
		}
		return id
	}
	var tell []string
	gatesMoved := false
	m.settleChange(func(c *change) {
		m.relinkRunsLocked(c, follow)
		if restarted {
			gatesMoved = m.gates.retire(follow)
		}
		m.relinkWorkersLocked(c, moved, follow, restarted, now)
		for _, n := range moved {
			if m.reg.workers[n] != nil {
				// A listing of the panes taken before the move may not
				// hold its new pane yet, and would call it gone: as an
				// adopted worker's, it is judged only by a listing newer
				// than its options there (hookpane.txtar failed 1 in 7).
				m.reg.markingLocked(n)
			}
		}
		m.facts.move(moved, restarted)
		m.rest.forget()
		tell = m.reg.queueMovesLocked(moved, retire, restarted)
	})
	if gatesMoved {
		// Written with the registry's lock let go (no disk under it); a
		// failure leaves the new names in memory, and the next write of
		// the gates carries them.
		if err := m.gates.save(); err != nil {
			m.logf("after the restart of the tmux server: %v", err)
		}
	}
	m.kick(tell)
	m.attn.Retire(func(id string) (string, bool) {
		if n, ok := moved[id]; ok {
			return n, true
		}
		return id, !restarted
	})
	m.markMoved(ctx, moved, opts, follow)
}

// markMoved puts st's options on the moved workers' new panes, with
// their relations renamed, and then lets the watcher judge those panes
// again (markingLocked in relink held it off).
func (m *Manager) markMoved(ctx context.Context, moved map[string]string, opts map[string]map[string]string, follow func(string) (string, bool)) {
	set := map[string]map[string]string{}
	for id, o := range opts {
		no := map[string]string{}
		for k, v := range o {
			if k == "@st_parent" {
				// A parent that did not come back is retired here too: a
				// new pane with its old id is not this one's parent.
				if n, ok := follow(v); ok {
					v = n
				}
			}
			no[k] = v
		}
		set[id] = no
	}
	if err := m.cfg.Tmux.SetOptions(ctx, set); err != nil {
		m.logf("relink: %v", err)
	}
	m.reg.mu.Lock()
	at := m.cfg.Now()
	for _, n := range moved {
		m.reg.markedLocked(n, at)
	}
	m.reg.mu.Unlock()
}

// relinkRunsLocked moves the runs' coordinators and the tasks' panes.
func (m *Manager) relinkRunsLocked(c *change, follow func(string) (string, bool)) {
	syncs.AssertLocked(&m.reg.mu)
	for _, r := range m.reg.runs {
		if n, ok := follow(r.Coordinator); ok && r.CoordinatorMachine == "" {
			r.Coordinator = n
			c.touchLocked(r)
		}
		for _, t := range r.Tasks {
			if n, ok := follow(t.Parent); ok {
				t.Parent = n
				c.touchLocked(r)
			}
			if n, ok := follow(t.Worker); ok {
				t.Worker = n
				c.touchLocked(r)
			}
		}
		for _, w := range r.Workers {
			if n, ok := follow(w.Parent); ok {
				w.Parent = n
				c.touchLocked(r)
			}
		}
	}
}

// relinkWorkersLocked gives the workers their new pane ids (retired ones for
// those that did not come back), and makes idle the agents that came
// back: their turns died with the server.
func (m *Manager) relinkWorkersLocked(c *change, moved map[string]string, follow func(string) (string, bool), restarted bool, now time.Time) {
	syncs.AssertLocked(&m.reg.mu)
	workers := map[string]*Worker{}
	runOf := map[string]*Run{}
	for id, w := range m.reg.workers {
		r := m.reg.runOf[id]
		if _, ok := moved[id]; !ok && restarted && !w.Remote() {
			// Its pane did not come back: its id is retired with it.
			n, _ := follow(id) // (serverGone says why it is gone, after the restore)
			w.ID = n
			id = n
			c.touchLocked(r)
		}
		if n, ok := moved[id]; ok {
			w.ID = n
			id = n
			c.touchLocked(r)
			if restarted && (w.State == api.Working || w.State == api.Starting || w.State == api.Waiting) {
				// Its turn died with the server; the agent is back at its box.
				w.State, w.Since = api.Idle, now
			}
			if w.State == api.Gone { // its agent is back
				w.State, w.Since = api.Idle, now
			}
			if restarted && w.State != api.Done && m.rest.isResuming(n) {
				// Its agent starts again in its new pane (resume.go).
				w.State, w.Since = api.Starting, now
			}
		}
		workers[id] = w
		runOf[id] = r
	}
	m.reg.workers, m.reg.runOf = workers, runOf
}

// movedAgentLocked finds the pane where an agent with this conversation id
// ran before, when it reappears in pane and its old pane is gone: a
// worker or a coordinator that came back by other means than st's own
// restore.; returns the old pane id, or "".
func (m *Manager) movedAgentLocked(pane, session string) string {
	syncs.AssertLocked(&m.reg.mu)
	if session == "" || m.reg.workers[pane] != nil {
		return ""
	}
	if _, known := m.rest.live(pane); !known {
		return ""
	}
	for id, w := range m.reg.workers {
		if w.AgentSession == session && id != pane && m.rest.gone(id) {
			return id
		}
	}
	for _, id := range m.facts.panesOf(session) {
		if id != pane && m.rest.gone(id) && m.reg.currentRunLocked(id) != nil {
			return id
		}
	}
	return ""
}

// paneOptionsLocked are st's options for a worker's or coordinator's pane.
func (m *Manager) paneOptionsLocked(pane string) map[string]string {
	syncs.AssertLocked(&m.reg.mu)
	o := map[string]string{}
	if w := m.reg.workers[pane]; w != nil {
		o["@st_run"], o["@st_role"], o["@st_parent"], o["@st_name"] = m.reg.runOf[pane].ID, "worker", w.Parent, w.Name
		if w.TeamRun != "" {
			o["@st_team"] = w.TeamRun
		}
	} else if r := m.reg.currentRunLocked(pane); r != nil {
		o["@st_run"], o["@st_role"] = r.ID, "coordinator"
	}
	if kind, session := m.facts.agentOf(pane); kind != "" {
		o["@st_agent"] = kind
		if session != "" {
			o["@st_agent_session"] = session
		}
	}
	return o
}
