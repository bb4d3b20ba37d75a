package history

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
)

// run is a finished run of home made at created, ended at ended: two
// workers gone, one of them named name.
func run(t *testing.T, home, id, name string, created, ended time.Time) *api.Run {
	t.Helper()
	r := &api.Run{ID: id, Objective: "objective of " + id, Coordinator: "%1", Created: created, Workers: []*api.Worker{
		{ID: "%2~" + id, Name: name, State: api.Gone, Since: ended, Summary: "summary of " + name + " in " + id, Parent: "%1"},
		{ID: "%3~" + id, Name: "other", State: api.Failed, Since: created},
	}}
	dir := filepath.Join(home, "orch", id)
	os.MkdirAll(dir, 0o700)
	data, _ := json.Marshal(r)
	if err := os.WriteFile(filepath.Join(dir, "run.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestFinished(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		name string
		edit func(*api.Run)
		want bool
	}{
		{"every worker gone or failed", func(*api.Run) {}, true},
		{"no worker at all", func(r *api.Run) { r.Workers = nil }, true},
		{"a worker done (its window open)", func(r *api.Run) { r.Workers[0].State = api.Done }, false},
		{"a worker idle", func(r *api.Run) { r.Workers[1].State = api.Idle }, false},
		{"a task waiting", func(r *api.Run) { r.Tasks = []*api.Task{{Name: "t", State: api.TaskWaiting}} }, false},
		{"a task running", func(r *api.Run) { r.Tasks = []*api.Task{{Name: "t", State: api.TaskRunning}} }, false},
		{"tasks over", func(r *api.Run) {
			r.Tasks = []*api.Task{{Name: "a", State: api.TaskDone}, {Name: "b", State: api.TaskFailed}, {Name: "c", State: api.TaskCancelled}}
		}, true},
		{"a coordinator on another machine", func(r *api.Run) { r.CoordinatorMachine = "laptop" }, false},
		{"an id that is no folder name", func(r *api.Run) { r.ID = "../x" }, false},
	} {
		r := run(t, t.TempDir(), "run-1", "a", now, now)
		c.edit(r)
		if got := Finished(r); got != c.want {
			t.Errorf("%s: Finished = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestBook: runs added are in the history at the next Open (ids only),
// read from their run.json, found by a worker's pane or name (the newest
// run of a name), and listed oldest first.
func TestBook(t *testing.T) {
	home := t.TempDir()
	day := 24 * time.Hour
	now := time.Now()
	a := run(t, home, "run-aaa", "w", now.Add(-40*day), now.Add(-40*day))
	b := run(t, home, "run-bbb", "w", now.Add(-10*day), now.Add(-9*day))
	c := run(t, home, "run-ccc", "x", now.Add(-50*day), now.Add(-1*day))
	bk, err := Open(home)
	if err != nil || bk.Len() != 0 {
		t.Fatalf("Open of a home with no history: %d runs, %v", bk.Len(), err)
	}
	if err := bk.Add([]*api.Run{a, b}); err != nil {
		t.Fatal(err)
	}
	if err := bk.Add([]*api.Run{c, a}); err != nil { // a again: listed once
		t.Fatal(err)
	}
	bk, err = Open(home)
	if err != nil || bk.Len() != 3 || !bk.Has("run-bbb") || bk.Has("run-ddd") {
		t.Fatalf("after Add and Open: %d runs, has run-bbb %v, run-ddd %v (%v)", bk.Len(), bk.Has("run-bbb"), bk.Has("run-ddd"), err)
	}
	es, _ := bk.Entries()
	var ids []string
	for _, e := range es {
		ids = append(ids, e.ID)
	}
	if !slices.Equal(ids, []string{"run-aaa", "run-bbb", "run-ccc"}) {
		t.Errorf("entries %v, want them oldest ended first", ids)
	}
	if !es[2].Ended.Equal(c.Workers[0].Since) {
		t.Errorf("run-ccc ended %v, want its last worker's change %v", es[2].Ended, c.Workers[0].Since)
	}
	r, err := bk.Run("run-bbb")
	if err != nil || r.Workers[0].Summary != "summary of w in run-bbb" {
		t.Fatalf("Run(run-bbb) = %+v, %v", r, err)
	}
	for id, want := range map[string]string{"w": "run-bbb", "%2~run-aaa": "run-aaa", "x": "run-ccc"} {
		w, r, err := bk.FindWorker(id)
		if err != nil || w == nil || r.ID != want {
			t.Errorf("FindWorker(%q) = %v in %v, %v; want the one of %s", id, w, r, err, want)
		}
	}
	if w, _, err := bk.FindWorker("nobody"); w != nil || err != nil {
		t.Errorf("FindWorker(nobody) = %v, %v; want none", w, err)
	}
	if _, err := bk.Run("run-ddd"); err == nil || !strings.Contains(err.Error(), `there is no run "run-ddd"`) {
		t.Errorf("Run of a run not in the history: %v", err)
	}
	runs, err := bk.Runs()
	if err != nil || len(runs) != 3 {
		t.Errorf("Runs: %d, %v", len(runs), err)
	}
}

// TestPrune: a dry run says which runs ended before the cutoff and takes
// nothing; a real one removes their folders and lines, and leaves the
// rest. A line of the list that is not st's (cut short, an id that is no
// folder name) is never used for a path.
func TestPrune(t *testing.T) {
	home := t.TempDir()
	day := 24 * time.Hour
	now := time.Now()
	old := run(t, home, "run-old", "w", now.Add(-60*day), now.Add(-45*day))
	recent := run(t, home, "run-new", "w", now.Add(-60*day), now.Add(-2*day))
	bk, _ := Open(home)
	if err := bk.Add([]*api.Run{old, recent}); err != nil {
		t.Fatal(err)
	}
	// What a hand may add: a line that names a folder outside orch, and
	// one cut short.
	outside := filepath.Join(home, "precious")
	os.MkdirAll(outside, 0o700)
	f, _ := os.OpenFile(filepath.Join(home, "orch", FileName), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"id":"../precious","ended":"2000-01-01T00:00:00Z"}` + "\n" + `{"id":"run-cut","ended":"2000-01`)
	f.Close()
	bk, _ = Open(home)
	if bk.Len() != 2 {
		t.Fatalf("Open reads %d runs, want the 2 that are st's", bk.Len())
	}
	cutoff := now.Add(-30 * day)
	gone, err := bk.Prune(cutoff, true)
	if err != nil || len(gone) != 1 || gone[0].ID != "run-old" {
		t.Fatalf("dry Prune = %v, %v; want run-old", gone, err)
	}
	if _, err := os.Stat(filepath.Join(home, "orch", "run-old", "run.json")); err != nil || !bk.Has("run-old") {
		t.Fatalf("a dry Prune removed run-old: %v", err)
	}
	gone, err = bk.Prune(cutoff, false)
	if err != nil || len(gone) != 1 {
		t.Fatalf("Prune = %v, %v", gone, err)
	}
	if _, err := os.Stat(filepath.Join(home, "orch", "run-old")); !os.IsNotExist(err) {
		t.Errorf("run-old's folder is still there: %v", err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("a line naming ../precious removed it: %v", err)
	}
	bk, _ = Open(home)
	if bk.Len() != 1 || !bk.Has("run-new") {
		t.Errorf("after Prune the history holds %d runs (run-new: %v), want run-new alone", bk.Len(), bk.Has("run-new"))
	}
	if _, err := bk.Run("run-new"); err != nil {
		t.Errorf("run-new after the prune: %v", err)
	}
}

func TestValidID(t *testing.T) {
	for id, want := range map[string]bool{"run-0a1b2c": true, "run-h00001": true, "a.b_c": true, "": false, ".hidden": false,
		"..": false, "../x": false, "a/b": false, strings.Repeat("a", 65): false, "run 1": false} {
		if ValidID(id) != want {
			t.Errorf("ValidID(%q) = %v, want %v", id, !want, want)
		}
	}
}

// A finished run keeps what its workers spent: each worker's tokens, and
// their sum for the run, as st orch show gives them from the history.
func TestViewKeepsTokens(t *testing.T) {
	cost := 0.25
	r := &api.Run{ID: "run-a1", Workers: []*api.Worker{
		{ID: "%3", Name: "a", Tokens: &api.Tokens{Input: 100, Output: 20, Total: 120, CostUSD: &cost, CostEstimated: true, PriceDate: "2026-12-01"}},
		{ID: "%4", Name: "b", Tokens: &api.Tokens{Input: 5, CacheRead: 300, Total: 305, CostUSD: &cost, CostEstimated: true, PriceDate: "2026-12-01"}},
		{ID: "%5", Name: "c"},
	}}
	v := View(r, time.Now())
	if v.Tokens == nil || v.Tokens.Total != 425 || v.Tokens.Input != 105 || v.Tokens.CacheRead != 300 || v.Tokens.CostUSD == nil || *v.Tokens.CostUSD != 0.5 {
		t.Fatalf("the run's tokens: %+v", v.Tokens)
	}
	if v.Views[0].Tokens == nil || v.Views[0].Tokens.Total != 120 || v.Views[2].Tokens != nil {
		t.Fatalf("the workers' tokens: %+v %+v", v.Views[0].Tokens, v.Views[2].Tokens)
	}
}
