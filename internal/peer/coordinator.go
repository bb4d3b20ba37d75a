package peer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/orch"
	"github.com/sophonz/st/internal/plain"
	"github.com/sophonz/st/internal/tmux"
)

// The coordinator's side of workers on other machines: the worker runs
// there as an ordinary worker of that machine's st, and this machine's
// manager keeps a record of it (ID machine/%N, Machine set) that a watch
// per machine (watch.go) keeps true. serve.go is the other side.

// target is what an id of another machine (machine/%N or machine/name)
// names.
type target struct {
	account Account
	machine api.MachineRef
	there   string // its id on that machine
	// record is this machine's record of it, if any (its ID "" if none).
	record orch.RemoteRecord
	// local is set when the machine named is this one: the id here.
	local string
}

// target resolves an id of another machine.
func (h *Hub) target(ctx context.Context, id string) (target, error) {
	mach, rest, _ := api.SplitRemote(id)
	acc, self, err := h.account()
	if err != nil {
		return target{}, err
	}
	mr, err := acc.Machine(ctx, mach)
	if err != nil {
		return target{}, err
	}
	if mr.Slug == self {
		return target{machine: mr, local: rest}, nil
	}
	t := target{account: acc, machine: mr, there: rest}
	if rec, ok := h.remotes.Record(mr.Slug, rest); ok {
		t.record = rec
		_, t.there, _ = api.SplitRemote(rec.ID)
	}
	return t, nil
}

// Resolve says what a machine/... id names for a wait (orch.Remote).
func (h *Hub) Resolve(ctx context.Context, id string) (local, record string, err error) {
	t, err := h.target(ctx, id)
	if err != nil {
		return "", "", err
	}
	return t.local, t.record.ID, nil
}

// Start starts a worker on another machine (orch.Remote): this machine
// places it in the caller's run and counts its depth, the machine there
// opens the window, types the task and answers once the turn started.
func (h *Hub) Start(ctx context.Context, s orch.RemoteStart) (*api.WorkerView, error) {
	acc, mr, err := h.machine(ctx, s.Machine)
	if err != nil {
		return nil, err
	}
	pl, err := h.remotes.Place(ctx, s.Pane, s.Name)
	if err != nil {
		return nil, err
	}
	defer pl.Release()
	req := api.PeerStart{ParentName: pl.ParentName,
		Run: pl.Run, Coordinator: pl.Coordinator, Parent: pl.Parent, Level: pl.Level, BaseDepth: pl.BaseDepth, Ref: newRef(),
		Agent: s.Agent, TaskName: baseName(s.Task), TaskText: string(s.Text), Name: s.Name, Cwd: s.Cwd,
		Worktree: s.Worktree, Owns: s.Owns, Env: simEnv(s.Env), BlockedTimeout: s.BlockedTimeout, HookTimeout: s.HookTimeout,
	}
	cctx, cancel := context.WithTimeout(ctx, StartLimit)
	defer cancel()
	var v api.WorkerView
	err = acc.Call(cctx, mr.Slug, api.PeerRouteStart, req, &v)
	if err == nil {
		err = checkView(&v)
	}
	if err != nil {
		if errors.Is(cctx.Err(), context.DeadlineExceeded) {
			err = errorf(api.KindTimeout, "look at the st-remote session on "+mr.Name+", where the window may still be",
				"the worker on %s did not start its turn within %s", mr.Name, StartLimit)
		}
		pl.Drop()
		return nil, err
	}
	out := pl.Keep(&v, mr, req.Ref, false, s.Task, s.Fan)
	h.watch(mr.Slug)
	out.Notes = v.Notes
	h.logf("worker %s (%s) of run %s started on %s for %s", out.ID, out.Name, pl.Run, mr.Name, pl.Parent)
	return out, nil
}

// simEnv is what of a start's environment travels to another machine:
// only the simulated agent's knobs. The agent there runs with that
// machine's own settings (DESIGN.md, Machines).
func simEnv(in map[string]string) map[string]string {
	env := map[string]string{}
	for k, v := range in {
		if strings.HasPrefix(k, "ST_SIM_") {
			env[k] = v
		}
	}
	return env
}

func baseName(p string) string {
	if i := strings.LastIndex(p, "/"); i >= 0 {
		return p[i+1:]
	}
	return p
}

// Op runs read, send, stop, rename or release on a worker of another
// machine (orch.Remote), and keeps this machine's record in step.
func (h *Hub) Op(ctx context.Context, op string, req api.IDRequest) (*api.WorkerView, error) {
	t, err := h.target(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	if t.local != "" {
		req.ID = t.local
		return h.local.LocalOp(ctx, op, req)
	}
	if err := h.checkOp(op, req, t.record); err != nil {
		return nil, err
	}
	var v api.WorkerView
	if err := t.account.Call(ctx, t.machine.Slug, op, api.PeerOp{ID: t.there, Text: req.Text}, &v); err != nil {
		if t.record.ID != "" && isUnreachable(err) {
			h.remotes.MarkUnreachable(t.machine.Slug, err)
		}
		return nil, err
	}
	if err := checkView(&v); err != nil {
		return nil, err
	}
	if t.record.ID == "" {
		// Not a worker of this machine's runs (the machine there may still
		// have answered, e.g. a read of a worker of another machine).
		v.ID = t.machine.Slug + "/" + v.ID
		v.Machine, v.MachineName = t.machine.Slug, t.machine.Name
		return &v, nil
	}
	return h.remotes.ApplyOp(t.record.ID, op, req.Pane, &v), nil
}

// checkOp refuses here what the machine there would refuse, or what
// would break this machine's run (two live workers of one name).
func (h *Hub) checkOp(op string, req api.IDRequest, rec orch.RemoteRecord) error {
	switch op {
	case api.PeerRouteRename:
		if err := orch.CheckName("the name", req.Text, "st worker rename w api-tests"); err != nil {
			return err
		}
		if rec.ID == "" {
			return nil
		}
		return h.remotes.CheckRename(rec.ID, req.Text)
	case api.PeerRouteSend:
		return orch.CheckLine(req.Text)
	}
	return nil
}

func isUnreachable(err error) bool {
	var e *api.Error
	return errors.As(err, &e) && e.Kind == api.KindUnreachable
}

// Adopt adopts an agent that runs on another machine (orch.Remote).
// Nothing is typed into it; a team lead keeps its run there and shows
// here as one worker.
func (h *Hub) Adopt(ctx context.Context, req api.IDRequest) (*api.WorkerView, error) {
	t, err := h.target(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	if t.local != "" {
		req.ID = t.local
		return h.local.LocalOp(ctx, api.PeerRouteAdopt, req)
	}
	if rec := t.record; rec.ID != "" && rec.Live {
		return nil, errorf(api.KindConflict, fmt.Sprintf("release it first: st worker release %s (run from %s)", rec.ID, rec.Parent),
			"refused: %s is already a worker of %s", rec.ID, rec.Parent)
	}
	pl, err := h.remotes.Place(ctx, req.Pane, "")
	if err != nil {
		return nil, err
	}
	op := api.PeerOp{ID: t.there, Run: pl.Run, Coordinator: pl.Coordinator, Parent: pl.Parent, Level: pl.Level, BaseDepth: pl.BaseDepth,
		Ref: newRef(), ParentName: pl.ParentName}
	var v api.WorkerView
	err = t.account.Call(ctx, t.machine.Slug, api.PeerRouteAdopt, op, &v)
	if err == nil {
		err = checkView(&v)
	}
	if err != nil {
		pl.Drop()
		return nil, err
	}
	out := pl.Keep(&v, t.machine, op.Ref, true, "", "")
	h.watch(t.machine.Slug)
	h.logf("adopted %s (%s) on %s into run %s under %s", out.ID, out.Name, t.machine.Name, pl.Run, pl.Parent)
	return out, nil
}

// ParentsNow asks the coordinators' machines whether the remote parents
// of live workers here are still where this machine thinks
// (orch.Remote). It sets ParentGone and ParentNow on the views.
func (h *Hub) ParentsNow(ctx context.Context, vs []api.WorkerView) {
	if h.cfg.Account == nil {
		return
	}
	asked := map[string]*api.PeerPaneResult{}
	for i := range vs {
		v := &vs[i]
		mach, pane, ok := api.SplitRemote(v.Parent)
		if !ok || !v.State.Live() || v.Remote() || api.Retired(pane) {
			continue // (a retired parent is gone, and named so: see orch's view)
		}
		res, seen := asked[v.Parent]
		if !seen {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			var r api.PeerPaneResult
			if err := h.cfg.Account.Call(cctx, mach, api.PeerRoutePane, api.IDRequest{ID: pane}, &r); err == nil {
				res = &r
			}
			cancel()
			asked[v.Parent] = res
		}
		if res != nil && ((res.Now != "" && !tmux.ValidPaneID(res.Now)) || (res.Retired != "" && !validPaneRef(res.Retired))) {
			res = nil // not what a pane id looks like: not taken
		}
		if res != nil && res.Retired != "" {
			// Gone in a tmux restart there: named by its retired id.
			v.ParentGone, v.Parent = true, mach+"/"+res.Retired
			continue
		}
		if res != nil && !res.Live {
			v.ParentGone = true
			if res.Now != "" {
				v.ParentNow = mach + "/" + res.Now
			}
		}
	}
}

// machineName is the name of machine slug as st machines shows it (the
// slug when it cannot be asked).
func (h *Hub) machineName(ctx context.Context, slug string) string {
	if h.cfg.Account == nil {
		return slug
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if mr, err := h.cfg.Account.Machine(cctx, slug); err == nil && mr.Name != "" && plain.Line(mr.Name) == nil {
		return mr.Name
	}
	return slug
}
