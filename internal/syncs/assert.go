//go:build !race

package syncs

import "sync"

// AssertLocked checks nothing outside the race detector: the st that
// people run pays nothing for it (go test -race checks it).
func AssertLocked(mu *sync.Mutex) {}
