package authz

import (
	"fmt"
	"strings"
)

// Kind is what kind of actor asks (see the package doc).
type Kind string

// The actors.
const (
	Person         Kind = "person"
	Agent          Kind = "agent"
	SandboxedCodex Kind = "sandboxed codex"
	Local          Kind = "local process"
	WebSession     Kind = "web session"
	AnswerToken    Kind = "answer token"
	Machine        Kind = "machine"
	OtherUser      Kind = "other local user"
	RelayClient    Kind = "relay client"
	Network        Kind = "network"
)

// Kinds lists every kind of actor.
func Kinds() []Kind {
	return []Kind{Person, Agent, SandboxedCodex, Local, WebSession, AnswerToken, Machine, OtherUser, RelayClient, Network}
}

// Role is what an agent is to st.
type Role string

// The roles of an agent in a pane ("" for one st does not know).
const (
	Coordinator Role = "coordinator"
	Worker      Role = "worker"
	Teammate    Role = "teammate"
	Unknown     Role = ""
)

// Actor is who asks.
type Actor struct {
	Kind Kind
	// Role is an agent's (Agent, SandboxedCodex).
	Role Role
	// Pane is the pane of st's tmux server the caller's process runs in,
	// found among its parents ("" for none): who an agent acts as.
	Pane string
	// Claimed is the pane the request names (the caller's $TMUX_PANE).
	Claimed string
	// Machine is another machine's slug (Machine).
	Machine string
	// Why is how st told (for an agent: "it was run by an agent (sim,
	// pid 7)"); refusals say it.
	Why string
}

// Action is what the actor asks to do.
type Action string

// The actions.
const (
	ReadPage     Action = "loading the web UI's page and its files"
	ReadState    Action = "reading st's state"
	StartRun     Action = "starting a run"
	Start        Action = "starting a worker"
	Send         Action = "typing a line into a worker"
	Adopt        Action = "adopting an agent"
	Offer        Action = "offering an agent to another machine"
	Withdraw     Action = "withdrawing an offer"
	Stop         Action = "stopping a worker"
	Release      Action = "releasing a worker"
	Rename       Action = "renaming a worker"
	ReadScreen   Action = "reading a worker's report and answer"
	Merge        Action = "merging a worker's changes"
	CancelTask   Action = "cancelling a task"
	OpenTerminal Action = "opening a terminal"
	TypeTerminal Action = "typing in a terminal"
	AskGate      Action = "asking a decision gate"
	AnswerGate   Action = "answering a decision gate"
	WithdrawGate Action = "withdrawing a decision gate"
	// AnswerPrompt answers an agent's permission prompt or question
	// (Allow once, Deny, an option) through its waiting hook.
	AnswerPrompt    Action = "answering an agent's permission prompt"
	Dismiss         Action = "dismissing an attention item (issue 34)"
	Report          Action = "reporting (st worker done)"
	Hook            Action = "sending an agent's hook event"
	AcceptRemoteOn  Action = "letting other machines start agents here (accept-remote on)"
	AcceptRemoteOff Action = "turning accept-remote off"
	SeeWebToken     Action = "seeing the web UI's token"
	PruneRuns       Action = "removing old runs from st's history (st orch prune --yes)"
	ChangeSetup     Action = "changing st's setup"
	StopST          Action = "stopping st"
	SeeAgents       Action = "seeing this machine's agents"
	Watch           Action = "watching its workers"
	Reparent        Action = "moving its workers to their coordinator's new pane"
	FindCoordinator Action = "asking where a coordinator is"
)

// The control plane's actions (controlplane.ControlPlaneRoutes). The control
// plane is a service of its own, not a daemon: Decide does not answer for
// them (it refuses them to every actor but a person at this machine);
// the control plane's certificate check is their decision, and the
// matrix test holds each route to the actor its table names.
const (
	SignIn       Action = "signing a machine in to its account (the account's key)"
	Renew        Action = "renewing a machine's certificate"
	Heartbeat    Action = "telling the control plane a machine is alive"
	ListMachines Action = "seeing the machines of one's account"
	SignOut      Action = "signing a machine out"
	Relay        Action = "reaching the machines of one's account through the relay"
	ReadMetrics  Action = "reading the control plane's metrics (a loopback listener of its own)"
)

// ControlPlaneActions lists the control plane's actions.
func ControlPlaneActions() []Action {
	return []Action{SignIn, Renew, Heartbeat, ListMachines, SignOut, Relay, ReadMetrics}
}

// Actions lists every action.
func Actions() []Action {
	return []Action{ReadPage, ReadState, StartRun, Start, Send, Adopt, Offer, Withdraw, Stop, Release, Rename, ReadScreen, Merge,
		CancelTask, OpenTerminal, TypeTerminal, AskGate, AnswerGate, AnswerPrompt, WithdrawGate, Dismiss, Report, Hook, AcceptRemoteOn, AcceptRemoteOff,
		SeeWebToken, ChangeSetup, StopST, SeeAgents, Watch, Reparent, FindCoordinator, PruneRuns}
}

// Route is one route of a surface as its table lists it: how it is asked
// for, and the actions it may ask Decide about. The surfaces' tables
// (internal/daemon's socket and peer API, internal/web's routes) list
// them, for the fuzz tests and the matrix test.
type Route struct {
	Surface      string // "socket", "peer" or "web"
	Method, Path string
	Actions      []Action
	// Actor is the kind a surface's credential makes of a caller that
	// passed it (the web UI's session; the push answer's own token); ""
	// where the surface tells who asked by other means.
	Actor Kind
}

// Target is what the action is done to.
type Target struct {
	// ID names a worker or a pane as the request names it (%7, a name,
	// machine/%7); "" for none.
	ID string
	// Agent is the agent kind a start asks for.
	Agent string
	// Machine is the other machine a start or an offer names.
	Machine string
}

// Handed is what a pane here is to another machine.
type Handed int

// What a pane may be to another machine.
const (
	NotHanded Handed = iota
	Offered          // a person here offered the agent in it to that machine
	ItsWorker        // a worker here of that machine's coordinator
)

// Facts are what a decision needs to know of st's state; orch implements
// them. Decide asks only the ones the decision needs.
type Facts interface {
	// AcceptRemote: this machine takes workers from other machines.
	AcceptRemote() bool
	// SimForAgents: a person allowed agents to start the sim agent.
	SimForAgents() bool
	// Owns reports whether id (as the pane caller names it) is a worker of
	// caller, or a worker under one of its workers.
	Owns(caller, id string) bool
	// HandedTo says what the pane or worker id here is to machine.
	HandedTo(machine, id string) Handed
	// ParentOf is the parent of the live worker id here: a pane here, or
	// machine/%N for another machine's coordinator ("" for no worker).
	ParentOf(id string) string
	// CoordinatesFor reports whether pane here is (or was, before a tmux
	// restart moved it) the coordinator of machine's workers here.
	CoordinatesFor(machine, pane string) bool
	// AskedGate reports whether the gate id was asked from pane (the
	// gate's own record names it).
	AskedGate(pane, id string) bool
}

// Guard says what kind of refusal it is (see the package doc).
type Guard string

// The kinds of refusal.
const (
	Boundary Guard = "boundary"
	Rail     Guard = "rail"
)

// Decision is the answer.
type Decision struct {
	Allowed bool
	// ReadOnly: an allowed OpenTerminal is shown, never typed into.
	ReadOnly bool
	// Why and Hint say why it was refused and what to do instead.
	Why, Hint string
	Guard     Guard
}

// Err is the refusal as an error (nil when allowed).
func (d Decision) Err() error {
	if d.Allowed {
		return nil
	}
	return &Refusal{Why: d.Why, Hint: d.Hint, Guard: d.Guard}
}

// Refusal is a refused decision as an error.
type Refusal struct {
	Why, Hint string
	Guard     Guard
}

func (r *Refusal) Error() string { return "refused: " + r.Why }

func allow() Decision { return Decision{Allowed: true} }

func refuse(g Guard, hint, format string, args ...any) Decision {
	return Decision{Why: fmt.Sprintf(format, args...), Hint: hint, Guard: g}
}

// Decide answers whether a may do act to t. It fails closed: an actor or
// action it does not know is refused.
func Decide(a Actor, act Action, t Target, f Facts) Decision {
	switch a.Kind {
	case Person:
		return allow()
	case Agent, SandboxedCodex:
		return decideAgent(a, act, t, f)
	case Local:
		if OpenToLocal(act) {
			return allow()
		}
		return refuse(Rail, "", "st could not tell who asked for %s", act)
	case WebSession:
		return decideWeb(act)
	case AnswerToken:
		if act == AnswerGate || act == AnswerPrompt {
			return allow() // its own gate or prompt, and option: the token names them
		}
		return refuse(Boundary, "", "an answer link answers its own gate or prompt, and does nothing else")
	case Machine:
		return decideMachine(a, act, t, f)
	case OtherUser:
		return refuse(Boundary, "run st as that user, with an ST_HOME of its own", "st's socket answers only the user who runs st")
	case RelayClient, Network:
		if a.Kind == Network && act == ReadPage {
			return allow() // the same for everyone: nothing of the user's
		}
		return refuse(Boundary, "sign this machine in again: st login",
			"no valid certificate of this account (a machine that signed out or was removed from the account is refused)")
	}
	return refuse(Boundary, "", "st does not know who asked (%q)", a.Kind)
}

// MayRead reports whether a may read the texts of worker id (its task,
// report and answers) where a route shows that worker: the decision of
// st worker read (ReadScreen), asked again for each worker a view holds,
// so that no route shows what st worker read refuses. An id of "" asks
// whether a may read every worker's (a person, the web UI's session).
// A worker a may not read shows its name, state and times only.
func MayRead(a Actor, id string, f Facts) bool {
	return Decide(a, ReadScreen, Target{ID: id}, f).Allowed
}

// OpenToLocal reports whether every process of this user may do act, so
// that st need not tell who asked (a look at /proc it spares the hooks).
func OpenToLocal(act Action) bool {
	switch act {
	case ReadState, Hook, AskGate, AcceptRemoteOff, Withdraw:
		return true
	}
	return false
}

// PersonOnly reports whether act is a person's alone: the socket then
// tells a person from an agent in every way it can (the caller's
// terminal too, which costs a look at every process).
func PersonOnly(act Action) bool {
	switch act {
	case AnswerGate, AnswerPrompt, Dismiss, Offer, AcceptRemoteOn, SeeWebToken, ChangeSetup, PruneRuns:
		return true
	}
	return false
}

// personHint is what to do instead of what only a person may do.
const personHint = "a person does it from a shell that is not an agent's pane, or in the web UI (st web)"

// decideAgent is an agent's (rails) or a sandboxed Codex's (boundaries).
func decideAgent(a Actor, act Action, t Target, f Facts) Decision {
	g := Rail
	if a.Kind == SandboxedCodex {
		g = Boundary
	}
	if PersonOnly(act) {
		return refuse(g, personHint, "%s is a person's to do, and this request came from an agent: %s", act, a.Why)
	}
	if act != Hook && a.Claimed != "" && a.Claimed != a.Pane {
		where := "no pane of st's tmux server"
		if a.Pane != "" {
			where = "pane " + a.Pane
		}
		return refuse(g, "run st from the agent's own pane, without changing $TMUX_PANE",
			"the request names pane %s ($TMUX_PANE), but it comes from %s (%s)", a.Claimed, where, a.Why)
	}
	switch act {
	case ReadState, StartRun, AskGate, Report, Hook, AcceptRemoteOff, Withdraw, CancelTask:
		return allow()
	case Start:
		if t.Agent == "sim" && !f.SimForAgents() {
			return refuse(g, "a person starts it from a shell; or allows agents to, with agents_start_sim = true in $ST_HOME/config.toml (or ST_AGENTS_START_SIM=1 where st starts)",
				"an agent asked for the sim agent, a test program that runs any command its task names (%s)", a.Why)
		}
		return allow()
	case Send, Stop, Rename, Release, ReadScreen, Merge:
		if a.Pane != "" && f.Owns(a.Pane, t.ID) {
			return allow()
		}
		return refuse(g, "an agent acts on its own workers only (st worker list shows them); a person may act on any",
			"%s is not a worker of this agent's pane (%s), so %s it is not this agent's to do", orNone(t.ID), orNone(a.Pane), act)
	case WithdrawGate:
		// Its asker takes its own question back (Ctrl-C on st gate ask);
		// another agent's gate is a person's to answer, not its to drop.
		if a.Pane != "" && f.AskedGate(a.Pane, t.ID) {
			return allow()
		}
		return refuse(g, "an agent withdraws only the gates it asked (Ctrl-C on its own st gate ask); a person answers the others: st gate answer",
			"gate %s was not asked from this agent's pane (%s)", orNone(t.ID), orNone(a.Pane))
	case Adopt:
		if a.Kind == SandboxedCodex {
			return refuse(g, "a person adopts it into the run: st worker adopt from a shell, or a drop in the web UI",
				"a Codex in its sandbox may not take over an agent it did not start (it could then type into that pane)")
		}
		return allow()
	case StopST:
		if a.Kind == SandboxedCodex {
			return refuse(g, "a person stops st: st down from a shell", "a Codex in its sandbox may not stop st")
		}
		return allow()
	}
	return refuse(g, "", "%s is not an agent's to do", act)
}

// decideWeb is a page of the web UI that passed its credential check: the
// person at this machine's browser, for what the page does.
func decideWeb(act Action) Decision {
	switch act {
	case ReadPage, ReadState, ReadScreen, SeeAgents, OpenTerminal, TypeTerminal, Adopt, Release, AnswerGate, AnswerPrompt, Dismiss:
		return allow()
	}
	return refuse(Boundary, "", "the web UI does not do %s", act)
}

// offHint is what another machine's person does when this one takes no
// workers ("that machine" is this one: the asking st names it).
const offHint = "run st orch accept-remote on on that machine"

// decideMachine is another machine of the account (boundaries).
func decideMachine(a Actor, act Action, t Target, f Facts) Decision {
	needAccept := func() (Decision, bool) {
		if f.AcceptRemote() {
			return Decision{}, false
		}
		return refuse(Boundary, offHint, "it does not take workers from other machines (accept-remote is off there)"), true
	}
	switch act {
	case Watch:
		return allow() // it is told of its own workers only
	case FindCoordinator:
		if f.CoordinatesFor(a.Machine, t.ID) {
			return allow()
		}
		return refuse(Boundary, "a machine asks only about the coordinators of its own workers (st worker list --all shows them)",
			"%s is not a coordinator of workers on %s", orNone(t.ID), a.Machine)
	case ReadScreen:
		return itsWorker(a, act, t, f)
	case Start, Reparent, SeeAgents:
		if d, off := needAccept(); off {
			return d
		}
		return allow()
	case Send, Stop, Rename, Release:
		if d, off := needAccept(); off {
			return d
		}
		return itsWorker(a, act, t, f)
	case Adopt:
		if d, off := needAccept(); off {
			return d
		}
		if f.HandedTo(a.Machine, t.ID) == Offered {
			return allow()
		}
		if parent := f.ParentOf(t.ID); parent != "" {
			return refuse(Boundary, fmt.Sprintf("release it first: st worker release %s (run from %s)", t.ID, parent),
				"%s is already a worker of %s", t.ID, parent)
		}
		return refuse(Boundary, "a person on that machine offers it first: st worker offer "+t.ID+" --machine "+a.Machine,
			"%s was not offered to %s (an agent there becomes another machine's worker only when a person there offers it)", orNone(t.ID), a.Machine)
	case OpenTerminal, TypeTerminal:
		return decideTerm(a, act, t, f)
	}
	return refuse(Boundary, "", "another machine may not do %s here", act)
}

// itsWorker allows act on a worker of machine a here, and names the
// machine a worker of another works for.
func itsWorker(a Actor, act Action, t Target, f Facts) Decision {
	if f.HandedTo(a.Machine, t.ID) == ItsWorker {
		return allow()
	}
	verb := verbs[act]
	parent := f.ParentOf(t.ID)
	owner, _, remote := strings.Cut(parent, "/")
	switch {
	case parent == "":
		return refuse(Boundary, "st worker list on that machine shows its workers", "%s is not a worker there", orNone(t.ID))
	case !remote:
		return refuse(Boundary, "only its coordinator, on this machine, may "+verb+" it",
			"%s works for a coordinator on this machine, not for %s", orNone(t.ID), a.Machine)
	default:
		return refuse(Boundary, fmt.Sprintf("%s it from %s, where its coordinator is", verb, owner),
			"%s works for machine %s, not for %s", orNone(t.ID), owner, a.Machine)
	}
}

// decideTerm is another machine's terminal on a pane here: opened only on
// what was handed to it, typed into only when it is its worker. Both ask
// that this machine takes workers.
func decideTerm(a Actor, act Action, t Target, f Facts) Decision {
	if !f.AcceptRemote() {
		return refuse(Boundary, offHint, "accept-remote is off there, and windows open to other machines only while it is on")
	}
	switch h := f.HandedTo(a.Machine, t.ID); {
	case h == ItsWorker:
		return allow()
	case h == Offered && act == OpenTerminal:
		return Decision{Allowed: true, ReadOnly: true} // typed into once adopted
	case h == Offered:
		return refuse(Boundary, "adopt it first (st worker adopt "+t.ID+" on "+a.Machine+"): then it types",
			"%s was offered to %s, not yet adopted, so its window is read-only", orNone(t.ID), a.Machine)
	}
	return refuse(Boundary, "a person on that machine offers it first: st worker offer "+t.ID+" --machine "+a.Machine,
		"%s was not handed to %s: only its own workers there, and agents a person there offered to it, open to it", orNone(t.ID), a.Machine)
}

// verbs name the peer operations on a worker as the CLI does.
var verbs = map[Action]string{Send: "send", Stop: "stop", Rename: "rename", Release: "release", ReadScreen: "read"}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
