package peer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/syncs"
	"github.com/sophonz/st/internal/tmux"
)

// Another machine may adopt an agent here only when a person here offered
// it to that machine: with accept-remote on, a machine of the account
// could otherwise take any pane that runs an agent (the user's own
// coordinator included) and type into it.
//
// Offers live in st's own state, $ST_HOME/offers.json, made only by a
// person's st worker offer (the socket refuses it from an agent), never on
// the pane: a pane option (the @st_offer of earlier versions) is set by
// any process that reaches the tmux socket, so it cannot be the
// authority. Each offer names its pane by id and by the pid of the pane's
// first process, so it goes when its pane closes, and a pane that comes
// later with the same id (after a tmux restart) was offered to no one.
// An adoption uses it up.

// offer is one agent offered to a machine.
type offer struct {
	Machine string    `json:"machine"` // the slug it is offered to
	PID     int       `json:"pid"`     // the pane's first process when offered
	At      time.Time `json:"at"`
}

// offerBook holds the offers. Its lock (mu) is the last one taken:
// nothing is called while it is held, and it is never held through a
// write of offers.json, since the registry's lock may be held when it is
// taken (take, in Hosted.Adopt). wmu is held through each write, taken
// with no other lock held, and mu only for moments under it.
type offerBook struct {
	wmu    sync.Mutex
	mu     sync.Mutex
	path   string
	offers map[string]offer // by pane id
	// dirty: the offers changed in memory (take, prune) since the last
	// write; flush writes them.
	dirty bool
	logf  func(string, ...any)
}

func newOfferBook(home string, logf func(string, ...any)) *offerBook {
	b := &offerBook{path: filepath.Join(home, "offers.json"), offers: map[string]offer{}, logf: logf}
	if err := store.ReadJSON(b.path, &b.offers); err != nil && !errors.Is(err, fs.ErrNotExist) {
		logf("offers: %v (no agent is offered to another machine until a person offers it again)", err)
		b.offers = map[string]offer{}
	}
	if b.offers == nil {
		b.offers = map[string]offer{}
	}
	return b
}

// snapshotLocked is the offers as they are, to write with mu let go.
func (b *offerBook) snapshotLocked() map[string]offer {
	syncs.AssertLocked(&b.mu)
	c := make(map[string]offer, len(b.offers))
	for k, o := range b.offers {
		c[k] = o
	}
	b.dirty = false
	return c
}

// writeUnheld writes snap to offers.json, with only wmu held.
func (b *offerBook) writeUnheld(snap map[string]offer) error {
	if err := store.WriteJSON(b.path, snap, 0o600); err != nil {
		return errorf(api.KindInternal, "free some disk space and try again", "st could not keep the offer: %v", err)
	}
	return nil
}

// flush writes the offers changed in memory (take, prune), with no
// other lock held. A write that fails is logged and tried again at the
// next flush.
func (b *offerBook) flush() {
	b.wmu.Lock() // lockio: the offers' write lock, held through its write alone
	defer b.wmu.Unlock()
	b.mu.Lock()
	if !b.dirty {
		b.mu.Unlock()
		return
	}
	snap := b.snapshotLocked()
	b.mu.Unlock()
	if err := b.writeUnheld(snap); err != nil {
		b.logf("offers: %v", err)
		b.mu.Lock()
		b.dirty = true
		b.mu.Unlock()
	}
}

// to says which machine pane p (whose first process is pid) is offered
// to ("" for none).
func (b *offerBook) to(pane string, pid int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if o, ok := b.offers[pane]; ok && o.PID == pid && pid > 0 {
		return o.Machine
	}
	return ""
}

// take uses up the offer of pane to machine, and says whether there was one.
func (b *offerBook) take(pane string, pid int, machine string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.offers[pane]
	if !ok || o.PID != pid || pid <= 0 || o.Machine != machine {
		return false
	}
	// Used up in memory at once (the registry's lock may be held here);
	// the caller writes it with flush once every lock is let go.
	delete(b.offers, pane)
	b.dirty = true
	return true
}

// set offers pane to machine ("" withdraws it), on disk or not at all:
// the change is made under mu, written with only wmu held, and undone
// when the write failed.
func (b *offerBook) set(pane string, pid int, machine string, now time.Time) error {
	b.wmu.Lock() // lockio: the offers' write lock, held through its write alone
	defer b.wmu.Unlock()
	b.mu.Lock()
	old, had := b.offers[pane]
	if machine == "" && !had {
		b.mu.Unlock()
		return nil
	}
	if machine == "" {
		delete(b.offers, pane)
	} else {
		b.offers[pane] = offer{Machine: machine, PID: pid, At: now}
	}
	snap := b.snapshotLocked()
	b.mu.Unlock()
	err := b.writeUnheld(snap)
	if err != nil {
		b.mu.Lock()
		if had {
			b.offers[pane] = old
		} else {
			delete(b.offers, pane)
		}
		b.mu.Unlock()
	}
	return err
}

// prune drops the offers of panes that are gone (live: the panes listed
// at the time listed, with their first processes' pids; 0 when not
// known). An offer made after the listing is left to the next one.
func (b *offerBook) prune(live map[string]int, listed time.Time) {
	b.mu.Lock()
	changed := false
	for pane, o := range b.offers {
		if o.At.After(listed) {
			continue
		}
		pid, ok := live[pane]
		if !ok || (pid > 0 && pid != o.PID) {
			delete(b.offers, pane)
			changed = true
			b.logf("offer of %s to %s gone with its pane", pane, o.Machine)
		}
	}
	b.dirty = b.dirty || changed
	b.mu.Unlock()
	if changed {
		b.flush()
	}
}

// Offer lets machine req.Machine adopt the agent in pane req.ID (st
// worker adopt M/%N there), or withdraws an offer. The socket takes an
// offer only from a person (internal/authz).
func (h *Hub) Offer(ctx context.Context, req api.OfferRequest) (*api.OfferView, error) {
	if !tmux.ValidPaneID(req.ID) {
		return nil, errorf(api.KindUsage, "name the agent by its pane id (st ls shows them), e.g. st worker offer %7 --machine ci-mac",
			"%q is not a pane id", req.ID)
	}
	tp, err := h.cfg.Tmux.Pane(ctx, req.ID)
	if err != nil {
		return nil, errorf(api.KindNotFound, "st ls shows the panes and their agents", "there is no pane %s: %v", req.ID, err)
	}
	if req.Withdraw {
		if err := h.offers.set(tp.ID, tp.PID, "", h.cfg.Now()); err != nil {
			return nil, err
		}
		h.logf("offer of %s withdrawn", tp.ID)
		return &api.OfferView{Pane: tp.ID, Withdrawn: true}, nil
	}
	if req.Machine == "" {
		return nil, errorf(api.KindUsage, "st worker offer %7 --machine NAME (st machines lists them)", "say which machine may adopt it")
	}
	_, mr, err := h.machine(ctx, req.Machine)
	if err != nil {
		return nil, err
	}
	kind, workerOf := h.hosted.AgentIn(tp)
	if kind == "" {
		return nil, errorf(api.KindNotFound, "start an agent there first, and check st hooks status",
			"st has seen no agent in %s (no hook came from it, and it runs %q)", tp.ID, tp.Command)
	}
	if workerOf != "" {
		return nil, errorf(api.KindConflict, fmt.Sprintf("release it first: st worker release %s (run from %s)", tp.ID, workerOf),
			"refused: %s is already a worker of %s", tp.ID, workerOf)
	}
	if tp.PID <= 0 {
		return nil, errorf(api.KindInternal, "try again", "tmux did not say which process runs in %s", tp.ID)
	}
	if err := h.offers.set(tp.ID, tp.PID, mr.Slug, h.cfg.Now()); err != nil {
		return nil, err
	}
	h.logf("%s (%s) offered to machine %s", tp.ID, kind, mr.Slug)
	return &api.OfferView{Pane: tp.ID, Agent: kind, Machine: mr.Slug, MachineName: mr.Name}, nil
}

// offeredTo says which machine the agent in pane was offered to ("" for
// none, or when the pane is gone or another process's now).
func (h *Hub) offeredTo(ctx context.Context, pane string) string {
	tp, err := h.cfg.Tmux.Pane(ctx, pane)
	if err != nil {
		return ""
	}
	return h.offers.to(tp.ID, tp.PID)
}

// PanesListed drops the offers of panes that are gone (orch.Remote): an
// offer goes with its pane.
func (h *Hub) PanesListed(pids map[string]int, listed time.Time) { h.offers.prune(pids, listed) }
