// Package lockiodisk stands for a package of st whose functions do I/O
// (internal/store): the lockio check knows them by their facts.
package lockiodisk

import (
	"os"
	"sync"
)

// Write writes the file p.
func Write(p string) error { // want Write:"does I/O: os.WriteFile"
	return os.WriteFile(p, nil, 0o600)
}

// Save writes through Write.
func Save(p string) error { // want Save:"does I/O: os.WriteFile"
	return Write(p)
}

// Pure does no I/O.
func Pure(p string) string { return p + ".json" }

var mu sync.Mutex

// Under calls f with its lock held.
func Under(f func()) { // want Under:"calls parameters \[0\] with a lock held"
	mu.Lock()
	defer mu.Unlock()
	f()
}
