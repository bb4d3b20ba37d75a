package main

import (
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
)

// TestWorkerNamed: wait-state's worker is the live one of its name, not a
// past one listed by st worker list --all, whatever their order.
func TestWorkerNamed(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	w := func(id, name string, s api.State, started time.Time) api.WorkerView {
		return api.WorkerView{Worker: api.Worker{ID: id, Name: name, State: s, StartedAt: started}}
	}
	past := w("%3~mx4egnk7", "orphan", api.Done, t0)
	now := w("%3", "orphan", api.Working, t0.Add(time.Minute))
	gone := w("%5", "gone", api.Gone, t0)
	goneLater := w("%6", "gone", api.Gone, t0.Add(time.Minute))
	for _, tc := range []struct {
		name string
		ws   []api.WorkerView
		id   string
		want string // the id of the worker picked, "" for none
	}{
		{"the live one, listed after the past one", []api.WorkerView{past, now}, "orphan", "%3"},
		{"the live one, listed first", []api.WorkerView{now, past}, "orphan", "%3"},
		{"by id", []api.WorkerView{past, now}, "%3~mx4egnk7", "%3~mx4egnk7"},
		{"a past one when no live one is listed", []api.WorkerView{past}, "orphan", "%3~mx4egnk7"},
		{"of past ones, the last started", []api.WorkerView{goneLater, gone}, "gone", "%6"},
		{"none", []api.WorkerView{past, now}, "nosuch", ""},
	} {
		got, ok := workerNamed(tc.ws, tc.id)
		if ok != (tc.want != "") || got.ID != tc.want {
			t.Errorf("%s: workerNamed(%q) = %q, %v; want %q", tc.name, tc.id, got.ID, ok, tc.want)
		}
	}
}
