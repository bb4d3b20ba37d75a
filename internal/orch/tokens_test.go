package orch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/tokens"
)

// transcript is a Claude-form transcript in the test's folder; say
// appends one response of in input and out output tokens (two records
// under one message.id).
type transcript struct {
	t    *testing.T
	path string
	n    int
}

func newTranscript(t *testing.T) *transcript {
	return &transcript{t: t, path: filepath.Join(t.TempDir(), agentSes+".jsonl")}
}

func (tr *transcript) say(in, out int) {
	tr.t.Helper()
	tr.n++
	rec := fmt.Sprintf(`{"type":"assistant","message":{"id":"msg_%d","model":"claude-x","usage":{"input_tokens":%d,"output_tokens":%d}}}`+"\n", tr.n, in, out)
	f, err := os.OpenFile(tr.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		tr.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(rec + rec); err != nil {
		tr.t.Fatal(err)
	}
}

// A worker's tokens come from the transcript its hooks name, read at each
// hook from where the last read stopped; a restart of st reads on from
// the offsets run.json kept, and counts nothing twice.
func TestTokensReadAtHooksAndAfterARestart(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	tr := newTranscript(t)
	tr.say(100, 20)
	h.hook("PreToolUse", "transcript_path", tr.path, "tool_name", "Bash", "tool_input", map[string]any{"command": "ls"})
	if got := h.worker().Tokens; got == nil || got.Total != 120 || got.Input != 100 || got.Output != 20 {
		t.Fatalf("after the first hook: %+v, want 100 in, 20 out", got)
	}
	tr.say(1000, 5)
	h.hook("Stop", "transcript_path", tr.path, "last_assistant_message", "done")
	if got := h.worker().Tokens; got == nil || got.Total != 1125 {
		t.Fatalf("after Stop: %+v, want a total of 1125", got)
	}
	// The turn's end wrote run.json, with the counts and the offsets.
	d := h.onDisk()
	if d.Tokens == nil || d.Tokens.Total != 1125 || d.Ledger == nil || d.Ledger.Files[0].Offset == 0 {
		t.Fatalf("run.json keeps %+v / %+v", d.Tokens, d.Ledger)
	}

	// A new st on the same home: one more response, read from the kept
	// offset (the first two would count again from the start).
	h.m.Close()
	m, err := NewManager(context.Background(), Config{Home: h.home, STBin: "/bin/st", Tmux: h.tm.Client(), ReadWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	h.m = m
	tr.say(7, 3)
	h.hook("UserPromptSubmit", "transcript_path", tr.path, "prompt", "more")
	if got := h.worker().Tokens; got == nil || got.Total != 1135 {
		t.Fatalf("after a restart: %+v, want 1135 (nothing counted twice)", got)
	}
}

// A coordinator's own tokens come from its pane's transcript, read at its
// hooks as a worker's are: st orch show has them apart from its workers'
// total, they do not count to the run's budget, and a restart of st reads
// on from the offset run.json kept.
func TestCoordinatorsOwnTokens(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	h.m.reg.mu.Lock()
	h.m.reg.runs[testRun].Budget = &tokens.Budget{Tokens: 100}
	h.m.reg.mu.Unlock()
	tr := newTranscript(t)
	tr.say(400, 30)
	if err := h.hookFrom(coord, "Stop", "transcript_path", tr.path, "last_assistant_message", "started a worker"); err != nil {
		t.Fatal(err)
	}
	show := func() *api.RunView {
		t.Helper()
		v, err := h.m.Show(context.Background(), coord, "")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	v := show()
	if c := v.CoordinatorTokens; c == nil || c.Total != 430 || c.Input != 400 || c.Output != 30 {
		t.Fatalf("the coordinator's own tokens: %+v, want 400 in, 30 out", c)
	}
	if v.Tokens != nil || v.BudgetUse == nil || v.BudgetUse.Used != 0 || v.BudgetUse.Held {
		t.Fatalf("the coordinator's tokens counted as its workers' or to the budget: %+v %+v", v.Tokens, v.BudgetUse)
	}
	h.m.Close()
	m, err := NewManager(context.Background(), Config{Home: h.home, STBin: "/bin/st", Tmux: h.tm.Client(), ReadWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	h.m = m
	tr.say(10, 2)
	if err := h.hookFrom(coord, "UserPromptSubmit", "transcript_path", tr.path, "prompt", "more"); err != nil {
		t.Fatal(err)
	}
	if c := show().CoordinatorTokens; c == nil || c.Total != 442 {
		t.Fatalf("after a restart: %+v, want 442 (nothing counted twice)", c)
	}
}

// A transcript path that is not an absolute, clean .jsonl path is never
// read.
func TestTokensRefuseAStrangePath(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	tr := newTranscript(t)
	tr.say(100, 20)
	for _, p := range []string{"relative.jsonl", tr.path + "/../" + filepath.Base(tr.path), strings.TrimSuffix(tr.path, ".jsonl") + ".txt"} {
		h.hook("PreToolUse", "transcript_path", p, "tool_name", "Bash", "tool_input", map[string]any{"command": "ls"})
	}
	if got := h.worker().Tokens; got != nil {
		t.Fatalf("a strange path was read: %+v", got)
	}
}

// A run's budget: at 80 % its coordinator's notice is queued, at 100 % a
// gate opens and st refuses the run's new workers until it is answered;
// "stop the run's workers" stops them.
func TestBudgetGateStopsTheRunsWorkers(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	h.m.reg.mu.Lock()
	h.m.reg.runs[testRun].Budget = &tokens.Budget{Tokens: 1000}
	h.m.reg.mu.Unlock()
	// The coordinator's notice loop is held (as if one ran already), so
	// the notice stays queued for the test to read: a loop of its own
	// takes it at once and drops it (the harness's coordinator pane runs
	// no agent), which under load came before the test's look.
	h.m.notices.mu.Lock()
	h.m.notices.kicks[coord] = make(chan struct{}, 1)
	h.m.notices.mu.Unlock()
	tr := newTranscript(t)
	tr.say(800, 50)
	h.hook("PreToolUse", "transcript_path", tr.path, "tool_name", "Bash", "tool_input", map[string]any{"command": "ls"})
	h.m.notices.mu.Lock()
	p := append([]notice(nil), h.m.notices.pending[coord]...)
	h.m.notices.mu.Unlock()
	if len(p) != 1 || !strings.Contains(p[0].text, "has used 85% of its budget (850 of 1k)") {
		t.Fatalf("the coordinator's notices: %+v", p)
	}
	if err := h.m.checkBudgetHold(coord); err != nil {
		t.Fatalf("under its budget, a start was refused: %v", err)
	}
	tr.say(200, 10)
	h.hook("Stop", "transcript_path", tr.path, "last_assistant_message", "done")
	gs := h.m.Gates(context.Background(), false)
	if len(gs) != 1 || gs[0].Run != testRun || !strings.Contains(gs[0].Question, "has spent its budget: 1k of 1k") {
		t.Fatalf("gates: %+v", gs)
	}
	err := h.m.checkBudgetHold(coord)
	if err == nil || !strings.Contains(err.Error(), "until gate "+gs[0].ID+" is answered") {
		t.Fatalf("a start past the budget: %v", err)
	}
	if _, err := h.m.AnswerGate(context.Background(), api.GateRequest{ID: gs[0].ID, Option: budgetStop, By: "cli"}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, func() (bool, string) {
		s := h.worker().State
		return s == api.Gone, "worker " + string(s)
	})
	if err := h.m.checkBudgetHold(coord); err != nil {
		t.Fatalf("the gate is answered, and starts are still refused: %v", err)
	}
}

// Answered "go on", the budget doubles and the run's held tasks start.
func TestBudgetGateGoOn(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	h.m.reg.mu.Lock()
	h.m.reg.runs[testRun].Budget = &tokens.Budget{Tokens: 100}
	h.m.reg.mu.Unlock()
	tr := newTranscript(t)
	tr.say(150, 0)
	h.hook("Stop", "transcript_path", tr.path, "last_assistant_message", "done")
	gs := h.m.Gates(context.Background(), false)
	if len(gs) != 1 || gs[0].Options[0] != budgetGoOn+"200" {
		t.Fatalf("gates: %+v", gs)
	}
	if _, err := h.m.AnswerGate(context.Background(), api.GateRequest{ID: gs[0].ID, Option: gs[0].Options[0], By: "cli"}); err != nil {
		t.Fatal(err)
	}
	v, err := h.m.Show(context.Background(), coord, "")
	if err != nil {
		t.Fatal(err)
	}
	if b := v.BudgetUse; b == nil || b.Tokens != 200 || b.Held || b.Used != 0.75 || v.Tokens.Total != 150 {
		t.Fatalf("after go on: %+v (tokens %+v)", b, v.Tokens)
	}
	if h.worker().State == api.Gone {
		t.Fatal("go on stopped the worker")
	}
}

// Answering the budget's gate can set the new amount: one the run has
// spent already is refused (it would open the gate again at once), a
// word that is not an amount is refused with what to write, and a good
// one, given as --value or as the option with its amount, is the run's
// budget in st orch show, with its new workers started again.
func TestBudgetGateGoOnWithANewAmount(t *testing.T) {
	for _, answer := range []api.GateRequest{{Value: "1k"}, {Option: "Go on with a budget of 1k"}, {Option: budgetGoOn, Value: " 1000 "}} {
		h := newHarness(t, api.Working, nil)
		h.m.reg.mu.Lock()
		h.m.reg.runs[testRun].Budget = &tokens.Budget{Tokens: 100}
		h.m.reg.mu.Unlock()
		tr := newTranscript(t)
		tr.say(150, 0)
		h.hook("Stop", "transcript_path", tr.path, "last_assistant_message", "done")
		gs := h.m.Gates(context.Background(), false)
		if len(gs) != 1 || gs[0].Value == nil || gs[0].Value.Prefix != budgetGoOn {
			t.Fatalf("gates: %+v", gs)
		}
		id := gs[0].ID
		for _, c := range []struct {
			bad  api.GateRequest
			want string
		}{
			{api.GateRequest{ID: id, Value: "120"}, "has spent 150 already, so a budget of 120 would be spent at once"},
			{api.GateRequest{ID: id, Value: "lots"}, "write tokens (500k, 2M, 800000) or dollars"},
			{api.GateRequest{ID: id, Option: budgetStop, Value: "5k"}, "takes no amount"},
			{api.GateRequest{ID: id, Option: "go on with a budget of -3"}, "write tokens"},
			{api.GateRequest{ID: id, Option: "go on with a budget of plenty"}, "write tokens"},
		} {
			if _, err := h.m.AnswerGate(context.Background(), c.bad); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("answer %+v: %v, want %q", c.bad, err, c.want)
			}
		}
		answer.ID, answer.By = id, "cli"
		g, err := h.m.AnswerGate(context.Background(), answer)
		if err != nil {
			t.Fatalf("answer %+v: %v", answer, err)
		}
		if g.Answer != budgetGoOn+"1k" {
			t.Errorf("answer %+v taken as %q", answer, g.Answer)
		}
		v, err := h.m.Show(context.Background(), coord, "")
		if err != nil {
			t.Fatal(err)
		}
		if b := v.BudgetUse; b == nil || b.Tokens != 1000 || b.Text != "1k" || b.Held || b.Used != 0.15 {
			t.Fatalf("after %+v: %+v", answer, b)
		}
		if err := h.m.checkBudgetHold(coord); err != nil {
			t.Errorf("after the new budget, a start is refused: %v", err)
		}
		if _, err := h.m.AnswerGate(context.Background(), api.GateRequest{ID: id, Value: "2k"}); err == nil || !strings.Contains(err.Error(), "already answered") {
			t.Errorf("a second answer: %v", err)
		}
	}
}

// A worker on another machine counts against its run's budget here, as
// its machine reports its tokens with its state.
func TestRemoteWorkersTokensCountToTheBudget(t *testing.T) {
	h := remoteHarness(t)
	h.addWorker(remoteWorker("beta", "%4", "far", refA, api.Working))
	h.m.reg.mu.Lock()
	h.m.reg.runs[testRun].Budget = &tokens.Budget{Tokens: 1000}
	h.m.reg.mu.Unlock()
	h.m.Remotes().ApplyWatch("beta", []api.WorkerView{{Worker: api.Worker{ID: "%4", Name: "far", Agent: "sim", State: api.Working, Ref: refA,
		Tokens: &api.Tokens{Input: 900, Output: 200, Total: 1100}}}}, nil)
	if w := h.remote("beta/%4"); w.Tokens == nil || w.Tokens.Total != 1100 {
		t.Fatalf("far's tokens: %+v", w.Tokens)
	}
	gs := h.m.Gates(context.Background(), false)
	if len(gs) != 1 || !strings.Contains(gs[0].Question, "1.1k of 1k") {
		t.Fatalf("gates: %+v", gs)
	}
	v, err := h.m.Show(context.Background(), coord, "")
	if err != nil || v.Tokens == nil || v.Tokens.Total != 1100 || !v.BudgetUse.Held {
		t.Fatalf("the run: %+v %v", v, err)
	}
}

// An agent whose record holds no response yet shows no tokens (not 0),
// and its done notice says nothing of them.
func TestNoTokensBeforeAResponse(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	tr := newTranscript(t)
	if err := os.WriteFile(tr.path, []byte(`{"type":"user","message":{"role":"user","content":"hi"}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.hook("Stop", "transcript_path", tr.path, "last_assistant_message", "done")
	if got := h.worker().Tokens; got != nil {
		t.Fatalf("tokens before any response: %+v", got)
	}
	if s := spentNote(nil) + spentNote(&api.Tokens{}); s != "" {
		t.Fatalf("a notice of no tokens says %q", s)
	}
}

// A coordinator's own tokens are its run's, counted from the run's start:
// what its conversation spent before st orch start (an earlier run of it,
// the turn that ran st orch start) is not; a restart of st counts nothing
// twice. A pane that coordinated no run yet is counted from its start too.
func TestCoordinatorsOwnTokensFromTheRunsStart(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	ctx := context.Background()
	tr := newTranscript(t)
	tr.say(400, 30)
	if err := h.hookFrom(coord, "Stop", "transcript_path", tr.path, "last_assistant_message", "started a worker"); err != nil {
		t.Fatal(err)
	}
	tr.say(50, 5) // the turn that runs st orch start, before its next hook
	run2, err := h.m.StartRun(ctx, api.StartRunRequest{Pane: coord, Objective: "the second run"})
	if err != nil {
		t.Fatal(err)
	}
	tr.say(10, 2)
	if err := h.hookFrom(coord, "Stop", "transcript_path", tr.path, "last_assistant_message", "started another"); err != nil {
		t.Fatal(err)
	}
	own := func(id string) int64 {
		t.Helper()
		v, err := h.m.Show(ctx, coord, id)
		if err != nil {
			t.Fatal(err)
		}
		if v.CoordinatorTokens == nil {
			return -1
		}
		return v.CoordinatorTokens.Total
	}
	if got, first := own(run2.ID), own(testRun); got != 12 || first != 430 {
		t.Fatalf("the second run's coordinator tokens %d, the first's %d; want 12 (10 in, 2 out since the start) and 430", got, first)
	}
	h.m.Close()
	m, err := NewManager(ctx, Config{Home: h.home, STBin: "/bin/st", Tmux: h.tm.Client(), ReadWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	h.m = m
	tr.say(1, 1)
	if err := h.hookFrom(coord, "UserPromptSubmit", "transcript_path", tr.path, "prompt", "more"); err != nil {
		t.Fatal(err)
	}
	if got := own(run2.ID); got != 14 {
		t.Fatalf("after a restart: %d, want 14 (nothing before the run, nothing twice)", got)
	}

	// A pane's first run: its talk before st orch start is not the run's.
	tr2 := newTranscript(t)
	tr2.say(700, 70)
	if err := h.hookFrom(shell, "Stop", "transcript_path", tr2.path, "last_assistant_message", "planned"); err != nil {
		t.Fatal(err)
	}
	run3, err := h.m.StartRun(ctx, api.StartRunRequest{Pane: shell, Objective: "a first run"})
	if err != nil {
		t.Fatal(err)
	}
	tr2.say(20, 3)
	if err := h.hookFrom(shell, "Stop", "transcript_path", tr2.path, "last_assistant_message", "started one"); err != nil {
		t.Fatal(err)
	}
	v, err := h.m.Show(ctx, shell, run3.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c := v.CoordinatorTokens; c == nil || c.Total != 23 || c.Input != 20 || c.Output != 3 {
		t.Fatalf("a first run's coordinator tokens: %+v, want 20 in, 3 out", c)
	}
}

// A coordinator's read that found rate limits alone (Codex writes a
// token_count with no counts, its limits only) changes none of its
// tokens: it once took a read with no ledger for one.
func TestCoordinatorsReadOfLimitsAlone(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	path := filepath.Join(t.TempDir(), "rollout-2026-12-07T19-00-00-"+agentSes+".jsonl")
	write := func(line string) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(line + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	stop := func() {
		t.Helper()
		p := payload("Stop", "transcript_path", path, "last_assistant_message", "ok")
		if _, err := h.m.Hook(context.Background(), api.HookRequest{Agent: "codex", Event: "Stop", Pane: coord, Payload: p}); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":300,"output_tokens":20}}}}`)
	stop()
	write(`{"type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{"primary":{"used_percent":50,"window_minutes":300}}}}`)
	stop()
	v, err := h.m.Show(context.Background(), coord, "")
	if err != nil {
		t.Fatal(err)
	}
	if c := v.CoordinatorTokens; c == nil || c.Total != 320 {
		t.Fatalf("the coordinator's own tokens: %+v, want 320", c)
	}
}

// A restart of st between a coordinator's two runs: the second run is
// counted from its start all the same, from what the first run kept.
func TestCoordinatorsOwnTokensAfterARestartBetweenRuns(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	ctx := context.Background()
	tr := newTranscript(t)
	tr.say(400, 30)
	if err := h.hookFrom(coord, "Stop", "transcript_path", tr.path, "last_assistant_message", "started a worker"); err != nil {
		t.Fatal(err)
	}
	h.m.Close()
	m, err := NewManager(ctx, Config{Home: h.home, STBin: "/bin/st", Tmux: h.tm.Client(), ReadWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	h.m = m
	tr.say(50, 5)
	run2, err := h.m.StartRun(ctx, api.StartRunRequest{Pane: coord, Objective: "after a restart"})
	if err != nil {
		t.Fatal(err)
	}
	tr.say(10, 2)
	if err := h.hookFrom(coord, "Stop", "transcript_path", tr.path, "last_assistant_message", "started another"); err != nil {
		t.Fatal(err)
	}
	v, err := h.m.Show(ctx, coord, run2.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c := v.CoordinatorTokens; c == nil || c.Total != 12 {
		t.Fatalf("the second run's coordinator tokens: %+v, want 12 (10 in, 2 out)", c)
	}
}
