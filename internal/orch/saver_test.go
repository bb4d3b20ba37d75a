package orch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sophonz/st/internal/testutil"
)

// The saver is the registry's group commit: what it promises is what is
// on disk, and when a waiter hears of it.

// testSaver is a saver writing runs under dir/<id>/run.json; while
// broken is set, the runs' folders lie under a regular file, so every
// write fails.
func testSaver(t *testing.T) (s *saver, dir string, broken *atomic.Bool) {
	dir = t.TempDir()
	blocker := filepath.Join(dir, "a-file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	broken = &atomic.Bool{}
	path := func(id string) string {
		if broken.Load() {
			return filepath.Join(blocker, id, "run.json")
		}
		return filepath.Join(dir, id, "run.json")
	}
	return newSaver(path, func(string, ...any) {}), dir, broken
}

// runSaver runs s's writer until the test ends (or stop is called).
func runSaver(t *testing.T, s *saver) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		s.run(ctx)
	}()
	stop = func() {
		cancel()
		<-ended
	}
	t.Cleanup(stop)
	return stop
}

func readRun(t *testing.T, dir, id string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, id, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Many stages of a run before the writer runs share one write, and what
// is written is the newest.
func TestSaverWritesEachRunOnceForManyStages(t *testing.T) {
	s, dir, _ := testSaver(t)
	last := map[string]uint64{}
	for v := 1; v <= 5; v++ {
		for _, id := range []string{"run-a", "run-b", "run-c"} {
			last[id] = s.stage(id, []byte(fmt.Sprintf("%s version %d\n", id, v)), false)
		}
	}
	if failed := s.writeAll(false, false); failed {
		t.Fatal("writeAll failed")
	}
	if got := s.writes.Load(); got != 3 {
		t.Errorf("%d writes for 3 runs staged 5 times each, want 3", got)
	}
	for id, v := range last {
		if got := readRun(t, dir, id); got != id+" version 5\n" {
			t.Errorf("%s on disk: %q, want its newest version", id, got)
		}
		if err := s.wait(id, v); err != nil {
			t.Errorf("wait for %s's newest version: %v", id, err)
		}
	}
	// Nothing new: no write.
	s.writeAll(true, true)
	if got := s.writes.Load(); got != 3 {
		t.Errorf("%d writes after a writeAll with nothing staged, want 3", got)
	}
}

// A write that fails tells its waiter at once (not when a retry holds),
// and the writer tries again until it holds.
func TestSaverFailureIsToldAtOnceAndRetried(t *testing.T) {
	s, dir, broken := testSaver(t)
	runSaver(t, s)
	broken.Store(true)
	v := s.stage("run-a", []byte("kept\n"), false)
	var err error
	runGuarded(t, "a wait for a write that cannot be made", func() { err = s.wait("run-a", v) })
	if err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("wait = %v, want the write's error", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "run-a")); !os.IsNotExist(err) {
		t.Errorf("a failed write left %v", err)
	}
	// The disk mends: the writer's retry (every saveRetry) writes it, and a
	// later wait for the same version holds.
	broken.Store(false)
	testutil.WaitFor(t, 10*saveRetry, func() (bool, string) {
		err := s.wait("run-a", v)
		return err == nil, fmt.Sprintf("wait after the path was mended: %v", err)
	})
	if got := readRun(t, dir, "run-a"); got != "kept\n" {
		t.Errorf("on disk after the retry: %q", got)
	}
}

// A snapshot staged after a failed one is tried at once, without waiting
// for the retry, and a failure of an older version does not fail a wait
// for a newer one that holds.
func TestSaverNewerStageAfterFailure(t *testing.T) {
	s, dir, broken := testSaver(t)
	broken.Store(true)
	v1 := s.stage("run-a", []byte("one\n"), false)
	s.writeAll(false, false)
	if err := s.wait("run-a", v1); err == nil {
		t.Fatal("wait for a failed write: nil")
	}
	broken.Store(false)
	v2 := s.stage("run-a", []byte("two\n"), false)
	if failed := s.writeAll(false, false); failed {
		t.Fatal("the newer snapshot was not written")
	}
	if err := s.wait("run-a", v2); err != nil {
		t.Errorf("wait for the newer version: %v", err)
	}
	if err := s.wait("run-a", v1); err != nil {
		t.Errorf("wait for the older version once a newer one is on disk: %v", err)
	}
	if got := readRun(t, dir, "run-a"); got != "two\n" {
		t.Errorf("on disk: %q", got)
	}
}

// Once the writer stopped (st is closing), a waiter writes for itself.
func TestSaverWaiterWritesAfterStop(t *testing.T) {
	s, dir, _ := testSaver(t)
	stop := runSaver(t, s)
	stop()
	v := s.stage("run-a", []byte("late\n"), false)
	var err error
	runGuarded(t, "a wait after the writer stopped", func() { err = s.wait("run-a", v) })
	if err != nil {
		t.Fatalf("wait after stop: %v", err)
	}
	if got := readRun(t, dir, "run-a"); got != "late\n" {
		t.Errorf("on disk: %q", got)
	}
}

// What was staged before the writer stopped is on disk when it returns.
func TestSaverStopWritesWhatIsLeft(t *testing.T) {
	s, dir, _ := testSaver(t)
	s.stage("run-a", []byte("staged\n"), false)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s.run(ctx)
	if got := readRun(t, dir, "run-a"); got != "staged\n" {
		t.Errorf("on disk after the writer stopped: %q", got)
	}
}

// forget drops a run's snapshot that is not on disk yet: it is never
// written, and a wait for it does not hang.
func TestSaverForgetDropsTheUnwritten(t *testing.T) {
	s, dir, _ := testSaver(t)
	v := s.stage("run-a", []byte("dropped\n"), false)
	s.stage("run-b", []byte("kept\n"), false)
	s.forget("run-a")
	s.writeAll(true, true)
	if _, err := os.Stat(filepath.Join(dir, "run-a")); !os.IsNotExist(err) {
		t.Errorf("a forgotten run was written: %v", err)
	}
	if got := readRun(t, dir, "run-b"); got != "kept\n" {
		t.Errorf("the other run on disk: %q", got)
	}
	if got := s.writes.Load(); got != 1 {
		t.Errorf("%d writes, want 1", got)
	}
	if err := s.wait("run-a", v); err != nil {
		t.Errorf("wait for a forgotten run: %v", err)
	}
}

// A run forgotten while the writer is putting it on disk (CreateTask's
// failed save: the undone snapshot staged again, then the run dropped)
// leaves no run.json behind, and forget does not wait for that write (its
// caller may hold the registry's lock): the writer removes the record
// once its write is done. A run forgotten after its write is removed by
// the writer's next round too, and sync waits for that.
func TestSaverForgetRemovesWhatWasWritten(t *testing.T) {
	dir := t.TempDir()
	writing, release := make(chan struct{}), make(chan struct{})
	var held atomic.Bool
	path := func(id string) string {
		if id == "run-a" && held.CompareAndSwap(false, true) {
			close(writing) // the writer is at run-a's write
			<-release
		}
		return filepath.Join(dir, id, "run.json")
	}
	s := newSaver(path, func(string, ...any) {})
	s.stage("run-a", []byte("{}\n"), false)
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		s.writeAll(true, true)
	}()
	<-writing
	forgot := make(chan struct{})
	go func() {
		defer close(forgot)
		s.forget("run-a")
	}()
	select {
	case <-forgot:
	case <-time.After(20 * time.Second):
		t.Fatal("forget waited for the run's write under way")
	}
	close(release)
	<-wrote
	if _, err := os.Stat(filepath.Join(dir, "run-a")); !os.IsNotExist(err) {
		t.Errorf("a run forgotten during its write is on disk once the writer is done: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		s.run(ctx)
	}()
	defer func() {
		cancel()
		<-ran
	}()
	v := s.stage("run-b", []byte("{}\n"), false)
	if err := s.wait("run-b", v); err != nil {
		t.Fatal(err)
	}
	readRun(t, dir, "run-b")
	s.forget("run-b")
	if err := s.sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "run-b")); !os.IsNotExist(err) {
		t.Errorf("a run forgotten after its write is on disk once sync returned: %v", err)
	}
}

// A waiter blocked on a run wakes when the writer runs.
func TestSaverWaiterWakesOnTheWrite(t *testing.T) {
	s, dir, _ := testSaver(t)
	v := s.stage("run-a", []byte("x\n"), false)
	got := make(chan error, 1)
	go func() { got <- s.wait("run-a", v) }()
	runSaver(t, s)
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the waiter was not woken by the write")
	}
	if readRun(t, dir, "run-a") != "x\n" {
		t.Error("not on disk")
	}
}

// A soft snapshot (a report seen) is not written by itself: sync does not
// wait for it, it rides with the run's next write, and what is left is
// written when the writer stops.
func TestSoftSnapshotRidesWithTheNextWrite(t *testing.T) {
	s, dir, _ := testSaver(t)
	s.stage("run-a", []byte("seen\n"), true)
	if s.writeAll(false, false); s.writes.Load() != 0 {
		t.Fatalf("a soft snapshot was written at once (%d writes)", s.writes.Load())
	}
	if err := s.sync(); err != nil {
		t.Fatal(err)
	}
	v := s.stage("run-a", []byte("seen and reported\n"), false)
	s.writeAll(false, false)
	if err := s.wait("run-a", v); err != nil {
		t.Fatal(err)
	}
	if got := readRun(t, dir, "run-a"); got != "seen and reported\n" || s.writes.Load() != 1 {
		t.Errorf("run-a after the hard write: %q, %d writes; want the newest in one", got, s.writes.Load())
	}
	s.stage("run-a", []byte("seen again\n"), true)
	stop := runSaver(t, s)
	stop()
	if got := readRun(t, dir, "run-a"); got != "seen again\n" {
		t.Errorf("run-a once the writer stopped: %q, want the soft snapshot written", got)
	}
}

// In a burst (two or more changes staged while a write is under way) the
// writer waits burstLinger before its next write, and what comes in that
// time rides with it: the burst's changes after the first write share
// one write. A change that comes alone is written at once (the other
// tests of this file).
func TestBurstLingersForMore(t *testing.T) {
	s, dir, _ := testSaver(t)
	path := s.path
	inWrite, release := make(chan struct{}), make(chan struct{})
	var once atomic.Bool
	s.path = func(id string) string {
		if once.CompareAndSwap(false, true) {
			close(inWrite) // the first write is under way
			<-release
		}
		return path(id)
	}
	lingering, wake := make(chan struct{}, 1), make(chan time.Time)
	s.after = func(time.Duration) <-chan time.Time {
		lingering <- struct{}{}
		return wake
	}
	runSaver(t, s)
	s.stage("r", []byte("a\n"), false)
	<-inWrite
	vb := s.stage("r", []byte("b\n"), false)
	vc := s.stage("r", []byte("c\n"), false)
	close(release)
	select {
	case <-lingering:
	case <-time.After(10 * time.Second):
		t.Fatal("the writer did not linger after a write that two changes came during")
	}
	if n := s.writes.Load(); n != 1 {
		t.Fatalf("%d writes before the linger ended, want 1 (the first change's)", n)
	}
	vd := s.stage("r", []byte("d\n"), false) // comes while the writer lingers
	wake <- time.Now()
	for _, v := range []uint64{vb, vc, vd} {
		if err := s.wait("r", v); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.writes.Load(); n != 2 {
		t.Errorf("%d writes for a burst of four changes, want 2 (the first, then the three that came meanwhile)", n)
	}
	if got := readRun(t, dir, "r"); got != "d\n" {
		t.Errorf("run.json holds %q, want the newest", got)
	}
}

// snapHooks say what a snapSaver's snap does besides: gone, that the run
// is gone; after, what happens once it handed its snapshot over.
type snapHooks struct {
	gone  bool
	after func(id string)
}

// snapSaver is a testSaver whose writer takes its snapshots as the
// registry's does (snap, put): "snapshot N" for the N-th.
func snapSaver(t *testing.T) (*saver, string, *snapHooks) {
	s, dir, _ := testSaver(t)
	var n int
	h := &snapHooks{after: func(string) {}}
	s.snap = func(id string) bool {
		if h.gone {
			return false
		}
		n++
		s.put(id, []byte(fmt.Sprintf("snapshot %d\n", n)))
		h.after(id)
		return true
	}
	return s, dir, h
}

// Changes marked before a write share its one snapshot: the writer takes
// it as it writes, not each change as it is marked (a hundred reports at
// once were a hundred encodings of the run under the registry's lock).
// Every change's waiter hears of that one write.
func TestSaverTakesOneSnapshotAWrite(t *testing.T) {
	s, dir, _ := snapSaver(t)
	var vs []uint64
	for i := 0; i < 100; i++ {
		vs = append(vs, s.mark("run-a", false))
	}
	if s.snaps.Load() != 0 {
		t.Fatalf("%d snapshots taken as the changes were marked, want none", s.snaps.Load())
	}
	s.writeAll(false, false)
	for _, v := range vs {
		if err := s.wait("run-a", v); err != nil {
			t.Fatal(err)
		}
	}
	if got := readRun(t, dir, "run-a"); got != "snapshot 1\n" || s.snaps.Load() != 1 || s.writes.Load() != 1 {
		t.Errorf("run-a: %q after %d snapshots and %d writes, want one of each", got, s.snaps.Load(), s.writes.Load())
	}
}

// A change marked after the writer took its snapshot is not in that
// write: its waiter waits for the next one, which takes a new snapshot.
func TestSaverChangeAfterTheSnapshotWaitsForTheNextWrite(t *testing.T) {
	s, dir, hooks := snapSaver(t)
	v1 := s.mark("run-a", false)
	var v2 uint64
	hooks.after = func(id string) {
		if v2 == 0 {
			v2 = s.mark(id, false) // (the registry's lock let go)
		}
	}
	s.writeAll(false, false)
	if err := s.wait("run-a", v1); err != nil {
		t.Fatal(err)
	}
	if got := readRun(t, dir, "run-a"); got != "snapshot 1\n" {
		t.Fatalf("run-a after the first write: %q", got)
	}
	s.mu.Lock()
	onDisk := s.files["run-a"].written >= v2
	s.mu.Unlock()
	if onDisk {
		t.Fatal("the change marked after the snapshot counts as written by it")
	}
	s.writeAll(false, false)
	if err := s.wait("run-a", v2); err != nil {
		t.Fatal(err)
	}
	if got := readRun(t, dir, "run-a"); got != "snapshot 2\n" || s.writes.Load() != 2 {
		t.Errorf("run-a after the second write: %q, %d writes; want snapshot 2, in 2", got, s.writes.Load())
	}
}

// A soft change waits for a write to ride with, and takes no snapshot of
// its own meanwhile (a wait's answer marks its reports seen); at the stop
// it gets one.
func TestSaverSoftChangeTakesItsSnapshotOnlyWhenWritten(t *testing.T) {
	s, dir, _ := snapSaver(t)
	s.mark("run-a", true)
	s.writeAll(false, false)
	if s.snaps.Load() != 0 || s.writes.Load() != 0 {
		t.Fatalf("a soft change took %d snapshots and %d writes at once, want none", s.snaps.Load(), s.writes.Load())
	}
	if err := s.sync(); err != nil {
		t.Fatal(err)
	}
	stop := runSaver(t, s)
	stop()
	if got := readRun(t, dir, "run-a"); got != "snapshot 1\n" {
		t.Errorf("run-a once the writer stopped: %q, want the soft change written", got)
	}
}

// A run gone when its snapshot is due (snap says so) is not written, and
// its waiters are not left waiting.
func TestSaverRunGoneAtItsSnapshot(t *testing.T) {
	s, dir, hooks := snapSaver(t)
	hooks.gone = true
	v := s.mark("run-a", false)
	s.writeAll(false, false)
	if err := s.wait("run-a", v); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "run-a")); !os.IsNotExist(err) || s.writes.Load() != 0 {
		t.Errorf("a gone run was written (%d writes, %v)", s.writes.Load(), err)
	}
}
