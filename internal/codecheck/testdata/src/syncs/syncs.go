// Package syncs stands for st's internal/syncs in the analyzers' tests.
package syncs

import "sync"

func AssertLocked(mu *sync.Mutex) {}
