package real

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/testutil/realagent"
)

// teamSettings turns Claude's agent teams on in the rig's settings.json,
// as a person would: the variable in "env", and where teammates run.
func (r *rig) teamSettings(mode string) {
	r.t.Helper()
	realagent.MergeClaudeSettings(r.t, r.home, realagent.AgentTeams(mode))
}

// holdTask is a task file for a teammate or subagent that works until the
// test creates the file named go (in the work folder).
func (r *rig) holdTask(name, gate string) string {
	return r.writeTask(name+".md", fmt.Sprintf("RUN: while [ ! -e %s ]; do sleep 0.2; done\nSAY: %s finished\n", gate, name))
}

// teamView is what st worker list --all --json and st orch show --json
// say of an agent's teammates and subagents.
type teamView struct {
	ID, Name, State string
	Teammates       []struct {
		Name, Team, Pane, State, For string
		InProcess                    bool `json:"in_process"`
	}
	Subagents []struct{ ID, Type, State string }
}

func (v teamView) mate(name string) (pane, state string, inProcess bool) {
	for _, m := range v.Teammates {
		if m.Name == name {
			return m.Pane, m.State, m.InProcess
		}
	}
	return "", "", false
}

func (r *rig) workerViews() []teamView {
	r.t.Helper()
	var vs []teamView
	if err := json.Unmarshal([]byte(r.stMust("worker", "list", "--all", "--json")), &vs); err != nil {
		r.t.Fatal(err)
	}
	return vs
}

// waitLead polls st worker list --all --json until the worker named name
// satisfies ok.
func (r *rig) waitLead(name string, d time.Duration, what string, ok func(teamView) bool) teamView {
	r.t.Helper()
	var last teamView
	testutil.WaitFor(r.t, d, func() (bool, string) {
		for _, v := range r.workerViews() {
			if v.Name == name {
				last = v
				if ok(v) {
					return true, ""
				}
			}
		}
		out, _, _ := r.st1("worker", "list", "--all")
		return false, fmt.Sprintf("%s: %+v\nst worker list --all:\n%s\n%s", what, last, out, r.daemonLog())
	})
	return last
}

// TestClaudeAgentTeam: a Claude worker leads an agent team of two
// teammates in tmux panes of its window, and runs a subagent. st shows
// the teammates and the subagent under the lead in st worker list --all
// --json and st orch show --json, follows the teammates from working to
// idle by their hooks, counts their panes in st ls, types nothing into
// them and does not take them for agents of their own; the lead is done
// once it reports, its teammates alive or not.
func TestClaudeAgentTeam(t *testing.T) {
	r := newRig(t)
	r.installHooks()
	r.teamSettings("tmux")
	alpha, beta, sub := r.holdTask("alpha", "go-alpha"), r.holdTask("beta", "go-beta"), r.holdTask("sub", "go-sub")
	lead := r.writeTask("lead.md", strings.Join([]string{
		"TEAMMATE: alpha Your task is in the file " + alpha,
		"TEAMMATE: beta Your task is in the file " + beta,
		"AGENT: Your task is in the file " + sub,
		"RUN: " + r.st + ` worker done --summary "started a team of two and a subagent"`,
		"SAY: my team is at work",
	}, "\n")+"\n")
	out := r.stMust("worker", "start", "--agent", "claude", "--task", lead, "--name", "lead")
	leadPane := strings.Fields(out)[0]

	// Both teammates at work in panes of their own, the subagent too.
	v := r.waitLead("lead", 120*time.Second, "the lead's team at work", func(v teamView) bool {
		pa, sa, _ := v.mate("alpha")
		pb, sb, _ := v.mate("beta")
		return pa != "" && pb != "" && sa == "working" && sb == "working" && len(v.Subagents) == 1 && v.Subagents[0].State == "working"
	})
	pa, _, inA := v.mate("alpha")
	pb, _, _ := v.mate("beta")
	if inA || pa == leadPane || pb == leadPane || pa == pb || !regexp.MustCompile(`^session-[0-9a-f]{8}$`).MatchString(v.Teammates[0].Team) {
		t.Errorf("teammates %+v of lead %s", v.Teammates, leadPane)
	}
	// Their panes are split off the lead's window, as Claude makes them.
	win := strings.TrimSpace(r.tmuxMust("display-message", "-p", "-t", leadPane, "#{window_id}"))
	panes := r.tmuxMust("list-panes", "-t", win, "-F", "#{pane_id}")
	for _, p := range []string{pa, pb} {
		if !strings.Contains(panes, p+"\n") {
			t.Errorf("teammate pane %s is not in the lead's window %s (%q)", p, win, panes)
		}
	}
	if v.Subagents[0].Type != "general-purpose" {
		t.Errorf("subagent %+v", v.Subagents[0])
	}
	// No teammate is a worker, and none carries st's options.
	for _, w := range r.workerViews() {
		if w.ID == pa || w.ID == pb {
			t.Errorf("a teammate is listed as a worker: %+v", w)
		}
	}
	for _, p := range []string{pa, pb} {
		if o, err := r.tmux("show-options", "-p", "-v", "-t", p, "@st_agent"); err == nil && strings.TrimSpace(o) != "" {
			t.Errorf("teammate pane %s has @st_agent=%q", p, o)
		}
	}
	// st ls counts the teammates' panes as agents, and says what they are.
	ls := r.stMust("ls")
	for _, want := range []string{leadPane + " claude worker", pa + " claude teammate", pb + " claude teammate"} {
		if !strings.Contains(ls, want) {
			t.Errorf("st ls lacks %q:\n%s", want, ls)
		}
	}
	if !regexp.MustCompile(`(?m)^main +\d+ +3$`).MatchString(ls) {
		t.Errorf("st ls does not count the lead and its two teammates as 3 agents:\n%s", ls)
	}
	// st orch show --json has them under the lead too.
	var rv struct {
		Views []teamView `json:"worker_views"`
	}
	if err := json.Unmarshal([]byte(r.stMust("orch", "show", "--json")), &rv); err != nil || len(rv.Views) != 1 || len(rv.Views[0].Teammates) != 2 {
		t.Errorf("st orch show --json: %+v %v", rv, err)
	}

	// The teammates finish their turns: idle, from their own hooks.
	os.WriteFile(filepath.Join(r.work(), "go-alpha"), nil, 0o644)
	r.waitLead("lead", 60*time.Second, "alpha idle, beta at work", func(v teamView) bool {
		_, sa, _ := v.mate("alpha")
		_, sb, _ := v.mate("beta")
		return sa == "idle" && sb == "working"
	})
	os.WriteFile(filepath.Join(r.work(), "go-beta"), nil, 0o644)
	os.WriteFile(filepath.Join(r.work(), "go-sub"), nil, 0o644)
	v = r.waitLead("lead", 60*time.Second, "both teammates idle, the subagent done, the lead done", func(v teamView) bool {
		_, sa, _ := v.mate("alpha")
		_, sb, _ := v.mate("beta")
		return sa == "idle" && sb == "idle" && len(v.Subagents) == 1 && v.Subagents[0].State == "done" && v.State == "done"
	})
	if o, e, code := r.st1("worker", "wait", "lead", "--timeout", "10s"); code != 0 {
		t.Errorf("st worker wait lead: exit %d\n%s%s", code, o, e)
	}
	if rd := r.read("lead"); rd.Summary != "started a team of two and a subagent" {
		t.Errorf("the lead's report: %+v", rd)
	}
	// st typed nothing into a teammate's pane: each shows only its own work.
	for _, p := range []string{pa, pb} {
		if s := r.capture(p); strings.Contains(s, "st worker done") || strings.Contains(s, "Your task is in the file "+lead) {
			t.Errorf("something of st's reached teammate %s:\n%s", p, s)
		}
	}
	// Refused to adopt without a person's drop.
	if _, e, code := r.st1("worker", "adopt", pa); code == 0 || !strings.Contains(e, "teammate alpha") {
		t.Errorf("st worker adopt %s: exit %d %s", pa, code, e)
	}
}

// TestClaudeAgentTeamInProcess: a Claude started by hand becomes a
// coordinator (st orch start) and leads a teammate that runs in its own
// process (teammate mode in-process): st orch show --json has it under
// the coordinator, working then idle, and st ls counts no pane for it.
func TestClaudeAgentTeamInProcess(t *testing.T) {
	r := newRig(t)
	r.installHooks()
	r.teamSettings("in-process")
	gamma := r.holdTask("gamma", "go-gamma")
	r.tmuxMust("new-window", "-d", "-t", "main:", "-n", "lead", "-c", r.work(), r.claude+" --permission-mode default")
	ad := mustAdapter(t, "claude")
	waitScreen(t, r, "lead", ad, 60*time.Second)
	pane := strings.TrimSpace(r.tmuxMust("display-message", "-p", "-t", "main:lead", "#{pane_id}"))
	prompt := "RUN: " + r.st + " orch start --objective 'a team in-process' TEAMMATE: gamma Your task is in the file " + gamma + " SAY: gamma is at work"
	r.tmuxMust("send-keys", "-t", "main:lead", "-l", prompt)
	time.Sleep(500 * time.Millisecond) // Claude drops an Enter right after a line typed at once
	r.tmuxMust("send-keys", "-t", "main:lead", "Enter")

	show := func() teamView {
		out, _, code := r.stIn(pane, "orch", "show", "--json")
		var v teamView
		if code == 0 {
			json.Unmarshal([]byte(out), &v)
		}
		return v
	}
	state := func(want string) {
		t.Helper()
		testutil.WaitFor(t, 90*time.Second, func() (bool, string) {
			if v := ad.Recognize(r.capture("main:lead")); v.Screen == agentTyped() {
				r.tmux("send-keys", "-t", "main:lead", "Enter")
			}
			v := show()
			p, s, in := v.mate("gamma")
			return s == want && in && p == "", fmt.Sprintf("gamma %s: st orch show --json: %+v\n%s\n%s", want, v, r.capture("main:lead"), r.daemonLog())
		})
	}
	state("working")
	ls := r.stMust("ls")
	if !strings.Contains(ls, pane+" claude coordinator") || strings.Contains(ls, "teammate") {
		t.Errorf("st ls:\n%s", ls)
	}
	os.WriteFile(filepath.Join(r.work(), "go-gamma"), nil, 0o644)
	state("idle")
	if v := show(); len(v.Subagents) != 0 {
		t.Errorf("the in-process teammate is also a subagent: %+v", v.Subagents)
	}
}

// TestClaudeLeadTurnEndsWithTeammatesAlive (issue 25, item 7;
// docs/agent-teams.md, what st does with them): a Claude worker leads two teammates in panes and
// ends its turn without reporting while both still work. Its turn ends at
// its Stop, as for any worker: st says idle, and st worker wait exits 2
// (it needs attention: idle with no report), while st still shows both
// teammates at work.
func TestClaudeLeadTurnEndsWithTeammatesAlive(t *testing.T) {
	r := newRig(t)
	r.installHooks()
	r.teamSettings("tmux")
	alpha, beta := r.holdTask("alpha", "go-alpha"), r.holdTask("beta", "go-beta")
	lead := r.writeTask("lead.md", strings.Join([]string{
		"TEAMMATE: alpha Your task is in the file " + alpha,
		"TEAMMATE: beta Your task is in the file " + beta,
		"SAY: my team is at work; I report later",
	}, "\n")+"\n")
	leadPane := strings.Fields(r.stMust("worker", "start", "--agent", "claude", "--task", lead, "--name", "lead"))[0]
	t.Cleanup(func() {
		for _, g := range []string{"go-alpha", "go-beta"} {
			os.WriteFile(filepath.Join(r.work(), g), nil, 0o644)
		}
	})

	// The lead's turn ends, its teammates at work in their panes.
	v := r.waitLead("lead", 120*time.Second, "the lead idle, its teammates at work", func(v teamView) bool {
		pa, sa, _ := v.mate("alpha")
		pb, sb, _ := v.mate("beta")
		return v.State == "idle" && pa != "" && pb != "" && sa == "working" && sb == "working"
	})
	start := time.Now()
	o, e, code := r.st1("worker", "wait", "lead", "--timeout", "60s")
	if code != 2 || !regexp.MustCompile(regexp.QuoteMeta(leadPane)+`\s+lead\s+idle`).MatchString(o) {
		t.Errorf("st worker wait lead: exit %d, want 2 (idle, no report):\n%s%s", code, o, e)
	}
	t.Logf("st worker wait returned in %s", time.Since(start).Round(time.Millisecond))
	// Still at work: the wait did not wait for them, and nothing ended them.
	after := r.waitLead("lead", 10*time.Second, "the teammates still at work", func(w teamView) bool {
		_, sa, _ := w.mate("alpha")
		_, sb, _ := w.mate("beta")
		return sa == "working" && sb == "working"
	})
	if after.State != "idle" {
		t.Errorf("the lead is %s after the wait, want idle", after.State)
	}
	for _, name := range []string{"alpha", "beta"} {
		p, _, _ := v.mate(name)
		if _, err := r.tmux("display-message", "-p", "-t", p, "#{pane_id}"); err != nil {
			t.Errorf("teammate %s's pane %s is gone: %v", name, p, err)
		}
	}
	if rd := r.read("lead"); rd.Summary != "" {
		t.Errorf("the lead has a report it never made: %+v", rd)
	}
}
