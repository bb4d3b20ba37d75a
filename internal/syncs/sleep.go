package syncs

import (
	"context"
	"time"
)

// Sleep waits for d, or until ctx ends (then it returns ctx's error): the
// one wait of st's loops that poll, so that Ctrl-C on a command and a
// daemon's shutdown never wait out a poll's interval.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
