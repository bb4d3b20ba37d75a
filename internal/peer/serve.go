package peer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/orch"
	"github.com/sophonz/st/internal/plain"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/tmux"
)

// The worker's side of workers on other machines: what this machine's
// st does when another machine of the account (from, its slug, proven by
// its certificate) asks, through the peer API (routes.go), once
// internal/authz said it may. What it sent is checked here (check.go)
// before the manager is asked; the manager keeps the worker as an
// ordinary one, in a run whose coordinator is on the other machine
// (orch's hosted.go), so its window, hooks, questions and report stay
// here.

// forMachine is the placement f of a start or adoption from machine from.
func (h *Hub) forMachine(ctx context.Context, from string, run, coordinator, parent, ref, parentName string, level, base int) orch.ForMachine {
	self := ""
	if h.cfg.Account != nil {
		self, _ = h.cfg.Account.Self()
	}
	return orch.ForMachine{From: from, FromName: h.machineName(ctx, from), Self: self, Run: run, Coordinator: coordinator,
		Parent: parent, Level: level, BaseDepth: base, Ref: ref, ParentName: parentName}
}

// startFor starts a worker for a coordinator on machine from: a new
// window of the st-remote session, in this machine's home folder or the
// folder asked for, with this machine's own agent settings. Every check
// of what it sent comes before the task is written, and a start that
// fails leaves no task file behind.
func (h *Hub) startFor(ctx context.Context, from string, req api.PeerStart) (*api.WorkerView, error) {
	if h.cfg.Home != "" {
		// This machine decides which kinds exist here: those its
		// config.toml describes now, as a start from this machine reads.
		agent.LoadDescribed(h.cfg.Home)
	}
	if err := checkStart(from, &req); err != nil {
		return nil, err
	}
	if err := orch.CheckDepthFor(req.Level, req.BaseDepth, 0, from); err != nil {
		return nil, err
	}
	if err := h.hosted.CheckRunID(from, req.Run); err != nil {
		return nil, err
	}
	home, _ := os.UserHomeDir()
	cwd := req.Cwd
	if cwd == "" {
		cwd = home
	}
	// The task travels as text and is kept here, where the agent reads it.
	name := req.Name
	if name == "" {
		name = orch.NameFromTask(req.TaskName)
	}
	task := filepath.Join(h.cfg.Home, "remote-tasks", req.Run, name+"-"+newRef()[:6]+".md")
	if err := store.WriteFile(task, []byte(req.TaskText), 0o600); err != nil {
		return nil, errorf(api.KindInternal, "free some disk space on "+from, "could not keep the task: %v", err)
	}
	env := map[string]string{}
	for k, v := range req.Env {
		if strings.HasPrefix(k, "ST_SIM_") {
			env[k] = v
		}
	}
	f := h.forMachine(ctx, from, req.Run, req.Coordinator, req.Parent, req.Ref, req.ParentName, req.Level, req.BaseDepth)
	v, err := h.hosted.Start(ctx, f, api.StartRequest{
		Agent: req.Agent, Task: task, Name: name, Cwd: cwd, Env: env, Owns: req.Owns, Worktree: req.Worktree,
		BlockedTimeout: req.BlockedTimeout, HookTimeout: req.HookTimeout,
	}, home)
	if err != nil {
		os.Remove(task)
		os.Remove(filepath.Dir(task)) // only when empty
	}
	return v, err
}

// opFor runs read, send, stop, rename or release for machine from on
// one of its workers here (internal/authz said it is from's, and, but for
// a read, that this machine takes workers).
func (h *Hub) opFor(ctx context.Context, from, op string, req api.PeerOp) (*api.WorkerView, error) {
	if err := checkID(from, req.ID); err != nil {
		return nil, err
	}
	id, parent, err := h.hosted.Worker(req.ID)
	if err != nil {
		return nil, err
	}
	switch op {
	case api.PeerRouteRead, api.PeerRouteSend, api.PeerRouteStop, api.PeerRouteRename, api.PeerRouteRelease:
	default:
		return nil, errorf(api.KindUsage, "", "unknown operation %q", op)
	}
	v, err := h.local.LocalOp(ctx, op, api.IDRequest{Pane: parent, ID: id, Text: req.Text})
	if err != nil {
		return nil, err
	}
	if ref := h.hosted.Ref(v.ID); ref != "" {
		v.Ref = ref
	}
	return v, nil
}

// adoptFor makes an agent here the worker of a coordinator on machine
// from, using up the offer a person here made (internal/authz said there
// is one). Nothing is typed into it. A lead of workers of its own keeps
// its run here and is one worker there.
func (h *Hub) adoptFor(ctx context.Context, from string, req api.PeerOp) (*api.WorkerView, error) {
	if err := checkPlacement(from, req.Run, req.Coordinator, req.Parent, req.Ref, req.Level, req.BaseDepth); err != nil {
		return nil, err
	}
	if plain.Line(req.ParentName) != nil || len(req.ParentName) > 80 {
		return nil, peerRefused(from, "a coordinator name with control characters")
	}
	if !tmux.ValidPaneID(req.ID) {
		return nil, errorf(api.KindUsage, "name the agent there by its pane id, e.g. "+from+"/%7", "refused: %q is not a pane id of this machine", plain.Clean(req.ID))
	}
	f := h.forMachine(ctx, from, req.Run, req.Coordinator, req.Parent, req.Ref, req.ParentName, req.Level, req.BaseDepth)
	// The offer is used up under the manager's lock: one adoption per offer.
	v, err := h.hosted.Adopt(ctx, f, req.ID, func(tp tmux.Pane) bool { return h.offers.take(tp.ID, tp.PID, from) })
	h.offers.flush() // the offer used up, written with no lock held (take runs under the registry's)
	return v, err
}

// watchFor answers machine from with its workers here once anything
// changed after req.Since, or when req.Wait passes.
func (h *Hub) watchFor(ctx context.Context, from string, req api.PeerWatchRequest) (*api.PeerWatchResult, error) {
	if len(req.Depths) > 0 {
		h.hosted.SetDepths(from, req.Depths)
	}
	wait := req.Wait
	if wait <= 0 || wait > time.Minute {
		wait = watchWait
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	// A watcher that saw an earlier life of this st (another boot) is
	// answered at once: its count means nothing here.
	ch, seq := h.local.Changes()
	for waiting := req.Boot == h.boot && req.Since != 0; waiting && seq <= req.Since; ch, seq = h.local.Changes() {
		select {
		case <-ch:
		case <-t.C:
			waiting = false
		case <-ctx.Done():
			waiting = false
		}
	}
	return &api.PeerWatchResult{Seq: seq, Boot: h.boot, Workers: h.hosted.Workers(from), Attention: h.hosted.Attention(from)}, nil
}

// reparentFor moves the workers of machine from's coordinator pane old
// to its new pane. Nothing is typed to their agents.
func (h *Hub) reparentFor(ctx context.Context, from string, req api.PeerReparent) (*struct{}, error) {
	// New may be a retired id: the coordinator did not come back after a
	// tmux restart there, and its old id may be another pane's now.
	if !tmux.ValidPaneID(req.Old) || !validPaneRef(req.New) {
		return nil, peerRefused(from, "a move that does not name two pane ids")
	}
	h.hosted.Reparent(ctx, from, req.Old, req.New)
	return &struct{}{}, nil
}

// paneFor says whether a pane here lives, or where its agent went after
// a tmux restart, for a machine whose workers have it as coordinator
// (internal/authz said so: CoordinatesFor).
func (h *Hub) paneFor(ctx context.Context, from string, req api.IDRequest) (*api.PeerPaneResult, error) {
	if !tmux.ValidPaneID(req.ID) {
		return nil, peerRefused(from, "a pane id that is not one")
	}
	return h.hosted.Coordinator(ctx, from, req.ID), nil
}

// graphFor is what machine from sees of this machine's agents (the
// manager's Hosted.Graph), named as this machine's web UI names them: a
// coordinator by its window.
func (h *Hub) graphFor(ctx context.Context, from string, _ struct{}) ([]api.GraphAgent, error) {
	g := h.hosted.Graph(from)
	if panes, err := h.cfg.Tmux.ListPanes(ctx); err == nil {
		win := map[string]string{}
		for _, tp := range panes {
			win[tp.ID] = tp.WindowName
		}
		for i := range g {
			if g[i].Name == "" {
				g[i].Name = win[g[i].Pane]
			}
		}
	}
	return g, nil
}
