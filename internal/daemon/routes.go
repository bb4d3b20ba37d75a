package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/authz"
	"github.com/sophonz/st/internal/orch"
	"github.com/sophonz/st/internal/peer"
	"github.com/sophonz/st/internal/tmux"
)

// The socket API is this table: each route's path, what it asks of
// internal/authz, whether it acts for a pane, and its handler. The mux is
// built from it, and SocketRoutes (the fuzz test's list, the matrix
// test's rows) reads it: a route cannot be served without a row, nor
// have a row without being served.

// handler answers one request of the socket API.
type handler func(s *server, ctx context.Context, r *http.Request, body []byte) (any, error)

// route is one row of the socket table.
type route struct {
	path   string
	action authz.Action
	// vary picks the action from the request, for a route that does two
	// things (accept-remote on or off; an offer or its withdrawal).
	vary func(envelope) authz.Action
	// pane: the route acts for the calling pane, so a request from a pane
	// of another tmux server is misdirected.
	pane bool
	h    handler
}

// envelope is what authz is told of a request: who it claims to come
// from and what it names. Every request type of the socket names these
// the same way.
type envelope struct {
	Pane     string `json:"pane"`
	ID       string `json:"id"`
	Agent    string `json:"agent"`
	Machine  string `json:"machine"`
	On       *bool  `json:"on"`
	Withdraw bool   `json:"withdraw"`
	Yes      bool   `json:"yes"` // st orch prune --yes
}

// envelopeOf reads the envelope of a body. A body that is not one names
// nothing: authz fails closed on it, and the handler says what is wrong.
func envelopeOf(body []byte) envelope {
	var e envelope
	if json.Unmarshal(body, &e) != nil {
		return envelope{}
	}
	return e
}

func (e envelope) target() authz.Target {
	return authz.Target{ID: e.ID, Agent: e.Agent, Machine: e.Machine}
}

// mgrCall is a handler of a manager operation that takes one decoded
// request.
func mgrCall[T, R any](op func(*orch.Manager, context.Context, T) (R, error)) handler {
	return func(s *server, ctx context.Context, r *http.Request, b []byte) (any, error) {
		req, err := decode[T](b)
		if err != nil {
			return nil, err
		}
		return op(s.mgr, ctx, req)
	}
}

// hubCall is a handler of an operation of the hub (internal/peer).
func hubCall[T, R any](op func(*peer.Hub, context.Context, T) (R, error)) handler {
	return func(s *server, ctx context.Context, r *http.Request, b []byte) (any, error) {
		req, err := decode[T](b)
		if err != nil {
			return nil, err
		}
		return op(s.hub, ctx, req)
	}
}

// socketRoutes is the socket API.
var socketRoutes = []route{
	// st's own: its status, its end, its panes, its web UI, the hooks.
	{path: api.RouteStatus, action: authz.ReadState, h: (*server).status},
	{path: api.RouteShutdown, action: authz.StopST, h: (*server).shutdown},
	{path: api.RouteLs, action: authz.ReadState, h: (*server).ls},
	{path: api.RouteWeb, action: authz.SeeWebToken, h: (*server).webURL},
	{path: api.RouteRemoteReload, action: authz.ReadState, h: (*server).remoteReload},
	{path: api.RouteRemoteRoutes, action: authz.ReadState, h: (*server).remoteRoutes},
	{path: api.RouteHook, action: authz.Hook, h: (*server).hook},
	{path: api.RouteStatusLine, action: authz.Hook, h: (*server).statusLine},
	{path: api.RouteGuardServer, action: authz.ReadState, h: (*server).guardServer},
	{path: api.RouteTmuxStatus, action: authz.ChangeSetup, h: (*server).tmuxStatus},
	{path: api.RouteAcceptRemote, action: authz.AcceptRemoteOff, vary: acceptAction, h: (*server).acceptRemote},
	// The orchestration's: runs, workers, tasks, gates.
	{path: api.RouteOrchStart, action: authz.StartRun, pane: true, h: mgrCall((*orch.Manager).StartRun)},
	{path: api.RouteOrchShow, action: authz.ReadState, pane: true, h: (*server).orchShow},
	{path: api.RouteOrchPrune, action: authz.PruneRuns, vary: pruneAction, h: (*server).orchPrune},
	{path: api.RouteWorkerStart, action: authz.Start, pane: true, h: mgrCall((*orch.Manager).StartWorker)},
	{path: api.RouteWorkerFan, action: authz.Start, pane: true, h: mgrCall((*orch.Manager).Fan)},
	{path: api.RouteWorkerWait, action: authz.ReadState, pane: true, h: mgrCall((*orch.Manager).Wait)},
	{path: api.RouteWorkerDone, action: authz.Report, pane: true, h: mgrCall((*orch.Manager).Done)},
	{path: api.RouteWorkerRead, action: authz.ReadScreen, pane: true, h: (*server).workerRead},
	{path: api.RouteWorkerSend, action: authz.Send, pane: true, h: workerOp((*orch.Manager).Send)},
	{path: api.RouteWorkerStop, action: authz.Stop, pane: true, h: workerOp((*orch.Manager).Stop)},
	{path: api.RouteWorkerRename, action: authz.Rename, pane: true, h: workerOp((*orch.Manager).Rename)},
	{path: api.RouteWorkerRelease, action: authz.Release, pane: true, h: workerOp((*orch.Manager).Release)},
	{path: api.RouteWorkerAdopt, action: authz.Adopt, pane: true, h: mgrCall((*orch.Manager).Adopt)},
	{path: api.RouteWorkerOffer, action: authz.Offer, vary: offerAction, pane: true, h: hubCall((*peer.Hub).Offer)},
	{path: api.RouteWorkerDiff, action: authz.ReadScreen, pane: true, h: workerOp((*orch.Manager).Diff)},
	{path: api.RouteWorkerMerge, action: authz.Merge, pane: true, h: workerOp((*orch.Manager).Merge)},
	{path: api.RouteWorkerPick, action: authz.Merge, pane: true, h: workerOp((*orch.Manager).Pick)},
	{path: api.RouteWorkerList, action: authz.ReadState, pane: true, h: (*server).workerList},
	{path: api.RouteTaskCreate, action: authz.Start, pane: true, h: mgrCall((*orch.Manager).CreateTask)},
	{path: api.RouteTaskList, action: authz.ReadState, pane: true, h: mgrCall((*orch.Manager).ListTasks)},
	{path: api.RouteTaskCancel, action: authz.CancelTask, pane: true, h: mgrCall((*orch.Manager).CancelTask)},
	{path: api.RouteGateAsk, action: authz.AskGate, h: mgrCall((*orch.Manager).AskGate)},
	{path: api.RouteGateWait, action: authz.ReadState, h: mgrCall((*orch.Manager).WaitGate)},
	{path: api.RouteGateList, action: authz.ReadState, h: (*server).gateList},
	{path: api.RouteGateAnswer, action: authz.AnswerGate, h: (*server).gateAnswer},
	{path: api.RouteGateWithdraw, action: authz.WithdrawGate, h: mgrCall((*orch.Manager).WithdrawGate)},
	// The permission prompts (docs/permission-prompts.md): a hook waits
	// for a person's answer, which only a person gives.
	{path: api.RoutePromptWait, action: authz.Hook, h: (*server).promptWait},
	{path: api.RoutePromptList, action: authz.ReadState, h: (*server).promptList},
	{path: api.RoutePromptAnswer, action: authz.AnswerPrompt, h: (*server).promptAnswer},
	{path: api.RouteAttention, action: authz.ReadState, h: mgrCall((*orch.Manager).Attention)},
	{path: api.RouteAttentionWait, action: authz.ReadState, h: mgrCall((*orch.Manager).WaitAttention)},
	{path: api.RouteAttentionDismiss, action: authz.Dismiss, h: mgrCall((*orch.Manager).DismissAttention)},
}

// acceptAction: turning accept-remote on is a person's; off, or asking,
// is anyone's.
func acceptAction(e envelope) authz.Action {
	if e.On != nil && *e.On {
		return authz.AcceptRemoteOn
	}
	return authz.AcceptRemoteOff
}

// offerAction: an offer is a person's; withdrawing one is anyone's.
func offerAction(e envelope) authz.Action {
	if e.Withdraw {
		return authz.Withdraw
	}
	return authz.Offer
}

// SocketRoutes lists the socket API's routes, from its table: a route
// whose action varies lists each action its vary picks for the bodies of
// VaryBodies, in the order first picked.
func SocketRoutes() []authz.Route {
	out := make([]authz.Route, 0, len(socketRoutes))
	for _, rt := range socketRoutes {
		acts := []authz.Action{rt.action}
		if rt.vary != nil {
			acts = nil
			for _, b := range VaryBodies {
				if a := rt.actionOf(envelopeOf([]byte(b))); !slices.Contains(acts, a) {
					acts = append(acts, a)
				}
			}
		}
		out = append(out, authz.Route{Surface: "socket", Method: http.MethodPost, Path: rt.path, Actions: acts})
	}
	return out
}

// VaryBodies are the requests that pick each action of a route whose
// action varies: accept-remote asked, on and off; an offer and its
// withdrawal; st orch prune with and without --yes.
var VaryBodies = []string{`{}`, `{"on":true}`, `{"on":false}`, `{"withdraw":true}`, `{"yes":true}`}

// SocketAction is the action the socket asks authz about for a request of
// path with body, as it serves it (false for no such route).
func SocketAction(path string, body []byte) (authz.Action, bool) {
	for _, rt := range socketRoutes {
		if rt.path == path {
			return rt.actionOf(envelopeOf(body)), true
		}
	}
	return "", false
}

// actionOf is what rt asks authz about for a request that says e.
func (rt route) actionOf(e envelope) authz.Action {
	if rt.vary != nil {
		return rt.vary(e)
	}
	return rt.action
}

// routes is st's local API: one handler per row of socketRoutes.
func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range socketRoutes {
		s.mount(mux, rt)
	}
	return mux
}

// mount serves rt: to the user who runs st only, by POST; for a command
// that acts for a pane, from a pane of st's tmux server; and as authz
// decides for who asked.
func (s *server) mount(mux *http.ServeMux, rt route) {
	mux.HandleFunc(rt.path, func(w http.ResponseWriter, r *http.Request) {
		if p, _ := r.Context().Value(ctxKey{}).(sockPeer); !p.owner {
			writeErr(w, refusalErr(authz.Decide(authz.Actor{Kind: authz.OtherUser}, rt.action, authz.Target{}, nil)), http.StatusForbidden)
			return
		}
		if r.Method != http.MethodPost {
			writeErr(w, &api.Error{Kind: api.KindUsage, Message: "use POST"}, http.StatusMethodNotAllowed)
			return
		}
		if rt.pane && !s.sameServer(r) {
			writeErr(w, &api.Error{Kind: api.KindUsage,
				Message: fmt.Sprintf("this command came from a pane of the tmux server %s, but st drives %s", r.Header.Get(api.TmuxHeader), s.tmux.Socket()),
				Hint:    "run it in a pane of " + s.tmux.Socket() + ", or run an st for that server with its own ST_HOME"}, http.StatusBadRequest)
			return
		}
		answer(w, r, func(body []byte) (any, error) {
			e := envelopeOf(body)
			act := rt.actionOf(e)
			who := s.asker(r, e.Pane)
			if d := authz.Decide(who.actor(act), act, e.target(), s.facts()); !d.Allowed {
				return nil, forbidden{refusalErr(d)}
			}
			may := s.mayRead(who)
			if rt.path == api.RouteWorkerWait {
				// Who asked is read from /proc while the wait waits, not
				// once it returns: the answer goes out that much sooner
				// after the report it waited for (issue 36 item 8).
				may("")
			}
			v, err := rt.h(s, r.Context(), r, body)
			if rt.path != api.RouteHook && rt.path != api.RoutePromptWait && rt.path != api.RouteStatusLine {
				// What st answers is on disk (a hook's own change already is).
				s.mgr.Sync()
			}
			if err != nil {
				return v, err
			}
			return s.mgr.ShowTo(v, may), nil
		})
	})
}

// forbidden is a refusal of authz, answered 403.
type forbidden struct{ e *api.Error }

func (f forbidden) Error() string { return f.e.Error() }
func (f forbidden) Unwrap() error { return f.e }

// refusalErr is an authz refusal as the CLI prints it.
func refusalErr(d authz.Decision) *api.Error {
	return &api.Error{Kind: "forbidden", Message: "refused: " + d.Why, Hint: d.Hint}
}

// mayRead is authz's answer to whether the caller of r may read a
// worker's texts (st worker read's decision), for ShowTo. Who asked is
// told once, and only when the answer holds workers: a route open to
// every local process (a list, st worker wait) does not tell it
// otherwise.
func (s *server) mayRead(who *asker) func(id string) bool {
	var a *authz.Actor
	return func(id string) bool {
		if a == nil {
			w := who.actor(authz.ReadScreen)
			a = &w
		}
		return authz.MayRead(*a, id, s.facts())
	}
}

// facts are what authz asks of st's state: the manager's, and the
// setting that lets agents start the sim agent.
func (s *server) facts() authz.Facts { return s.hub }

// asker is who sent one request, as st reads it: the caller's processes
// from /proc and the pane of st's tmux server among them, each read at
// most once for the request. A request asks who sent it up to twice
// (authz's decision on the route's action, then whether its answer may
// show a worker's texts, ReadScreen); both are about the one process at
// the socket's other end (SO_PEERCRED, fixed at its connect), so the
// second would read the same files again a few milliseconds later, and
// ask tmux for its panes again: on a report, the path an agent's own
// st worker done takes, half of the daemon's time (issue 36 item 8).
// Each decision is still made by actor for its own action from the
// same facts; only the reading is shared. One goroutine uses it (the
// request's).
type asker struct {
	s       *server
	r       *http.Request
	claimed string // the pane the request names ($TMUX_PANE): a claim, checked

	read  bool
	c     caller
	paned bool
	pane  string
}

// asker begins the reading of who sent r, which names pane claimed.
func (s *server) asker(r *http.Request, claimed string) *asker {
	return &asker{s: s, r: r, claimed: claimed}
}

// caller is readCaller of the request's peer, read once.
func (w *asker) caller() caller {
	if !w.read {
		p, _ := w.r.Context().Value(ctxKey{}).(sockPeer)
		w.c, w.read = readCaller(w.s.proc, p.pid, agentBins()), true
	}
	return w.c
}

// callerPane is paneOf the caller's chain, asked of tmux once.
func (w *asker) callerPane() string {
	if !w.paned {
		c := w.caller()
		if p := w.s.listedPaneOf(c.chain, c.starts, w.claimed); p != "" { // no question to tmux
			w.pane, w.paned = p, true
			return p
		}
		w.pane, w.paned = w.s.paneOf(w.r.Context(), c.chain, w.claimed), true
	}
	return w.pane
}

// actor tells who asked, as much as act needs: nothing for what every
// process of this user may do; the caller's parents and environment for
// what an agent may do only to its own; and every check of callerCheck
// for what only a person may do.
func (w *asker) actor(act authz.Action) authz.Actor {
	claimed, s := w.claimed, w.s
	if authz.OpenToLocal(act) {
		return authz.Actor{Kind: authz.Local, Claimed: claimed}
	}
	c := w.caller()
	a := authz.Actor{Kind: authz.Agent, Claimed: claimed, Why: c.why()}
	switch {
	case c.err != "":
		return a // an agent of no pane: fails closed
	case c.sandboxed:
		a.Kind = authz.SandboxedCodex
	case c.agent == "" && c.mark == "":
		if !authz.PersonOnly(act) {
			return authz.Actor{Kind: authz.Person, Claimed: claimed}
		}
		p, _ := w.r.Context().Value(ctxKey{}).(sockPeer)
		if why := callerCheck(s.proc, p.pid, s.panePID(w.r.Context(), claimed), agentBins()); why != "" {
			a.Why = why
			return a
		}
		return authz.Actor{Kind: authz.Person, Claimed: claimed}
	}
	a.Pane = w.callerPane()
	if a.Pane != "" {
		a.Role = s.mgr.PaneRole(a.Pane)
	}
	return a
}

// agentBins are agent programs the user configured (ST_CLAUDE_BIN...),
// told apart by their path.
func agentBins() map[string]string {
	return agent.ProgramEnvs(os.Getenv)
}

// listedPaneOf is hint, the pane the caller names, when the first
// process that tmux listed for it at the manager's last reading of the
// layout (PaneRoot) is among the caller's parents and started before
// that listing, or "" (paneOf then asks tmux). A pid alone could be a
// process that came after the listing under a pid used again; a process
// that started before the listing and lives now is the one tmux listed,
// and a pane's first process stays its own while it lives (tmux closes
// the pane, or marks it dead, when it ends). This saves the question to
// tmux that paneOf asks first, on each command an agent runs in its pane:
// at 150 panes with a hundred agents at work its answer took 1.1 ms
// (median), a tenth of a report's way to its coordinator's wait (issue
// 36 item 8). The listing is read again at each change of tmux's windows
// and panes (a pane closed whose process lives on is no longer listed),
// and dropped when the server goes. Like paneOf, a rail for a same-user
// agent and a boundary for a sandboxed Codex: the claim decides nothing.
func (s *server) listedPaneOf(chain []int, starts []uint64, hint string) string {
	if s.mgr == nil {
		return ""
	}
	return listedPaneOf(s.mgr.PaneRoot, chain, starts, hint)
}

// listedPaneOf is server.listedPaneOf with root for the manager's
// PaneRoot.
func listedPaneOf(root func(pane string) (pid int, listed int64, ok bool), chain []int, starts []uint64, hint string) string {
	if !tmux.ValidPaneID(hint) || len(starts) != len(chain) {
		return ""
	}
	pid, listed, ok := root(hint)
	if !ok || pid <= 0 {
		return ""
	}
	for i, p := range chain {
		// starts are in clock ticks since the boot (a tick is 10 ms,
		// USER_HZ), rounded down: the whole tick must lie before the
		// listing began. listed is CLOCK_MONOTONIC, which runs no faster
		// than the clock /proc counts from (boot time, or on kernels
		// before 5.5 the monotonic clock itself), so a process that
		// started after the listing never passes.
		if p == pid && starts[i] > 0 && (starts[i]+1)*uint64(10*time.Millisecond) <= uint64(listed) {
			return hint
		}
	}
	return ""
}

// paneOf is the pane of st's tmux server whose first process is among
// chain (a process and its parents), or "". hint is a pane the caller
// names ($TMUX_PANE, which it may set to anything; "" for none), asked
// about first and alone: at most one pane of a server can be among one
// chain (a pane's first process is a child of the server, and the server
// is no pane's), so when tmux says hint's first process is in chain,
// hint is what a look at every pane would find, for the price of one
// pane's line instead of every pane's (a report at 150 panes). When it
// is not, every pane is looked at, as before: the claim decides nothing.
func (s *server) paneOf(ctx context.Context, chain []int, hint string) string {
	if tmux.ValidPaneID(hint) {
		if p, err := s.tmux.Pane(ctx, hint); err == nil && p.ID == hint && p.PID > 0 && !p.Dead && slices.Contains(chain, p.PID) {
			return hint
		}
	}
	panes, err := s.tmux.ListPanes(ctx)
	if err != nil {
		return ""
	}
	byPID := map[int]string{}
	for _, p := range panes {
		if p.PID > 0 && !p.Dead {
			byPID[p.PID] = p.ID
		}
	}
	for _, pid := range chain {
		if id := byPID[pid]; id != "" {
			return id
		}
	}
	return ""
}
