package peer

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/authz"
	"github.com/sophonz/st/internal/remote"
	"github.com/sophonz/st/internal/tmux"
	"github.com/sophonz/st/internal/web"
)

// The peer API is this table: what another machine of the account may
// ask, what each route asks of internal/authz, and its handler. The mux
// is built from it (Handler), and Routes (the fuzz test's list, the
// matrix test's rows) reads it. The terminal (GET, a websocket) is a row
// too.
type route struct {
	name   string
	method string
	action authz.Action
	h      handler // nil for the terminal (serveTerm)
}

// handler answers a request of machine from.
type handler func(h *Hub, ctx context.Context, from string, body []byte) (any, error)

// call decodes a peer request into T for op of the hub.
func call[T, R any](op func(*Hub, context.Context, string, T) (R, error)) handler {
	return func(h *Hub, ctx context.Context, from string, b []byte) (any, error) {
		var req T
		if err := json.Unmarshal(b, &req); err != nil {
			return nil, &api.Error{Kind: api.KindUsage, Message: "bad request: " + err.Error()}
		}
		return op(h, ctx, from, req)
	}
}

// opRoute is the handler of read, send, stop, rename or release.
func opRoute(name string) handler {
	return call(func(h *Hub, ctx context.Context, from string, req api.PeerOp) (*api.WorkerView, error) {
		return h.opFor(ctx, from, name, req)
	})
}

// table is the peer API.
var table = []route{
	{api.PeerRouteStart, http.MethodPost, authz.Start, call((*Hub).startFor)},
	{api.PeerRouteWatch, http.MethodPost, authz.Watch, call((*Hub).watchFor)},
	{api.PeerRouteAdopt, http.MethodPost, authz.Adopt, call((*Hub).adoptFor)},
	{api.PeerRouteReparent, http.MethodPost, authz.Reparent, call((*Hub).reparentFor)},
	{api.PeerRoutePane, http.MethodPost, authz.FindCoordinator, call((*Hub).paneFor)},
	{api.PeerRouteGraph, http.MethodPost, authz.SeeAgents, graphRoute},
	{api.PeerRouteRead, http.MethodPost, authz.ReadScreen, opRoute(api.PeerRouteRead)},
	{api.PeerRouteSend, http.MethodPost, authz.Send, opRoute(api.PeerRouteSend)},
	{api.PeerRouteStop, http.MethodPost, authz.Stop, opRoute(api.PeerRouteStop)},
	{api.PeerRouteRename, http.MethodPost, authz.Rename, opRoute(api.PeerRouteRename)},
	{api.PeerRouteRelease, http.MethodPost, authz.Release, opRoute(api.PeerRouteRelease)},
	{api.PeerRouteTerm, http.MethodGet, authz.OpenTerminal, nil},
}

// graphRoute answers the graph whatever the body says (it asks nothing).
func graphRoute(h *Hub, ctx context.Context, from string, _ []byte) (any, error) {
	return h.graphFor(ctx, from, struct{}{})
}

// Routes lists the peer API's routes, from its table.
func Routes() []authz.Route {
	out := make([]authz.Route, 0, len(table))
	for _, rt := range table {
		acts := []authz.Action{rt.action}
		if rt.name == api.PeerRouteTerm {
			acts = append(acts, authz.TypeTerminal)
		}
		out = append(out, authz.Route{Surface: "peer", Method: rt.method, Path: api.PeerPrefix + rt.name, Actions: acts, Actor: authz.Machine})
	}
	return out
}

// actor is who calls the peer API: the machine its certificate proves
// (checked against the revoked keys on every request), or, with none
// valid, anyone on the network.
func actor(tr remote.Transport, r *http.Request) authz.Actor {
	if from, ok := tr.PeerOf(r); ok {
		return authz.Actor{Kind: authz.Machine, Machine: from}
	}
	return authz.Actor{Kind: authz.Network}
}

// refusal is authz's refusal as the asking machine's st prints it (it
// says "NAME says: " before it, and names this machine in the hint).
func refusal(a authz.Actor, d authz.Decision) *api.Error {
	kind := api.KindRemote
	if a.Kind != authz.Machine {
		kind = "forbidden"
	}
	return &api.Error{Kind: kind, Message: "refused: " + d.Why, Hint: d.Hint}
}

// targetOf is what a peer request names: an id in its body (PeerOp,
// IDRequest), or the pane of a terminal's query.
func targetOf(r *http.Request, body []byte) authz.Target {
	if r.Method == http.MethodGet {
		pane, _ := web.PeerTermOptsOf(r)
		return authz.Target{ID: pane}
	}
	var e struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(body, &e) != nil {
		return authz.Target{}
	}
	return authz.Target{ID: e.ID}
}

// Handler is the peer API over transport tr (remote.Net's, whose
// certificates prove the asking machine): one handler per row of its
// table. base is the daemon's life, which ends the peers' web terminals.
func (h *Hub) Handler(tr remote.Transport, base context.Context) http.Handler {
	mux := http.NewServeMux()
	for _, rt := range table {
		mux.HandleFunc(api.PeerPrefix+rt.name, func(w http.ResponseWriter, r *http.Request) {
			a := actor(tr, r)
			if a.Kind != authz.Machine {
				writeErr(w, refusal(a, authz.Decide(a, rt.action, authz.Target{}, h)), http.StatusForbidden)
				return
			}
			if r.Method != rt.method {
				msg := "use POST"
				if rt.method == http.MethodGet {
					msg = "use GET (a websocket)"
				}
				writeErr(w, &api.Error{Kind: api.KindUsage, Message: msg}, http.StatusMethodNotAllowed)
				return
			}
			if rt.h == nil {
				h.serveTerm(w, r, tr, a, base)
				return
			}
			h.answer(w, r, a, rt)
		})
	}
	return mux
}

// answer reads a request's body, asks authz, runs the route's handler
// and writes its result as JSON, or its error as an *api.Error (403 for
// authz's refusal, 422 for the handler's).
func (h *Hub) answer(w http.ResponseWriter, r *http.Request, a authz.Actor, rt route) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		writeErr(w, &api.Error{Kind: api.KindUsage, Message: err.Error()}, http.StatusBadRequest)
		return
	}
	if d := authz.Decide(a, rt.action, targetOf(r, body), h); !d.Allowed {
		writeErr(w, refusal(a, d), http.StatusForbidden)
		return
	}
	res, err := rt.h(h, r.Context(), a.Machine, body)
	h.local.Sync() // what another machine is told is on disk here
	if err != nil {
		var oe *api.Error
		if !errors.As(err, &oe) {
			oe = &api.Error{Kind: api.KindInternal, Message: err.Error()}
		}
		writeErr(w, oe, http.StatusUnprocessableEntity)
		return
	}
	res = h.shownTo(a, res)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(res)
}

// shownTo is an answer as machine a is shown it: the texts (task,
// report, answers) of only the workers it may read (its own), as authz
// decides st worker read.
func (h *Hub) shownTo(a authz.Actor, res any) any {
	return h.local.ShowTo(res, func(id string) bool { return authz.MayRead(a, id, h) })
}

func writeErr(w http.ResponseWriter, e *api.Error, code int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(e)
}

// serveTerm serves machine a's web UI the window of a pane here
// (web.ServePeerTerm) as authz decides: opened only on a pane handed to
// that machine, read-only unless this machine lets it type (the asking
// side's switch may only narrow that). Checked before anything touches
// tmux, before each key, and every second (with the machine's
// certificate against the revoked keys, so a revoked machine's terminal
// closes within a second of this machine learning it).
func (h *Hub) serveTerm(w http.ResponseWriter, r *http.Request, tr remote.Transport, a authz.Actor, base context.Context) {
	pane, o := web.PeerTermOptsOf(r)
	if !tmux.ValidPaneID(pane) {
		writeErr(w, &api.Error{Kind: api.KindUsage, Message: "refused: " + a.Machine + " asked for a pane that is not a pane id",
			Hint: "upgrade st on " + a.Machine + " (this machine refuses what it sent)"}, http.StatusForbidden)
		return
	}
	t := authz.Target{ID: pane}
	d := authz.Decide(a, authz.OpenTerminal, t, h)
	if !d.Allowed {
		writeErr(w, refusal(a, d), http.StatusForbidden)
		return
	}
	readOnly := o.ReadOnly || d.ReadOnly
	tp, err := h.cfg.Tmux.Pane(r.Context(), pane)
	if err != nil {
		writeErr(w, &api.Error{Kind: api.KindNotFound, Message: "that agent's window is gone"}, http.StatusNotFound)
		return
	}
	var mu sync.Mutex
	var checked time.Time
	decide := func(act authz.Action) error {
		if _, ok := tr.PeerOf(r); !ok {
			return refusal(authz.Actor{Kind: authz.Network}, authz.Decide(authz.Actor{Kind: authz.Network}, act, t, nil))
		}
		if d := authz.Decide(a, act, t, h); !d.Allowed {
			return refusal(a, d)
		}
		return nil
	}
	allowed := func() error {
		// The window's other panes (a split shows them all) once a second,
		// as they cost a look at tmux.
		if err := decide(authz.OpenTerminal); err != nil {
			return err
		}
		mu.Lock() // lockio: this one terminal's look at tmux, once a second: only its own next check waits
		defer mu.Unlock()
		if time.Since(checked) < time.Second {
			return nil
		}
		if err := h.windowVisible(r.Context(), a, tp.WindowID); err != nil {
			return err
		}
		checked = time.Now()
		return nil
	}
	if err := allowed(); err != nil {
		writeErr(w, asAPIErr(err), http.StatusForbidden)
		return
	}
	h.logf("peer: %s opens the window of %s (read-only: %v)", a.Machine, pane, readOnly)
	web.ServePeerTerm(w, r, web.PeerTermConfig{Tmux: h.cfg.Tmux, Pane: tp, ReadOnly: readOnly, Cols: o.Cols, Rows: o.Rows,
		Allowed: allowed, MayType: func() error { return decide(authz.TypeTerminal) }, Base: base, Log: h.cfg.Log})
}

// windowVisible refuses a window that holds a pane machine from may not
// see (an agent split beside a shell would show the shell too).
func (h *Hub) windowVisible(ctx context.Context, a authz.Actor, window string) error {
	panes, err := h.cfg.Tmux.ListPanes(ctx)
	if err != nil {
		return &api.Error{Kind: api.KindInternal, Message: "tmux did not answer: " + err.Error()}
	}
	for _, tp := range panes {
		if tp.WindowID != window {
			continue
		}
		if d := authz.Decide(a, authz.OpenTerminal, authz.Target{ID: tp.ID}, h); !d.Allowed {
			return &api.Error{Kind: api.KindRemote, Message: "refused: that agent's window also shows a pane that was not handed to " + a.Machine + " (" + tp.ID + ")",
				Hint: "open it on that machine, or move the agent to a window of its own"}
		}
	}
	return nil
}

func asAPIErr(err error) *api.Error {
	var oe *api.Error
	if errors.As(err, &oe) {
		return oe
	}
	return &api.Error{Kind: api.KindInternal, Message: err.Error()}
}
