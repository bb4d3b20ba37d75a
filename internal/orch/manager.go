package orch

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/attention"
	"github.com/sophonz/st/internal/history"
	"github.com/sophonz/st/internal/tmux"
	"github.com/sophonz/st/internal/tokens"
)

// Config is what a Manager needs from the daemon.
type Config struct {
	Home  string       // ST_HOME
	STBin string       // absolute path of st, for the windows st opens
	Tmux  *tmux.Client // the one server this daemon drives
	Log   io.Writer
	// Now is the clock; tests may fix it.
	Now func() time.Time
	// ReadWait is how long a read waits for a reporting worker's turn to
	// end (DefaultReadWait when 0).
	ReadWait time.Duration
	// OnGate is called (in the background) when a gate opens: the
	// daemon sends it to the user's push target.
	OnGate func(api.Gate)
	// OnAttention is called (in the background) when an attention item
	// opens (attention.go): the daemon pushes it, by its quiet rules. An
	// item of a prompt st can answer comes with the prompt's id
	// (Attention.Prompt), so that its one push carries the answer links.
	OnAttention func(api.Attention)
	// OnAttentionCount is called when items opened or closed: the daemon
	// shows the count on tmux's status line. It must not block.
	OnAttentionCount func()
	// Remote is the account's other machines (internal/peer's Hub; nil:
	// none, and every id of another machine is refused).
	Remote Remote
	// Events are the tmux server's events (tmux.Client.Start); nil: the
	// watcher looks at the server once a second instead.
	Events <-chan tmux.Event
	// SimForAgents: a person allowed agents to start the sim agent
	// (agents_start_sim in config.toml; internal/authz).
	SimForAgents bool
	// OnLimitMove is the agent kind that takes the task of a worker with
	// --on-limit move at its usage limit (on_limit_move in config.toml).
	OnLimitMove string
	// History holds the runs that are over, on disk (internal/history):
	// the manager puts them there at its start (shelve.go) and never loads
	// them again. Nil: every run stays in memory.
	History *history.Book
	// Prices is config.toml's price table, for the estimated cost of
	// tokens; Budget the default budget of a new run (none when zero).
	Prices tokens.Prices
	Budget tokens.Budget
	// NearLimit is the share of an agent account's usage limit (percent)
	// from which st says it is near (config.toml's [tokens] near_limit;
	// DefaultNearLimit when zero).
	NearLimit float64
}

// Manager holds every run and worker of this machine. Its state has
// owners, each with its own lock and its own methods:
//
//   - the registry (registry.go, chain.go): runs, workers, names, the
//     moves to tell other machines; its lock is m.reg.mu;
//   - paneFacts (facts.go, agentteam.go): what hooks told of each pane;
//   - gateBook (gate.go): the gates; promptBook (prompt.go): the
//     permission prompts whose hooks wait for a person (its lock alone);
//   - restorer (restorer.go): the tmux server's picture and its restore;
//   - the noticer (notice.go): the lines waiting to be typed;
//   - the attention items (attention.go): a book of their own, changed
//     by a change's effects, with no lock of the registry held;
//   - the saver (saver.go): run.json on disk; the signal (registry.go):
//     the waiters' wake-up.
//
// What internal/peer asks of work across machines is in two owner types
// over the registry, apart from the Manager's own methods: Remotes
// (remote.go: this machine's workers on other machines) and Hosted
// (hosted.go: the runs here of coordinators on other machines).
//
// The lock order: m.reg.mu first; while it is held, any one of paneFacts',
// gateBook's (its mu) and restorer's locks (never two of them at once),
// and internal/peer's offer book (Hosted.Adopt's take); the saver's and
// the signal's last, under any of these. The noticer's lock is taken
// alone: it asks the registry with it let go. The gate book's write lock
// (wmu, held through a write of gates.json) is taken with no other lock
// held, and only its mu under it: no one holding m.reg.mu waits for a
// gate's disk. The pane options' lock (m.optsMu, tellPane) comes before
// all of them: it is held through tmux commands, taken with no other lock
// held, and m.reg.mu only for moments under it. Nothing takes m.reg.mu
// while it holds another of these but m.optsMu. A function that must be called with a lock held is
// named …Locked and checks it first (internal/syncs, under -race).
//
// A change of the registry is recorded in a change (change.go), written
// once, and its effects run after it is on disk. Background work runs in
// the manager's group (group.go), which Close ends.
type Manager struct {
	cfg Config
	// reg is the registry: a named field, not an embedded one, so that
	// what is the registry's reads as such (m.reg.workers, m.reg.mu) and
	// the Manager's own methods are its whole method set.
	reg registry
	// cutAtLoad are the workers whose start an earlier st's end cut short
	// (Worker.Typing as run.json had it): set once in NewManager, read by
	// settleCutStarts.
	cutAtLoad map[*Worker]bool
	facts     *paneFacts
	// roots are the panes' first processes at the last reading of the
	// layout (paneroots.go).
	roots   atomic.Pointer[paneRoots]
	gates   *gateBook
	prompts *promptBook
	rest    *restorer
	notices *noticer
	// attn is the attention items (attention.go, internal/attention).
	attn   *attention.Book
	tokens *tokenBook
	// limits are the agents' accounts' usage limits as last said
	// (nearlimit.go).
	limits *limitBook
	// watchKick wakes the watcher early (an agent's SessionEnd).
	watchKick chan struct{}
	// waits counts the st worker wait calls waiting now (st status).
	waits atomic.Int32
	bg    *group
	// optsMu orders the settings of a worker's pane options that come
	// from the registry (an adoption's, a rename's): see tellPane.
	optsMu sync.Mutex
	// judged is the server's mark (tmux.Client.Mark) as it was when st
	// last judged every pane: while the server's mark is still that, no
	// pane came or went since, and a list need not read the panes again.
	judged atomic.Value // tmux.Mark
}

// NewManager loads the runs kept under cfg.Home and reconciles them with
// the panes that exist now.
func NewManager(ctx context.Context, cfg Config) (*Manager, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.ReadWait == 0 {
		cfg.ReadWait = DefaultReadWait
	}
	m := &Manager{cfg: cfg, watchKick: make(chan struct{}, 1), bg: newGroup()}
	m.reg = newRegistry(cfg.Home, cfg.Now, m.logf)
	m.reg.history = cfg.History
	m.reg.saver = newSaver(m.reg.runPath, m.logf)
	m.reg.saver.snap = m.reg.snapshot
	m.facts = newPaneFacts(cfg.Now, m.logf)
	m.gates = newGateBook(cfg.Home, cfg.Now, m.logf)
	m.prompts = newPromptBook(cfg.Now)
	m.rest = newRestorer(cfg.Home)
	m.notices = newNoticer(m)
	m.attn = attention.New(filepath.Join(cfg.Home, "attention.json"), cfg.Now, m.logf)
	m.attn.Load()
	m.tokens = newTokenBook(m)
	m.limits = newLimitBook()
	if !cfg.Budget.IsZero() {
		b := cfg.Budget
		m.reg.defaultBudget = &b
	}
	if err := m.reg.load(); err != nil {
		return nil, err
	}
	// The starts an earlier st left cut short, known now, before this
	// st starts any: settleCutStarts types theirs alone.
	m.cutAtLoad = map[*Worker]bool{}
	for _, w := range m.reg.workers {
		if w.Typing && !w.Remote() {
			m.cutAtLoad[w] = true
		}
	}
	m.gates.load()
	m.bg.Go(m.reg.saver.run)
	m.reconcile(ctx)
	m.settleChange(func(c *change) {
		for _, r := range m.reg.runs {
			for _, t := range r.Tasks {
				// A start cut short by a crash of st: try it again.
				if t.State == api.TaskRunning && t.Worker == "" {
					t.State = api.TaskWaiting
					c.touchLocked(r)
				}
			}
			for _, w := range r.Workers {
				// Paused before st stopped: look again at its reset.
				if w.State == api.Paused && w.Pause != nil && !w.Pause.Typed {
					c.pauses = append(c.pauses, w.ID)
				}
			}
			if p := r.CoordPause; p != nil && !p.Typed && m.coordRunLocked(r.Coordinator) == r {
				c.pauses = append(c.pauses, r.Coordinator)
			}
			c.scheduleLocked(r)
		}
	})
	m.shelve()
	return m, nil
}

func (m *Manager) logf(format string, args ...any) {
	fmt.Fprintf(m.cfg.Log, "%s %s\n", m.cfg.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// Close stops background work, writes what is not on disk yet and waits
// for every goroutine of the manager to end.
func (m *Manager) Close() {
	m.bg.stop()
}

// callerPane checks that a request came from a pane of this server.
func (m *Manager) callerPane(ctx context.Context, pane string) (tmux.Pane, error) {
	if pane == "" {
		return tmux.Pane{}, errorf(api.KindUsage, "run it in a pane of the tmux server st drives", "this command acts for a tmux pane, and none was given ($TMUX_PANE is empty)")
	}
	p, err := m.cfg.Tmux.Pane(ctx, pane)
	if err != nil {
		return tmux.Pane{}, errorf(api.KindNotFound, "run it from a pane of the tmux server on "+m.cfg.Tmux.Socket(),
			"pane %s is not on st's tmux server (%s): %v", pane, m.cfg.Tmux.Socket(), err)
	}
	return p, nil
}

func errorf(kind, hint, format string, args ...any) *api.Error {
	return &api.Error{Kind: kind, Message: fmt.Sprintf(format, args...), Hint: hint}
}
