package lockpair

import "sync"

type M struct {
	mu   sync.Mutex
	rw   sync.RWMutex
	n    int
	cond chan struct{}
}

// Deferred: taken and let go when it returns.
func (m *M) Deferred() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
}

// Branches: let go on each way out.
func (m *M) Branches(fail bool) error {
	m.mu.Lock()
	if fail {
		m.mu.Unlock()
		return nil
	}
	m.n++
	m.mu.Unlock()
	return nil
}

// waitLocked lets its caller's lock go while it waits and takes it
// again before it returns (a group commit's wait): legitimate.
func (m *M) waitLocked() {
	m.mu.Unlock()
	<-m.cond
	m.mu.Lock()
}

// StageWaitUndo: stage, let go, wait, take again to undo.
func (m *M) StageWaitUndo() {
	m.mu.Lock()
	m.n++
	m.mu.Unlock()
	<-m.cond
	m.mu.Lock()
	m.n--
	m.mu.Unlock()
}

// lock hands its lock to the caller.
func (m *M) lock() {
	m.mu.Lock() // want `m.mu is taken here and let go in another function`
}

// settleUnlock lets go a lock its caller took.
func (m *M) settleUnlock() {
	m.n++
	m.mu.Unlock() // want `m.mu is let go here, but was taken in another function`
}

// Reader pairs the read lock on its own: a Lock does not pair an RUnlock.
func (m *M) Reader() int {
	m.rw.RLock()
	defer m.rw.RUnlock()
	m.rw.Unlock() // want `m.rw is let go here, but was taken in another function`
	return m.n
}

// DeferredLiteral lets go in a deferred literal, as part of itself.
func (m *M) DeferredLiteral() {
	m.mu.Lock()
	defer func() {
		m.n++
		m.mu.Unlock()
	}()
}

// GoLiteral: a goroutine is a function of its own.
func (m *M) GoLiteral() {
	m.mu.Lock()
	go func() {
		m.mu.Unlock() // want `m.mu is let go here, but was taken in another function`
	}()
	m.mu.Unlock()
}

// Try takes the lock when TryLock succeeds.
func (m *M) Try() bool {
	if !m.mu.TryLock() {
		return false
	}
	defer m.mu.Unlock()
	return true
}
