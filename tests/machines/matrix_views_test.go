package machines

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/authz"
	"github.com/sophonz/st/internal/testutil"
	"github.com/tidwall/gjson"
)

// What an actor may read of a worker (issue 31, item 2) is st worker
// read's decision, on every route that shows workers. Two workers on beta
// said something only their owners may read: sw, a person's (pane p0),
// and cs, the coordinator agent's. Each reported and answered with words
// of its own (NAME-secret-summary, NAME-secret-answer, from its task).
// No answer to an actor that may not read one of them, on any route of
// any surface, holds them (secretsIn, checked on every cell); the routes
// that list, show and wait for workers show the others' name and state,
// and their own workers' texts (views).

// secretWorker starts, as a person in pane, a sim worker that reports and
// answers with words of its own, and returns its pane and run once it
// has reported.
func (m *matrix) secretWorker(pane, name string) (id, run string) {
	m.t.Helper()
	task := m.c.TaskFile(name+"-secret.md", "summary: "+name+"-secret-summary\nanswer: "+name+"-secret-answer\n")
	out := m.b.MustST(pane, "worker", "start", "--agent", "sim", "--task", task, "--name", name, "--cwd", m.b.UserDir)
	id = has(m.t, out, `(?m)^(%\d+) `+name+`$`)[1]
	testutil.WaitFor(m.t, 60*time.Second, func() (bool, string) {
		out, _ := m.b.ST("worker", "list", "--all", "--json")
		var vs []api.WorkerView
		json.Unmarshal([]byte(out), &vs)
		for _, v := range vs {
			if v.ID == id && v.Summary == name+"-secret-summary" && v.LastAnswer == name+"-secret-answer" {
				run = v.Run
				return true, ""
			}
		}
		return false, name + " never reported and answered:\n" + out
	})
	return id, run
}

// noReportWorker starts, as a person in pane, a sim worker whose turn
// ends with an answer of its own (NAME-secret-noreport) and no report,
// and returns its pane once its attention item (no-report) holds that
// answer.
func (m *matrix) noReportWorker(pane, name string) string {
	m.t.Helper()
	task := m.c.TaskFile(name+"-noreport.md", "answer: "+name+"-secret-noreport\n")
	out := m.b.MustST(pane, "worker", "start", "--agent", "sim", "--task", task, "--name", name+"nr", "--cwd", m.b.UserDir)
	id := has(m.t, out, `(?m)^(%\d+) `+name+`nr$`)[1]
	testutil.WaitFor(m.t, 60*time.Second, func() (bool, string) {
		out, _ := m.b.ST("attention", "--json")
		return gjson.Get(out, `items.#(pane=="`+id+`")#.text`).String() == `["`+name+`-secret-noreport"]`,
			name + "nr's turn never ended in an item with its answer:\n" + out
	})
	return id
}

// reads is the model's answer (internal/authz's package doc, restated):
// whether actor a may read the texts of secret worker w (sw or cs). A
// person reads every worker; an agent its own; a pane it does not run in,
// nothing.
func (m *matrix) reads(a *actor, w string) bool {
	switch {
	case a.kind == authz.Person:
		return true
	case a.forged || a.kind == authz.OtherUser:
		return false
	}
	return (w == m.cs || w == m.csNR) && a.pane == m.coord
}

// secretsIn fails the test when body, an answer to who, holds the words
// of a secret worker it may not read (mayCS: it may read cs's).
func (m *matrix) secretsIn(who, body string, maySW, mayCS bool) {
	m.t.Helper()
	for _, s := range []struct {
		name string
		may  bool
	}{{"sw", maySW}, {"cs", mayCS}} {
		if !s.may && strings.Contains(body, s.name+"-secret") {
			m.t.Errorf("%s was shown the texts of %s, a worker it may not read (st worker read refuses it):\n%.600s", who, s.name, body)
		}
	}
}

// views asks each actor of the socket for the secret workers on every
// route that shows workers: the list of all, the run (st orch show RUN),
// a wait for them, and st worker read. A worker the actor may read shows
// its texts; another shows its name and state, and says its texts were
// left out; st worker read of it is refused.
func (m *matrix) views() {
	for _, a := range m.actors {
		if a.kind == authz.OtherUser {
			continue // the socket answers it nothing at all (the matrix's cells)
		}
		var list []api.WorkerView
		m.viewsAsk(a, api.RouteWorkerList, js(map[string]any{"pane": a.pane, "all": true}), &list)
		var wait api.WaitResult
		m.viewsAsk(a, api.RouteWorkerWait, js(map[string]any{"pane": a.pane, "ids": []string{m.sw, m.cs}, "timeout": 1}), &wait)
		for _, w := range []struct{ id, name, run string }{{m.sw, "sw", m.swRun}, {m.cs, "cs", m.csRun}} {
			var show api.RunView
			m.viewsAsk(a, api.RouteOrchShow, js(map[string]any{"pane": a.pane, "id": w.run}), &show)
			for _, vs := range []struct {
				route string
				views []api.WorkerView
			}{{"st worker list --all", list}, {"st worker wait", wait.Workers}, {"st orch show " + w.run, show.Views}} {
				m.viewOf(a, vs.route, vs.views, w.id, w.name)
			}
			res := m.ask(a, api.RouteWorkerRead, js(map[string]any{"pane": a.pane, "id": w.id}))
			switch {
			case m.reads(a, w.id) && (res.code != 200 || !strings.Contains(res.body, w.name+"-secret-answer")):
				m.t.Errorf("st worker read %s as %s: want its answer, got %s", w.name, a.name, res)
			case !m.reads(a, w.id) && !res.refusal():
				m.t.Errorf("st worker read %s as %s: want a refusal, got %s", w.name, a.name, res)
			}
		}
	}
}

// viewsAsk asks route as a, which must answer 200, into v.
func (m *matrix) viewsAsk(a *actor, route, body string, v any) {
	m.t.Helper()
	res := m.ask(a, route, body)
	if res.code != 200 {
		m.t.Errorf("%s as %s: want an answer, got %s", route, a.name, res)
		return
	}
	if err := json.Unmarshal([]byte(res.body), v); err != nil {
		m.t.Errorf("%s as %s: %v: %.300s", route, a.name, err, res.body)
	}
	m.secretsIn(route+" as "+a.name, res.body, m.reads(a, m.sw), m.reads(a, m.cs))
}

// viewOf checks what route showed a of worker id: its name and state
// always; its texts when a may read them, else the mark that they were
// left out.
func (m *matrix) viewOf(a *actor, route string, views []api.WorkerView, id, name string) {
	m.t.Helper()
	for _, v := range views {
		if v.ID != id {
			continue
		}
		texts := v.Summary == name+"-secret-summary" && v.LastAnswer == name+"-secret-answer" && v.ReportAnswer != ""
		what := fmt.Sprintf("%s as %s, worker %s", route, a.name, name)
		switch {
		case v.Name != name || v.State != api.Done || v.StartedAt.IsZero():
			m.t.Errorf("%s: want its name, state and times, got name %q state %q started %v", what, v.Name, v.State, v.StartedAt)
		case m.reads(a, id) && (!texts || v.TextsHidden):
			m.t.Errorf("%s: want its texts (it is the asker's to read), got summary %q answer %q", what, v.Summary, v.LastAnswer)
		case !m.reads(a, id) && !v.TextsHidden:
			m.t.Errorf("%s: want its texts left out, and said so (texts_hidden)", what)
		}
		return
	}
	m.t.Errorf("%s as %s: worker %s is not shown at all (its name and state are everyone's)", route, a.name, name)
}
