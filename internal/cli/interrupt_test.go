package cli

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestInterruptEndsAStuckCommand: Ctrl-C ends the command's context at
// once, and a command that does not end with it (held in an open(2) of a
// FIFO, as st worker start --task FIFO was for 11 minutes) is ended by
// force after the grace, or at a second Ctrl-C.
func TestInterruptEndsAStuckCommand(t *testing.T) {
	for _, tc := range []struct {
		name   string
		second bool
	}{{"grace", false}, {"second signal", true}} {
		t.Run(tc.name, func(t *testing.T) {
			sigs := make(chan os.Signal, 2)
			forced := make(chan struct{})
			grace := time.Hour
			if !tc.second {
				grace = 10 * time.Millisecond
			}
			ctx, stop := onInterrupt(context.Background(), sigs, grace, func() { close(forced) })
			defer stop()
			sigs <- os.Interrupt
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("Ctrl-C did not end the command's context")
			}
			if tc.second {
				sigs <- syscall.SIGTERM
			}
			select {
			case <-forced:
			case <-time.After(10 * time.Second):
				t.Fatal("a command that did not end with its context was not ended")
			}
		})
	}
}
