//go:build !race

package syncs

import (
	"sync"
	"testing"
)

// Outside the race detector the check costs nothing: it neither panics
// nor touches the lock.
func TestAssertLockedIsFreeWithoutRace(t *testing.T) {
	var mu sync.Mutex
	AssertLocked(&mu)
	if !mu.TryLock() {
		t.Error("AssertLocked took the lock")
	}
}
