package orch

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/tokens"
)

// limitRecord appends Claude's record of a usage limit that resets at
// resets (reference §13: apiErrorParams.rate_limit_info.resetsAt, epoch
// seconds) to the transcript.
func (tr *transcript) limitRecord(resets time.Time, text string) {
	tr.t.Helper()
	rec, err := json.Marshal(map[string]any{
		"type": "assistant", "isApiErrorMessage": true,
		"apiErrorParams": map[string]any{"rate_limit_info": map[string]any{"resetsAt": resets.Unix()}},
		"message":        map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}}},
	})
	if err != nil {
		tr.t.Fatal(err)
	}
	f, err := os.OpenFile(tr.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		tr.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(rec, '\n')); err != nil {
		tr.t.Fatal(err)
	}
}

// openItemsOf is the open attention items of pane.
func (h *harness) openItemsOf(pane string) []api.Attention {
	var out []api.Attention
	for _, a := range h.m.attn.List(false).Items {
		if a.Pane == pane {
			out = append(out, a)
		}
	}
	return out
}

// showRun is st orch show of the coordinator's run.
func (h *harness) showRun() *api.RunView {
	h.t.Helper()
	v, err := h.m.Show(context.Background(), coord, "")
	if err != nil {
		h.t.Fatal(err)
	}
	return v
}

// coordCard is the web UI's card of the coordinator.
func (h *harness) coordCard() api.GraphAgent {
	h.t.Helper()
	for _, g := range h.m.Graph() {
		if g.Pane == coord {
			return g
		}
	}
	h.t.Fatal("the graph has no card for the coordinator")
	return api.GraphAgent{}
}

// limitCoordinator has the coordinator's sim stop at its usage limit, an
// hour ahead, as Claude does (its record, then StopFailure rate_limit),
// and returns the reset and the agent's words.
func (h *harness) limitCoordinator(tr *transcript) (time.Time, string) {
	h.t.Helper()
	resets := time.Now().Add(time.Hour).Truncate(time.Second)
	text := "You've hit your 5-hour limit · resets " + strings.ToLower(resets.UTC().Format("3pm")) + " (UTC)"
	if err := h.hookFrom(coord, "UserPromptSubmit", "transcript_path", tr.path, "prompt", "plan the work"); err != nil {
		h.t.Fatal(err)
	}
	tr.limitRecord(resets, text)
	if err := h.hookFrom(coord, "StopFailure", "transcript_path", tr.path, "error", "rate_limit", "last_assistant_message", text); err != nil {
		h.t.Fatal(err)
	}
	return resets, text
}

// A coordinator whose own agent stops at its usage limit is paused as a
// worker is (issue 35 §3): st orch show (and its JSON), st status and the
// web UI's card say so with the exact reset from its transcript, an
// attention item opens, its notices wait, and run.json keeps the pause.
func TestCoordinatorPausedAtItsLimit(t *testing.T) {
	t.Setenv("ST_SIM_AUTO_CONTINUE", "1")
	h := newHarness(t, api.Working, nil)
	tr := newTranscript(t)
	resets, text := h.limitCoordinator(tr)
	v := h.showRun()
	p := v.CoordinatorPause
	if p == nil || !p.Resets.Equal(resets) || !p.Exact || p.By != "agent" || p.Reason != "usage limit" || v.CoordinatorAgent != "sim" {
		t.Fatalf("st orch show: the coordinator's pause is %+v (agent %q), want paused until %s (exact), going on by itself", p, v.CoordinatorAgent, resets)
	}
	if want := resets.Add(10 * time.Second); !p.GoesOnBy.Equal(want) {
		t.Errorf("st looks at %s, want at the end of the sim's grace %s", p.GoesOnBy, want)
	}
	b, _ := json.Marshal(v)
	if !strings.Contains(string(b), `"coordinator_pause":{"reason":"usage limit"`) {
		t.Errorf("st orch show --json has no coordinator_pause: %s", b)
	}
	if s := h.m.Status(); len(s.Coordinators) != 1 || s.Coordinators[0].Pane != coord || s.Coordinators[0].Run != testRun || s.Coordinators[0].Agent != "sim" {
		t.Errorf("st status: paused coordinators %+v", s.Coordinators)
	}
	if g := h.coordCard(); g.State != "paused" || g.Pause == nil || !g.Pause.Resets.Equal(resets) {
		t.Errorf("the web UI's card of the coordinator: %s, %+v", g.State, g.Pause)
	}
	items := h.openItemsOf(coord)
	if len(items) != 1 || items[0].Kind != api.AttnPaused || items[0].Run != testRun || items[0].Text != text {
		t.Fatalf("the coordinator's open items: %+v, want one paused item", items)
	}
	if !h.m.coordPaused(coord) {
		t.Error("the coordinator's notices do not wait while it is paused")
	}
	if d := h.runOnDisk(); d.CoordPause == nil || !d.CoordPause.Resets.Equal(resets) || d.CoordTranscript != tr.path || !d.CoordLimitSeen.Equal(resets) {
		t.Fatalf("run.json keeps %+v, transcript %q, seen %s", d.CoordPause, d.CoordTranscript, d.CoordLimitSeen)
	}
}

// The pause of a coordinator outlives a restart of st; its next turn
// (the continue's) ends it and closes its item, and the same limit read
// again from records that still end there pauses nothing.
func TestCoordinatorGoesOnAfterItsLimit(t *testing.T) {
	t.Setenv("ST_SIM_AUTO_CONTINUE", "1")
	h := newHarness(t, api.Working, nil)
	tr := newTranscript(t)
	resets, _ := h.limitCoordinator(tr)
	h.m.Close()
	m, err := NewManager(context.Background(), Config{Home: h.home, STBin: "/bin/st", Tmux: h.tm.Client(), ReadWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	h.m = m
	if p := h.showRun().CoordinatorPause; p == nil || !p.Resets.Equal(resets) {
		t.Fatalf("after a restart of st: %+v", p)
	}
	if items := h.openItemsOf(coord); len(items) != 1 || items[0].Kind != api.AttnPaused {
		t.Fatalf("after a restart of st, the coordinator's open items: %+v", items)
	}
	if err := h.hookFrom(coord, "UserPromptSubmit", "transcript_path", tr.path, "prompt", "continue"); err != nil {
		t.Fatal(err)
	}
	if p := h.showRun().CoordinatorPause; p != nil {
		t.Fatalf("after its turn started, still paused: %+v", p)
	}
	if items := h.openItemsOf(coord); len(items) != 0 {
		t.Errorf("after its turn started, open items: %+v", items)
	}
	if h.m.coordPaused(coord) || len(h.m.Status().Coordinators) != 0 || h.coordCard().State == "paused" {
		t.Error("after its turn started, still shown paused")
	}
	// Codex's Stop can come before its rollout has the new turn.
	if err := h.hookFrom(coord, "Stop", "transcript_path", tr.path, "last_assistant_message", "went on"); err != nil {
		t.Fatal(err)
	}
	if p := h.showRun().CoordinatorPause; p != nil {
		t.Fatalf("paused again by the limit it went on from: %+v", p)
	}
}

// A worker's limit is its own: its coordinator's hooks and its run's
// coordinator pause stay apart from it.
func TestWorkersLimitIsNotTheCoordinators(t *testing.T) {
	t.Setenv("ST_SIM_AUTO_CONTINUE", "1")
	h := newHarness(t, api.Working, nil)
	tr := newTranscript(t)
	resets := time.Now().Add(time.Hour).Truncate(time.Second)
	tr.limitRecord(resets, "You've hit your 5-hour limit")
	h.hook("StopFailure", "transcript_path", tr.path, "error", "rate_limit", "last_assistant_message", "You've hit your 5-hour limit")
	if w := h.worker(); w.State != api.Paused {
		t.Fatalf("the worker is %s, want paused", w.State)
	}
	if v := h.showRun(); v.CoordinatorPause != nil || len(h.m.Status().Coordinators) != 0 || len(h.openItemsOf(coord)) != 0 {
		t.Fatalf("a worker's limit paused its coordinator: %+v", v.CoordinatorPause)
	}
}

// A task moved at once (--on-limit move), on a limit whose reset st had
// only from the screen's words ("resets 1pm", to the hour), carries the
// exact reset: st reads the agent's records again before it writes the
// moved task, and the worker's pause takes it too.
func TestMovedTaskCarriesTheExactReset(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	tr := newTranscript(t)
	exact := time.Date(2030, 1, 2, 13, 33, 13, 0, time.Local)
	tr.limitRecord(exact, "You've hit your 5-hour limit · resets 1pm (UTC)")
	task := filepath.Join(t.TempDir(), "fix.md")
	if err := os.WriteFile(task, []byte("fix the parser\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	screen := time.Date(2030, 1, 2, 13, 0, 0, 0, time.Local) // the screen's "1pm"
	p := api.Pause{Reason: "usage limit", Resets: screen, By: "move", MoveTo: "codex", GoesOnBy: time.Now(), Typed: true}
	h.m.reg.mu.Lock()
	w := h.m.reg.workers[workerID]
	pp := p // the worker's own, apart from the copy goOnAfterLimit holds
	w.State, w.Pause, w.Transcript, w.Task, w.LimitSeen = api.Paused, &pp, tr.path, task, screen
	h.m.reg.mu.Unlock()

	got := h.m.exactBeforeMove(context.Background(), workerID, "sim", p)
	if !got.Exact || !got.Resets.Equal(exact) || got.By != "move" {
		t.Fatalf("the pause read again: %+v, want the exact reset %s", got, exact)
	}
	h.m.reg.mu.Lock()
	cp := *w
	h.m.reg.mu.Unlock()
	if !cp.Pause.Exact || !cp.Pause.Resets.Equal(exact) {
		t.Errorf("the worker's own pause: %+v, want the exact reset", cp.Pause)
	}
	path, err := writeMovedTask(cp, got)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "reached its usage limit (resets 13:33)") {
		t.Fatalf("the moved task says:\n%s\nwant the reset to the minute, 13:33", b)
	}
}

// A read of a coordinator's records that found only rate limits (a Codex
// rollout's token_count with no new counts: measured in
// TestCodexCoordinatorAtItsLimit, whose daemon panicked there with the
// registry's lock held, and every command after hung) counts nothing and
// changes nothing.
func TestCoordinatorReadOfOnlyRateLimits(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	h.m.reg.mu.Lock()
	c := h.m.newChange()
	h.m.noteCoordTokensLocked(c, coord, &tokenRead{limits: &tokens.RateLimits{}})
	r := h.m.reg.runs[testRun]
	got, ledger := r.CoordTokens, r.CoordLedger
	h.m.reg.mu.Unlock()
	if got != nil || ledger != nil {
		t.Fatalf("a read of rate limits alone gave the coordinator tokens %+v, ledger %+v", got, ledger)
	}
}
