package web

import (
	"testing"
	"time"
)

// SetPollForTest changes how often /api/events polls, for one test.
func SetPollForTest(t testing.TB, d time.Duration) {
	old := pollEvery
	pollEvery = d
	t.Cleanup(func() { pollEvery = old })
}
