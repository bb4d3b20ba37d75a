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
