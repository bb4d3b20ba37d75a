package guard

import (
	"strings"
	"testing"
)

// TestOwnPane: typing into the agent's own pane is refused however the
// target names it; replacing a pane's process is judged as killing it (the
// agent's own, %0 of session work, is not the server's last in busy, and
// is in solo). Other panes, other servers and copy-mode commands pass.
func TestOwnPane(t *testing.T) {
	solo := guardDefault
	solo.Ask = answers(soloServer)
	noPane := guardDefault
	noPane.Pane = ""
	for _, c := range []struct {
		cmd  string
		g    Context
		want string // "" lets it through
	}{
		{"tmux send-keys C-d", guardDefault, "types into this agent's own pane"},
		{"tmux send-keys C-d", noPane, "types into this agent's own pane"},
		{"tmux send -t %0 exit Enter", guardDefault, "%0 is the pane the agent runs in"},
		{`tmux send-keys -t "$TMUX_PANE" C-c C-d`, guardDefault, "types into this agent's own pane"},
		{"tmux send-keys -t work:0 C-d", guardDefault, "work:0 may be the pane the agent runs in (%0)"},
		{"tmux send-keys -t work:0.0 ls Enter", guardDefault, "may be the pane the agent runs in"},
		{"tmux send-keys -t '{last}' C-d", guardDefault, "may be the pane the agent runs in"},
		{"tmux send-keys -t $P C-d", guardDefault, "its target '$P' may be this agent's own pane"},
		{"tmux paste-buffer -t %0", guardDefault, "types into this agent's own pane"},
		{"tmux send-prefix", guardDefault, "types into this agent's own pane"},
		{"tmux pipe-pane -I -t %0 'echo exit'", guardDefault, "types into this agent's own pane"},
		{"tmux if true 'send-keys C-d'", guardDefault, "types into this agent's own pane"},
		{"tmux send-keys -t %1 ls Enter", guardDefault, ""},
		{"tmux send-keys -t foo: C-c", guardDefault, ""},
		{"tmux send-keys -t %1 C-d", noPane, ""},
		{"tmux send-keys C-d", guardNone, ""}, // the agent runs in no pane
		{"tmux send-keys -X cancel", guardDefault, ""},
		{"tmux pipe-pane -o 'cat >> log'", guardDefault, ""},
		{"tmux -L other send-keys C-d", guardDefault, ""},
		{"tmux respawn-pane -k true", guardDefault, ""},
		{"tmux respawn-pane -k true", solo, "may be the last pane of the server"},
		{"tmux respawn-pane -k true", noPane, "without -t it replaces the process of the agent's own pane"},
		{"tmux respawn-window -k -t solo: true", solo, "may be the last window of the server"},
		{"tmux respawnw -k -t %0 true", solo, "may be the last window of the server"},
		{"tmux respawn-pane -k -t $P true", guardDefault, "its target '$P' may be the agent's own"},
		{"tmux kill-session -t foo; tmux kill-session -t w1; tmux kill-window -t work:1; tmux respawn-pane -k true", guardDefault, "may be the last pane"},
		{"tmux kill-session -t foo; tmux kill-session -t w1; tmux respawn-pane -k true", guardDefault, ""},
		{"tmux respawn-pane true", solo, ""},
	} {
		r := Check(c.cmd, c.g)
		switch {
		case c.want == "" && r != "":
			t.Errorf("Check(%q) refused it: %s", c.cmd, r)
		case c.want != "" && !strings.Contains(r, c.want):
			t.Errorf("Check(%q) = %q\nwant a refusal with %q", c.cmd, r, c.want)
		}
	}
}
