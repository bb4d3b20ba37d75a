package machines

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/attention"
	"github.com/sophonz/st/internal/authz"
	"github.com/sophonz/st/internal/daemon"
	"github.com/sophonz/st/internal/testutil"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// sockRow is how the matrix asks one route of the socket.
type sockRow struct {
	// body is the request as actor a sends it, acting on target (a
	// worker's or an agent's pane, when on says it acts on one).
	body func(m *matrix, a *actor, target string, act authz.Action) string
	// on is what the route acts on: "worker" (the actor's own, and a
	// person's for the cells on another's), "agent" (an agent to adopt
	// or offer), "gate" (one the actor asked itself, and a person's for
	// the cells on another's), or "" for nothing.
	on string
	// fresh: an allowed cell uses its target up (stop, release, adopt).
	fresh bool
	// fails says why an allowed cell may get an error of st's own rather
	// than a result (never a refusal): "" for none.
	fails string
}

func js(v any) string { b, _ := json.Marshal(v); return string(b) }

// body builders for the common shapes.
func paneOnly(m *matrix, a *actor, _ string, _ authz.Action) string {
	return js(map[string]any{"pane": a.pane})
}
func empty(*matrix, *actor, string, authz.Action) string { return "{}" }
func onID(m *matrix, a *actor, t string, _ authz.Action) string {
	return js(map[string]any{"pane": a.pane, "id": t})
}

// socketRows are the matrix's rows of the socket table, by path.
var socketRows = map[string]sockRow{
	api.RouteStatus:       {body: empty},
	api.RouteShutdown:     {body: empty, fresh: true}, // its allowed cells: shutdowns()
	api.RouteLs:           {body: empty},
	api.RouteWeb:          {body: empty},
	api.RouteRemoteReload: {body: empty},
	api.RouteRemoteRoutes: {body: empty},
	api.RouteHook: {body: func(m *matrix, a *actor, _ string, _ authz.Action) string {
		return js(map[string]any{"agent": "sim", "event": "PreToolUse", "pane": a.pane,
			"payload": []byte(`{"tool_name":"Bash","tool_input":{"command":"true"}}`)})
	}},
	// What Claude's status line said (st statusline): from a process in
	// the pane it names only, as a hook event.
	api.RouteStatusLine: {body: func(m *matrix, a *actor, _ string, _ authz.Action) string {
		return js(map[string]any{"agent": "claude", "event": "StatusLine", "pane": a.pane,
			"payload": []byte(`{"session_id":"matrix","cost":{"total_cost_usd":0.5}}`)})
	}},
	// The guard's question about the agent's own tmux server (beta's).
	api.RouteGuardServer: {body: func(m *matrix, a *actor, _ string, _ authz.Action) string {
		return js(map[string]any{"pane": a.pane, "socket": m.b.Tmux.Socket})
	}},
	api.RouteAcceptRemote: {body: func(m *matrix, a *actor, _ string, act authz.Action) string {
		if act == authz.AcceptRemoteOn {
			return js(map[string]any{"pane": a.pane, "on": true})
		}
		return js(map[string]any{"pane": a.pane}) // asks how it is
	}},
	api.RouteOrchStart: {body: func(m *matrix, a *actor, _ string, _ authz.Action) string {
		return js(map[string]any{"pane": a.pane, "objective": "a run of the matrix"})
	}, fails: "a worker's pane starts no run of its own"},
	// A run by its id (a person's, sw's): every pane's to look at.
	api.RouteOrchShow: {body: func(m *matrix, a *actor, _ string, _ authz.Action) string {
		return js(map[string]any{"pane": a.pane, "id": m.swRun})
	}},
	// With --yes a person's; a look at what would go is anyone's. The
	// age is a century: the allowed cells take nothing away.
	api.RouteOrchPrune: {body: func(m *matrix, a *actor, _ string, act authz.Action) string {
		return js(map[string]any{"pane": a.pane, "older_than": 100 * 365 * 24 * time.Hour, "yes": act == authz.PruneRuns})
	}},
	api.RouteWorkerStart: {body: func(m *matrix, a *actor, _ string, _ authz.Action) string { return m.startBody(a, 0) }},
	api.RouteWorkerFan:   {body: func(m *matrix, a *actor, _ string, _ authz.Action) string { return m.startBody(a, 2) }},
	api.RouteWorkerWait: {body: func(m *matrix, a *actor, _ string, _ authz.Action) string {
		return js(map[string]any{"pane": a.pane, "ids": []string{m.pw}, "timeout": 1})
	}},
	api.RouteWorkerDone: {body: func(m *matrix, a *actor, _ string, _ authz.Action) string {
		return js(map[string]any{"pane": a.pane, "summary": "the matrix's report"})
	}, fails: "only a worker reports"},
	api.RouteWorkerRead: {body: onID, on: "worker"},
	api.RouteWorkerSend: {body: func(m *matrix, a *actor, t string, _ authz.Action) string {
		return js(map[string]any{"pane": a.pane, "id": t, "text": "typed by the matrix " + a.name})
	}, on: "worker"},
	api.RouteWorkerStop: {body: onID, on: "worker", fresh: true},
	api.RouteWorkerRename: {body: func(m *matrix, a *actor, t string, _ authz.Action) string {
		return js(map[string]any{"pane": a.pane, "id": t, "text": fmt.Sprintf("renamed-%d", m.seq.Add(1))})
	}, on: "worker"},
	api.RouteWorkerRelease: {body: onID, on: "worker", fresh: true},
	api.RouteWorkerAdopt:   {body: onID, on: "agent", fresh: true},
	api.RouteWorkerOffer: {body: func(m *matrix, a *actor, t string, act authz.Action) string {
		return js(map[string]any{"pane": a.pane, "id": t, "machine": "alpha", "withdraw": act == authz.Withdraw})
	}, on: "agent"},
	api.RouteWorkerDiff:  {body: onID, on: "worker", fails: "a worker with no worktree has no diff"},
	api.RouteWorkerMerge: {body: onID, on: "worker", fails: "a worker with no worktree has nothing to merge"},
	api.RouteWorkerPick:  {body: onID, on: "worker", fails: "a worker of no fan has no try to pick"},
	api.RouteWorkerList: {body: func(m *matrix, a *actor, _ string, _ authz.Action) string {
		return js(map[string]any{"pane": a.pane, "all": true})
	}},
	api.RouteTaskCreate: {body: func(m *matrix, a *actor, _ string, _ authz.Action) string {
		return js(map[string]any{"pane": a.pane, "name": fmt.Sprintf("t%d", m.seq.Add(1)), "file": m.idle, "agent": "sim"})
	}, fails: "a pane of no run makes one; a worker's task starts under it"},
	api.RouteTaskList: {body: paneOnly},
	api.RouteTaskCancel: {body: func(m *matrix, a *actor, _ string, _ authz.Action) string {
		return js(map[string]any{"pane": a.pane, "id": "no-such-task"})
	}, fails: "there is no such task to cancel"},
	api.RouteGateAsk: {body: func(m *matrix, a *actor, _ string, _ authz.Action) string {
		return js(map[string]any{"pane": a.pane, "question": "Matrix?", "options": []string{"a", "b"}, "timeout": 1})
	}, fails: "a gate open for 1ns times out at once"},
	api.RouteGateWait: {body: func(m *matrix, a *actor, _ string, _ authz.Action) string {
		return js(map[string]any{"id": "gate-000000", "timeout": 1})
	}, fails: "there is no such gate"},
	api.RouteGateList: {body: func(m *matrix, a *actor, _ string, _ authz.Action) string { return js(map[string]any{"all": true}) }},
	api.RouteGateAnswer: {body: func(m *matrix, a *actor, _ string, _ authz.Action) string {
		return js(map[string]any{"pane": a.pane, "id": m.openGate, "option": "yes"})
	}},
	api.RouteGateWithdraw: {body: onID, on: "gate"},
	// A hook's wait for a person's answer: from a process in the pane it
	// names only. The sim's hook answers no prompt, so it is told at once.
	api.RoutePromptWait: {body: func(m *matrix, a *actor, _ string, _ authz.Action) string {
		return js(map[string]any{"agent": "sim", "event": "PermissionRequest", "pane": a.pane,
			"payload": []byte(`{"tool_name":"Bash","tool_input":{"command":"true"}}`)})
	}},
	api.RoutePromptList: {body: empty},
	// Answering a Claude hook's permission prompt: a person's only; the
	// pane's own agent, a sandboxed Codex and an agent naming another
	// pane are refused (issue 34).
	api.RoutePromptAnswer: {body: func(m *matrix, a *actor, t string, _ authz.Action) string {
		return js(map[string]any{"pane": a.pane, "id": t, "option": "deny"})
	}, on: "prompt", fresh: true},
	// The attention items (issue 34): reading them is every process's
	// (st attention, st attention --wait), each item's text of a worker
	// (its last answer, its error) only to who may read that worker;
	// dismissing one is a person's act only.
	api.RouteAttention: {body: func(m *matrix, a *actor, _ string, _ authz.Action) string {
		return js(map[string]any{"pane": a.pane, "all": true})
	}},
	// A wait after no item returns the open ones at once.
	api.RouteAttentionWait: {body: func(m *matrix, a *actor, _ string, _ authz.Action) string {
		return js(map[string]any{"pane": a.pane, "timeout": time.Minute})
	}},
	api.RouteAttentionDismiss: {body: onID, on: "attention", fresh: true},
	// st setup --tmux-status: changing st's setup, a person's only.
	api.RouteTmuxStatus: {body: func(m *matrix, a *actor, _ string, _ authz.Action) string {
		return js(map[string]any{"pane": a.pane, "on": true})
	}},
}

// startBody starts a sim worker (fan: tries of a fan, each in a worktree
// of a repository).
func (m *matrix) startBody(a *actor, fan int) string {
	cwd := m.b.UserDir
	if fan > 0 {
		cwd = m.repo
	}
	return js(map[string]any{"pane": a.pane, "agent": "sim", "task": m.slow, "name": fmt.Sprintf("m%d", m.seq.Add(1)),
		"cwd": cwd, "fan": fan})
}

// socketExpect is the model's answer for a cell of the socket (internal
// /authz's package doc, restated): own says the target is the actor's
// own worker; simOn that a person allowed agents the sim agent.
func socketExpect(a *actor, act authz.Action, own, simOn bool) bool {
	switch a.kind {
	case authz.Person:
		return true
	case authz.OtherUser:
		return false
	}
	switch act {
	case authz.ReadState, authz.AskGate, authz.AcceptRemoteOff, authz.Withdraw:
		return true // every process of the user: st does not even ask who
	case authz.Hook:
		// Every process's, but only for the pane it runs in: st reads
		// its parents (issue 31, item 1).
		return !a.forged
	}
	if a.forged {
		return false
	}
	switch act {
	case authz.StartRun, authz.Report, authz.CancelTask:
		return true
	case authz.Start:
		return simOn // the cells ask for the sim agent
	case authz.Send, authz.Stop, authz.Rename, authz.Release, authz.ReadScreen, authz.Merge:
		return own
	case authz.Adopt, authz.StopST:
		return a.kind != authz.SandboxedCodex
	case authz.WithdrawGate:
		return own // the gate it asked from its own pane
	}
	return false // a person's: answer a gate, offer, accept-remote on, the web token
}

// sockCell is one cell of the socket's matrix.
type sockCell struct {
	path string
	row  sockRow
	a    *actor
	act  authz.Action
	own  bool
	// agent is the agent kind a start asks for in place of the sim ("":
	// the row's): a real kind, in the cells refused whatever the kind.
	agent string
}

// realKindRows start agents: each of their cells refused even with the
// sim allowed is asked again for a real agent kind, so that it is not the
// sim's rule that refuses it.
var realKindRows = map[string]bool{api.RouteWorkerStart: true, api.RouteWorkerFan: true, api.RouteTaskCreate: true}

// body is the cell's request, acting on target.
func (c sockCell) body(m *matrix, target string) string {
	b := c.row.body(m, c.a, target, c.act)
	if c.agent != "" {
		b, _ = sjson.Set(b, "agent", c.agent)
	}
	return b
}

// socketCells lists the cells of the socket table, failing the test for
// a route with no row.
func (m *matrix) socketCells() []sockCell {
	var cells []sockCell
	for _, r := range daemon.SocketRoutes() {
		m.routes++
		row, ok := socketRows[r.Path]
		if !ok {
			m.t.Errorf("route %s of the socket table has no row in the matrix (socketRows)", r.Path)
			continue
		}
		for _, a := range m.actors {
			for _, act := range r.Actions {
				if a.forged && !strings.Contains(row.body(m, a, "%0", act), `"pane"`) {
					continue // names no pane: the coordinator's own cell
				}
				cells = append(cells, sockCell{r.Path, row, a, act, false, ""})
				if (row.on == "worker" && a.own != "") || (row.on == "gate" && a.kind != authz.OtherUser) {
					cells = append(cells, sockCell{r.Path, row, a, act, true, ""})
				}
				if realKindRows[r.Path] && !socketExpect(a, act, false, true) {
					cells = append(cells, sockCell{r.Path, row, a, act, false, "claude"})
				}
			}
		}
	}
	return cells
}

// socket walks the socket's cells: every refused one, an actor's at a
// time with nothing changed after them; then every allowed one; then,
// with agents allowed the sim agent, the starts refused before.
func (m *matrix) socket() {
	cells := m.socketCells()
	byActor := map[*actor][]sockCell{}
	for _, c := range cells {
		if !socketExpect(c.a, c.act, c.own, false) {
			byActor[c.a] = append(byActor[c.a], c)
		}
	}
	for _, a := range m.actors {
		bodies := make([]string, len(byActor[a]))
		for i, c := range byActor[a] {
			bodies[i] = c.body(m, m.target(c, false))
		}
		before := m.settled()
		for i, c := range byActor[a] {
			m.refusedCell(c, bodies[i])
		}
		m.same(before, a.name+"'s")
	}
	for _, c := range cells {
		if c.path != api.RouteShutdown && socketExpect(c.a, c.act, c.own, false) {
			m.allowedCell(c)
		}
	}
	m.b.KillDaemon()
	m.b.Extra = append(m.b.Extra, "ST_AGENTS_START_SIM=1")
	m.b.Up()
	for _, c := range cells {
		if c.act == authz.Start && !socketExpect(c.a, c.act, c.own, false) && socketExpect(c.a, c.act, c.own, true) {
			m.allowedCell(c)
		}
	}
}

// target is what a cell acts on.
func (m *matrix) target(c sockCell, allowed bool) string {
	switch {
	case c.row.on == "worker" && !c.own:
		return m.pw // a person's worker: another's
	case c.row.on == "worker" && allowed && c.row.fresh:
		return m.workerOf(c.a.pane, fmt.Sprintf("fresh%d", m.seq.Add(1)))
	case c.row.on == "worker":
		return c.a.own
	case c.row.on == "gate" && c.own:
		return m.gateOf(c.a) // the forged pane's names the pane it forged
	case c.row.on == "gate" && allowed:
		return m.gate() // a person's: another's, used up
	case c.row.on == "gate":
		return m.openGate
	case c.row.on == "prompt" && allowed:
		return m.prompt()
	case c.row.on == "prompt":
		return m.openPrompt
	case c.row.on == "attention" && allowed:
		return m.attentionOf(m.gate()) // an item of its own, used up
	case c.row.on == "attention":
		return m.attentionOf(m.openGate)
	case c.row.on == "agent" && allowed && c.row.fresh:
		return m.b.HandAgent(fmt.Sprintf("lone%d", m.seq.Add(1)))
	case c.row.on == "agent":
		return m.lone
	}
	return ""
}

func (m *matrix) refusedCell(c sockCell, body string) {
	m.t.Helper()
	m.cells.Add(1)
	m.refused.Add(1)
	res := m.ask(c.a, c.path, body)
	ok := res.refusal()
	if c.a.kind == authz.OtherUser {
		// The owner's folder and socket let no other user connect (curl: 7).
		ok = res.code == 0 && res.err != nil && strings.Contains(res.err.Error(), "exit status 7")
	}
	if c.agent != "" && strings.Contains(res.body, "sim agent") {
		ok = false // refused for the sim, which it did not ask for
	}
	if !ok {
		m.t.Errorf("%s, %s (%s, own %v, agent %q): want a refusal saying why and what to do, got %s", c.path, c.a.name, c.act, c.own, c.agent, res)
	}
	m.secretsIn(fmt.Sprintf("%s, %s (%s)", c.path, c.a.name, c.act), res.body, m.reads(c.a, m.sw), m.reads(c.a, m.cs))
}

func (m *matrix) allowedCell(c sockCell) {
	m.t.Helper()
	m.cells.Add(1)
	t := m.target(c, true)
	body := c.body(m, t)
	res := m.ask(c.a, c.path, body)
	m.secretsIn(fmt.Sprintf("%s, %s (%s)", c.path, c.a.name, c.act), res.body, m.reads(c.a, m.sw), m.reads(c.a, m.cs))
	switch {
	case res.code == 200:
		if missing := m.effect(c, t, body, res.body); missing != "" {
			m.t.Errorf("%s, %s (%s, own %v): answered 200, but %s\nbody %s\nanswer %.300s", c.path, c.a.name, c.act, c.own, missing, body, res.body)
			return
		}
		m.allowed.Add(1)
	case res.code == 422 && c.row.fails != "" && !strings.Contains(res.body, `"forbidden"`):
		// authz let it through and st's own check answered (row.fails
		// says why): not counted as allowed, as no effect is seen.
		m.stSaid.Add(1)
	default:
		m.t.Errorf("%s, %s (%s, own %v): want it to work, got %s\nbody %s", c.path, c.a.name, c.act, c.own, res, body)
	}
}

// effect says what an allowed cell's answer did not do that it should
// have ("" when its effect is seen): the line typed, the worker renamed,
// stopped, released or started, the agent adopted, the task made.
func (m *matrix) effect(c sockCell, target, body, answer string) string {
	m.t.Helper()
	pane := c.a.pane
	switch c.path {
	case api.RouteWorkerSend:
		testutil.WaitFor(m.t, 30*time.Second, func() (bool, string) {
			s := m.b.Capture(target)
			return strings.Contains(s, "typed by the matrix "+c.a.name), "the line never reached " + target + ":\n" + s
		})
	case api.RouteWorkerRename:
		if v, ok := m.listed(target); !ok || v.Name != gjson.Get(body, "text").String() {
			return fmt.Sprintf("%s is not renamed (st worker list: %+v)", target, v.Name)
		}
	case api.RouteWorkerStop:
		if v, ok := m.listed(target); ok && v.State.Live() {
			return fmt.Sprintf("%s still runs (%s)", target, v.State)
		}
	case api.RouteWorkerRelease:
		if v, ok := m.listed(target); ok && v.State.Live() {
			return fmt.Sprintf("%s is still a worker (%s)", target, v.State)
		}
	case api.RouteWorkerAdopt:
		if v, ok := m.listed(target); !ok || v.Parent != pane {
			return fmt.Sprintf("%s is not a worker of %s (parent %q)", target, pane, v.Parent)
		}
	case api.RouteWorkerStart, api.RouteWorkerFan:
		ids := gjson.Get(answer, "#.id").Array()
		if c.path == api.RouteWorkerStart {
			ids = []gjson.Result{gjson.Get(answer, "id")}
		}
		for _, id := range ids {
			if v, ok := m.listed(id.String()); !ok || v.Parent != pane {
				return fmt.Sprintf("no worker %s of %s was started", id, pane)
			}
		}
		if len(ids) == 0 {
			return "it names no worker it started"
		}
	case api.RouteWorkerRead, api.RouteWorkerDiff:
		if gjson.Get(answer, "id").String() != target && gjson.Get(answer, "worker.id").String() != target {
			return "it does not show " + target
		}
	case api.RouteTaskCreate:
		name := gjson.Get(body, "name").String()
		if l := m.ask(c.a, api.RouteTaskList, js(map[string]any{"pane": pane})); !gjson.Get(l.body, `#(name=="`+name+`")`).Exists() {
			return "task " + name + " is not in st task list: " + l.String()
		}
	case api.RouteOrchShow:
		if gjson.Get(answer, "id").String() != m.swRun {
			return "it does not show run " + m.swRun
		}
	case api.RouteGateAnswer:
		if out, _ := m.b.ST("gate", "list"); strings.Contains(out, gjson.Get(body, "id").String()) {
			return "the gate is still open:\n" + out
		}
	case api.RoutePromptAnswer:
		if m.promptOpen(target) {
			return "prompt " + target + " is still open"
		}
		if out, _ := os.ReadFile(m.promptOut[target]); !strings.Contains(string(out), `"behavior":"deny"`) {
			return "its hook printed no deny: " + string(out)
		}
	case api.RouteAttention, api.RouteAttentionWait, api.RouteAttentionDismiss, api.RouteTmuxStatus:
		return m.attentionEffect(c, target, answer)
	case api.RouteGateWithdraw:
		if out, _ := m.b.ST("gate", "list", "--all"); !regexp.MustCompile(regexp.QuoteMeta(target) + ` +withdrawn `).MatchString(out) {
			return "gate " + target + " is not withdrawn:\n" + out
		}
	}
	return ""
}

// attentionEffect is effect's for the attention items' routes and st
// setup --tmux-status (issue 34).
func (m *matrix) attentionEffect(c sockCell, target, answer string) string {
	m.t.Helper()
	switch c.path {
	case api.RouteAttention, api.RouteAttentionWait:
		// Every open item is listed, those of the workers that ended a
		// turn with no report among them: with the worker's answer to
		// who may read that worker, else saying it was left out
		// (secretsIn holds that no answer shows it).
		for _, w := range []struct{ id, text string }{{m.swNR, "sw-secret-noreport"}, {m.csNR, "cs-secret-noreport"}} {
			it := gjson.Get(answer, `items.#(pane=="`+w.id+`")`)
			switch {
			case !it.Exists():
				return "it does not list " + w.id + "'s item (no report)"
			case m.reads(c.a, w.id) && it.Get("text").String() != w.text:
				return "it does not show " + w.id + "'s answer, " + w.text + ", to who may read that worker: " + it.Raw
			case !m.reads(c.a, w.id) && !it.Get("text_hidden").Bool():
				return "it does not say " + w.id + "'s answer was left out: " + it.Raw
			}
		}
	case api.RouteAttentionDismiss:
		st := m.attentionState(target)
		if st.Get("closed_by").String() != "dismissed" {
			return "item " + target + " is not dismissed: " + st.Raw
		}
	case api.RouteTmuxStatus:
		if out, _ := m.b.Tmux.Run("show-options", "-gv", "status-right"); !attention.HasSegment(out) {
			return "tmux's status-right has no segment of st's: " + out
		}
		if _, err := os.Stat(filepath.Join(m.b.Home, daemon.TmuxStatusMark)); err != nil {
			return "st keeps no mark of the setting: " + err.Error()
		}
	}
	return ""
}

// listed is worker id as st worker list --all shows it to a person.
func (m *matrix) listed(id string) (api.WorkerView, bool) {
	out, _ := m.b.ST("worker", "list", "--all", "--json")
	var vs []api.WorkerView
	json.Unmarshal([]byte(out), &vs)
	for _, v := range vs {
		if v.ID == id {
			return v, true
		}
	}
	return api.WorkerView{}, false
}

// gate is a gate a person asked on beta, open until answered.
func (m *matrix) gate() string {
	m.t.Helper()
	cmd := exec.Command(m.c.Bin, "gate", "ask", "Ship the matrix?", "--option", "yes", "--option", "no", "--timeout", "30m")
	cmd.Env = m.b.Env()
	if err := cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var id string
	testutil.WaitFor(m.t, 30*time.Second, func() (bool, string) {
		out, _ := m.b.ST("gate", "list")
		ids := regexp.MustCompile(`gate-[0-9a-f]+`).FindAllString(out, -1)
		for _, g := range ids {
			if !m.gates[g] {
				id = g
			}
		}
		return id != "", out
	})
	m.gates[id] = true
	return id
}

// gateOf is a gate actor a asked on beta, from the pane its requests
// name, open until withdrawn.
func (m *matrix) gateOf(a *actor) string {
	m.t.Helper()
	res := m.ask(a, api.RouteGateAsk, js(map[string]any{"pane": a.pane, "question": "Withdraw me, " + a.name + "?",
		"options": []string{"a", "b"}, "timeout": 30 * time.Minute}))
	id := gjson.Get(res.body, "id").String()
	if res.code != 200 || id == "" {
		m.t.Fatalf("%s could not ask a gate: %s", a.name, res)
	}
	m.gates[id] = true
	return id
}

// shutdowns asks /v1/shutdown last, as each actor that may: st stops each
// time, and is started again for the next. (The refused cells were in the
// socket's walk.)
func (m *matrix) shutdowns() {
	for _, a := range m.actors {
		if a.forged || !socketExpect(a, authz.StopST, false, true) {
			continue
		}
		m.cells.Add(1)
		m.allowed.Add(1)
		res := m.ask(a, api.RouteShutdown, "{}")
		if res.code != 200 {
			m.t.Errorf("/v1/shutdown, %s: want st to stop, got %s", a.name, res)
			continue
		}
		testutil.WaitFor(m.t, 30*time.Second, func() (bool, string) {
			out, err := m.b.ST("status")
			return err != nil && strings.Contains(out, "not running"), "st still runs after " + a.name + "'s shutdown:\n" + out
		})
		// Its socket goes before its process ends (and lets go of its
		// lock, which the next st up would find held).
		pid := int(gjson.Get(res.body, "pid").Int())
		testutil.WaitFor(m.t, 30*time.Second, func() (bool, string) {
			return pid > 0 && syscall.Kill(pid, 0) != nil, fmt.Sprintf("st's daemon (pid %d) still runs after %s's shutdown", pid, a.name)
		})
		m.b.Up()
	}
}

// prompt opens a permission prompt on beta the way Claude's hook does: st
// hook claude PermissionRequest, run in a window of its own, waits for a
// person's answer (and prints it to a file, promptOut). It returns the
// prompt's id.
func (m *matrix) prompt() string {
	m.t.Helper()
	n := m.seq.Add(1)
	cmd := fmt.Sprintf("echo matrix-%d", n)
	in, out := filepath.Join(m.dir, fmt.Sprintf("prompt-%d.json", n)), filepath.Join(m.dir, fmt.Sprintf("prompt-%d.out", n))
	must(m.t)("", os.WriteFile(in, []byte(js(map[string]any{"session_id": "00000000-0000-4000-8000-000000000000",
		"hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_input": map[string]string{"command": cmd}})), 0o644))
	must(m.t)(m.b.Tmux.Run("new-window", "-d", "-t", "main", "-n", fmt.Sprintf("asks%d", n), "-e", m.b.PathEnv(), "-e", "ST_HOME="+m.b.Home,
		"sh", "-c", m.c.Bin+" hook claude PermissionRequest < "+in+" > "+out))
	var id string
	testutil.WaitFor(m.t, 30*time.Second, func() (bool, string) {
		l := m.ask(m.person(), api.RoutePromptList, "{}")
		id = gjson.Get(l.body, `#(command=="`+cmd+`").id`).String()
		return id != "", "no prompt of " + cmd + " opened: " + l.String()
	})
	if m.promptOut == nil {
		m.promptOut = map[string]string{}
	}
	m.promptOut[id] = out
	return id
}

// attentionOf is the id of the attention item of gate id, once beta
// lists it.
func (m *matrix) attentionOf(gate string) string {
	m.t.Helper()
	var id string
	testutil.WaitFor(m.t, 30*time.Second, func() (bool, string) {
		out, _ := m.b.ST("attention", "--json")
		id = gjson.Get(out, `items.#(gate=="`+gate+`").id`).String()
		return id != "", "gate " + gate + " has no attention item: " + out
	})
	return id
}

// attentionState is item id as beta lists it to a person (closed ones
// too).
func (m *matrix) attentionState(id string) gjson.Result {
	out, _ := m.b.ST("attention", "--all", "--json")
	return gjson.Get(out, `items.#(id=="`+id+`")`)
}

// promptOpen reports whether beta still lists prompt id.
func (m *matrix) promptOpen(id string) bool {
	l := m.ask(m.person(), api.RoutePromptList, "{}")
	return gjson.Get(l.body, `#(id=="`+id+`")`).Exists()
}

// person is the actor of a person's shell on beta.
func (m *matrix) person() *actor {
	for _, a := range m.actors {
		if a.kind == authz.Person && !a.forged {
			return a
		}
	}
	m.t.Fatal("the matrix has no person")
	return nil
}
