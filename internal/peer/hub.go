// Package peer is st's side of the account's other machines: starting,
// watching and acting on workers there for coordinators here
// (coordinator.go, watch.go), answering what they ask of this machine
// (serve.go, and the peer API's routes in routes.go, with the web UI's
// terminal of a pane here), checking whatever they send (check.go), the
// agents a person offered to them (offers.go), whether this machine
// takes workers from them (accept-remote), and how it reaches them
// (client.go, over internal/remote's mutual TLS, direct or relayed).
//
// The records stay internal/orch's: its runs hold the workers on other
// machines and the runs of their coordinators here. The two meet at
// orch.Remote (what the manager asks of the Hub) and at Local (what the
// Hub asks of the manager); neither holds a lock of its own while it
// calls the other. internal/daemon keeps the listener and the heartbeat.
package peer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sync"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/orch"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/tmux"
)

// Account reaches st on the account's other machines: Client, over
// internal/remote.
type Account interface {
	// Self is this machine's slug, or an *api.Error saying it is not
	// signed in.
	Self() (string, error)
	// Machine finds a machine of the account by name, host name or slug,
	// in any case.
	Machine(ctx context.Context, name string) (api.MachineRef, error)
	// Call runs op on machine slug's st and decodes its answer into resp.
	// A refusal there comes back as an *api.Error; a machine that cannot
	// be reached as an *api.Error of KindUnreachable.
	Call(ctx context.Context, slug, op string, req, resp any) error
}

// Local is what the Hub asks of this machine's manager (*orch.Manager)
// itself: its operations on a worker here, the facts internal/authz
// decides by, its changes and background work. Its records of work
// across machines are two owners of their own (RemoteWork, HostedRuns).
type Local interface {
	LocalOp(ctx context.Context, op string, req api.IDRequest) (*api.WorkerView, error)
	// ShowTo leaves of an answer's workers what the asker may read.
	ShowTo(answer any, may func(id string) bool) any
	// The facts of internal/authz that are the manager's.
	Owns(caller, id string) bool
	ParentOf(id string) string
	CoordinatesFor(machine, pane string) bool
	AskedGate(pane, id string) bool
	SimForAgents() bool
	// Its changes, its disk, its background work.
	Changes() (<-chan struct{}, uint64)
	Sync()
	Go(f func(ctx context.Context))
}

// RemoteWork is what the hub asks of this machine's records of its own
// workers on other machines (orch.Remotes).
type RemoteWork interface {
	Place(ctx context.Context, pane, name string) (*orch.Placement, error)
	Record(slug, rest string) (orch.RemoteRecord, bool)
	CheckRename(id, name string) error
	ApplyOp(id, op, caller string, v *api.WorkerView) *api.WorkerView
	ApplyWatch(slug string, vs []api.WorkerView, refused []string)
	MirrorAttention(slug string, items []api.Attention)
	MarkUnreachable(slug string, err error)
	Machines() []string
	HasWorkOn(slug string) bool
	DepthsOn(slug string) map[string]int
	UntoldDepths(told map[string]map[string]int) map[string]map[string]int
	Moves(slug string) []api.PeerReparent
	MoveTold(slug string, mv api.PeerReparent)
}

// HostedRuns is what the hub asks of the runs here of coordinators on
// other machines (orch.Hosted).
type HostedRuns interface {
	CheckRunID(from, run string) error
	Start(ctx context.Context, f orch.ForMachine, req api.StartRequest, home string) (*api.WorkerView, error)
	Adopt(ctx context.Context, f orch.ForMachine, pane string, take func(tmux.Pane) bool) (*api.WorkerView, error)
	Worker(id string) (pane, parent string, err error)
	Ref(pane string) string
	Workers(from string) []api.WorkerView
	Attention(from string) []api.Attention
	SetDepths(from string, depths map[string]int)
	Reparent(ctx context.Context, from, old, nw string)
	Coordinator(ctx context.Context, from, pane string) *api.PeerPaneResult
	Graph(from string) []api.GraphAgent
	AgentIn(tp tmux.Pane) (kind, workerOf string)
	Serves(machine, id string) bool
}

var (
	_ Local      = (*orch.Manager)(nil)
	_ RemoteWork = (*orch.Remotes)(nil)
	_ HostedRuns = (*orch.Hosted)(nil)
)

// Config is what a Hub needs from the daemon.
type Config struct {
	Home string       // ST_HOME
	Tmux *tmux.Client // the one server this daemon drives
	Log  io.Writer
	// Now is the clock; tests may fix it.
	Now func() time.Time
	// Account reaches the other machines (nil: none; every remote id is
	// refused as of a machine not signed in).
	Account Account
	// Retry is how often st tries again to tell an unreachable machine
	// that a coordinator moved (DefaultRetry when 0).
	Retry time.Duration
}

// Defaults of the remote side; tests shorten them.
const (
	// StartLimit is how long a start on another machine is checked for.
	StartLimit = 150 * time.Second
	// DefaultRetry is how often st tries again to tell an unreachable
	// machine that a coordinator moved.
	DefaultRetry = time.Minute
	// watchWait is how long one watch call waits for a change there.
	watchWait = 20 * time.Second
	// pollAgain is how soon a watch tries an unreachable machine again.
	pollAgain = 3 * time.Second
	// depthTellWait bounds telling a machine the chain's depth at once;
	// the watch tells it later when it cannot be reached now.
	depthTellWait = 5 * time.Second
)

// Hub is this machine's side of the account's other machines.
type Hub struct {
	cfg   Config
	local Local // set by Attach, before the hub serves anything
	// remotes and hosted are the manager's two owners of work across
	// machines (set by Attach too).
	remotes RemoteWork
	hosted  HostedRuns
	offers  *offerBook
	// boot names this life of st, since the manager's change count
	// starts again with it.
	boot string
	// acceptMu orders the writes of the accept-remote setting
	// (SetAcceptRemote), held through them with h.mu let go.
	acceptMu sync.Mutex

	// mu guards what follows. It is taken after the manager's locks
	// never: the hub calls the manager with it let go, and the manager
	// calls the hub with none of its own held.
	mu sync.Mutex
	// acceptRemote: this machine takes workers from the account's other
	// machines (st orch accept-remote).
	acceptRemote bool
	// loops are the watches of other machines, by slug.
	loops map[string]*loop
	// toldDepths is what each machine was last told of how deep the
	// coordinators of this machine's runs with workers there are.
	toldDepths map[string]map[string]int
}

var _ orch.Remote = (*Hub)(nil)

// NewHub makes the hub; Attach gives it the manager.
func NewHub(cfg Config) *Hub {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	h := &Hub{cfg: cfg, boot: newRef(), loops: map[string]*loop{}, toldDepths: map[string]map[string]int{}}
	h.offers = newOfferBook(cfg.Home, h.logf)
	h.acceptRemote = h.loadAcceptRemote()
	return h
}

// Attach gives the hub this machine's manager, and starts the watch of
// every machine it has live workers on (after a restart of st).
func (h *Hub) Attach(m *orch.Manager) {
	h.local, h.remotes, h.hosted = m, m.Remotes(), m.Hosted()
	if h.cfg.Account == nil {
		return
	}
	for _, slug := range h.remotes.Machines() {
		h.watch(slug)
	}
}

func (h *Hub) logf(format string, args ...any) {
	fmt.Fprintf(h.cfg.Log, "%s %s\n", h.cfg.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func (h *Hub) retry() time.Duration {
	if h.cfg.Retry > 0 {
		return h.cfg.Retry
	}
	return DefaultRetry
}

func errorf(kind, hint, format string, args ...any) *api.Error {
	return &api.Error{Kind: kind, Message: fmt.Sprintf(format, args...), Hint: hint}
}

func newRef() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// NotSignedIn is the refusal of what needs another machine while this
// one is not signed in to an account.
func NotSignedIn() *api.Error {
	return errorf(api.KindRemote, "st login --control-plane URL --account NAME --key KEY",
		"refused: this machine is not signed in to an account, so it cannot reach other machines")
}

// account returns the Account and this machine's slug, or the refusal
// of a machine that is not signed in.
func (h *Hub) account() (Account, string, error) {
	if h.cfg.Account == nil {
		return nil, "", NotSignedIn()
	}
	self, err := h.cfg.Account.Self()
	if err != nil {
		return nil, "", err
	}
	return h.cfg.Account, self, nil
}

// machine resolves a machine name for a remote request; naming this
// machine is refused.
func (h *Hub) machine(ctx context.Context, name string) (Account, api.MachineRef, error) {
	acc, self, err := h.account()
	if err != nil {
		return nil, api.MachineRef{}, err
	}
	mr, err := acc.Machine(ctx, name)
	if err != nil {
		return nil, api.MachineRef{}, err
	}
	if mr.Slug == self {
		return nil, mr, errorf(api.KindUsage, "leave --machine out to start the worker on this machine",
			"refused: %s is this machine", name)
	}
	return acc, mr, nil
}

func (h *Hub) acceptPath() string { return filepath.Join(h.cfg.Home, "accept-remote.json") }

func (h *Hub) loadAcceptRemote() bool {
	var v struct {
		On bool `json:"on"`
	}
	if err := store.ReadJSON(h.acceptPath(), &v); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			h.logf("accept-remote: %v (taking no workers from other machines until st orch accept-remote on)", err)
		}
		return false
	}
	return v.On
}

// AcceptRemote says whether this machine takes workers from the
// account's other machines.
func (h *Hub) AcceptRemote() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.acceptRemote
}

// SetAcceptRemote turns taking workers from other machines on or off,
// and keeps the setting across restarts.
// The file is written with h.mu let go (readers of the setting do not
// wait for the disk), under acceptMu, which orders the writes as the
// settings in memory.
func (h *Hub) SetAcceptRemote(on bool) error {
	h.acceptMu.Lock() // lockio: the setting's write lock, held through its write alone
	defer h.acceptMu.Unlock()
	if err := store.WriteJSON(h.acceptPath(), map[string]bool{"on": on}, 0o600); err != nil {
		return errorf(api.KindInternal, "free some disk space and try again", "st could not keep the setting: %v", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.acceptRemote = on
	h.logf("accept-remote %v", on)
	return nil
}
