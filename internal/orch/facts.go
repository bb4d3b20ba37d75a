package orch

import (
	"sort"
	"sync"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
)

// paneFacts is what the agents' hooks told st about the panes they run
// in: which agent, which conversation, whether it is in a turn or asking
// a person something, its subagents, and Claude's agent teams
// (agentteam.go). Facts come from hooks and screens, not from st's
// records, and have their own lock: delivery and the noticer read them
// without the registry's. The registry's lock may be held when mu is
// taken, never the other way. What the registry says of a pane (a
// worker's?) is given to the methods that need it (workerPanes), never
// asked by the facts themselves.
type paneFacts struct {
	now  func() time.Time
	logf func(format string, args ...any)

	mu    sync.Mutex
	panes map[string]*paneInfo
	// teams are the Claude agent teams st has heard of, by name.
	teams map[string]*team
}

// paneInfo is what the hooks told st about the agent in a pane.
type paneInfo struct {
	agent   string
	session string
	inTurn  bool
	// waiting is set by a permission request or question, until the
	// next tool event or turn event: the hook fires before the dialog is
	// drawn, so the screen alone could look open for typing.
	waiting   bool
	seq       int // events seen from this pane
	turnSeq   int // seq of the last turn start
	lastEvent time.Time
	// subagents are Claude's subagents in this pane, by id.
	subagents map[string]*api.Subagent
	// notice is the last line st typed into the pane as a notice: a turn
	// it starts is not new work (a report made before it stands).
	notice string
	// quietReady counts looks at a quiet turn's screen that showed no
	// work (watch.go), quietWork those in a row that showed work since
	// its last event; nextLook is when to look again (zero: at the next
	// tick).
	quietReady, quietWork int
	nextLook              time.Time
	// boxSince: an agent without hooks showed its box (screenLook) since
	// its worker's last report; until it does, a busy screen is still the
	// reported turn's.
	boxSince bool
}

func newPaneFacts(now func() time.Time, logf func(string, ...any)) *paneFacts {
	return &paneFacts{now: now, logf: logf, panes: map[string]*paneInfo{}, teams: map[string]*team{}}
}

// workerPanes is what the registry says of a pane: whether it is a
// worker's, and whether that worker lives. The manager gives
// registry.workerAtLocked, with the registry's lock held: a teammate who
// became an st worker is the registry's, not its lead's.
type workerPanes func(pane string) (known, live bool)

func (w workerPanes) known(pane string) bool {
	k, _ := w(pane)
	return k
}

func (w workerPanes) live(pane string) bool {
	_, l := w(pane)
	return l
}

// hookFacts is what one hook event told about its pane.
type hookFacts struct {
	// newAgent: the first event of this agent (or conversation) here.
	newAgent bool
	session  string
	// aside: the event is about another agent than the pane's own (a
	// subagent, an in-process teammate), so the pane's turn is as it was.
	aside bool
	// teammate: the pane is a teammate's own, under a lead st sees.
	teammate bool
	// notice is the last notice st typed here.
	notice string
	inTurn bool
}

// event applies a hook event from pane's agent of kind; workers says
// which panes are workers'.
func (f *paneFacts) event(pane, kind string, ev agent.Event, flags *agent.Teammate, workers workerPanes) hookFacts {
	f.mu.Lock()
	defer f.mu.Unlock()
	pi := f.panes[pane]
	hf := hookFacts{newAgent: pi == nil || pi.agent != kind || (ev.SessionID != "" && pi.session != ev.SessionID)}
	if pi == nil {
		pi = &paneInfo{}
		f.panes[pane] = pi
	}
	pi.agent = kind
	pi.seq++
	pi.lastEvent = f.now()
	pi.quietReady, pi.quietWork, pi.nextLook = 0, 0, time.Time{}
	if ev.SessionID != "" {
		pi.session = ev.SessionID
	}
	hf.aside = f.asideLocked(pane, ev, flags, workers)
	// An event about a subagent or an in-process teammate (agentteam.go)
	// leaves the pane's own turn alone.
	pi.waiting = ev.Kind == agent.EvWaiting || (pi.waiting && (hf.aside || ev.Kind == agent.EvIgnore))
	switch {
	case hf.aside:
	case ev.Kind == agent.EvTurnStart, ev.Kind == agent.EvTool, ev.Kind == agent.EvWaiting:
		if ev.Kind == agent.EvTurnStart {
			pi.turnSeq = pi.seq
		}
		pi.inTurn = true
	case ev.Kind == agent.EvTurnEnd, ev.Kind == agent.EvInterrupt, ev.Kind == agent.EvSessionStart, ev.Kind == agent.EvSessionEnd:
		pi.inTurn = false
	}
	hf.session, hf.notice, hf.inTurn = pi.session, pi.notice, pi.inTurn
	hf.teammate = f.teammatePaneLocked(pane, workers)
	return hf
}

// learn records the agent that tmux's options say runs in pane, when no
// hook told of it yet (st restarted).
func (f *paneFacts) learn(pane, kind, session string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.panes[pane] == nil {
		f.panes[pane] = &paneInfo{agent: kind, session: session}
	}
}

// turnSeq is how many events came from pane, and which of them started
// the last turn.
func (f *paneFacts) turnSeq(pane string) (seq, turn int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if pi := f.panes[pane]; pi != nil {
		return pi.seq, pi.turnSeq
	}
	return 0, 0
}

// waiting reports whether the agent in pane asked a person something
// that is not answered yet, as its hooks tell.
func (f *paneFacts) waiting(pane string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	pi := f.panes[pane]
	return pi != nil && pi.waiting
}

// agentIn says which agent runs in pane and whether it is in a turn.
func (f *paneFacts) agentIn(pane string) (kind string, inTurn bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if pi := f.panes[pane]; pi != nil {
		return pi.agent, pi.inTurn
	}
	return "", false
}

// agentOf is the agent in pane and its conversation, as hooks told.
func (f *paneFacts) agentOf(pane string) (kind, session string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if pi := f.panes[pane]; pi != nil {
		return pi.agent, pi.session
	}
	return "", ""
}

// reported notes a report of pane's worker: its turn is over, though its
// screen may show it at work until its box comes back.
func (f *paneFacts) reported(pane string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pi := f.panes[pane]
	if pi == nil {
		pi = &paneInfo{}
		f.panes[pane] = pi
	}
	pi.boxSince = false
}

// sawBox notes a look at pane's screen that showed its input box.
func (f *paneFacts) sawBox(pane string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if pi := f.panes[pane]; pi != nil {
		pi.boxSince = true
	}
}

// boxSinceReport says whether pane's screen showed its box since its
// worker's last report.
func (f *paneFacts) boxSinceReport(pane string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	pi := f.panes[pane]
	return pi != nil && pi.boxSince
}

// markNotice records the line st is about to type into pane as a notice.
func (f *paneFacts) markNotice(pane, line string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if pi := f.panes[pane]; pi != nil {
		pi.notice = line
	}
}

// quietTurn is a pane of quietTurns: its agent, and whether it is at a
// prompt.
type quietTurn struct {
	agent   string
	waiting bool
}

// quietTurns lists the panes in a turn (at work, or at a prompt) whose
// hooks have been silent for quiet, and whose agent keep says to look at
// (keep is the registry's word, given with its lock held).
func (f *paneFacts) quietTurns(quiet time.Duration, keep func(pane string) bool) map[string]quietTurn {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	out := map[string]quietTurn{}
	for id, pi := range f.panes {
		if pi.inTurn && now.Sub(pi.lastEvent) >= quiet && !now.Before(pi.nextLook) && keep(id) {
			out[id] = quietTurn{agent: pi.agent, waiting: pi.waiting}
		}
	}
	return out
}

// quietLook records one look at the screen of a quiet turn; twice in a
// row without signs of work ends the turn. It reports whether it ended,
// and how long the hooks had been silent.
func (f *paneFacts) quietLook(pane string, noWork bool) (ended bool, silent time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pi := f.panes[pane]
	if pi == nil || !pi.inTurn {
		return false, 0
	}
	if !noWork {
		pi.quietReady = 0
		// A turn at work with no hook for long (a long build, a long
		// answer) is looked at less often: after quietEager looks, once
		// each quietSlow. At a hundred such workers every 500 ms was 200
		// captures a second, which tmux's other commands waited behind.
		if pi.quietWork++; pi.quietWork >= quietEager {
			// Half a tick early: the look runs a little after its tick,
			// and the tick quietSlow after this one is to look again.
			pi.nextLook = f.now().Add(quietSlow - quietEvery/2)
		}
		return false, 0
	}
	// The look that confirms an end comes at the next tick, whatever
	// the wait before this one.
	pi.nextLook = time.Time{}
	pi.quietReady++
	if pi.quietReady < 2 {
		return false, 0
	}
	pi.quietReady, pi.quietWork, pi.inTurn = 0, 0, false
	return true, f.now().Sub(pi.lastEvent)
}

// move carries the facts of panes that moved (a restore) to their new
// ids; their turns ended with the old server. After a restart of the
// whole server, the facts of panes that did not move are dropped.
func (f *paneFacts) move(moved map[string]string, restarted bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	panes := map[string]*paneInfo{}
	for id, pi := range f.panes {
		if n, ok := moved[id]; ok {
			pi.inTurn = false
			panes[n] = pi
		} else if !restarted {
			panes[id] = pi
		}
	}
	f.panes = panes
}

// forget drops what hooks told of pane: its agent is gone from it (it
// could not come back after a restart, and a shell runs there now).
func (f *paneFacts) forget(pane string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.panes, pane)
}

// panesOf lists the panes whose agent holds conversation session.
func (f *paneFacts) panesOf(session string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for id, pi := range f.panes {
		if pi.session == session {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// paneView is what the graph shows of a pane's agent.
type paneView struct {
	agent     string
	inTurn    bool
	lastEvent time.Time
	teammate  bool
	subagents []api.Subagent
	teammates []api.Teammate
}

// views is every pane with an agent as the graph shows it.
func (f *paneFacts) views(workers workerPanes) map[string]paneView {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]paneView{}
	for id, pi := range f.panes {
		out[id] = paneView{agent: pi.agent, inTurn: pi.inTurn, lastEvent: pi.lastEvent, teammate: f.teammatePaneLocked(id, workers),
			subagents: f.subagentsOfLocked(id), teammates: f.teammatesOfLocked(id, workers)}
	}
	return out
}

// kinds is what runs in each pane that st knows of, as st ls says it:
// the agent's kind, with " teammate" after it for a teammate of a Claude
// agent team.
func (f *paneFacts) kinds(workers workerPanes) map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for id, p := range f.panes {
		out[id] = f.paneKindLocked(id, p.agent, workers)
	}
	return out
}
