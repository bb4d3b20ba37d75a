package guard

import "testing"

// TestGuardReadsWrapperOptions: tmux kill-server behind options of
// screen, xargs and git difftool that st's reader once took wrongly (a
// cluster's value, an option's value only attached, a command attached),
// each let by before. The guard is a rail: it stops an agent's slip, not
// a determined attacker, and refuses what it cannot read.
func TestGuardReadsWrapperOptions(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{
		"screen -dmS s tmux kill-server",
		"echo kill-server | xargs -i tmux {}",
		"echo kill-server | xargs --replace tmux {}",
		"git difftool --extcmd='tmux kill-server'",
		"git difftool -x'tmux kill-server'",
	} {
		if got := Check(cmd, guardDefault); got == "" {
			t.Errorf("Check(%q) let it by", cmd)
		}
	}
}
