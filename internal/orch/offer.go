package orch

import (
	"context"
	"fmt"

	"github.com/sophonz/st/internal/tmux"
)

// Another machine may adopt an agent here only when a person here offered
// it to that machine: with accept-remote on, a machine of the account
// could otherwise take any pane that runs an agent (the user's own
// coordinator included) and type into it. The offer lives on the pane as
// the option @st_offer=<slug>, so it survives a restart of st and goes
// when the pane closes; an adoption uses it up.

// offerOption is the pane option that holds an offer.
const offerOption = "@st_offer"

// Offer lets machine req.Machine adopt the agent in pane req.ID (st
// worker adopt M/%N there), or withdraws an offer. The daemon refuses it
// from an agent's pane: only a person hands an agent over.
func (m *Manager) Offer(ctx context.Context, req OfferRequest) (*OfferView, error) {
	if !tmux.ValidPaneID(req.ID) {
		return nil, errorf(KindUsage, "name the agent by its pane id (st ls shows them), e.g. st worker offer %7 --machine ci-mac",
			"%q is not a pane id", req.ID)
	}
	tp, err := m.cfg.Tmux.Pane(ctx, req.ID)
	if err != nil {
		return nil, errorf(KindNotFound, "st ls shows the panes and their agents", "there is no pane %s: %v", req.ID, err)
	}
	if req.Withdraw {
		if err := m.cfg.Tmux.UnsetOption(ctx, tp.ID, offerOption); err != nil {
			return nil, errorf(KindInternal, "", "%v", err)
		}
		m.logf("offer of %s withdrawn", tp.ID)
		return &OfferView{Pane: tp.ID, Withdrawn: true}, nil
	}
	if req.Machine == "" {
		return nil, errorf(KindUsage, "st worker offer %7 --machine NAME (st machines lists them)", "say which machine may adopt it")
	}
	_, mr, err := m.machine(ctx, req.Machine)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	kind := m.agentKind(tp)
	w := m.workers[tp.ID]
	m.mu.Unlock()
	if kind == "" {
		return nil, errorf(KindNotFound, "start an agent there first, and check st hooks status",
			"st has seen no agent in %s (no hook came from it, and it runs %q)", tp.ID, tp.Command)
	}
	if w != nil && w.State.Live() {
		return nil, errorf(KindConflict, fmt.Sprintf("release it first: st worker release %s (run from %s)", tp.ID, w.Parent),
			"refused: %s is already a worker of %s", tp.ID, w.Parent)
	}
	if err := m.cfg.Tmux.SetOption(ctx, tp.ID, offerOption, mr.Slug); err != nil {
		return nil, errorf(KindInternal, "", "%v", err)
	}
	m.logf("%s (%s) offered to machine %s", tp.ID, kind, mr.Slug)
	return &OfferView{Pane: tp.ID, Agent: kind, Machine: mr.Slug, MachineName: mr.Name}, nil
}

// offeredTo says which machine the agent in pane was offered to ("" for none).
func (m *Manager) offeredTo(ctx context.Context, pane string) string {
	v, err := m.cfg.Tmux.Option(ctx, pane, offerOption)
	if err != nil {
		return ""
	}
	return v
}
