package authz

import (
	"strings"
	"testing"
)

// facts is a Facts of fixed answers.
type facts struct {
	accept, sim bool
	owns        bool
	handed      Handed
	parent      string
	coord       bool
	asked       bool
}

func (f facts) AcceptRemote() bool                       { return f.accept }
func (f facts) SimForAgents() bool                       { return f.sim }
func (f facts) Owns(caller, id string) bool              { return f.owns }
func (f facts) HandedTo(machine, id string) Handed       { return f.handed }
func (f facts) ParentOf(id string) string                { return f.parent }
func (f facts) CoordinatesFor(machine, pane string) bool { return f.coord }
func (f facts) AskedGate(pane, id string) bool           { return f.asked }

// all is what every fact grants; none grants nothing.
var (
	all  = facts{accept: true, sim: true, owns: true, handed: ItsWorker, coord: true, asked: true}
	none = facts{}
)

func actorOf(k Kind) Actor {
	a := Actor{Kind: k, Why: "it was run by an agent (sim, pid 7)"}
	switch k {
	case Agent, SandboxedCodex:
		a.Pane, a.Claimed = "%3", "%3"
	case Machine:
		a.Machine = "alpha"
	}
	return a
}

// TestDecisionTable walks every actor kind and every action, with every
// fact granting and with none: the allowed cells are exactly these, and
// every refusal says why and is a boundary or a rail.
func TestDecisionTable(t *testing.T) {
	agentAll := []Action{ReadState, StartRun, Start, Send, Adopt, Withdraw, Stop, Release, Rename, ReadScreen, Merge,
		CancelTask, AskGate, WithdrawGate, Report, Hook, AcceptRemoteOff, StopST}
	codexAll := []Action{ReadState, StartRun, Start, Send, Withdraw, Stop, Release, Rename, ReadScreen, Merge,
		CancelTask, AskGate, WithdrawGate, Report, Hook, AcceptRemoteOff}
	agentNone := []Action{ReadState, StartRun, Adopt, Withdraw, CancelTask, AskGate, Report, Hook, AcceptRemoteOff, StopST}
	codexNone := []Action{ReadState, StartRun, Withdraw, CancelTask, AskGate, Report, Hook, AcceptRemoteOff}
	web := []Action{ReadPage, ReadState, ReadScreen, SeeAgents, OpenTerminal, TypeTerminal, Adopt, Release, AnswerGate, AnswerPrompt, Dismiss}
	local := []Action{ReadState, Hook, AskGate, AcceptRemoteOff, Withdraw}
	want := map[Kind][2][]Action{ // with all facts, with none
		Person:         {Actions(), Actions()},
		Agent:          {agentAll, agentNone},
		SandboxedCodex: {codexAll, codexNone},
		Local:          {local, local},
		WebSession:     {web, web},
		AnswerToken:    {{AnswerGate, AnswerPrompt}, {AnswerGate, AnswerPrompt}},
		Machine: {{Start, Send, Adopt, Stop, Release, Rename, ReadScreen, OpenTerminal, TypeTerminal, SeeAgents, Watch, Reparent, FindCoordinator},
			{Watch}},
		OtherUser:   {nil, nil},
		RelayClient: {nil, nil},
		Network:     {{ReadPage}, {ReadPage}}, // the page and its files: everyone's
	}
	for _, k := range Kinds() {
		w, ok := want[k]
		if !ok {
			t.Errorf("no row for actor %s", k)
			continue
		}
		for i, f := range []facts{all, none} {
			allowed := map[Action]bool{}
			for _, act := range w[i] {
				allowed[act] = true
			}
			if k == Machine && i == 0 {
				// Adopt needs an offer, which "all" (its worker) is not.
				delete(allowed, Adopt)
			}
			for _, act := range Actions() {
				d := Decide(actorOf(k), act, Target{ID: "%5", Agent: "sim"}, f)
				if d.Allowed != allowed[act] {
					t.Errorf("%s, %s, facts %d: allowed=%v, want %v (%s)", k, act, i, d.Allowed, allowed[act], d.Why)
				}
				if !d.Allowed && (d.Why == "" || (d.Guard != Boundary && d.Guard != Rail)) {
					t.Errorf("%s, %s: a refusal must say why and what it is: %+v", k, act, d)
				}
				if !d.Allowed && d.Err() == nil {
					t.Errorf("%s, %s: refused with no error", k, act)
				}
			}
		}
	}
}

// TestAgentRails: an agent's refusals are rails, a sandboxed Codex's the
// same refusals are boundaries; both say why and what to do.
func TestAgentRails(t *testing.T) {
	for _, c := range []struct {
		name  string
		a     Actor
		act   Action
		tg    Target
		f     facts
		guard Guard
		says  []string
	}{
		{"answer a gate", actorOf(Agent), AnswerGate, Target{}, all, Rail,
			[]string{"answering a decision gate is a person's to do, and this request came from an agent: it was run by an agent (sim, pid 7)", "a person does it"}},
		// The pane's own agent (its Actor.Pane is the prompt's pane) may
		// not allow its own tool call: a rail against a same-user agent...
		{"allow its own prompt", actorOf(Agent), AnswerPrompt, Target{ID: "%3"}, all, Rail,
			[]string{"answering an agent's permission prompt is a person's to do, and this request came from an agent", "a person does it"}},
		// ...and a boundary against a Codex in its sandbox.
		{"codex allows a prompt", actorOf(SandboxedCodex), AnswerPrompt, Target{ID: "%9"}, all, Boundary,
			[]string{"answering an agent's permission prompt is a person's to do"}},
		{"codex sees the web token", actorOf(SandboxedCodex), SeeWebToken, Target{}, all, Boundary, []string{"seeing the web UI's token is a person's to do"}},
		{"prune the history", actorOf(Agent), PruneRuns, Target{}, all, Rail, []string{"removing old runs from st's history (st orch prune --yes) is a person's to do", "a person does it"}},
		{"sim", actorOf(Agent), Start, Target{Agent: "sim"}, none, Rail, []string{"sim agent, a test program that runs any command", "agents_start_sim = true"}},
		{"codex sim", actorOf(SandboxedCodex), Start, Target{Agent: "sim"}, none, Boundary, []string{"sim agent"}},
		{"not its worker", actorOf(Agent), Send, Target{ID: "%9"}, none, Rail, []string{"%9 is not a worker of this agent's pane (%3)", "own workers only"}},
		{"codex adopts", actorOf(SandboxedCodex), Adopt, Target{ID: "%9"}, all, Boundary, []string{"may not take over an agent it did not start"}},
		{"forged pane", Actor{Kind: SandboxedCodex, Pane: "%3", Claimed: "%1", Why: "codex"}, Send, Target{ID: "%2"}, all, Boundary,
			[]string{"names pane %1 ($TMUX_PANE), but it comes from pane %3"}},
		{"no pane", Actor{Kind: Agent, Claimed: "%1", Why: "sim"}, ReadState, Target{}, all, Rail, []string{"comes from no pane of st's tmux server"}},
		{"owns with no pane", Actor{Kind: Agent, Why: "sim"}, Stop, Target{ID: "%2"}, all, Rail, []string{"not a worker of this agent's pane ((none))"}},
	} {
		d := Decide(c.a, c.act, c.tg, c.f)
		if d.Allowed || d.Guard != c.guard || d.Hint == "" {
			t.Errorf("%s: %+v, want a %s refusal with a hint", c.name, d, c.guard)
		}
		for _, s := range c.says {
			if !strings.Contains(d.Why+" "+d.Hint, s) {
				t.Errorf("%s: %q does not say %q", c.name, d.Why+" / "+d.Hint, s)
			}
		}
	}
	// A hook names the agent's pane in its payload, whoever runs it.
	if d := Decide(Actor{Kind: Agent, Claimed: "%1"}, Hook, Target{}, none); !d.Allowed {
		t.Errorf("a hook: %+v", d)
	}
}

// TestMachineTerminal: another machine opens only what was handed to it;
// an offer not yet adopted is read-only, decided here.
func TestMachineTerminal(t *testing.T) {
	a := actorOf(Machine)
	on := facts{accept: true}
	for _, c := range []struct {
		handed       Handed
		act          Action
		ok, readOnly bool
	}{
		{ItsWorker, OpenTerminal, true, false},
		{ItsWorker, TypeTerminal, true, false},
		{Offered, OpenTerminal, true, true},
		{Offered, TypeTerminal, false, false},
		{NotHanded, OpenTerminal, false, false},
		{NotHanded, TypeTerminal, false, false},
	} {
		f := on
		f.handed = c.handed
		d := Decide(a, c.act, Target{ID: "%4"}, f)
		if d.Allowed != c.ok || d.ReadOnly != c.readOnly {
			t.Errorf("handed %d, %s: %+v, want allowed %v read-only %v", c.handed, c.act, d, c.ok, c.readOnly)
		}
	}
	f := facts{handed: ItsWorker}
	if d := Decide(a, OpenTerminal, Target{ID: "%4"}, f); d.Allowed || !strings.Contains(d.Why, "accept-remote is off there") {
		t.Errorf("accept-remote off: %+v", d)
	}
	d := Decide(a, OpenTerminal, Target{ID: "%4"}, on)
	if !strings.Contains(d.Why, "%4 was not handed to alpha") || !strings.Contains(d.Hint, "st worker offer %4 --machine alpha") {
		t.Errorf("not handed: %+v", d)
	}
}

// TestMachineOps keeps the words the other machine's person reads.
func TestMachineOps(t *testing.T) {
	a := actorOf(Machine)
	d := Decide(a, Rename, Target{ID: "%2"}, facts{accept: true, parent: "beta/%0"})
	if d.Why != "%2 works for machine beta, not for alpha" || d.Hint != "rename it from beta, where its coordinator is" {
		t.Errorf("another machine's worker: %+v", d)
	}
	d = Decide(a, ReadScreen, Target{ID: "%2"}, facts{parent: "%1"})
	if d.Why != "%2 works for a coordinator on this machine, not for alpha" || d.Hint != "only its coordinator, on this machine, may read it" {
		t.Errorf("this machine's worker: %+v", d)
	}
	d = Decide(a, Send, Target{ID: "%2"}, facts{handed: ItsWorker})
	if d.Allowed || d.Hint != offHint || !strings.Contains(d.Why, "accept-remote is off there") {
		t.Errorf("accept-remote off: %+v", d)
	}
	d = Decide(a, Adopt, Target{ID: "%2"}, facts{accept: true})
	if !strings.Contains(d.Why, "%2 was not offered to alpha") || !strings.Contains(d.Hint, "st worker offer %2 --machine alpha") {
		t.Errorf("adopt with no offer: %+v", d)
	}
	if d := Decide(a, Adopt, Target{ID: "%2"}, facts{accept: true, handed: Offered}); !d.Allowed {
		t.Errorf("adopt of an offer: %+v", d)
	}
	d = Decide(a, Adopt, Target{ID: "%2"}, facts{accept: true, parent: "beta/%0"})
	if d.Why != "%2 is already a worker of beta/%0" || d.Hint != "release it first: st worker release %2 (run from beta/%0)" {
		t.Errorf("adopt of another's worker: %+v", d)
	}
	if d := Decide(a, Send, Target{ID: "%8"}, facts{accept: true}); d.Why != "%8 is not a worker there" {
		t.Errorf("send to no worker: %+v", d)
	}
}
