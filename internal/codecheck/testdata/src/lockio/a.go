package lockio

import (
	"context"
	"os"
	"os/exec"
	"sync"

	"lockiodisk"
	tmux "lockiotmux"
	"syncs"
)

type Book struct {
	mu  sync.Mutex
	wmu sync.Mutex
	rw  sync.RWMutex
	n   int
}

// save writes under a lock it took.
func (b *Book) save() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return os.WriteFile("x", nil, 0o600) // want `os.WriteFile does I/O with b.mu held`
}

// staged stages under the lock and writes once it is let go: the rule.
func (b *Book) staged() error {
	b.mu.Lock()
	data := []byte{byte(b.n)}
	name := lockiodisk.Pure("x")
	b.mu.Unlock()
	return os.WriteFile(name, data, 0o600)
}

// saveLocked holds its caller's lock, through another package's write.
func (b *Book) saveLocked() error {
	syncs.AssertLocked(&b.mu)
	return lockiodisk.Save("x") // want `lockiodisk.Save \(os.WriteFile\) does I/O with b.mu held`
}

// countLocked names no lock: its caller's, still.
func (b *Book) countLocked() {
	os.Remove("x") // want `os.Remove does I/O with its caller's lock \(countLocked\) held`
}

// indirect runs git through a function of its own package.
func (b *Book) indirect() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.helper() // want `lockio.Book.helper \(exec.Cmd.Run\) does I/O with b.mu held`
}

func (b *Book) helper() { // (no fact: unexported, no other package can call it)
	exec.Command("git", "status").Run()
}

// branches lets go on the way that returns early; after the if, the
// lock is held.
func (b *Book) branches(fail bool) error {
	b.mu.Lock()
	if fail {
		b.mu.Unlock()
		return os.Remove("x")
	}
	os.Remove("y") // want `os.Remove does I/O with b.mu held`
	b.mu.Unlock()
	os.Remove("z")
	return nil
}

// maybe lets go on one way only: after the if, the lock is not surely
// held, and nothing is reported (only what is held on every way is).
func (b *Book) maybe(fail bool) {
	b.mu.Lock()
	if fail {
		b.mu.Unlock()
	}
	os.Remove("x")
}

// flush holds the write lock through its write, and says why where it
// takes it.
func (b *Book) flush() error {
	b.wmu.Lock() // lockio: the write lock, held through its write alone
	defer b.wmu.Unlock()
	b.mu.Lock()
	b.n++
	b.mu.Unlock()
	return os.WriteFile("x", nil, 0o600)
}

// allowed says why on the call's line; a comment with no reason is
// reported.
func (b *Book) allowed() {
	b.mu.Lock()
	defer b.mu.Unlock()
	os.Remove("x") // lockio: once, at the start, before anyone waits
	// lockio:
	os.Remove("y") // want `a lockio: comment needs its reason`
}

// reader holds a read lock: writers wait for it all the same.
func (b *Book) reader() {
	b.rw.RLock()
	os.ReadFile("x") // want `os.ReadFile does I/O with b.rw held`
	b.rw.RUnlock()
}

// later's goroutine runs elsewhere, with no lock held.
func (b *Book) later() {
	b.mu.Lock()
	defer b.mu.Unlock()
	go func() { os.Remove("x") }()
	f := func() { os.Remove("y") } // a literal is a function of its own
	_ = f
}

// try holds the lock once TryLock succeeds.
func (b *Book) try() {
	if !b.mu.TryLock() {
		return
	}
	os.Remove("x") // want `os.Remove does I/O with b.mu held`
	b.mu.Unlock()
}

// waitLocked lets its caller's lock go while it does its I/O.
func (b *Book) waitLocked() {
	syncs.AssertLocked(&b.mu)
	b.mu.Unlock()
	os.Remove("x")
	b.mu.Lock()
}

// metadata reads no file's content: os.Stat is not I/O here.
func (b *Book) metadata() {
	b.mu.Lock()
	defer b.mu.Unlock()
	os.Stat("x")
}

// syncFile syncs a file under the lock, in a switch whose every case holds it.
func (b *Book) syncFile(f *os.File, k int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch k {
	case 0:
		f.Sync() // want `os.File.Sync does I/O with b.mu held`
	default:
		f.Write(nil) // want `os.File.Write does I/O with b.mu held`
	}
}

// loop lets go and takes again in each round: the I/O between is free.
func (b *Book) loop(paths []string) {
	b.mu.Lock()
	for _, p := range paths {
		b.mu.Unlock()
		os.Remove(p)
		b.mu.Lock()
	}
	b.mu.Unlock()
}

// settle calls f with the lock held (as a registry's change is made).
func (b *Book) settle(f func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f()
}

// change hands f on to settle.
func (b *Book) change(f func()) { b.settle(f) }

// after calls f once the lock is let go.
func (b *Book) after(f func()) {
	b.mu.Lock()
	b.n++
	b.mu.Unlock()
	f()
}

// flushWith calls f under the write lock, which says why.
func (b *Book) flushWith(f func()) {
	b.wmu.Lock() // lockio: the write lock, held through its write alone
	defer b.wmu.Unlock()
	f()
}

// changes passes literals where they run with a lock held, and where
// they do not.
func (b *Book) changes() {
	b.settle(func() {
		os.Remove("x") // want `os.Remove does I/O with the lock lockio.Book.settle holds as it calls it held`
	})
	b.change(func() {
		os.Remove("y") // want `os.Remove does I/O with the lock lockio.Book.change holds as it calls it held`
	})
	lockiodisk.Under(func() {
		os.Remove("z") // want `os.Remove does I/O with the lock lockiodisk.Under holds as it calls it held`
	})
	b.after(func() { os.Remove("w") })
	b.flushWith(func() { os.Remove("v") })
}

// tmuxUnder runs a tmux command (through the Runner interface) under
// the lock.
func (b *Book) tmuxUnder(ctx context.Context, r tmux.Runner) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r.Run(ctx, "set-option", "-p", "@st_name", "w") // want `tmux.Runner.Run does I/O with b.mu held`
}
