package orch

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/syncs"
)

// saver writes the runs' records (run.json) for the registry. A change
// marks the runs it touched (mark, under the registry's lock), and one
// writer puts each changed run on disk, taking its snapshot as it writes
// it (snap, under the registry's lock, so that it is whole): changes that
// come together share one snapshot, one write and one fsync (a group
// commit), and a run is never written for a snapshot older than one on
// disk. Whoever must know that a change is on disk (a report, a
// request's answer) waits for its version, without the registry's lock;
// a write that fails is tried again until it holds, and its waiters are
// told of the failure at once. In a burst (two or more changes came while
// a write was under way) the writer waits burstLinger before its next
// write, so that it carries more of them.
//
// A soft change (one no one waits for, that costs nothing when a crash
// loses it: that a coordinator has seen a report) is not written by
// itself at once: it rides with the run's next write, or is written after
// softLinger, or when st stops. Sync does not wait for it. So a report is
// two writes, its own and its turn's end (which carries the seen mark
// when the coordinator saw it first), and not three (report_test.go).
//
// Lock order: the registry's lock, then mu (mark and put are called
// under it); wmu, then the registry's (the writer's snap). Nothing waits
// for a write with the registry's lock held.
type saver struct {
	path func(id string) string
	logf func(format string, args ...any)
	// linger is how long a soft snapshot waits for a write to ride with.
	linger time.Duration
	// after is time.After (a test's clock instead), for the burst's
	// linger (burstLinger).
	after func(time.Duration) <-chan time.Time

	wmu   sync.Mutex // one writeAll at a time: a file is never written twice at once
	mu    sync.Mutex
	cond  *sync.Cond
	seq   uint64 // versions of staged snapshots, over all runs
	files map[string]*runFile
	// gone are the runs forgotten whose records the writer is to remove;
	// removing counts those it took and has not removed yet (sync waits
	// for both).
	gone     []string
	removing int
	kick     chan struct{}
	closed   bool // the writer stopped: waiters write for themselves
	// hardSeq counts the hard snapshots staged; during is how many of
	// them came while the last writeAll was writing (burstLinger).
	hardSeq, during uint64
	// writes counts the files written, snaps the snapshots taken (put),
	// for tests and figures.
	writes, snaps atomic.Uint64
	// snap hands the writer a run's record as it is now (put), with every
	// change marked so far in it (registry.snapshot); false: the run is
	// no longer written. Called by the writer with wmu held and mu not.
	// A saver with none writes what stage gave it (the tests').
	snap func(id string) bool
}

// runFile is one run's record: its newest snapshot, and how far the disk
// has it.
type runFile struct {
	data    []byte
	staged  uint64 // version of data
	hard    uint64 // the newest version that is not soft
	written uint64 // version on disk
	// softSince is when the oldest soft version not on disk was staged
	// (zero: none).
	softSince time.Time
	err       error  // the last write's failure, while it lasts
	errAt     uint64 // the version that failed
	// dataV is the version of data: older than staged when a change was
	// marked after it (mark), whose snapshot the writer takes (snap).
	dataV uint64
}

// saveRetry is how often a write that failed is tried again.
const saveRetry = 500 * time.Millisecond

// softLinger is how long a soft snapshot waits for a write to ride with
// before it is written alone.
const softLinger = 30 * time.Second

// burstLinger is how long the writer waits for more changes before its
// next write when two or more came while its last write was under way
// (a burst: a hundred workers reporting at once): the next write then
// carries more of them, and the burst makes fewer writes. A change that
// comes alone, or one while a write is under way, is written at once.
const burstLinger = 25 * time.Millisecond

func newSaver(path func(string) string, logf func(string, ...any)) *saver {
	s := &saver{path: path, logf: logf, linger: softLinger, after: time.After, files: map[string]*runFile{}, kick: make(chan struct{}, 1)}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// stage records data as run id's newest record and returns its version.
// It does not wait for the disk. A soft one is not written at once
// (saver's doc). (The registry marks its changes instead, and the writer
// takes their snapshots: mark. A test, or a caller that holds the
// registry's lock while it waits for the disk, gives the record itself.)
func (s *saver) stage(id string, data []byte, soft bool) uint64 {
	return s.record(id, data, soft)
}

// mark records a change of run id (soft: one no one waits for) whose
// snapshot the writer takes (snap) when it writes the run, and returns
// its version. The caller holds the registry's lock, as snap does: no
// change is marked while a snapshot is taken, so a snapshot has every
// version marked before it.
func (s *saver) mark(id string, soft bool) uint64 { return s.record(id, nil, soft) }

// record is stage (data, the run's record) and mark (nil data).
func (s *saver) record(id string, data []byte, soft bool) uint64 {
	s.mu.Lock()
	s.seq++
	f := s.files[id]
	if f == nil {
		f = &runFile{}
		s.files[id] = f
	}
	f.staged = s.seq
	if data != nil {
		f.data, f.dataV = data, s.seq
	}
	if !soft {
		f.hard = s.seq
		s.hardSeq++
	} else if f.softSince.IsZero() {
		f.softSince = time.Now()
	}
	v := s.seq
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
	return v
}

// put is snap's answer: run id's record as it is now, which holds every
// version marked so far.
func (s *saver) put(id string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.files[id]; f != nil {
		f.data, f.dataV = data, s.seq
		s.snaps.Add(1)
	}
}

// dueLocked reports whether f is to be written now (at now): a version no
// one waits for only after the linger.
func (s *saver) dueLocked(f *runFile, now time.Time) bool {
	syncs.AssertLocked(&s.mu)
	return f.hard > f.written || (!f.softSince.IsZero() && now.Sub(f.softSince) >= s.linger)
}

// nextSoftLocked is when the next soft snapshot is due (zero: none).
func (s *saver) nextSoftLocked() time.Time {
	syncs.AssertLocked(&s.mu)
	var next time.Time
	for _, f := range s.files {
		if f.staged > f.written && !f.softSince.IsZero() {
			if at := f.softSince.Add(s.linger); next.IsZero() || at.Before(next) {
				next = at
			}
		}
	}
	return next
}

// wait blocks until version v of run id is on disk (or a later one is),
// or a write of it failed. It needs no context: a write either holds or
// fails, and once the writer stopped the waiter writes itself.
func (s *saver) wait(id string, v uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		f := s.files[id]
		if f == nil || f.written >= v {
			return nil
		}
		if f.err != nil && f.errAt >= v {
			return f.err
		}
		if s.closed {
			s.mu.Unlock()
			s.writeAll(true, true)
			s.mu.Lock()
			if f.written >= v {
				return nil
			}
			if f.err != nil {
				return f.err
			}
			return errors.New("st is stopping")
		}
		s.cond.Wait()
	}
}

// onDisk reports whether everything staged of run id is on disk, soft
// changes too.
func (s *saver) onDisk(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.files[id]
	return f == nil || f.written >= f.staged
}

// sync waits until every snapshot staged before it is on disk (or its
// write failed: the first failure is returned), but soft ones.
func (s *saver) sync() error {
	s.mu.Lock()
	pending := map[string]uint64{}
	for id, f := range s.files {
		if f.hard > f.written {
			pending[id] = f.hard
		}
	}
	s.mu.Unlock()
	var first error
	for id, v := range pending {
		if err := s.wait(id, v); err != nil && first == nil {
			first = err
		}
	}
	s.mu.Lock()
	closed, gone := s.closed, len(s.gone) > 0
	s.mu.Unlock()
	if closed && gone {
		s.writeAll(false, false) // the writer stopped: its removals are ours
	}
	s.mu.Lock()
	for (len(s.gone) > 0 || s.removing > 0) && !s.closed {
		s.cond.Wait()
	}
	s.mu.Unlock()
	return first
}

// run writes staged snapshots until ctx ends, then writes what is left.
func (s *saver) run(ctx context.Context) {
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	soft := time.NewTimer(time.Hour)
	defer soft.Stop()
	again := false
	for {
		if s.writeAll(again, false) {
			retry.Reset(saveRetry)
		}
		again = false
		s.mu.Lock()
		burst := s.during >= 2
		s.mu.Unlock()
		if burst && ctx.Err() == nil {
			select {
			case <-s.after(burstLinger):
			case <-ctx.Done():
			}
			continue
		}
		s.mu.Lock()
		next := s.nextSoftLocked()
		s.mu.Unlock()
		soft.Stop()
		if !next.IsZero() {
			soft.Reset(time.Until(next))
		}
		select {
		case <-soft.C:
		case <-ctx.Done():
			s.writeAll(true, true)
			s.mu.Lock()
			s.closed = true
			s.cond.Broadcast()
			s.mu.Unlock()
			s.writeAll(true, true) // what was staged in between
			return
		case <-s.kick:
		case <-retry.C:
			again = true
		}
	}
}

// writeAll writes the newest snapshot of every run that has one due
// (all with every, soft ones too); again tries the ones whose last write
// failed too. It reports whether a write failed.
func (s *saver) writeAll(again, every bool) (failed bool) {
	s.wmu.Lock() // lockio: the write lock, held through the writes (one writer)
	defer s.wmu.Unlock()
	defer s.removeGoneLocked() // after the writes: a forgotten run's, if one was under way
	tried, snapped := map[string]bool{}, map[string]bool{}
	now := time.Now()
	var h0 uint64
	for {
		s.mu.Lock()
		var id string
		var f *runFile
		for i, x := range s.files {
			if x.staged > x.written && !tried[i] && (again || x.err == nil || x.errAt < x.staged) && (every || s.dueLocked(x, now)) {
				id, f = i, x
				break
			}
		}
		if len(tried) == 0 {
			h0 = s.hardSeq
		}
		if f == nil {
			s.during = s.hardSeq - h0
			s.mu.Unlock()
			return failed
		}
		if f.dataV < f.staged && s.snap != nil && !snapped[id] {
			// Its snapshot is taken now, with the registry's lock and
			// not this one (the registry marks under its own lock), once
			// a write: a change marked meanwhile rides with the next.
			snapped[id] = true
			s.mu.Unlock()
			if !s.snap(id) {
				s.mu.Lock()
				if s.files[id] == f {
					delete(s.files, id) // the run is gone: nothing of it to write
				}
				s.cond.Broadcast()
				s.mu.Unlock()
			}
			continue
		}
		data, v := f.data, f.dataV
		tried[id] = true
		s.mu.Unlock()
		err := store.WriteFile(s.path(id), data, 0o600)
		s.mu.Lock()
		if err != nil {
			s.logf("%v", err)
			f.err, f.errAt = err, v
			failed = true
		} else {
			s.writes.Add(1)
			f.err = nil
			if v > f.written {
				f.written = v
			}
			if f.written >= f.staged {
				f.softSince = time.Time{}
			}
		}
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

// forget drops a run that no longer exists (one made for a start that
// failed): a snapshot of it not written yet is not written, and one on
// disk is removed by the writer (removeGoneLocked), with no wait here: the
// caller may hold the registry's lock, and the disk is not waited for
// under it. The writer removes it after any write of it under way (it
// holds wmu for both): a run dropped after a failed save (CreateTask) had
// its undone snapshot staged again just before, and could be put on disk
// after the run was gone, an empty run.json that the next start would
// load as a run. sync waits for the removal too.
func (s *saver) forget(id string) {
	s.mu.Lock()
	if f := s.files[id]; f != nil {
		delete(s.files, id)
		s.gone = append(s.gone, id)
	}
	s.cond.Broadcast()
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// removeGoneLocked removes the records of the runs forgotten (forget),
// under wmu: after any write of them.
func (s *saver) removeGoneLocked() {
	syncs.AssertLocked(&s.wmu) // lockio: the write lock, held through the removals as through the writes
	s.mu.Lock()
	gone := s.gone
	s.gone, s.removing = nil, s.removing+len(gone)
	s.mu.Unlock()
	for _, id := range gone {
		path := s.path(id)
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.logf("remove the record of dropped run %s: %v", id, err)
			continue
		}
		os.Remove(filepath.Dir(path)) // its folder, when nothing else is in it
	}
	if len(gone) > 0 {
		s.mu.Lock()
		s.removing -= len(gone)
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}
