// Package history keeps the runs that are over out of the daemon's
// memory. A run is over (Finished) when none of its workers lives, none
// of its tasks is left to start, and its coordinator is on this machine
// and its pane gone. Such a run stays where st wrote it,
// $ST_HOME/orch/<run>/run.json, and is listed in the history,
// $ST_HOME/orch/history.jsonl: one line a run, with its workers' panes
// and names. A daemon reads only the list's run ids at its start, and
// skips those runs; it reads one from disk when a person asks for it (st
// orch show RUN, st worker read, st worker list --all). st orch prune
// takes old ones away (Prune).
//
// The list is st's own file (the daemon is its only writer, and writes
// it whole: temp file, fsync, rename). A line that does not read, or
// whose run id is no folder name st makes, is left out: its run is then
// read at the next start like any other, and listed again. That check is
// a rail against a file edited by hand, not a boundary: whoever may
// write $ST_HOME may remove the runs themselves.
package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/syncs"
)

// FileName is the history's list, in $ST_HOME/orch.
const FileName = "history.jsonl"

// Entry is a run of the history as its line lists it.
type Entry struct {
	ID          string    `json:"id"`
	Objective   string    `json:"objective,omitempty"`
	Coordinator string    `json:"coordinator"`
	Created     time.Time `json:"created"`
	// Ended is when the last thing happened in the run (a worker's or a
	// task's last change).
	Ended   time.Time `json:"ended"`
	Workers []Named   `json:"workers,omitempty"`
}

// Named is a worker of an Entry: its pane and its name.
type Named struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Book is the history of one $ST_HOME. A nil Book has nothing in it.
//
// It has two locks, so that no one waits for its disk while holding
// another lock (the registry's asks Has, for each new run's id): mu
// guards the ids in memory and is never held through I/O; fmu is held
// through the reads and writes of the list and the removal of runs'
// folders, taken with no other lock held (st's start aside, before any
// request), and mu only for moments under it.
type Book struct {
	dir string // $ST_HOME/orch

	fmu sync.Mutex
	mu  sync.Mutex
	ids map[string]bool
}

// Open reads the run ids of home's history (only those: the daemon
// starts with this and nothing more of the runs it lists).
func Open(home string) (*Book, error) {
	b := &Book{dir: filepath.Join(home, "orch"), ids: map[string]bool{}}
	data, err := os.ReadFile(b.path())
	if errors.Is(err, fs.ErrNotExist) {
		return b, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read st's history of runs: %w", err)
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if id := gjson.GetBytes(line, "id").String(); gjson.ValidBytes(line) && ValidID(id) {
			b.ids[id] = true
		}
	}
	return b, nil
}

func (b *Book) path() string { return filepath.Join(b.dir, FileName) }

// ValidID says whether id can be a run's folder under $ST_HOME/orch:
// letters, digits, '.', '_' and '-', not starting with '.', at most 64
// characters.
func ValidID(id string) bool {
	if id == "" || len(id) > 64 || id[0] == '.' {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// Has says whether run id is in the history (and so not in memory).
func (b *Book) Has(id string) bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ids[id]
}

// Len is how many runs the history holds.
func (b *Book) Len() int {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.ids)
}

// Finished says whether r is over as far as its record tells: no worker
// lives, no task waits or runs, and its coordinator is on this machine.
// (Whether the coordinator's pane is gone only the daemon knows.)
func Finished(r *api.Run) bool {
	if r.CoordinatorMachine != "" || !ValidID(r.ID) {
		return false
	}
	for _, w := range r.Workers {
		if w.State.Live() {
			return false
		}
	}
	for _, t := range r.Tasks {
		if t.State == api.TaskWaiting || t.State == api.TaskRunning {
			return false
		}
	}
	return true
}

// entryOf is r's line of the history.
func entryOf(r *api.Run) Entry {
	e := Entry{ID: r.ID, Objective: r.Objective, Coordinator: r.Coordinator, Created: r.Created, Ended: r.Created}
	for _, w := range r.Workers {
		e.Workers = append(e.Workers, Named{ID: w.ID, Name: w.Name})
		if w.Since.After(e.Ended) {
			e.Ended = w.Since
		}
	}
	for _, t := range r.Tasks {
		if t.Since.After(e.Ended) {
			e.Ended = t.Since
		}
	}
	return e
}

// Add lists runs in the history. Their run.json must be on disk as they
// are: from now on st reads them only from there.
func (b *Book) Add(runs []*api.Run) error {
	b.fmu.Lock() // lockio: the list's own lock, held through its read and write (fmu, the Book's doc)
	defer b.fmu.Unlock()
	data, err := os.ReadFile(b.path())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read st's history of runs: %w", err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		data = append(data, '\n') // a line cut short stays apart
	}
	var added []string
	for _, r := range runs {
		if b.Has(r.ID) || !ValidID(r.ID) {
			continue
		}
		line, err := json.Marshal(entryOf(r))
		if err != nil {
			return err
		}
		data = append(append(data, line...), '\n')
		added = append(added, r.ID)
	}
	if len(added) == 0 {
		return nil
	}
	if err := store.WriteFile(b.path(), data, 0o600); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, id := range added {
		b.ids[id] = true
	}
	return nil
}

// Entries are the history's runs, oldest first (by when they ended).
func (b *Book) Entries() ([]Entry, error) {
	if b == nil {
		return nil, nil
	}
	b.fmu.Lock() // lockio: the list's own lock, held through its read (fmu, the Book's doc)
	defer b.fmu.Unlock()
	return b.entriesLocked()
}

// entriesLocked reads the history's runs, with fmu held.
func (b *Book) entriesLocked() ([]Entry, error) {
	syncs.AssertLocked(&b.fmu) // lockio: the list's own lock (fmu, the Book's doc)
	f, err := os.Open(b.path())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read st's history of runs: %w", err)
	}
	defer f.Close()
	seen := map[string]int{}
	var out []Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e Entry
		if json.Unmarshal(sc.Bytes(), &e) != nil || !ValidID(e.ID) || !b.Has(e.ID) {
			continue
		}
		if i, ok := seen[e.ID]; ok {
			out[i] = e
			continue
		}
		seen[e.ID] = len(out)
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read st's history of runs: %w", err)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Ended.Before(out[j].Ended) })
	return out, nil
}

// Run reads run id of the history from its run.json.
func (b *Book) Run(id string) (*api.Run, error) {
	if !b.Has(id) {
		return nil, &api.Error{Kind: api.KindNotFound, Message: fmt.Sprintf("there is no run %q", id),
			Hint: "st orch show with no id shows this pane's run; st status lists the runs"}
	}
	var r api.Run
	path := filepath.Join(b.dir, id, "run.json")
	if err := store.ReadJSON(path, &r); err != nil {
		return nil, &api.Error{Kind: api.KindNotFound, Message: fmt.Sprintf("run %s is in st's history, but its record cannot be read: %v", id, err),
			Hint: "st orch prune takes old runs away; a run whose folder was removed by hand is gone"}
	}
	if r.ID != id {
		return nil, &api.Error{Kind: api.KindNotFound, Message: fmt.Sprintf("%s holds run %q, not %q", path, r.ID, id)}
	}
	return &r, nil
}

// FindWorker finds a worker of the history by its pane id (a retired one
// too) or its name, in the run that ended last of those that have one;
// nil when none has. Only the lines that name it are decoded.
func (b *Book) FindWorker(id string) (*api.Worker, *api.Run, error) {
	if b == nil {
		return nil, nil, nil
	}
	quoted, _ := json.Marshal(id)
	b.fmu.Lock() // lockio: the list's own lock, held through its read (fmu, the Book's doc)
	data, err := os.ReadFile(b.path())
	b.fmu.Unlock()
	b.mu.Lock()
	var best *Entry
	for _, line := range bytes.Split(data, []byte("\n")) {
		if !bytes.Contains(line, quoted) {
			continue
		}
		var e Entry
		if json.Unmarshal(line, &e) != nil || !b.ids[e.ID] || (best != nil && !e.Ended.After(best.Ended)) {
			continue
		}
		for _, w := range e.Workers {
			if w.ID == id || w.Name == id {
				best = &e
				break
			}
		}
	}
	b.mu.Unlock()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("read st's history of runs: %w", err)
	}
	if best == nil {
		return nil, nil, nil
	}
	r, err := b.Run(best.ID)
	if err != nil {
		return nil, nil, err
	}
	for _, w := range r.Workers {
		if w.ID == id || w.Name == id {
			return w, r, nil
		}
	}
	return nil, nil, nil
}

// Runs reads every run of the history, oldest first; a record that
// cannot be read is left out.
func (b *Book) Runs() ([]*api.Run, error) {
	es, err := b.Entries()
	if err != nil {
		return nil, err
	}
	var out []*api.Run
	for _, e := range es {
		if r, err := b.Run(e.ID); err == nil {
			out = append(out, r)
		}
	}
	return out, nil
}

// View is a run of the history as st orch show gives it, at now.
func View(r *api.Run, now time.Time) *api.RunView {
	v := &api.RunView{Run: *r}
	v.Workers = nil
	for _, w := range r.Workers {
		v.Views = append(v.Views, WorkerView(w, r, now))
		// What the run spent stays with it (issue 35): its workers' sum.
		v.Tokens = v.Tokens.Add(w.Tokens)
	}
	return v
}

// WorkerView is a worker of the history as the lists give it, at now:
// its coordinator is gone with the run.
func WorkerView(w *api.Worker, r *api.Run, now time.Time) api.WorkerView {
	return api.WorkerView{Worker: *w, Run: r.ID, For: roundDur(now.Sub(w.Since)), ParentGone: w.Parent != ""}
}

// roundDur is d as the lists say it (12s, 3m04s, 2h05m), and in days
// past two days (history is old).
func roundDur(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

// Prune takes away the runs of the history that ended before cutoff:
// their folders under $ST_HOME/orch, and their lines. It returns them
// (with dry, only says which they are). A run still in memory (a worker
// of it lives, or its coordinator's pane is open) is not in the history,
// and stays.
func (b *Book) Prune(cutoff time.Time, dry bool) ([]Entry, error) {
	b.fmu.Lock() // lockio: the list's own lock, held through its write and the folders' removal (fmu, the Book's doc)
	defer b.fmu.Unlock()
	es, err := b.entriesLocked()
	if err != nil {
		return nil, err
	}
	var old, keep []Entry
	for _, e := range es {
		if e.Ended.Before(cutoff) {
			old = append(old, e)
		} else {
			keep = append(keep, e)
		}
	}
	if dry || len(old) == 0 {
		return old, nil
	}
	// The list first: a run whose line is gone but whose folder stays
	// (st stopped in between) is read at the next start and listed again,
	// and the next prune takes it.
	var data []byte
	for _, e := range keep {
		line, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		data = append(append(data, line...), '\n')
	}
	if err := store.WriteFile(b.path(), data, 0o600); err != nil {
		return nil, err
	}
	b.mu.Lock()
	for _, e := range old {
		delete(b.ids, e.ID)
	}
	b.mu.Unlock()
	var failed []string
	for _, e := range old {
		if err := os.RemoveAll(filepath.Join(b.dir, e.ID)); err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", e.ID, err))
		}
	}
	if len(failed) > 0 {
		return old, fmt.Errorf("some runs' folders could not be removed (st reads them again at its next start): %s", strings.Join(failed, "; "))
	}
	return old, nil
}
