package plugin

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	// Tests must never reach a tmux server they did not start.
	os.Unsetenv("TMUX")
	os.Unsetenv("TMUX_PANE")
	os.Exit(m.Run())
}
