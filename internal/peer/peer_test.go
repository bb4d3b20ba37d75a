package peer

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/authz"
	"github.com/sophonz/st/internal/orch"
	"github.com/sophonz/st/internal/store"
)

// These tests are the trust boundary between machines, with the real
// manager over the fake tmux server: what another machine of the account
// may do here (the worker's side, serve.go), and what st takes from its
// answers (the coordinator's side, coordinator.go and watch.go).

// TestPeerAdoptNeedsAnOffer (issue 12, item 1): with accept-remote on, a
// machine of the account adopted any pane running an agent, the user's
// own coordinator included, and could then type into it and stop it. Now
// only an agent a person here offered to that very machine, as st's own
// state holds it (issue 23, item 2): a pane option any process can set is
// no offer.
func TestPeerAdoptNeedsAnOffer(t *testing.T) {
	h := peerHarness(t, &fakeAccount{}, nil)
	ctx := context.Background()
	// The coordinator %1 runs an agent (its hooks were seen).
	if err := h.hookFrom(coord, "SessionStart"); err != nil {
		t.Fatal(err)
	}
	err := peerAsks(h, "beta", authz.Adopt, coord)
	if err == nil || !strings.Contains(err.Error(), "was not offered to beta") || !strings.Contains(err.(*authz.Refusal).Hint, "st worker offer %1 --machine beta") {
		t.Errorf("refusal = %v", err)
	}
	// Then nothing may act on it from beta either.
	for _, act := range []authz.Action{authz.Send, authz.Stop, authz.Rename, authz.Release, authz.ReadScreen, authz.TypeTerminal, authz.OpenTerminal} {
		if err := peerAsks(h, "beta", act, coord); err == nil {
			t.Errorf("beta's %s on the coordinator %s was taken", act, coord)
		}
	}
	// Any process with the tmux socket sets the option of earlier
	// versions: it offers nothing.
	h.tm.Lock()
	h.tm.Find(coord).Opts["@st_offer"] = "beta"
	h.tm.Unlock()
	if err := peerAsks(h, "beta", authz.Adopt, coord); err == nil {
		t.Error("a forged @st_offer pane option let beta adopt the coordinator")
	}
	// A person offers it to gamma: beta still may not, gamma may, once.
	if _, err := h.hub.Offer(ctx, api.OfferRequest{ID: coord, Machine: "gamma"}); err != nil {
		t.Fatal(err)
	}
	if got := h.hub.offeredTo(ctx, coord); got != "gamma" {
		t.Fatalf("the offer is not in st's state: %q", got)
	}
	if err := peerAsks(h, "beta", authz.Adopt, coord); err == nil {
		t.Error("beta adopted what was offered to gamma")
	}
	// gamma sees its window read-only until it adopts it.
	if d := authz.Decide(authz.Actor{Kind: authz.Machine, Machine: "gamma"}, authz.OpenTerminal, authz.Target{ID: coord}, h.hub); !d.Allowed || !d.ReadOnly {
		t.Errorf("gamma's terminal of the offer: %+v", d)
	}
	if err := peerAsks(h, "gamma", authz.Adopt, coord); err != nil {
		t.Fatal(err)
	}
	if _, err := h.hub.adoptFor(ctx, "gamma", api.PeerOp{ID: coord, Run: "run-abcdef", Coordinator: "%0", Parent: "%0", Level: 1, Ref: "0123456789abcdef"}); err != nil {
		t.Fatalf("gamma's adoption of an agent offered to it: %v", err)
	}
	if h.hub.offeredTo(ctx, coord) != "" {
		t.Error("the offer was not used up by the adoption")
	}
	if got := h.tm.Option(coord, "@st_parent"); got != "gamma/%0" {
		t.Errorf("@st_parent = %q, want gamma/%%0", got)
	}
	if err := peerAsks(h, "gamma", authz.TypeTerminal, coord); err != nil {
		t.Errorf("gamma types into its worker: %v", err)
	}
}

// TestOfferGoesWithItsPane (issue 23, item 2): an offer names its pane by
// id and by its first process, so a pane that comes later with the same
// id (after a tmux restart) was offered to no one, and a closed pane's
// offer goes at the next look at tmux; offers outlive a restart of st.
func TestOfferGoesWithItsPane(t *testing.T) {
	h := peerHarness(t, &fakeAccount{}, nil)
	ctx := context.Background()
	if err := h.hookFrom(coord, "SessionStart"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.hub.Offer(ctx, api.OfferRequest{ID: coord, Machine: "beta"}); err != nil {
		t.Fatal(err)
	}
	if b := newOfferBook(h.home, t.Logf); b.to(coord, 1) != "beta" {
		t.Errorf("the offer is not kept on disk for the next st: %+v", b.offers)
	}
	h.tm.Lock()
	h.tm.Find(coord).PID = 4242 // another process in a pane of the same id
	h.tm.Unlock()
	if got := h.hub.HandedTo("beta", coord); got != authz.NotHanded {
		t.Errorf("a new pane with the offered pane's id: %v", got)
	}
	h.tm.Lock()
	h.tm.Find(coord).PID = 1
	h.tm.Unlock()
	if got := h.hub.HandedTo("beta", coord); got != authz.Offered {
		t.Fatalf("the offered pane: %v", got)
	}
	h.hub.offers.prune(map[string]int{workerID: 2}, time.Now())
	if got := h.hub.HandedTo("beta", coord); got != authz.NotHanded {
		t.Errorf("an offer of a pane that closed: %v", got)
	}
}

// TestPeerActsNeedAcceptRemote (item 1): with accept-remote off, every
// peer route that acts is refused with why and what to do, even on a
// worker that machine started here; a read of its own worker is not.
func TestPeerActsNeedAcceptRemote(t *testing.T) {
	h := newHarness(t, api.Working, nil, func(s *setup) {
		// %2 works for beta's coordinator %0.
		s.tm.Find(workerID).Opts["@st_parent"] = "beta/%0"
		s.worker().Parent, s.worker().Ref = "beta/%0", "0123456789abcdef"
	})
	for _, act := range []authz.Action{authz.Send, authz.Stop, authz.Rename, authz.Release, authz.Adopt, authz.Start, authz.Reparent,
		authz.SeeAgents, authz.OpenTerminal, authz.TypeTerminal} {
		err := peerAsks(h, "beta", act, workerID)
		if err == nil || !strings.Contains(err.Error(), "accept-remote is off there") || !strings.Contains(err.(*authz.Refusal).Hint, "st orch accept-remote on") {
			t.Errorf("%s: %v", act, err)
		}
	}
	for _, act := range []authz.Action{authz.ReadScreen, authz.Watch} {
		if err := peerAsks(h, "beta", act, workerID); err != nil {
			t.Errorf("beta's %s of its own worker: %v", act, err)
		}
	}
	if _, err := h.hub.opFor(context.Background(), "beta", "read", api.PeerOp{ID: workerID}); err != nil {
		t.Errorf("beta's read of its own worker: %v", err)
	}
	if w := h.worker(); w.State != api.Working {
		t.Errorf("worker is %s after refused acts", w.State)
	}
}

// TestPeerPaneAnswersOnlyItsCoordinators (item 1): "pane" told any
// machine whether any pane here lives. Now it answers only about panes
// whose workers run on the asking machine.
func TestPeerPaneAnswersOnlyItsCoordinators(t *testing.T) {
	h := newHarness(t, api.Working, nil, func(s *setup) {
		s.runs[0].Workers = append(s.runs[0].Workers, &orch.Worker{ID: "beta/%4", Name: "far", Agent: "sim", Parent: coord, Level: 1,
			State: api.Working, Machine: "beta", Ref: "0123456789abcdef", StartedAt: time.Now()})
	})
	ctx := context.Background()
	if err := peerAsks(h, "beta", authz.FindCoordinator, coord); err != nil {
		t.Fatalf("beta asks about its workers' coordinator: %v", err)
	}
	if res, err := h.hub.paneFor(ctx, "beta", api.IDRequest{ID: coord}); err != nil || !res.Live {
		t.Errorf("beta asks about its workers' coordinator: %+v %v", res, err)
	}
	for _, q := range []struct{ from, id string }{{"beta", shell}, {"gamma", coord}, {"beta", "../x"}} {
		if err := peerAsks(h, q.from, authz.FindCoordinator, q.id); err == nil {
			t.Errorf("%s asked about %s and was answered", q.from, q.id)
		}
	}
}

// TestPeerIDsArePathSafe (item 2): the run id from a peer named a folder
// under $ST_HOME: ../ in it wrote files outside, and ../orch/<run>
// overwrote a local run. Every id and name from a peer is checked as
// local input is, before anything touches disk or tmux.
func TestPeerIDsArePathSafe(t *testing.T) {
	h := peerHarness(t, &fakeAccount{}, nil)
	ctx := context.Background()
	before, _ := os.ReadFile(filepath.Join(h.home, "orch", testRun, "run.json"))
	good := api.PeerStart{Run: "run-abcdef", Coordinator: "%0", Parent: "%0", Level: 1, Ref: "0123456789abcdef", Agent: "sim", TaskName: "t.md", TaskText: "x", Name: "w"}
	for name, edit := range map[string]func(*api.PeerStart){
		"run ../":              func(p *api.PeerStart) { p.Run = "../../escape" },
		"run ../orch/local":    func(p *api.PeerStart) { p.Run = "../orch/" + testRun },
		"the local run's id":   func(p *api.PeerStart) { p.Run = testRun },
		"run with a newline":   func(p *api.PeerStart) { p.Run = "run-abc\ndef" },
		"name ../":             func(p *api.PeerStart) { p.Name = "../w" },
		"name with escape":     func(p *api.PeerStart) { p.Name = "w\x1b[2J" },
		"name with newline":    func(p *api.PeerStart) { p.Name = "w\nrm -rf" },
		"coordinator not pane": func(p *api.PeerStart) { p.Coordinator = "../x" },
		"parent a target":      func(p *api.PeerStart) { p.Parent = "main:0.0" },
		"ref ../":              func(p *api.PeerStart) { p.Ref = "../../x" },
		"negative base depth":  func(p *api.PeerStart) { p.BaseDepth = -5 },
		"level 0":              func(p *api.PeerStart) { p.Level = 0 },
		"unknown agent":        func(p *api.PeerStart) { p.Agent = "../../bin/sh" },
		"relative cwd":         func(p *api.PeerStart) { p.Cwd = "../.." },
		"cwd with escape":      func(p *api.PeerStart) { p.Cwd = "/tmp/\x1b]0;x\x07" },
		"task name escape":     func(p *api.PeerStart) { p.TaskName = "t\x1b[2J.md" },
		"env other than sim":   func(p *api.PeerStart) { p.Env = map[string]string{"PATH": "/evil"} },
		"env value newline":    func(p *api.PeerStart) { p.Env = map[string]string{"ST_SIM_SLOW_START": "1s\nx"} },
	} {
		req := good
		edit(&req)
		if _, err := h.hub.startFor(ctx, "beta", req); err == nil {
			t.Errorf("%s: the start was taken", name)
		}
	}
	for _, id := range []string{"../x", "w\n", "%2\x1b[A", "main:0.0"} {
		if _, err := h.hub.opFor(ctx, "beta", "read", api.PeerOp{ID: id}); err == nil {
			t.Errorf("read of %q was taken", id)
		}
		if _, err := h.hub.adoptFor(ctx, "beta", api.PeerOp{ID: id, Run: "run-abcdef", Coordinator: "%0", Parent: "%0", Level: 1, Ref: "0123456789abcdef"}); err == nil {
			t.Errorf("adopt of %q was taken", id)
		}
	}
	// Nothing was written outside ST_HOME, and the local run is as it was.
	filepath.WalkDir(filepath.Dir(h.home), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasPrefix(p, h.home+string(filepath.Separator)) {
			t.Errorf("written outside ST_HOME: %s", p)
		}
		return nil
	})
	after, _ := os.ReadFile(filepath.Join(h.home, "orch", testRun, "run.json"))
	if string(before) != string(after) {
		t.Errorf("the local run %s was changed by a peer", testRun)
	}
	if _, err := os.Stat(filepath.Join(h.home, "remote-tasks")); err == nil {
		t.Error("a refused start kept a task file")
	}
}

// TestPeerAnswersAreChecked (item 3): a worker's name and id from another
// machine were kept unchecked and typed into the coordinator's pane in the
// done notice. An answer with control characters (or ids that are not
// ids) is not taken, and nothing of it is kept or typed.
func TestPeerAnswersAreChecked(t *testing.T) {
	bad := []func(*api.WorkerView){
		func(v *api.WorkerView) { v.Name = "x\n\x1b[2Jrm -rf ~" },
		func(v *api.WorkerView) { v.Name = "x\u009b2J" },
		func(v *api.WorkerView) { v.ID = "%3\nst worker stop" },
		func(v *api.WorkerView) { v.ID = "../x" },
		func(v *api.WorkerView) { v.State = "done\n" },
		func(v *api.WorkerView) { v.Summary = "ok \x1b]52;c;aGVsbG8=\x07" },
		func(v *api.WorkerView) { v.Agent = "sim\x1b[A" },
		func(v *api.WorkerView) { v.Notes = []string{"\x1b[2J"} },
		func(v *api.WorkerView) { v.Ref = "../r" },
	}
	ctx := context.Background()
	task := filepath.Join(t.TempDir(), "t.md")
	os.WriteFile(task, []byte("summary: x\n"), 0o600)
	for i, edit := range bad {
		peers := &fakeAccount{}
		h := peerHarness(t, peers, nil)
		peers.answer = func(slug, op string, req any) (any, error) {
			v := api.WorkerView{Worker: api.Worker{ID: "%3", Name: "far", Agent: "sim", State: api.Working, Ref: req.(api.PeerStart).Ref}}
			edit(&v)
			return v, nil
		}
		_, err := h.m.StartWorker(ctx, api.StartRequest{Pane: coord, Agent: "sim", Task: task, Machine: "beta", Name: "far"})
		if err == nil {
			t.Errorf("answer %d: the start's answer was taken", i)
			continue
		}
		for _, v := range h.records() {
			if strings.HasPrefix(v.ID, "beta/") {
				t.Errorf("answer %d: a record %q was kept", i, v.ID)
			}
		}
	}
	// A watch answer with a bad name leaves the record as it was (no
	// done notice with that name), and a good one is taken.
	peers := &fakeAccount{}
	h := peerHarness(t, peers, nil)
	peers.answer = func(slug, op string, req any) (any, error) {
		return api.WorkerView{Worker: api.Worker{ID: "%3", Name: "far", Agent: "sim", State: api.Working, Ref: req.(api.PeerStart).Ref}}, nil
	}
	v, err := h.m.StartWorker(ctx, api.StartRequest{Pane: coord, Agent: "sim", Task: task, Machine: "beta", Name: "far"})
	if err != nil {
		t.Fatal(err)
	}
	h.hub.applyWatch("beta", api.PeerWatchResult{Workers: []api.WorkerView{{Worker: api.Worker{ID: "%3", Name: "far\n\x1b[2J", Agent: "sim", State: api.Done, Summary: "x", Ref: v.Ref}}}})
	w := h.record("beta/%3")
	name, state := w.Name, w.State
	if name != "far" || state != api.Working {
		t.Errorf("a bad watch answer changed the record: %q %s", name, state)
	}
	h.hub.applyWatch("beta", api.PeerWatchResult{Workers: []api.WorkerView{{Worker: api.Worker{ID: "%3", Name: "far", Agent: "sim", State: api.Done, Summary: "x", LastAnswer: "ok \x1b[31mred", Ref: v.Ref}}}})
	w = h.record("beta/%3")
	state, answer := w.State, w.LastAnswer
	if state != api.Done || strings.ContainsRune(answer, 0x1b) {
		t.Errorf("a good watch answer: state %s, answer %q (control characters must be made printable)", state, answer)
	}
	var r orch.Run
	store.ReadJSON(filepath.Join(h.home, "orch", testRun, "run.json"), &r)
	for _, w := range r.Workers {
		if strings.ContainsAny(w.Name+w.ID+w.Summary, "\n\x1b") {
			t.Errorf("run.json keeps %q", w.Name+w.ID)
		}
	}
}

// TestPeerGraphSeesOnlyWhatItNeeds (item 5): graph answered every agent's
// names, summaries and runs to any machine, even with accept-remote off.
func TestPeerGraphSeesOnlyWhatItNeeds(t *testing.T) {
	h := newHarness(t, api.Done, nil, func(s *setup) { s.worker().Summary = "secret findings" })
	h.lookAtTmux()
	if err := peerAsks(h, "beta", authz.SeeAgents, ""); err == nil {
		t.Error("with accept-remote off beta sees this machine's agents")
	}
	if err := h.hub.SetAcceptRemote(true); err != nil {
		t.Fatal(err)
	}
	if err := peerAsks(h, "beta", authz.SeeAgents, ""); err != nil {
		t.Fatal(err)
	}
	res, err := h.hub.graphFor(context.Background(), "beta", struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	g := h.hub.shownTo(authz.Actor{Kind: authz.Machine, Machine: "beta"}, res).([]api.GraphAgent) // as answer shows it
	if len(g) == 0 {
		t.Fatal("with accept-remote on beta sees nothing")
	}
	for _, a := range g {
		if a.Summary != "" || a.Subagents != nil {
			t.Errorf("beta sees %+v: summaries and subagents of agents that are not its workers", a)
		}
	}
}

// TestPeerTermOnlyWhatWasHanded (issue 17; issue 23, item 1): another
// machine's web UI may open here only the window of a pane handed to it
// (its worker; an agent offered to it, read-only), only while
// accept-remote is on: never a shell, this machine's own coordinator or
// workers, a pane st does not know, another machine's record, or
// anything that is not a pane id.
func TestPeerTermOnlyWhatWasHanded(t *testing.T) {
	h := newHarness(t, api.Working, nil, func(s *setup) {
		s.tm.Find(workerID).Opts["@st_parent"] = "beta/%0"
		s.worker().Parent = "beta/%0"
	})
	h.lookAtTmux()
	if err := peerAsks(h, "beta", authz.OpenTerminal, workerID); err == nil || !strings.Contains(err.Error(), "accept-remote is off there") {
		t.Errorf("with accept-remote off: %v", err)
	}
	if err := h.hub.SetAcceptRemote(true); err != nil {
		t.Fatal(err)
	}
	for _, act := range []authz.Action{authz.OpenTerminal, authz.TypeTerminal} {
		if err := peerAsks(h, "beta", act, workerID); err != nil {
			t.Errorf("%s of beta's worker here: %v", act, err)
		}
		if err := peerAsks(h, "gamma", act, workerID); err == nil {
			t.Errorf("%s of beta's worker by gamma", act)
		}
	}
	for _, pane := range []string{coord, shell, "%77", "beta/%0", "main:0.0", "-t", "%2\n", "", "@2", "$0"} {
		if err := peerAsks(h, "beta", authz.OpenTerminal, pane); err == nil {
			t.Errorf("beta may open %q", pane)
		}
	}
}

// TestPeerStartChecksBeforeItWrites (issue 23, item 11): a start whose run
// id is not the asking machine's (a run of this machine, or of another
// machine) was refused only after its task file was written under
// remote-tasks. Now every check comes first: nothing is written.
func TestPeerStartChecksBeforeItWrites(t *testing.T) {
	h := peerHarness(t, &fakeAccount{}, func(s *setup) {
		s.runs = append(s.runs, &orch.Run{ID: "run-0a0b0c", Coordinator: "gamma/%0", CoordinatorMachine: "gamma", Created: time.Now()},
			&orch.Run{ID: "run-0d0d0d", Coordinator: shell, Created: time.Now()})
	})
	ctx := context.Background()
	for _, run := range []string{"run-0d0d0d", "run-0a0b0c"} {
		_, err := h.hub.startFor(ctx, "beta", api.PeerStart{Run: run, Coordinator: "%0", Parent: "%0", Level: 1, Ref: "0123456789abcdef",
			Agent: "sim", TaskName: "t.md", TaskText: "run: touch pwned", Name: "w"})
		if err == nil || !strings.Contains(err.Error(), "is not beta's") {
			t.Errorf("a start in run %s: %v", run, err)
		}
	}
	if _, err := os.Stat(filepath.Join(h.home, "remote-tasks")); err == nil {
		files, _ := filepath.Glob(filepath.Join(h.home, "remote-tasks", "*", "*"))
		t.Errorf("a refused start wrote its task: %v", files)
	}
}
