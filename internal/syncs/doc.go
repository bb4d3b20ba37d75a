// Package syncs checks the lock discipline of st's owners of state: a
// function named …Locked must be called with its owner's lock held, and
// says so first thing with AssertLocked, which panics when the lock is
// not held at all. Under the race detector (go test -race, as every tier
// runs) the check is real; in the st that people run it costs nothing.
//
// What it can and cannot prove: sync.Mutex has no owner, so the check is
// TryLock. A TryLock that succeeds proves that no one held the lock, and
// so that the caller did not: that is the mistake it catches (a call from
// a path that forgot to lock), panicking with the caller's stack. One
// that fails proves only that someone holds it, possibly another
// goroutine while the caller holds nothing, so a missing lock on a path
// that runs beside a holder is missed on that call (the race detector
// catches the data race itself). The successful TryLock and its Unlock
// are a moment of real locking: on a correct path they never happen, and
// on a wrong one the program is about to panic.
//
// It also holds Sleep, the wait of every loop that polls, which ends with
// its context.
package syncs
