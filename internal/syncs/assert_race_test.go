//go:build race

package syncs

import (
	"sync"
	"testing"
)

func TestAssertLockedUnderRace(t *testing.T) {
	var mu sync.Mutex
	mu.Lock()
	AssertLocked(&mu) // held: no panic
	mu.Unlock()
	defer func() {
		if recover() == nil {
			t.Error("AssertLocked did not panic on a lock no one holds")
		}
		if !mu.TryLock() {
			t.Error("AssertLocked left the lock held")
		}
	}()
	AssertLocked(&mu)
}
