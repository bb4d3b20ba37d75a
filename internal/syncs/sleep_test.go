package syncs

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("a sleep that ran its course: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("a sleep whose context had ended: %v", err)
	}
	if time.Since(start) > time.Minute {
		t.Errorf("a sleep whose context had ended waited %s", time.Since(start))
	}
}
