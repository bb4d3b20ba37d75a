package webtest

import (
	"time"

	"github.com/sophonz/st/internal/web"
)

// ViewsSample is the state of issue 32's audit, seen from machine alpha
// of an account with beta: in session main ($1),
//
//   - coordinator-of-the-frontend (%1) has a worker w1 (%2) that leads a
//     team; in it, acoord (beta/%8) runs on beta and leads a team of two
//     there (beta/%9, beta/%10): a remote lead at depth 2;
//   - a shell (%3, window zsh) started two workers by hand: shell-local
//     (%4) here and shell-far (beta/%7) on beta;
//   - orphan-lead (%5) lost its coordinator in a tmux restart
//     (%9~k9xq2) and has a worker of its own, orphan-worker (%6).
//
// beta's team (beta/%9, beta/%10) is beta's to release, not alpha's.
func ViewsSample(now time.Time) web.Snapshot {
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	win := func(id, idx, name, pane, kind string) web.Window {
		return web.Window{ID: id, Index: idx, Name: name, Panes: []web.Pane{{ID: pane, Agent: kind}}}
	}
	local := func(pane, name, window, parent, state string, d time.Duration) web.Agent {
		return web.Agent{Pane: pane, Name: name, Kind: "claude", Role: web.RoleWorker, State: state, Since: ago(d),
			Parent: parent, Run: "run-1", Session: "$1", Window: window}
	}
	remote := func(pane, name, parent, state string, d time.Duration) web.Agent {
		return web.Agent{Pane: pane, Name: name, Kind: "codex", Role: web.RoleWorker, State: state, Since: ago(d),
			Parent: parent, Run: "run-b", Machine: "beta"}
	}
	coord := local("%1", "coordinator-of-the-frontend", "@1", "", "working", 48*time.Minute)
	coord.Role = web.RoleCoordinator
	w1 := local("%2", "w1", "@2", "%1", "idle", 25*time.Minute)
	w1.TeamOf = 3
	acoord := remote("%8", "acoord", "%2", "working", 21*time.Minute)
	acoord.TeamOf = 2
	shellLocal := local("%4", "shell-local", "@4", "%3", "working", 12*time.Minute)
	shellLocal.ParentShell, shellLocal.Run = true, "run-2"
	shellFar := remote("%7", "shell-far", "%3", "working", 11*time.Minute)
	shellFar.ParentShell = true
	orphan := local("%5", "orphan-lead", "@5", "%9~k9xq2", "idle", 33*time.Minute)
	orphan.ParentGone, orphan.TeamOf, orphan.Run = true, 1, "run-3"
	orphanWorker := local("%6", "orphan-worker", "@6", "%5", "working", 30*time.Minute)
	orphanWorker.Run = "run-3"
	return web.Snapshot{
		Machine: "alpha",
		Sessions: []web.Session{{ID: "$1", Name: "main", Windows: []web.Window{
			win("@1", "0", "coordinator-of-the-frontend", "%1", "claude"),
			win("@2", "1", "w1", "%2", "claude"),
			{ID: "@3", Index: "2", Name: "zsh", Panes: []web.Pane{{ID: "%3"}}},
			win("@4", "3", "shell-local", "%4", "claude"),
			win("@5", "4", "orphan-lead", "%5", "claude"),
			win("@6", "5", "orphan-worker", "%6", "claude"),
		}}},
		Agents: []web.Agent{
			coord, w1, shellLocal, orphan, orphanWorker,
			acoord, shellFar,
			remote("%9", "beta-one", "beta/%8", "working", 20*time.Minute),
			remote("%10", "beta-two", "beta/%8", "waiting", 19*time.Minute),
		},
		Gates: []web.Gate{},
		Machines: []web.Machine{
			{Slug: "alpha", Name: "alpha", Online: true, This: true},
			{Slug: "beta", Name: "beta", Online: true, Accepts: true},
		},
	}
}
