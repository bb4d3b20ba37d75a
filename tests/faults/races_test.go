package faults

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
)

// Races of the restore (issue 32, items 10 and 11).

// TestDownUpRightAfterRestore: four sim workers and one whose
// conversation is gone; the tmux server is killed, and around st's
// restore (at a moment that moves from trial to trial: while st makes
// the sessions, as they are back, while the agents start, once the four
// are idle) st down; st up. A restart must not invent a state: every
// worker whose agent can come back is listed live, in a pane of its own
// on the server with its relations (never gone saying its agent could not
// come back), and the one that could not is gone (or still starting,
// when st stopped before its start did). Before issue 32 (item
// 10), 1 run in 5 of a check like it listed a sim worker that had come
// back as gone: st's stop cut the start of its agent short ("st could not
// start it: context canceled"), and that was written as the agent's
// failure. CI: 4 trials; scripts/faults: 30.
func TestDownUpRightAfterRestore(t *testing.T) {
	n := trials(4, 30)
	losses := 0
	for trial := 0; trial < n; trial++ {
		losses += downUpTrial(t, trial)
	}
	report(t, "st-down-up-around-a-restore", n, losses,
		"trials where st down; st up around a restore listed a worker whose agent can come back as gone or without its pane, or the one that could not as live")
}

func downUpTrial(t *testing.T, trial int) (lost int) {
	w := newWorld(t, "")
	defer w.close()
	w.up()
	ws := w.startWorkers(5, 3, w.writeFile("long.md", "sleep: 600s\nsummary: never\n"), "w")
	w.waitPicture(len(ws))
	vs, err := w.list()
	if err != nil {
		t.Fatal(err)
	}
	lostOne := vs[jitter(0, len(vs)-1)]
	if err := os.Remove(filepath.Join(w.dir, "home", ".st-sim", lostOne.AgentSession)); err != nil {
		t.Fatalf("the sim's record of %s's conversation: %v", lostOne.Name, err)
	}
	start := time.Now()
	if _, err := w.tmux("kill-server"); err != nil {
		t.Fatal(err)
	}
	moment := trial % 4
	w.waitMoment(moment, start, lostOne.Name, len(ws)-1)
	w.must(w.st("", "down"))
	w.up()
	var problems []string
	// Once the one that could not come back is judged: the four live.
	waitFor(t, 60*time.Second, func() (bool, string) {
		var settled bool
		var wait string
		problems, settled, wait = w.afterRestart(lostOne.Name, len(ws))
		return settled, wait + strings.Join(problems, "; ")
	})
	if len(problems) > 0 {
		t.Errorf("trial %d (moment %d): after st down; st up: %v\n%s", trial, moment, problems, w.logTail())
		return 1
	}
	return 0
}

// waitMoment waits for the moment of a trial around the restore that
// began at start: 0 none (st makes the sessions), 1 the sessions back,
// 2 a little after (agents starting), 3 the n that can come back idle.
func (w *world) waitMoment(moment int, start time.Time, lostName string, n int) {
	if moment == 0 {
		return
	}
	waitFor(w.t, 60*time.Second, func() (bool, string) {
		at, _ := restoreStats(w)
		return !at.Before(start), "no restore yet"
	})
	switch moment {
	case 2:
		time.Sleep(time.Duration(jitter(0, 150)) * time.Millisecond)
	case 3:
		waitFor(w.t, 60*time.Second, func() (bool, string) {
			vs, _ := w.list()
			idle := 0
			for _, v := range vs {
				if v.Name != lostName && v.State == api.Idle {
					idle++
				}
			}
			return idle == n, fmt.Sprintf("%d of %d idle", idle, n)
		})
	}
}

// afterRestart is what is wrong after the restart, once the worker
// named lostName (whose conversation is gone) is judged (settled); wait
// says what is not there to judge yet (st restoring the server).
func (w *world) afterRestart(lostName string, n int) (problems []string, settled bool, wait string) {
	var st struct {
		Restoring bool `json:"restoring"`
	}
	if out, err := w.st("", "status", "--json").Output(); err != nil || jsonUnmarshal(out, &st) != nil || st.Restoring {
		return nil, false, "st restores the server"
	}
	vs, err := w.list()
	if err != nil {
		return nil, false, "st worker list: " + err.Error()
	}
	out, err := w.tmux("list-panes", "-a", "-F", "#{pane_id} #{@st_name}")
	if err != nil {
		return nil, false, "tmux: " + err.Error()
	}
	named := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		id, name, _ := strings.Cut(l, " ")
		named[id] = name
	}
	if len(vs) != n {
		problems = append(problems, fmt.Sprintf("%d workers listed, want %d", len(vs), n))
	}
	for _, v := range vs {
		switch {
		case v.Name == lostName:
			// Gone once judged; still "starting" when st stopped before
			// its agent's start did (the next st leaves it so: issue 37).
			settled = v.State == api.Gone || v.State == api.Starting
			if !settled {
				wait = fmt.Sprintf("%s (its conversation gone) is %s; ", v.Name, v.State)
			}
		case !v.State.Live():
			problems = append(problems, fmt.Sprintf("%s is %s (%q), but its agent can come back", v.Name, v.State, v.Error))
		case named[v.ID] != v.Name:
			problems = append(problems, fmt.Sprintf("%s is listed in %s, a pane that is not its own (%q)", v.Name, v.ID, named[v.ID]))
		}
	}
	return problems, settled, wait
}

// TestServerKilledDuringRestore: a tmux server with four sessions of
// windows of different kinds (st's coordinator and two sim workers, and
// sessions st does not know running a shell, cat and sleep) is killed,
// and killed again while st restores it (kill-server or SIGKILL, turn
// about, at a moment that moves from trial to trial), with st ls running
// all the while. The server that exits under the restore is one more
// state of it: st starts one again and makes every session again, so no
// session or window is lost. Before issue 32 (item 11), st asked again
// only for the first session ("make session ...: server exited
// unexpectedly"), in 1-2 restores of 10. CI: 20 trials; scripts/faults:
// 50; in one world, the sessions and windows counted after each.
func TestServerKilledDuringRestore(t *testing.T) {
	n := trials(20, 50)
	w := newWorld(t, "")
	defer w.close()
	want := w.killWorld()
	lsLoop := w.startLsLoop()
	defer lsLoop.stop()
	lostSessions, lostWindows, under := 0, 0, 0
	for trial := 0; trial < n; trial++ {
		sessions, windows, exited := w.killDuringRestore(trial, want)
		lostSessions += sessions
		lostWindows += windows
		if exited {
			under++
		}
	}
	durs, _ := lsLoop.stop()
	t.Logf("%d trials, %d st ls; the server exited under a restore (st's log says) in %d", n, len(durs), under)
	if lostSessions+lostWindows > 0 {
		t.Errorf("%d sessions and %d windows lost in %d trials", lostSessions, lostWindows, n)
	}
	report(t, "tmux-server-killed-during-the-restore", n, lostSessions,
		"sessions lost (of 4 a trial) when the tmux server was killed again while st restored it")
}

// killWorld makes the sessions of TestServerKilledDuringRestore, and
// returns the windows of each by session name, once st's picture has
// them all.
func (w *world) killWorld() map[string]int {
	w.up()
	w.startWorkers(2, 2, w.writeFile("long.md", "sleep: 600s\nsummary: never\n"), "w")
	want := map[string]int{w.session: 3}
	for i, cmds := range [][]string{{"sh", "cat"}, {"cat", "sleep 600"}, {"sleep 600", "sh"}} {
		name := fmt.Sprintf("s%d", i+1)
		if _, err := w.tmux("new-session", "-d", "-s", name, cmds[0]); err != nil {
			w.t.Fatal(err)
		}
		if _, err := w.tmux("new-window", "-t", name, cmds[1]); err != nil {
			w.t.Fatal(err)
		}
		want[name] = 2
	}
	w.waitPicture(2)
	waitFor(w.t, 30*time.Second, func() (bool, string) {
		n := strings.Count(layoutText(w), `"path"`)
		return n == 9, fmt.Sprintf("st's picture has %d panes, want 9", n)
	})
	return want
}

// killDuringRestore kills the server, then the one st's restore starts,
// and counts the sessions and windows of want not back once st has
// restored again and keeps the new server in its picture. exited says
// that st's log tells of a server that exited under a restore.
func (w *world) killDuringRestore(trial int, want map[string]int) (lostSessions, lostWindows int, exited bool) {
	before := strings.Count(w.logText(), "exited under the restore")
	kill := func() {
		if trial%2 == 0 {
			w.tmux("kill-server")
			return
		}
		out, err := w.tmux("display-message", "-p", "#{pid}")
		var pid int
		if _, serr := fmt.Sscan(out, &pid); err == nil && serr == nil && pid > 1 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	kill()
	// The restore's server, killed as soon as it is there plus a moment.
	// A server killed as it started can be left taking no client for a
	// while (tmux 3.3a; st's restore then ends it, or finds the server
	// gone again and makes another): what counts is that every session
	// comes back, not how soon.
	waitFor(w.t, 90*time.Second, func() (bool, string) {
		_, err := w.tmux("has-session")
		return err == nil, "no server of st's restore yet\n" + w.logTail()
	})
	time.Sleep(time.Duration(jitter(0, 40)) * time.Millisecond)
	kill()
	var got map[string]int
	serverID := func() string {
		id, _ := w.tmux("display-message", "-p", "#{pid}:#{start_time}")
		return strings.TrimSpace(id)
	}
	t0 := time.Now()
	waitFor(w.t, 120*time.Second, func() (bool, string) {
		// st's restore over, and its server in st's picture: then the
		// windows of that same server.
		if time.Since(t0) > 115*time.Second {
			// What is there, for the failure's story.
			ps, _ := run(execCommand("sh", "-c", "ps -eo pid,ppid,stat,args | grep -v grep | grep '"+w.dir+"'; ls -la "+filepath.Dir(w.sock)))
			return false, fmt.Sprintf("stuck: the processes of this world, and the socket's folder:\n%s\n%s", ps, w.logTail())
		}
		var st struct {
			Restoring bool `json:"restoring"`
		}
		out, err := w.st("", "status", "--json").Output()
		if err != nil || jsonUnmarshal(out, &st) != nil {
			return false, "st status: " + string(out)
		}
		id := serverID()
		if id == "" || st.Restoring || !strings.Contains(layoutText(w), `"server": "`+id+`"`) {
			return false, fmt.Sprintf("st has not restored the server and kept it in its picture yet (server %q, restoring %v)\n%s", id, st.Restoring, w.logTail())
		}
		got = w.windowsBySession()
		return serverID() == id, "the server went as its windows were counted"
	})
	for name, n := range want {
		switch {
		case got[name] == 0:
			lostSessions++
			lostWindows += n
		case got[name] < n:
			lostWindows += n - got[name]
		}
	}
	if lostSessions+lostWindows > 0 {
		panes, _ := w.tmux("list-panes", "-a", "-F", "#{session_name}:#{window_index} #{pane_id} dead=#{pane_dead} #{@st_name} #{pane_start_command}")
		w.t.Errorf("trial %d: sessions back %v, want %v; the panes:\n%s\n%s", trial, got, want, panes, w.logTail())
		// The next trials start from what is there now.
		for name := range want {
			if got[name] == 0 {
				delete(want, name)
			} else {
				want[name] = got[name]
			}
		}
	}
	return lostSessions, lostWindows, strings.Count(w.logText(), "exited under the restore") > before
}

// logText is the whole of the daemon's log.
func (w *world) logText() string {
	data, _ := os.ReadFile(filepath.Join(w.home, "daemon.log"))
	return string(data)
}

// windowsBySession counts the windows of each session on the server.
func (w *world) windowsBySession() map[string]int {
	out, err := w.tmux("list-windows", "-a", "-F", "#{session_name}")
	got := map[string]int{}
	if err != nil {
		return got
	}
	for _, name := range strings.Fields(out) {
		got[name]++
	}
	return got
}
