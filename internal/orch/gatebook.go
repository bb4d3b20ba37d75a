package orch

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/syncs"
)

// gateBook keeps the gates: questions only a person answers, asked by
// agents (st gate ask), with their answers, in gates.json.
//
// It has two locks, so that no one waits for its disk while holding the
// registry's lock (issue 36 item 1):
//
//   - mu guards the gates in memory and is held only for moments, never
//     through a write: the registry's lock may be held when it is taken
//     (a gate moves its asker's state; AskGate reads its gate back under
//     m.reg.mu), never the other way;
//   - wmu is held through each write of gates.json, and is taken with no
//     other lock held (mu is taken under it, for moments). So a change
//     made under m.reg.mu never waits for a gate's write: one that must
//     write the gates (a budget's gate) adds its gate in memory and writes
//     it once the registry's lock is let go (change.gates).
//
// A change that is undone when gates.json cannot keep it (a new gate, an
// answer, a withdrawal, answer tokens: keepGate) is staged under mu,
// written with mu let go, and undone under mu when the write failed.
// Writes of such changes are one at a time (wmu), so the only change in
// flight is the one whose write is under way, and until that write holds
// the readers (get, list, byToken) see its gate as it was before: nothing
// acts on an answer that could still be undone.
type gateBook struct {
	path string
	now  func() time.Time
	logf func(format string, args ...any)

	// wmu is held through a write of gates.json. write is store.WriteJSON
	// (a test's slow or broken disk instead, swapped under wmu).
	wmu   sync.Mutex
	write func(path string, v any, mode os.FileMode) error

	mu    sync.Mutex
	gates map[string]*api.Gate
	// flying is the id of the gate whose change is being written, and
	// before that gate as it was (nil for a new one): what readers see of
	// it until the write holds.
	flying string
	before *api.Gate
}

func newGateBook(home string, now func() time.Time, logf func(string, ...any)) *gateBook {
	return &gateBook{path: filepath.Join(home, "gates.json"), now: now, logf: logf, write: store.WriteJSON, gates: map[string]*api.Gate{}}
}

// load reads gates.json. A file that does not decode is copied aside and
// left out.
func (b *gateBook) load() {
	var gs []*api.Gate
	if _, kept, err := store.ReadJSONOrSetAside(b.path, &gs); err != nil {
		b.logf("skipping the gates: %v (a copy is kept at %s)", err, kept)
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, g := range gs {
		b.gates[g.ID] = g
	}
}

// snapshotLocked is every gate as it is in memory, oldest first: copies,
// so that the write encodes them with mu let go. (A gate's Options and
// Deadline are never changed in place, and its AnswerKeys are replaced,
// not changed, by mint.)
func (b *gateBook) snapshotLocked() []api.Gate {
	syncs.AssertLocked(&b.mu)
	gs := make([]api.Gate, 0, len(b.gates))
	for _, g := range b.gates {
		gs = append(gs, *g)
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].Asked.Before(gs[j].Asked) })
	return gs
}

// writeUnheld writes snap to gates.json; only wmu is held.
func (b *gateBook) writeUnheld(snap []api.Gate) error {
	if err := b.write(b.path, snap, 0o600); err != nil {
		return errorf(api.KindInternal, "free some disk space and try again", "st could not keep the gates: %v", err)
	}
	return nil
}

// save writes every gate as it is in memory: the changes that stand
// whatever the disk says (a restart's renames, a timeout, a budget's
// gate) once the registry's lock is let go. A failure leaves them in
// memory, and the next write of the gates carries them.
func (b *gateBook) save() error {
	b.wmu.Lock() // lockio: the gates' write lock, held through its write alone
	defer b.wmu.Unlock()
	b.mu.Lock()
	snap := b.snapshotLocked()
	b.mu.Unlock()
	return b.writeUnheld(snap)
}

// keepGate changes gate id, and writes gates.json with mu let go, or
// changes nothing. Under mu, f gets the gate as it is (nil for none) and
// refuses with an error, having changed nothing, or returns the gate as
// it is to be: a new one, or cur changed in place. A write that fails
// puts the gate back as it was (a new one is taken out), but for its
// pane, which a restart of the tmux server may have renamed meanwhile
// (retire).
func (b *gateBook) keepGate(id string, f func(cur *api.Gate) (*api.Gate, error)) (api.Gate, error) {
	b.wmu.Lock() // lockio: the gates' write lock, held through its write alone
	defer b.wmu.Unlock()
	b.mu.Lock()
	cur := b.gates[id]
	var before *api.Gate
	if cur != nil {
		c := *cur
		before = &c
	}
	g, err := f(cur)
	if err != nil {
		b.mu.Unlock()
		return api.Gate{}, err
	}
	b.gates[id] = g
	b.flying, b.before = id, before
	snap := b.snapshotLocked()
	b.mu.Unlock()
	werr := b.writeUnheld(snap)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flying, b.before = "", nil
	if werr != nil {
		if before == nil {
			delete(b.gates, id)
		} else {
			pane := g.Pane
			*g = *before
			g.Pane = pane
		}
		return api.Gate{}, werr
	}
	return publicGate(g), nil
}

// shownLocked is gate id as readers see it: as it was before the change
// being written, while that write is under way.
func (b *gateBook) shownLocked(id string) *api.Gate {
	syncs.AssertLocked(&b.mu)
	if id != "" && id == b.flying {
		return b.before
	}
	return b.gates[id]
}

// open keeps the new gate g on disk, or not at all.
func (b *gateBook) open(g *api.Gate) error {
	_, err := b.keepGate(g.ID, func(cur *api.Gate) (*api.Gate, error) {
		if cur != nil {
			return nil, errorf(api.KindConflict, "", "there is a gate %s already", g.ID)
		}
		return g, nil
	})
	return err
}

// add puts the new gate g in memory only, for a change made under the
// registry's lock (a budget's gate): it stands whatever the disk says,
// and the caller writes it (save) once that lock is let go.
func (b *gateBook) add(g *api.Gate) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gates[g.ID] = g
}

// get is the gate id as people see it, if there is one.
func (b *gateBook) get(id string) (api.Gate, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	g := b.shownLocked(id)
	if g == nil {
		return api.Gate{}, false
	}
	return publicGate(g), true
}

// retire renames the askers' panes after a restart of the tmux server,
// in memory: it is called under the registry's lock (the gates move with
// the workers, in one step), and the caller writes gates.json after it
// has let that lock go (save).
func (b *gateBook) retire(follow func(string) (string, bool)) (renamed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, g := range b.gates {
		if n, ok := follow(g.Pane); ok && n != g.Pane {
			g.Pane, renamed = n, true
		}
	}
	return renamed
}

// expire closes the gates whose deadline passed, in memory (a deadline
// stands whatever the disk says: one that is lost is passed again at the
// next start), writes them, and says which.
func (b *gateBook) expire() []string {
	b.mu.Lock()
	now := b.now()
	var closed []string
	for _, g := range b.gates {
		if g.State == api.GateOpen && g.Deadline != nil && now.After(*g.Deadline) {
			g.State = api.GateTimedOut
			closed = append(closed, g.ID)
		}
	}
	b.mu.Unlock()
	if len(closed) > 0 {
		if err := b.save(); err != nil {
			b.logf("gates timed out: %v (the next write of the gates carries them)", err)
		}
	}
	return closed
}

// answer records the first answer of an open gate (answerLocked).
func (b *gateBook) answer(req api.GateRequest, valued string) (api.Gate, error) {
	return b.keepGate(req.ID, func(g *api.Gate) (*api.Gate, error) {
		return g, b.answerLocked(g, req, valued)
	})
}

// answerLocked records in g the first answer of an open gate: one of its
// options, or valued, its value option with an amount st checked
// (valueAnswer), when it has one.
func (b *gateBook) answerLocked(g *api.Gate, req api.GateRequest, valued string) error {
	syncs.AssertLocked(&b.mu)
	if g == nil {
		return errorf(api.KindNotFound, "st gate list shows the gates", "there is no gate %q", req.ID)
	}
	if err := closedGate(g); err != nil {
		return err
	}
	var pick string
	for _, o := range g.Options {
		if strings.EqualFold(o, strings.TrimSpace(req.Option)) {
			pick = o
		}
	}
	if pick == "" && valued != "" && g.Value != nil && strings.HasPrefix(valued, g.Value.Prefix) {
		pick = valued
	}
	if pick == "" {
		hint := "answer with one of: " + strings.Join(g.Options, ", ")
		if g.Value != nil {
			hint += "; or set the amount: st gate answer " + g.ID + " --value AMOUNT (" + g.Value.Hint + ")"
		}
		return errorf(api.KindUsage, hint, "%q is not an option of gate %s", req.Option, g.ID)
	}
	now := b.now()
	g.State, g.Answer, g.AnsweredAt, g.AnsweredBy = api.GateAnswered, pick, &now, orDefaultStr(req.By, "cli")
	g.AnswerKeys = nil // the push's other tokens answer nothing now
	return nil
}

// withdraw closes the open gate id as withdrawn, if it is still open.
func (b *gateBook) withdraw(id string) (api.Gate, error) {
	return b.keepGate(id, func(g *api.Gate) (*api.Gate, error) {
		if g == nil {
			return nil, errorf(api.KindNotFound, "st gate list shows the gates", "there is no gate %q", id)
		}
		if err := closedGate(g); err != nil {
			return nil, err
		}
		now := b.now()
		g.State, g.AnsweredAt, g.AnswerKeys = api.GateWithdrawn, &now, nil
		return g, nil
	})
}

// mint is MintAnswerTokens: the tokens answer only once they are on disk.
func (b *gateBook) mint(id string) (map[string]string, error) {
	out := map[string]string{}
	_, err := b.keepGate(id, func(g *api.Gate) (*api.Gate, error) {
		if g == nil || g.State != api.GateOpen {
			return nil, errorf(api.KindNotFound, "", "gate %s is not open", id)
		}
		// A new map, not the old one changed: the gate as it was (keepGate's
		// before, and a snapshot being encoded) keeps its own.
		keys := make(map[string]string, len(g.AnswerKeys)+len(g.Options))
		for k, o := range g.AnswerKeys {
			keys[k] = o
		}
		for _, o := range g.Options {
			raw := make([]byte, 32)
			if _, err := rand.Read(raw); err != nil {
				return nil, err
			}
			tok := hex.EncodeToString(raw)
			out[o] = tok
			keys[answerKey(tok)] = o
		}
		g.AnswerKeys = keys
		return g, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// byToken is the open gate and option an answer token's key answers.
func (b *gateBook) byToken(key string) (id, option string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for gid := range b.gates {
		g := b.shownLocked(gid)
		if g == nil {
			continue
		}
		if o, ok := g.AnswerKeys[key]; ok && g.State == api.GateOpen {
			id, option = g.ID, o
		}
	}
	return id, option
}

// list is the gates (all, or the open ones), open ones first.
func (b *gateBook) list(all bool) []api.Gate {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []api.Gate
	for id := range b.gates {
		g := b.shownLocked(id)
		if g != nil && (all || g.State == api.GateOpen) {
			out = append(out, publicGate(g))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if (out[i].State == api.GateOpen) != (out[j].State == api.GateOpen) {
			return out[i].State == api.GateOpen
		}
		return out[i].Asked.Before(out[j].Asked)
	})
	return out
}
