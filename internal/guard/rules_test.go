package guard

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestServerEnds: the rules of issue 23 item 10. Ending the agent's own
// session, window or pane when it is the server's last ends the server;
// a pid read from $TMUX, or one st cannot check, may be the server's;
// interpreters' kill calls are judged as kill is. Each case names the
// server it runs against: solo (one session of one pane) or busy (three
// sessions, five panes).
func TestServerEnds(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{"server.pid": "31337\n", "srv.pid": "4242\n", "pane.pid": "4300\n", "junk.pid": "x\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	solo := Context{TmuxSocket: "/tmp/tmux-0/default,4242,0", Cwd: dir, Ask: answers(soloServer)}
	busy := Context{TmuxSocket: "/tmp/tmux-0/default,4242,0", Cwd: dir, Ask: answers(busy)}
	cases := []struct {
		cmd    string
		g      Context
		refuse string // part of the reason; "" lets it through
	}{
		// The last session, window or pane, however tmux finds it.
		{"tmux kill-session -t solo", solo, "may be the last session"},
		{"tmux kill-session -t so", solo, "last session"},    // a prefix
		{"tmux kill-session -t 's*'", solo, "last session"},  // a pattern
		{"tmux kill-session -t '$0'", solo, "last session"},  // its id
		{"tmux kill-session -t =solo", solo, "last session"}, // exactly
		{"tmux kill-session -t solo:0", solo, "last session"},
		{"tmux kill-session -t %0", solo, "last session"}, // the pane's session
		{"tmux kill-window -t solo:0", solo, "last window"},
		{"tmux kill-window -t @0", solo, "last window"},
		{"tmux kill-window -t solo", solo, "last window"}, // a session's current window
		{"tmux kill-window -t :", solo, "last window"},
		{"tmux kill-pane -t %0", solo, "last pane"},
		{"tmux kill-pane -t solo", solo, "last pane"},
		{"tmux killp -t solo:0.0", solo, "last pane"},
		{"tmux unlink-window -k -t solo:0", solo, "last window"},
		{"tmux run-shell 'tmux kill-session -t solo'", solo, "last session"},
		{"tmux kill-session -t nosuch", solo, ""},
		{"tmux kill-session -t soloist", solo, ""},
		{"tmux new -d -s tmp; tmux kill-session -t tmp", solo, ""},
		{"tmux kill-window -t solo:1", solo, ""},
		{"tmux kill-pane -t %1", solo, ""},
		// With several sessions: one kill is not the last; all of them are.
		{"tmux kill-session -t foo", busy, ""},
		{"tmux kill-session -t foo; tmux kill-session -t w1", busy, ""},
		{"tmux kill-session -t foo; tmux kill-session -t w1; tmux kill-session -t work", busy, "last session"},
		{"for s in foo w1 work; do tmux kill-session -t $s; done", busy, "last session"},
		{"tmux kill-window -t :1", busy, ""},
		{"tmux kill-pane -t {last}", busy, ""},
		{"tmux kill-window -t w1", busy, ""},
		// pids: the server's, its last pane's, or one st cannot check.
		{`IFS=, read s p r <<< "$TMUX"; kill $p`, busy, "4242 is the tmux server's pid"},
		{"kill 4242", busy, "4242 is the tmux server's pid"},
		{"kill -9 -- -4242", busy, "4242 is the tmux server's pid"},
		{"kill 4300", solo, "process of pane %0"},
		{"kill 4300", busy, ""},
		{"kill $(cat srv.pid)", busy, "4242 is the tmux server's pid"},
		{"kill $(<pane.pid)", solo, "process of pane %0"},
		{"kill $(tmux display -p -t %0 '#{pane_pid}')", solo, "may be the server's last"},
		{"kill $(tmux display -p -t w1 '#{pane_pid}')", busy, ""},
		{`kill "$(echo $TMUX | cut -d, -f2)"`, busy, "tmux server"},
		{"kill ${TMUX#*,}", busy, ""}, // "4242,0" is no pid: kill refuses it
		{"kill $PPID", busy, "cannot tell whose pid"},
		{"kill $SERVER_PID", busy, "cannot tell whose pid"},
		{"kill $(cat missing.pid)", busy, "pid file st can read"},
		{"kill $(cat junk.pid)", busy, "cannot tell whose pid"},
		{"echo 31337 > new.pid; kill $(cat new.pid)", busy, "cannot tell whose pid"},
		{"ps -eo pid= | xargs kill", busy, "cannot tell whose pid"},
		{"ps aux | grep tmux | awk '{print $2}' | xargs kill", busy, "finds the tmux server"},
		{"pkill -f solo", solo, "command line"}, // the server's own command line names it
		{"pkill -f work", busy, "command line"},
		// ... and the pids st can check.
		{"kill 12345", busy, ""},
		{"kill -9 %1", busy, ""},
		{"kill %%", busy, ""},
		{"sleep 9 & kill $!", busy, ""},
		{"npm start & PID=$!; sleep 5; kill $PID", busy, ""},
		{"kill -TERM $$", busy, ""},
		{"kill $(cat server.pid)", busy, ""},
		{"kill $(pgrep node)", busy, ""},
		{"pgrep -f 'node server.js' | xargs kill", busy, ""},
		{"kill $(pidof node)", busy, ""},
		{"kill -9 $(lsof -ti :3000)", busy, ""},
		{"kill $(lsof -t -i tcp:8080)", busy, ""},
		{"kill $(lsof -nP -iTCP:3000 -sTCP:LISTEN -t)", busy, ""},
		{"kill $(lsof -t -c node)", busy, "cannot tell whose pid"},
		{"fuser 3000/tcp 2>/dev/null | xargs kill", busy, ""},
		{"ps aux | grep '[n]ode server.js' | awk '{print $2}' | xargs -r kill", busy, ""},
		{"kill $(lsof -t /tmp/tmux-0/default)", busy, "tmux socket"},
		{"kill $(lsof -t ./default)", busy, "cannot tell whose pid"},
		{"kill $(jobs -p)", busy, ""},
		{"pkill -f 'node server.js'", busy, ""},
		// Interpreters: their kill calls, and what they do with $TMUX.
		{`python3 -c "import os; os.kill(int(os.environ['TMUX'].split(',')[1]),15)"`, busy, "read from $TMUX"},
		{`node -e 'process.kill(Number(process.env.TMUX.split(",")[1]))'`, busy, "read from $TMUX"},
		{`perl -e 'kill 15, (split /,/, $ENV{TMUX})[1]'`, busy, "read from $TMUX"},
		{`ruby -e 'Process.kill(:TERM, ENV["TMUX"].split(",")[1].to_i)'`, busy, "read from $TMUX"},
		{`php -r 'posix_kill(4242, 15);'`, busy, "4242 is the tmux server's pid"},
		{`python3 -c 'import os; os.killpg(4242, 9)'`, busy, "4242 is the tmux server's pid"},
		{`python3 -c 'import os,sys; os.kill(int(sys.argv[1]), 9)' 4242`, busy, "cannot tell whose pid"},
		{`node -e 'process.kill(4300)'`, solo, "process of pane %0"},
		{`python3 -c 'import os,subprocess; subprocess.run(["tmux","-S",os.environ["TMUX"].split(",")[0],"kill-server"])'`, busy, "reads $TMUX"},
		{`python3 -c 'import os; os.kill(12345, 9)'`, busy, ""},
		{`python3 -c 'import os,signal; os.kill(os.getpid(), signal.SIGTERM)'`, busy, ""},
		{`python3 -c 'import os; os.kill(pid, 0)'`, busy, ""},
		{`node -e 'process.kill(process.pid, "SIGINT")'`, busy, ""},
		{`perl -e 'kill 0, $pid or die'`, busy, ""},
		{`python3 -c 'import os; print(os.environ.get("TMUX"))'`, busy, ""},
		{`node -e 'const c = require("child_process").spawn("sleep", ["9"]); c.kill()'`, busy, ""},
	}
	for _, c := range cases {
		got := Check(c.cmd, c.g)
		switch {
		case c.refuse == "" && got != "":
			t.Errorf("Check(%q) on %s refused it: %s", c.cmd, c.g.server(), got)
		case c.refuse != "" && !strings.Contains(got, c.refuse):
			t.Errorf("Check(%q) on %s = %q, want a refusal saying %q", c.cmd, c.g.server(), got, c.refuse)
		}
	}
}

// server names the test server a context asks, for messages.
func (g Context) server() string {
	s, _ := g.Ask("")
	if len(s.Panes) == 1 {
		return "solo"
	}
	return "busy"
}

// TestServerAsked: when tmux cannot be asked, a kill only its answer lets
// through is refused; with no server running, nothing is the last.
func TestServerAsked(t *testing.T) {
	down := Context{TmuxSocket: "/tmp/tmux-0/default,4242,0", Ask: func(string) (Server, error) {
		return Server{}, errors.New("tmux did not answer")
	}}
	none := Context{TmuxSocket: "/tmp/tmux-0/default,4242,0", Ask: answers(Server{})}
	blind := Context{TmuxSocket: "/tmp/tmux-0/default,4242,0"}
	for _, c := range []struct {
		cmd    string
		g      Context
		refuse bool
	}{
		{"tmux kill-session -t foo", down, true},
		{"kill 12345", down, true},
		{"kill %1", down, false},
		{"tmux ls", down, false},
		{"tmux kill-session -t foo", blind, true},
		{"tmux kill-session -t solo", none, false},
		{"kill 12345", none, false},
		{"kill 4242", none, true}, // $TMUX still names the server's pid
	} {
		if got := Check(c.cmd, c.g); (got != "") != c.refuse {
			t.Errorf("Check(%q) = %q, want refused=%v", c.cmd, got, c.refuse)
		}
	}
}

// TestStOutsideTheAgent: the rule of issue 23 item 7. What the tmux server
// runs for the agent (run-shell, if-shell, a new pane, keys typed into
// one, hooks, #(...)), or at, ssh, systemd-run, runs outside the agent's
// processes, where st's person check cannot see the agent: st there is
// refused. In the agent's own shell it is st's to judge.
func TestStOutsideTheAgent(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ans.sh"), []byte("st gate answer gate-0123 yes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g := guardDefault
	g.Cwd = dir
	for _, c := range []struct {
		cmd    string
		refuse bool
	}{
		{"tmux run-shell -b 'sh ans.sh'", true},
		{"tmux run-shell 'st gate answer gate-0123 yes'", true},
		{"tmux run -b '/usr/local/bin/st gate answer gate-0123 yes'", true},
		{"tmux new-window -d 'st worker offer %3 alpha'", true},
		{"tmux split-window 'env -i st orch accept-remote on'", true},
		{"tmux send-keys -t 1 'st orch accept-remote on' Enter", true},
		{"tmux display -p '#(st web)'", true},
		{`tmux set-hook -g session-created 'run-shell "st gate answer g yes"'`, true},
		{"tmux if-shell true 'run-shell \"sh ans.sh\"'", true},
		{"tmux -L other run-shell 'st web'", true},
		{"tmux -L other new -d 'st gate answer g yes'", true},
		{"echo 'st gate answer g yes' | at now", true},
		{"systemd-run --user st web", true},
		{"ssh localhost st gate answer g yes", true},
		{`tmux run-shell "$ST gate answer g yes"`, true},
		{`tmux run-shell '$HOME/go/bin/st web'`, true},
		{"echo 'st gate answer g yes' > a2.sh; tmux run-shell 'sh a2.sh'", true},
		// st in the agent's own shell, and other text tmux runs.
		{"st gate list", false},
		{"st worker done --summary 'did it'", false},
		{"bash -c 'st worker wait w1'", false},
		{"tmux run-shell 'echo hi'", false},
		{"tmux new-window -d 'make test'", false},
		{"tmux send-keys -t w1 'npm test' Enter", false},
		{"tmux -L other new -d \"$CMD\"", false},
	} {
		got := Check(c.cmd, g)
		if (got != "") != c.refuse {
			t.Errorf("Check(%q) = %q, want refused=%v", c.cmd, got, c.refuse)
		}
		if c.refuse && !strings.Contains(got, "person") {
			t.Errorf("Check(%q): the reason %q does not say st there passes for a person", c.cmd, got)
		}
	}
}

// TestGuardOnDisk: what the guard reads on disk when a command names it:
// a copy of tmux (or a link to it) under another name, a file of tmux
// commands for source-file, a script a command runs.
func TestGuardOnDisk(t *testing.T) {
	tmuxBin, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	data, err := os.ReadFile(tmuxBin)
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"kill.conf": "# ends it\nkill-server\n", "ls.conf": "list-sessions\n", "stop.sh": "tmux kill-server\n", "ok.sh": "tmux ls\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "t"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(tmuxBin, filepath.Join(dir, "tl")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	g := guardDefault
	g.Cwd = dir
	for _, c := range []struct {
		cmd    string
		refuse bool
	}{
		{"./t kill-server", true},  // a copy of tmux
		{"./tl kill-server", true}, // a link to it
		{"./t ls", false},
		{"tmux source-file kill.conf", true},
		{"tmux source " + filepath.Join(dir, "kill.conf"), true},
		{"tmux source-file ls.conf", false},
		{"tmux source-file d", true}, // not a plain file
		{"tmux source-file \"$F\"", true},
		{"tmux source-file missing.conf", false}, // tmux cannot read it either
		{"echo kill-server > n.conf; tmux source-file n.conf", true},
		{"bash stop.sh", true},
		{"sh ok.sh", false},
		{"rm -rf /tmp/tmux-*", true}, // a glob that may hold the socket
		{"rm -rf /tmp/tmux-0/def*", true},
		{"rm -rf /tmp/other-*", false},
		{"systemctl reboot", true},
		{"systemctl status", false},
		{"loginctl kill-user 0", true},
		{"init 0", true},
		{"halt", true},
		{"shutdown -c", false},
		{"skill -l", false},
		{"killall -u root node", false},
		{"killall -u root", true},
		{"pkill --parent 1", true},
	} {
		got := Check(c.cmd, g)
		if (got != "") != c.refuse {
			t.Errorf("Check(%q) = %q, want refused=%v", c.cmd, got, c.refuse)
		}
	}
}
