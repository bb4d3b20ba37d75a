package guard

import (
	"strings"
	"testing"
)

// TestCodeFedTheServersValues: code that runs programs or signals, given a
// value the guard knows is the server's (on its standard input, as an
// argument, in its environment, through a pipe of other programs), is
// refused: st does not follow values through code. Code that only prints
// such a value, and code whose own text holds a number, pass.
func TestCodeFedTheServersValues(t *testing.T) {
	for _, c := range []struct {
		cmd     string
		refused bool
	}{
		{`echo $TMUX | awk -F, '{system("kill " $2)}'`, true},
		{`echo $TMUX | cut -d, -f2 | xargs -I{} awk 'BEGIN{system("kill {}")}'`, true},
		{`awk -v t="$TMUX" 'BEGIN{split(t,a,","); system("kill " a[2])}'`, true},
		{`awk 'BEGIN{split(ARGV[1],a,","); system("kill " a[2])}' "$TMUX"`, true},
		{`X=$TMUX awk 'BEGIN{split(ENVIRON["X"],a,","); system("kill " a[2])}'`, true},
		{`echo $TMUX | python3 -c 'import os,sys; os.system("kill " + sys.stdin.read().split(",")[1])'`, true},
		{`pgrep tmux | awk '{system("kill " $1)}'`, true},
		{`tmux display -p '#{pid}' | ruby -e 'Process.kill(9, STDIN.read.to_i)'`, true},
		{`echo 4242 | awk '{system("kill " $1)}'`, true}, // $TMUX's pid, written plainly
		{`echo $TMUX | awk -F, '{print $2}'`, false},
		{`awk 'NR==4242{system("date")}' notes.txt`, false},
		{"python3 - <<'EOF'\nimport os\nport = 4242\nos.system('date')\nEOF", false},
		{`echo hello | awk '{system("echo " $1)}'`, false},
	} {
		r := Check(c.cmd, guardDefault)
		if (r != "") != c.refused {
			t.Errorf("Check(%q) = %q, want refused=%v", c.cmd, r, c.refused)
		}
		if c.refused && !strings.HasPrefix(r, "st guard: ") {
			t.Errorf("Check(%q): reason %q", c.cmd, r)
		}
	}
}
