package locked

import (
	"sync"

	"syncs"
)

type Book struct {
	mu      sync.Mutex
	entries []string
}

// lenLocked asserts its lock first: the convention.
func (b *Book) lenLocked() int {
	syncs.AssertLocked(&b.mu)
	return len(b.entries)
}

// firstLocked does not check its lock.
func (b *Book) firstLocked() string { // want `firstLocked is …Locked but does not begin with syncs.AssertLocked`
	return b.entries[0]
}

// lastLocked checks it, but not first.
func (b *Book) lastLocked() string { // want `lastLocked is …Locked but does not begin with syncs.AssertLocked`
	n := len(b.entries)
	syncs.AssertLocked(&b.mu)
	return b.entries[n-1]
}

// add is called with b.mu held, as only its comment says.
func (b *Book) add(e string) { // want `add says in its comment that it needs a lock held: name it …Locked`
	b.entries = append(b.entries, e)
}

var global sync.Mutex

// resetLocked is a plain function with a package-level lock.
func resetLocked() {
	syncs.AssertLocked(&global)
}

// Len takes the lock and calls the …Locked function.
func (b *Book) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lenLocked()
}
