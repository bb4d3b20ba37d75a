package orch

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/tmux"
)

// Gates on the fake tmux server: a question only a person answers.

func (h *harness) ask(pane string, timeout time.Duration) *api.Gate {
	h.t.Helper()
	g, err := h.m.AskGate(context.Background(), api.GateRequest{Pane: pane, Question: "Ship it?", Options: []string{"yes", "no", " YES "}, Timeout: timeout})
	if err != nil {
		h.t.Fatal(err)
	}
	return g
}

// askWithTokens opens a gate from the worker's pane with answer tokens
// for a push, and returns them by option.
func (h *harness) askWithTokens() (*api.Gate, map[string]string) {
	h.t.Helper()
	g := h.ask(workerID, 0)
	toks, err := h.m.MintAnswerTokens(g.ID)
	if err != nil {
		h.t.Fatal(err)
	}
	return g, toks
}

// gateOnDisk reads gate id back from gates.json.
func gateOnDisk(t *testing.T, home, id string) api.Gate {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(home, "gates.json"))
	if err != nil {
		t.Fatal(err)
	}
	var gs []api.Gate
	if err := json.Unmarshal(b, &gs); err != nil {
		t.Fatal(err)
	}
	for _, g := range gs {
		if g.ID == id {
			return g
		}
	}
	t.Fatalf("gates.json has no gate %s", id)
	return api.Gate{}
}

func TestGateAskAnswerWait(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	ctx := context.Background()
	g := h.ask(workerID, 0)
	if g.State != api.GateOpen || g.Run != testRun || g.Pane != workerID || len(g.Options) != 2 {
		t.Errorf("AskGate = %+v (a repeated option counts once)", g)
	}
	if w := h.worker(); w.State != api.Waiting {
		t.Errorf("the asker is %s, want waiting", w.State)
	}
	if d := h.onDisk(); d.State != api.Waiting {
		t.Errorf("run.json has the asker %s, want waiting", d.State)
	}
	if d := gateOnDisk(t, h.home, g.ID); d.State != api.GateOpen || d.Question != "Ship it?" {
		t.Errorf("gates.json: %+v", d)
	}

	// A wait blocks until the answer.
	got := make(chan *api.Gate, 1)
	go func() {
		w, err := h.m.WaitGate(ctx, api.GateRequest{ID: g.ID, Timeout: time.Minute})
		if err != nil {
			t.Error(err)
		}
		got <- w
	}()

	_, err := h.m.AnswerGate(ctx, api.GateRequest{ID: g.ID, Option: "maybe"})
	wantKind(t, err, api.KindUsage)
	if !strings.Contains(err.Error(), "answer with one of: yes, no") {
		t.Errorf("refusal %q does not list the options", err)
	}
	if w := h.worker(); w.State != api.Waiting {
		t.Errorf("a refused answer moved the asker to %s", w.State)
	}

	a, err := h.m.AnswerGate(ctx, api.GateRequest{ID: g.ID, Option: " No"})
	if err != nil {
		t.Fatal(err)
	}
	if a.State != api.GateAnswered || a.Answer != "no" || a.AnsweredBy != "cli" || a.AnsweredAt == nil {
		t.Errorf("AnswerGate = %+v", a)
	}
	if w := h.worker(); w.State != api.Working {
		t.Errorf("the answered asker is %s, want working", w.State)
	}
	select {
	case w := <-got:
		if w == nil || w.State != api.GateAnswered || w.Answer != "no" {
			t.Errorf("WaitGate = %+v", w)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the wait was not woken by the answer")
	}

	_, err = h.m.AnswerGate(ctx, api.GateRequest{ID: g.ID, Option: "yes", By: "web"})
	wantKind(t, err, api.KindConflict)
	if !strings.Contains(err.Error(), `already answered "no" (by cli)`) {
		t.Errorf("second answer: %v", err)
	}
	if d := gateOnDisk(t, h.home, g.ID); d.State != api.GateAnswered || d.Answer != "no" {
		t.Errorf("gates.json after a refused second answer: %+v", d)
	}
	_, err = h.m.AnswerGate(ctx, api.GateRequest{ID: "gate-nosuch", Option: "yes"})
	wantKind(t, err, api.KindNotFound)
	_, err = h.m.WaitGate(ctx, api.GateRequest{ID: "gate-nosuch"})
	wantKind(t, err, api.KindNotFound)
}

func TestGateAskRefusals(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	for name, req := range map[string]api.GateRequest{
		"no question":          {Pane: workerID, Options: []string{"a", "b"}},
		"one option":           {Pane: workerID, Question: "q?", Options: []string{"a"}},
		"one option twice":     {Pane: workerID, Question: "q?", Options: []string{"a", "A", " "}},
		"control in question":  {Pane: workerID, Question: "q\x1b[2J?", Options: []string{"a", "b"}},
		"control in an option": {Pane: workerID, Question: "q?", Options: []string{"a", "b\x07"}},
	} {
		_, err := h.m.AskGate(context.Background(), req)
		if err == nil {
			t.Errorf("%s: the gate was opened", name)
			continue
		}
		wantKind(t, err, api.KindUsage)
	}
	if gs := h.m.Gates(context.Background(), true); len(gs) != 0 {
		t.Errorf("gates after refusals: %+v", gs)
	}
	if w := h.worker(); w.State != api.Working {
		t.Errorf("a refused gate moved the asker to %s", w.State)
	}
}

func TestGateTimesOut(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	ctx := context.Background()
	g := h.ask(workerID, 50*time.Millisecond)
	if g.Deadline == nil {
		t.Fatal("a gate with a timeout has no deadline")
	}
	// The wait outlasts the gate: it returns the gate closed.
	w, err := h.m.WaitGate(ctx, api.GateRequest{ID: g.ID, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if w.State != api.GateTimedOut || w.Answer != "" {
		t.Errorf("WaitGate = %+v, want timed out", w)
	}
	if d := gateOnDisk(t, h.home, g.ID); d.State != api.GateTimedOut {
		t.Errorf("gates.json: %s, want timed out", d.State)
	}
	_, err = h.m.AnswerGate(ctx, api.GateRequest{ID: g.ID, Option: "yes"})
	wantKind(t, err, api.KindConflict)
	if !strings.Contains(err.Error(), "timed out before an answer came") {
		t.Errorf("answer after the timeout: %v", err)
	}
	if gs := h.m.Gates(ctx, false); len(gs) != 0 {
		t.Errorf("open gates: %+v", gs)
	}
}

// A wait with a timeout shorter than the gate's returns it still open.
func TestGateWaitTimeoutLeavesItOpen(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	g := h.ask(workerID, 0)
	w, err := h.m.WaitGate(context.Background(), api.GateRequest{ID: g.ID, Timeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if w.State != api.GateOpen {
		t.Errorf("WaitGate = %+v, want the gate still open", w)
	}
}

func TestGateAnswerTokens(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	ctx := context.Background()
	g, toks := h.askWithTokens()
	if len(toks) != 2 || toks["yes"] == "" || toks["no"] == "" || toks["yes"] == toks["no"] {
		t.Fatalf("tokens: %v", toks)
	}
	// Only the tokens' hashes are kept, and no view shows them.
	b, _ := os.ReadFile(filepath.Join(h.home, "gates.json"))
	for _, tok := range toks {
		if strings.Contains(string(b), tok) {
			t.Error("gates.json keeps an answer token")
		}
	}
	if gs := h.m.Gates(ctx, true); len(gs) != 1 || gs[0].AnswerKeys != nil {
		t.Errorf("Gates shows the answer keys: %+v", gs)
	}
	for name, tok := range map[string]string{
		"made up":   strings.Repeat("ab", 32),
		"too short": toks["yes"][:63],
		"empty":     "",
	} {
		if _, err := h.m.AnswerGateByToken(ctx, tok); !errors.Is(err, ErrBadAnswerToken) {
			t.Errorf("%s token: %v, want ErrBadAnswerToken", name, err)
		}
	}
	a, err := h.m.AnswerGateByToken(ctx, toks["yes"])
	if err != nil {
		t.Fatal(err)
	}
	if a.State != api.GateAnswered || a.Answer != "yes" || a.AnsweredBy != "push" {
		t.Errorf("AnswerGateByToken = %+v", a)
	}
	if w := h.worker(); w.State != api.Working {
		t.Errorf("the asker is %s after the push's answer, want working", w.State)
	}
	// The token used, and the other option's, answer nothing now.
	for _, opt := range []string{"yes", "no"} {
		if _, err := h.m.AnswerGateByToken(ctx, toks[opt]); !errors.Is(err, ErrBadAnswerToken) {
			t.Errorf("%s's token after the answer: %v, want ErrBadAnswerToken", opt, err)
		}
	}
	if d := gateOnDisk(t, h.home, g.ID); d.Answer != "yes" || len(d.AnswerKeys) != 0 {
		t.Errorf("gates.json after the answer: %+v", d)
	}
	if _, err := h.m.MintAnswerTokens(g.ID); err == nil {
		t.Error("tokens minted for an answered gate")
	}
}

// Gates outlive st: a new Manager on the same home has them, and a push
// sent before the restart still answers.
func TestGatesSurviveARestartOfSt(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	ctx := context.Background()
	g, toks := h.askWithTokens()
	h.m.Close()
	m2, err := NewManager(ctx, Config{Home: h.home, STBin: "/bin/st", Tmux: tmux.NewWithRunner("/tmp/fake.sock", h.tm)})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	gs := m2.Gates(ctx, false)
	if len(gs) != 1 || gs[0].ID != g.ID || gs[0].State != api.GateOpen || gs[0].Question != "Ship it?" {
		t.Fatalf("gates after a restart of st: %+v", gs)
	}
	a, err := m2.AnswerGateByToken(ctx, toks["no"])
	if err != nil {
		t.Fatal(err)
	}
	if a.Answer != "no" {
		t.Errorf("answer %q", a.Answer)
	}
	v, err := m2.Read(ctx, api.IDRequest{ID: workerID})
	if err != nil {
		t.Fatal(err)
	}
	if v.State != api.Working {
		t.Errorf("the asker is %s once answered after the restart, want working", v.State)
	}
}

// After a restart of the tmux server, the asker's old pane id means
// another pane: the gate keeps it retired, or follows the pane that came
// back.
func TestGateRelinkRetiresTheAsker(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	ctx := context.Background()
	gone := h.ask(workerID, 0)
	moved := h.ask(coord, 0)
	h.addPane("%21", map[string]string{})
	h.m.relink(ctx, map[string]string{coord: "%21"}, nil, true)
	for _, g := range h.m.Gates(ctx, true) {
		switch g.ID {
		case gone.ID:
			if !strings.HasPrefix(g.Pane, workerID+api.RetiredMark) || api.PaneOf(g.Pane) != workerID {
				t.Errorf("the gate of a pane that did not come back names %q, want %s retired", g.Pane, workerID)
			}
		case moved.ID:
			if g.Pane != "%21" {
				t.Errorf("the gate of a pane that came back as %%21 names %q", g.Pane)
			}
		}
	}
	if d := gateOnDisk(t, h.home, gone.ID); !strings.HasPrefix(d.Pane, workerID+api.RetiredMark) {
		t.Errorf("gates.json names %q", d.Pane)
	}
	// The gate can still be answered.
	if _, err := h.m.AnswerGate(ctx, api.GateRequest{ID: gone.ID, Option: "yes"}); err != nil {
		t.Fatal(err)
	}
}

// TestGateWithdrawn: a gate its asker withdraws (Ctrl-C on st gate ask)
// leaves the open gates, wakes its waiters, puts the asker back to work,
// and takes no answer: not from st gate answer, nor from its push's
// links. Only the pane that asked it is its asker to authz.
func TestGateWithdrawn(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	ctx := context.Background()
	g, toks := h.askWithTokens()
	if !h.m.AskedGate(workerID, g.ID) || h.m.AskedGate("%99", g.ID) || h.m.AskedGate("", g.ID) || h.m.AskedGate(workerID, "gate-nosuch") {
		t.Errorf("AskedGate does not name the asker's pane alone")
	}
	got := make(chan *api.Gate, 1)
	go func() {
		w, err := h.m.WaitGate(ctx, api.GateRequest{ID: g.ID, Timeout: time.Minute})
		if err != nil {
			t.Error(err)
		}
		got <- w
	}()
	w, err := h.m.WithdrawGate(ctx, api.GateRequest{Pane: workerID, ID: g.ID})
	if err != nil {
		t.Fatal(err)
	}
	if w.State != api.GateWithdrawn || w.Answer != "" || w.AnswerKeys != nil {
		t.Errorf("WithdrawGate = %+v", w)
	}
	if gs := h.m.Gates(ctx, false); len(gs) != 0 {
		t.Errorf("a withdrawn gate is still open: %+v", gs)
	}
	if gs := h.m.Gates(ctx, true); len(gs) != 1 || gs[0].State != api.GateWithdrawn {
		t.Errorf("st gate list --all: %+v", gs)
	}
	if d := gateOnDisk(t, h.home, g.ID); d.State != api.GateWithdrawn || len(d.AnswerKeys) != 0 {
		t.Errorf("gates.json: %+v", d)
	}
	if w := h.worker(); w.State != api.Working {
		t.Errorf("the asker is %s after its gate was withdrawn, want working", w.State)
	}
	select {
	case w := <-got:
		if w == nil || w.State != api.GateWithdrawn {
			t.Errorf("WaitGate = %+v", w)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the wait was not woken by the withdrawal")
	}
	_, err = h.m.AnswerGate(ctx, api.GateRequest{ID: g.ID, Option: "yes"})
	wantKind(t, err, api.KindConflict)
	if !strings.Contains(err.Error(), "was withdrawn by its asker") {
		t.Errorf("an answer after the withdrawal: %v", err)
	}
	for _, opt := range []string{"yes", "no"} {
		if _, err := h.m.AnswerGateByToken(ctx, toks[opt]); !errors.Is(err, ErrBadAnswerToken) {
			t.Errorf("%s's push link after the withdrawal: %v, want ErrBadAnswerToken", opt, err)
		}
	}
	_, err = h.m.WithdrawGate(ctx, api.GateRequest{Pane: workerID, ID: g.ID})
	wantKind(t, err, api.KindConflict)
	_, err = h.m.WithdrawGate(ctx, api.GateRequest{ID: "gate-nosuch"})
	wantKind(t, err, api.KindNotFound)

	// An answered gate is not withdrawn: its answer stands.
	a := h.ask(workerID, 0)
	if _, err := h.m.AnswerGate(ctx, api.GateRequest{ID: a.ID, Option: "no"}); err != nil {
		t.Fatal(err)
	}
	_, err = h.m.WithdrawGate(ctx, api.GateRequest{Pane: workerID, ID: a.ID})
	wantKind(t, err, api.KindConflict)
	if d := gateOnDisk(t, h.home, a.ID); d.State != api.GateAnswered || d.Answer != "no" {
		t.Errorf("gates.json after a refused withdrawal: %+v", d)
	}
}

// The gates renamed after a restart of the tmux server are written with
// the registry's lock let go (issue 36 item 1): while that write is held
// up, st status is answered; once it lands, gates.json names the asker
// retired.
func TestGatesRetiredAreWrittenWithTheManagerFree(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	ctx := context.Background()
	g := h.ask(workerID, 0)
	writing, release := make(chan struct{}), make(chan struct{})
	var once, let sync.Once
	defer let.Do(func() { close(release) })
	h.m.gates.wmu.Lock()
	h.m.gates.write = func(path string, v any, mode os.FileMode) error {
		once.Do(func() { close(writing) })
		<-release
		return store.WriteJSON(path, v, mode)
	}
	h.m.gates.wmu.Unlock()
	relinked := make(chan struct{})
	go func() {
		defer close(relinked)
		h.m.relink(ctx, map[string]string{}, nil, true)
	}()
	select {
	case <-writing:
	case <-time.After(10 * time.Second):
		t.Fatal("the relink never wrote the gates")
	}
	runGuarded(t, "st status while the retired gates are being written", func() { h.m.Status() })
	let.Do(func() { close(release) })
	<-relinked
	if d := gateOnDisk(t, h.home, g.ID); !strings.HasPrefix(d.Pane, workerID+api.RetiredMark) {
		t.Errorf("gates.json names %q after the restart, want %s retired", d.Pane, workerID)
	}
}
