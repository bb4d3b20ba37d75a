package browser

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sophonz/st/internal/web"
	"github.com/sophonz/st/internal/web/webtest"
)

// shownJS is what the page shows of each agent, by its pane: the state
// of its dot and its name, in the graph and in the sidebar.
const shownJS = `(() => {
	const of = (sel) => Object.fromEntries([...document.querySelectorAll(sel)].map((e) => {
		const d = e.querySelector(".dot"), n = e.querySelector(".name, .gc-name");
		return [e.dataset.agent, [[...d.classList].find((c) => c.startsWith("st-")).slice(3), n.textContent]];
	}));
	return JSON.stringify({graph: of("#graph-canvas .gcard.agent-card"), side: of("#sidebar .agent-row")});
})()`

// TestManyAgentsStayCurrent: a page with 100 agents (webtest.Scale)
// follows a storm of changes (every agent of half the runs changing state
// again and again, one renamed, one gone, one new) to exactly the state
// st ends with, in the graph and in the sidebar; and it draws only what
// changed: the graph card and the sidebar row of an agent that did not
// change are the same elements as before, those of one that did are new.
func TestManyAgentsStayCurrent(t *testing.T) {
	fake := webtest.New(webtest.Scale(time.Now(), 100))
	base := serveUI(t, web.Config{Backend: fake})
	ctx := newBrowser(t, 1440, 900)
	do(t, ctx, chromedp.Navigate(link(t, base)))
	waitJS(t, ctx, `document.querySelectorAll("#sidebar .agent-row").length === 100`, 20*time.Second)
	do(t, ctx, chromedp.Click("#agents-btn"))
	waitJS(t, ctx, `document.querySelectorAll("#graph-canvas .gcard.agent-card").length === 100`, 20*time.Second)
	// %100 never changes; %3 does.
	run(t, ctx, chromedp.Evaluate[bool](`(() => {
		for (const p of ["%100", "%3"]) for (const e of document.querySelectorAll('[data-agent="' + p + '"]')) e.stMark = true;
		return true; })()`))

	for round := 0; round < 40; round++ {
		fake.Update(func(s *web.Snapshot) {
			for i := round % 5; i < 50; i += 5 {
				webtest.Step(s, i, time.Now())
			}
		})
		time.Sleep(15 * time.Millisecond) // changes come in bursts, as hooks do, not all at once
	}
	fake.Update(func(s *web.Snapshot) {
		s.Agents[61].Name = "renamed-part"
		s.Agents = append(s.Agents[:70], s.Agents[71:]...) // %71 went: its window closed
		for i := range s.Sessions {
			for j, w := range s.Sessions[i].Windows {
				if w.ID == "@71" {
					s.Sessions[i].Windows = append(s.Sessions[i].Windows[:j], s.Sessions[i].Windows[j+1:]...)
					break
				}
			}
		}
		s.Agents = append(s.Agents, web.Agent{Pane: "%101", Name: "late-part", Kind: "codex", Role: web.RoleWorker, State: "starting",
			Since: time.Now(), Parent: "%1", Run: "run-0001", Session: "$1", Window: "@101"})
		s.Sessions[0].Windows = append(s.Sessions[0].Windows, web.Window{ID: "@101", Index: "10", Name: "late-part",
			Panes: []web.Pane{{ID: "%101", Agent: "codex", Role: web.RoleWorker}}})
	})

	snap, _ := fake.Snapshot(ctx)
	want := map[string][2]string{}
	for _, a := range snap.Agents {
		want[a.Pane] = [2]string{a.State, a.Name}
	}
	var last string
	deadline := time.Now().Add(20 * time.Second)
	for {
		last = run(t, ctx, chromedp.Evaluate[string](shownJS))
		var got struct{ Graph, Side map[string][2]string }
		if err := json.Unmarshal([]byte(last), &got); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got.Graph) == fmt.Sprint(want) && fmt.Sprint(got.Side) == fmt.Sprint(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page does not show st's state after the changes:\nwant %v\ngot  %s", want, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
	kept := run(t, ctx, chromedp.Evaluate[[]bool](`["%100", "%3"].flatMap((p) =>
		["#graph-canvas .gcard", "#sidebar .agent-row"].map((s) => !!document.querySelector(s + '[data-agent="' + p + '"]').stMark))`))
	if !kept[0] || !kept[1] {
		t.Errorf("the card and row of %%100, which did not change, were drawn again (kept: graph %v, sidebar %v)", kept[0], kept[1])
	}
	if kept[2] || kept[3] {
		t.Errorf("the card and row of %%3, which changed, are the old elements (graph %v, sidebar %v)", kept[2], kept[3])
	}
	// A kept row still opens its window.
	do(t, ctx, chromedp.Click(`#graph-close`), chromedp.Click(`#sidebar .agent-row[data-agent="%100"]`))
	waitJS(t, ctx, `location.hash.includes("w=%40100")`, 10*time.Second)
}

// TestKeptElementsActOnTheirOwn: the page keeps elements that did not
// change from one snapshot to the next, and a kept element's button
// acts on its own agent. Two orphans with the same gone coordinator trade
// places (their windows' order changes): the Release of the card now
// first releases the agent now first, not the one whose card stood there.
func TestKeptElementsActOnTheirOwn(t *testing.T) {
	now := time.Now()
	orphan := func(pane, win, name string) web.Agent {
		return web.Agent{Pane: pane, Name: name, Kind: "sim", Role: web.RoleWorker, State: "idle", Since: now,
			Parent: "%1", ParentGone: true, Run: "run-1", Session: "$1", Window: win}
	}
	window := func(id, idx, name, pane string) web.Window {
		return web.Window{ID: id, Index: idx, Name: name, Panes: []web.Pane{{ID: pane, Agent: "sim", Role: web.RoleWorker}}}
	}
	fake := webtest.New(web.Snapshot{Machine: "devbox", Gates: []web.Gate{},
		Sessions: []web.Session{{ID: "$1", Name: "main", Windows: []web.Window{window("@7", "0", "first", "%7"), window("@8", "1", "second", "%8")}}},
		Agents:   []web.Agent{orphan("%7", "@7", "first"), orphan("%8", "@8", "second")}})
	base := serveUI(t, web.Config{Backend: fake})
	ctx := newBrowser(t, 1280, 800)
	do(t, ctx, chromedp.Navigate(link(t, base)))
	waitJS(t, ctx, `document.querySelectorAll("#sidebar .card.orphan").length === 2`, 20*time.Second)
	fake.Update(func(s *web.Snapshot) {
		w := s.Sessions[0].Windows
		w[0], w[1] = w[1], w[0]
	})
	waitJS(t, ctx, `document.querySelector("#sidebar .card.orphan .agent-row").dataset.agent === "%8"`, 20*time.Second)
	do(t, ctx, chromedp.Click(`#sidebar .card.orphan .orphan-line button`))
	waitCall(t, fake, `Release["%8"]`)
	if calls := fake.Calls(); len(calls) != 1 {
		t.Errorf("backend calls %v, want one Release of %%8", calls)
	}
}
