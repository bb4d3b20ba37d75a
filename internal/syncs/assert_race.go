//go:build race

package syncs

import "sync"

// AssertLocked panics when no one holds mu: the caller of a …Locked
// function forgot to take it (see the package doc for what it proves).
func AssertLocked(mu *sync.Mutex) {
	if mu.TryLock() {
		mu.Unlock()
		panic("syncs: a …Locked function was called without its lock held")
	}
}
