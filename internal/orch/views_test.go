package orch

import (
	"context"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
)

// TestShowToDecidesPerWorker (issue 31, item 2): an answer that holds
// workers shows the texts of only those the asker may read (may, authz's
// decision of st worker read), and of the others their name, state and
// times, saying their texts were left out. A view of a past run's worker
// under a pane id a worker of the asker has now is not that worker. An
// asker that may read every worker (a person) is shown every text.
func TestShowToDecidesPerWorker(t *testing.T) {
	h := newHarness(t, api.Done, nil)
	h.m.reg.mu.Lock()
	h.m.reg.workers[workerID].Summary, h.m.reg.workers[workerID].LastAnswer = "mine: done", "mine: answer"
	h.m.reg.mu.Unlock()
	h.addWorker(&Worker{ID: "%5", Name: "other", Agent: "sim", Parent: shell, Level: 1, State: api.Done, Since: time.Now(),
		StartedAt: time.Now(), Task: "/tmp/secret-task.md", Summary: "other: secret", LastAnswer: "other: answer", ReportAnswer: "other: report"})
	agent := func(id string) bool { return id != "" && h.m.Owns(coord, id) } // the coordinator's own, as authz decides
	person := func(string) bool { return true }

	list, err := h.m.List(context.Background(), api.IDRequest{Pane: coord, All: true})
	if err != nil {
		t.Fatal(err)
	}
	past := api.WorkerView{Worker: api.Worker{ID: workerID, Name: "old", State: api.Done, Summary: "a past run's", StartedAt: time.Now().Add(-time.Hour)}, Run: "run-old"}
	list = append(list, past)
	shown := h.m.ShowTo(list, agent).([]api.WorkerView)
	byName := map[string]api.WorkerView{}
	for _, v := range shown {
		byName[v.Name] = v
	}
	if v := byName["w1"]; v.Summary != "mine: done" || v.LastAnswer != "mine: answer" || v.TextsHidden {
		t.Errorf("the coordinator's own worker: want its texts, got %+v", v)
	}
	if v := byName["other"]; v.Summary != "" || v.LastAnswer != "" || v.ReportAnswer != "" || v.Task != "" || !v.TextsHidden ||
		v.State != api.Done || v.StartedAt.IsZero() || v.ID != "%5" {
		t.Errorf("another's worker: want its name, state and times, and no texts, got %+v", v)
	}
	if v := byName["old"]; v.Summary != "" || !v.TextsHidden {
		t.Errorf("a past run's worker under the id of the coordinator's own: want no texts, got %+v", v)
	}

	list, _ = h.m.List(context.Background(), api.IDRequest{Pane: coord, All: true})
	for _, v := range append(h.m.ShowTo(list, person).([]api.WorkerView), *h.m.ShowTo(&past, person).(*api.WorkerView)) {
		if v.Summary == "" || v.TextsHidden {
			t.Errorf("a person: want every worker's texts, got %+v", v)
		}
	}

	for _, a := range h.m.ShowTo(h.m.Graph(), agent).([]api.GraphAgent) {
		if a.Pane == "%5" && (a.Summary != "" || !a.TextsHidden) {
			t.Errorf("the graph shows another's worker's report: %+v", a)
		}
		if a.Pane == workerID && a.Summary != "mine: done" {
			t.Errorf("the graph leaves out the coordinator's own worker's report: %+v", a)
		}
	}
}

// TestShowToHidesAttentionTexts (issue 34's items, found by the authz
// matrix): st attention, from any pane, lists every item; an item of a
// worker's turn (no report, failed, paused) holds that worker's last
// answer or error, which only who may read the worker is shown. A
// permission's command and a gate's question stay (st's prompt and gate
// lists show them to every local process); a person reads every text.
func TestShowToHidesAttentionTexts(t *testing.T) {
	h := newHarness(t, api.Done, nil)
	h.addWorker(&Worker{ID: "%5", Name: "other", Agent: "sim", Parent: shell, Level: 1, State: api.Idle, Since: time.Now(), StartedAt: time.Now()})
	agent := func(id string) bool { return id != "" && h.m.Owns(coord, id) }
	person := func(string) bool { return true }
	items := func() *api.AttentionList {
		return &api.AttentionList{Items: []api.Attention{
			{ID: "att-1", Kind: api.AttnNoReport, Pane: "%5", Text: "other: its answer"},
			{ID: "att-2", Kind: api.AttnFailed, Pane: "%5", Text: "other: its error"},
			{ID: "att-3", Kind: api.AttnPaused, Pane: "%5", Text: "other: its limit"},
			{ID: "att-4", Kind: api.AttnNoReport, Pane: workerID, Text: "mine: answer"},
			{ID: "att-5", Kind: api.AttnPermission, Pane: "%5", Text: "rm -rf build", Command: "rm -rf build"},
			{ID: "att-6", Kind: api.AttnGate, Pane: "%5", Text: "Ship it?", Gate: "gate-1"},
		}}
	}
	want := map[string]string{"att-1": "", "att-2": "", "att-3": "", "att-4": "mine: answer", "att-5": "rm -rf build", "att-6": "Ship it?"}
	for _, a := range h.m.ShowTo(items(), agent).(*api.AttentionList).Items {
		if a.Text != want[a.ID] || a.TextHidden != (want[a.ID] == "") {
			t.Errorf("the coordinator is shown item %s (%s of %s) as %q (hidden %v), want %q", a.ID, a.Kind, a.Pane, a.Text, a.TextHidden, want[a.ID])
		}
	}
	if a := h.m.ShowTo(&api.Attention{ID: "att-1", Kind: api.AttnNoReport, Pane: "%5", Text: "other: its answer"}, agent).(*api.Attention); a.Text != "" || !a.TextHidden {
		t.Errorf("one item of another's worker: want its text left out, got %+v", a)
	}
	for _, a := range h.m.ShowTo(items(), person).(*api.AttentionList).Items {
		if a.Text == "" || a.TextHidden {
			t.Errorf("a person: want every item's text, got %+v", a)
		}
	}
}
