package peer

import (
	"context"
	"time"

	"github.com/sophonz/st/internal/authz"
	"github.com/sophonz/st/internal/tmux"
)

// The facts internal/authz decides by, for every surface (the socket,
// the peer API, the web UI): the manager's (who owns a worker, whose
// coordinator a pane is) and the hub's own (whether this machine takes
// workers, what a person offered to which machine). Deciding is authz's;
// these only say what st's state holds.

var _ authz.Facts = (*Hub)(nil)

// SimForAgents: a person allowed agents to start the sim agent.
func (h *Hub) SimForAgents() bool { return h.local.SimForAgents() }

// Owns reports whether id (as the pane caller names it) is a worker of
// caller, or under one of its workers.
func (h *Hub) Owns(caller, id string) bool { return h.local.Owns(caller, id) }

// ParentOf is the parent of the live worker id here ("" for none).
func (h *Hub) ParentOf(id string) string { return h.local.ParentOf(id) }

// CoordinatesFor reports whether pane here is (or was, before a tmux
// restart moved it) the coordinator of machine's workers here.
func (h *Hub) CoordinatesFor(machine, pane string) bool { return h.local.CoordinatesFor(machine, pane) }

// AskedGate reports whether the gate id was asked from pane here.
func (h *Hub) AskedGate(pane, id string) bool { return h.local.AskedGate(pane, id) }

// HandedTo says what the pane or worker id here is to machine: a worker
// of one of its coordinators, an agent a person here offered to it (the
// offer's pane still the same process), or nothing.
func (h *Hub) HandedTo(machine, id string) authz.Handed {
	if machine == "" || id == "" {
		return authz.NotHanded
	}
	if h.hosted.Serves(machine, id) {
		return authz.ItsWorker
	}
	if !tmux.ValidPaneID(id) {
		return authz.NotHanded
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if h.offeredTo(ctx, id) == machine {
		return authz.Offered
	}
	return authz.NotHanded
}
