package webtest

import (
	"fmt"
	"time"

	"github.com/sophonz/st/internal/web"
)

// RunSize is how many agents each run of Scale has: a coordinator and
// nine workers.
const RunSize = 10

// Scale is n agents in runs of RunSize, as a busy machine has them: each
// run in a session of its own, every agent in a window of its own. In
// each run a Claude coordinator starts nine workers (Claude, Codex and
// the sim in turn); its first worker leads a team of two workers of its
// own (the run's last two: workers of a worker); every second
// coordinator has a subagent at work, every third run's second worker
// leads a Claude agent team of two teammates, and every fifth run's third
// worker asks a gate. States are spread as a working machine's are
// (about half working, some waiting, idle, starting and done). A last run
// shorter than RunSize has its first len-1 workers.
func Scale(now time.Time, n int) web.Snapshot {
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	kinds := []string{"claude", "codex", "sim"}
	states := []string{"working", "working", "waiting", "working", "idle", "working", "done", "starting", "working"}
	snap := web.Snapshot{Machine: "devbox", Gates: []web.Gate{}}
	id := 0
	for run := 0; id < n; run++ {
		sess := web.Session{ID: fmt.Sprintf("$%d", run+1), Name: fmt.Sprintf("team-%d", run+1)}
		runID := fmt.Sprintf("run-%04d", run+1)
		coord := ""
		for k := 0; k < RunSize && id < n; k++ {
			id++
			pane, win := fmt.Sprintf("%%%d", id), fmt.Sprintf("@%d", id)
			a := web.Agent{Pane: pane, Kind: "claude", Role: web.RoleCoordinator, State: "working", Since: ago(time.Duration(id%50) * time.Minute),
				Run: runID, Session: sess.ID, Window: win, Name: fmt.Sprintf("lead-%d", run+1)}
			if k == 0 {
				coord = pane
				if run%2 == 0 {
					a.Subagents = []web.Subagent{{ID: fmt.Sprintf("sa-%d", run+1), Type: "Explore", State: "working", Since: ago(30 * time.Second), Started: ago(30 * time.Second)}}
				}
			} else {
				a.Role, a.Kind, a.State = web.RoleWorker, kinds[k%3], states[(k+run)%len(states)]
				a.Name, a.Parent = fmt.Sprintf("part-%d-%d", run+1, k), coord
				a.Since = ago(time.Duration(k*7+run%11) * time.Second * 13)
				if a.State == "done" {
					a.Summary = fmt.Sprintf("Part %d of run %d: changed 14 files; go test ./... passes.", k, run+1)
				}
				switch {
				case k == 1:
					a.TeamOf = 2
				case k >= 8:
					a.Parent = snap.Agents[len(snap.Agents)-k+1].Pane // the run's first worker
				case k == 2 && run%3 == 0:
					a.Kind = "claude"
					a.Teammates = []web.Teammate{
						{Name: "alpha", Team: "session-" + runID, InProcess: true, Color: "blue", State: "working", Since: ago(50 * time.Second), Started: ago(70 * time.Second)},
						{Name: "beta", Team: "session-" + runID, InProcess: true, Color: "green", State: "idle", Since: ago(10 * time.Second), Started: ago(68 * time.Second)},
					}
				case k == 3 && run%5 == 0:
					a.State = "waiting"
					snap.Gates = append(snap.Gates, web.Gate{ID: fmt.Sprintf("g-%d", run+1), Question: "Drop the old v1 endpoints from the tests?",
						Options: []string{"Yes", "No"}, Pane: pane, Asked: ago(20 * time.Second)})
				}
			}
			sess.Windows = append(sess.Windows, web.Window{ID: win, Index: fmt.Sprint(k), Name: a.Name, Active: k == 0,
				Panes: []web.Pane{{ID: pane, Agent: a.Kind, Role: a.Role}}})
			snap.Agents = append(snap.Agents, a)
		}
		snap.Sessions = append(snap.Sessions, sess)
	}
	return snap
}

// Churn is the states an agent of Scale goes through while it works, in
// order: a turn, a question, another turn, its end.
var Churn = []string{"working", "waiting", "working", "idle"}

// Step moves agent i of s to the next state of Churn, since now: what an
// agent's hook does to st's state.
func Step(s *web.Snapshot, i int, now time.Time) {
	a := &s.Agents[i]
	next := Churn[0]
	for k, st := range Churn {
		if st == a.State {
			next = Churn[(k+1)%len(Churn)]
			break
		}
	}
	a.State, a.Since = next, now
}
