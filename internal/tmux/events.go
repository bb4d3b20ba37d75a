package tmux

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// st follows its tmux server by events, not by polls:
//
//   - A control-mode client (control.go) carries st's own commands and
//     says %exit the moment the server goes.
//   - tmux's own hooks report every change to panes, windows and sessions,
//     in any session: st sets global hooks (pane-exited, after-new-window,
//     session-closed, ...) at one index of their arrays, each running
//     "wait-for -S st-events", a tmux command that costs no process. A
//     `tmux wait-for st-events` of st's returns at the signal (tmux keeps
//     a signal that nobody waited for, so none is lost; several are one).
//
// Control mode's own notifications were measured and left aside for
// changes: they name only the attached session's windows and panes (a
// pane that exits in another session is not told), and its format
// subscriptions are checked once a second. The hooks reach everything,
// within a millisecond.

// EventKind is what happened to the server.
type EventKind int

const (
	// Changed: a pane, window or session came, went or changed; read the
	// server again.
	Changed EventKind = iota
	// ServerGone: the server exited (or its socket is gone).
	ServerGone
	// ServerUp: st reached a running server (after it started, or after
	// one was gone).
	ServerUp
)

func (k EventKind) String() string {
	switch k {
	case Changed:
		return "changed"
	case ServerGone:
		return "server-gone"
	case ServerUp:
		return "server-up"
	}
	return "?"
}

// Event is one thing that happened to the server.
type Event struct {
	Kind EventKind
	At   time.Time
}

// eventChannel is the tmux wait-for channel st's hooks signal.
const eventChannel = "st-events"

// hookCommand is what each of st's hooks runs: it counts the change in
// the server's option @st_events, then signals st. Both run in the
// server before the command that made the change returns to its client,
// so a count read after it (Mark) has the change in it.
var hookCommand = `set-option -gF ` + eventCount + ` "#{e|+:#{` + eventCount + `},1}" ; wait-for -S ` + eventChannel

// eventCount is the server option that counts the changes st's hooks saw.
const eventCount = "@st_events"

// hookIndex is st's slot in the hooks' arrays, so that a user's own hooks
// at other indexes stay as they are.
const hookIndex = "91"

// hookNames are the tmux hooks that report a change st must hear of.
// (tmux 3.3a has no after-respawn-pane, though it has after- hooks for
// many commands: set, it was refused, unseen, until TestMarkMoves
// looked. A respawned pane keeps its id and options, so st's judgement
// of it does not change; the restore that respawns panes follows them
// itself.)
var hookNames = []string{
	"pane-exited", "pane-died", "after-kill-pane", "after-new-window", "after-split-window",
	"after-new-session", "session-closed", "window-linked", "window-unlinked",
	"after-rename-window", "after-rename-session",
}

// channel is the supervised control client and event watcher of a Client.
type channel struct {
	c      *Client
	events chan Event

	mu  sync.Mutex
	ctl *control
	up  bool // the server answered at the last look

	ctx  context.Context
	stop context.CancelFunc
	done chan struct{}
	kick chan struct{}
}

// Start keeps a control-mode client of the server and its event hooks,
// reconnecting when they end, until Stop. Commands go through the client
// while it runs (through a process each when it does not); the events
// come on the returned channel, which is never closed before Stop.
func (c *Client) Start() <-chan Event {
	if ch := c.ch.Load(); ch != nil {
		return ch.events
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := &channel{c: c, events: make(chan Event, 64), ctx: ctx, stop: cancel, done: make(chan struct{}), kick: make(chan struct{}, 1)}
	c.ch.Store(ch)
	go ch.supervise(ctx)
	return ch.events
}

// Stop ends the control client and the watcher, and takes st's hooks off
// the server.
func (c *Client) Stop() {
	ch := c.ch.Swap(nil)
	if ch == nil {
		return
	}
	ch.stop()
	<-ch.done
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var args []string
	for _, h := range hookNames {
		if len(args) > 0 {
			args = append(args, ";")
		}
		args = append(args, "set-hook", "-gu", h+"["+hookIndex+"]")
	}
	c.r.Run(ctx, args...)
}

// Kick makes the watcher look for the server now (st just started it).
func (c *Client) Kick() {
	if ch := c.ch.Load(); ch != nil {
		select {
		case ch.kick <- struct{}{}:
		default:
		}
	}
}

// Mark names the server as it is now for st's hooks: its life (pid and
// start time, as ServerID says it) and how many changes its hooks
// counted. Two equal marks mean that no pane, window or session came,
// went or died between them (st's hooks count every such change before
// the command that made it returns).
type Mark struct{ Server, Changes string }

// Mark reads the server's mark. ok is false when st does not follow the
// server's events (no control client, or no server): then nothing can be
// said.
func (c *Client) Mark(ctx context.Context) (m Mark, ok bool) {
	if c.control() == nil {
		return Mark{}, false
	}
	out, err := c.Run(ctx, "display-message", "-p", "#{pid}:#{start_time}"+sep+"#{"+eventCount+"}")
	if err != nil {
		return Mark{}, false
	}
	m.Server, m.Changes, _ = strings.Cut(strings.TrimSpace(out), sep)
	return m, true
}

// Connected reports whether the control client runs.
func (c *Client) Connected() bool { return c.control() != nil }

func (ch *channel) current() *control {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.ctl
}

func (ch *channel) emit(k EventKind) {
	select {
	case ch.events <- Event{Kind: k, At: time.Now()}:
	default:
		// Full: a Changed is already waiting, and it says as much; the
		// server's coming and going must not be lost.
		if k != Changed {
			go func() {
				select {
				case ch.events <- Event{Kind: k, At: time.Now()}:
				case <-ch.ctx.Done():
				}
			}()
		}
	}
}

// supervise connects, watches, and connects again, for the channel's life.
func (ch *channel) supervise(ctx context.Context) {
	defer close(ch.done)
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		ctl, err := ch.connect(ctx)
		if err != nil {
			ch.setUp(false)
			select {
			case <-ctx.Done():
				return
			case <-ch.kick:
				backoff = 50 * time.Millisecond
			case <-time.After(backoff):
				if backoff < 2*time.Second {
					backoff *= 2
				}
			}
			continue
		}
		backoff = 50 * time.Millisecond
		ch.setUp(true)
		ch.watch(ctx, ctl)
		ch.mu.Lock()
		ch.ctl = nil
		ch.mu.Unlock()
		ctl.close()
		if ctx.Err() != nil {
			return
		}
		// The client ended: the server went, or only its session did.
		if !ch.serverAnswers(ctx) {
			ch.setUp(false)
		} else {
			ch.emit(Changed)
		}
	}
}

// setUp records whether the server runs, and says when that changed.
func (ch *channel) setUp(up bool) {
	ch.mu.Lock()
	was := ch.up
	ch.up = up
	ch.mu.Unlock()
	switch {
	case up && !was:
		ch.emit(ServerUp)
	case !up && was:
		// Changes of a server that is gone are moot: the watcher hears of
		// its going first.
		for drained := false; !drained; {
			select {
			case e := <-ch.events:
				if e.Kind != Changed {
					drained = true
					go ch.emit(e.Kind)
				}
			default:
				drained = true
			}
		}
		ch.emit(ServerGone)
	}
}

// serverAnswers reports whether the server still takes connections: a
// dial of its socket, which costs no process (a tmux client would take
// milliseconds, and the server's exit should be known in less).
func (ch *channel) serverAnswers(ctx context.Context) bool {
	d := net.Dialer{Timeout: time.Second}
	conn, err := d.DialContext(ctx, "unix", ch.c.socket)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// connect attaches the control client to a session of the server (any
// but the web terminal's own) and sets st's hooks.
func (ch *channel) connect(ctx context.Context) (*control, error) {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	out, err := ch.c.r.Run(cctx, "list-sessions", "-F", "#{session_id}"+sep+"#{session_name}")
	cancel()
	if err != nil {
		return nil, err
	}
	target := ""
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		id, name, _ := strings.Cut(line, sep)
		if id != "" && !IsWebSession(name) {
			target = id
			break
		}
	}
	if target == "" {
		return nil, errors.New("the server has no session to attach to")
	}
	ctl, err := startControl("tmux", ch.c.socket, target, func(line string) {
		// Windows and sessions that come and go: read again.
		switch {
		case strings.HasPrefix(line, "%sessions-changed"), strings.HasPrefix(line, "%window-close"),
			strings.HasPrefix(line, "%unlinked-window-close"), strings.HasPrefix(line, "%window-add"),
			strings.HasPrefix(line, "%unlinked-window-add"):
			ch.emit(Changed)
		}
	})
	if err != nil {
		return nil, err
	}
	var args []string
	for _, h := range hookNames {
		if len(args) > 0 {
			args = append(args, ";")
		}
		args = append(args, "set-hook", "-g", h+"["+hookIndex+"]", hookCommand)
	}
	cctx, cancel = context.WithTimeout(ctx, 3*time.Second)
	_, err = ctl.send(cctx, args, nil)
	cancel()
	if err != nil {
		ctl.close()
		return nil, err
	}
	ch.mu.Lock()
	ch.ctl = ctl
	ch.mu.Unlock()
	return ctl, nil
}

// watch waits for the hooks' signals until the control client ends.
func (ch *channel) watch(ctx context.Context, ctl *control) {
	ch.emit(Changed) // what happened while st was not attached
	for {
		wctx, cancel := context.WithCancel(ctx)
		stopped := make(chan struct{})
		go func() {
			select {
			case <-ctl.exited:
				cancel()
			case <-stopped:
			}
		}()
		cmd := exec.CommandContext(wctx, "tmux", "-S", ch.c.socket, "wait-for", eventChannel)
		cmd.Env = envWithout(os.Environ(), "TMUX", "TMUX_PANE")
		cmd.WaitDelay = time.Second
		err := cmd.Run()
		close(stopped)
		cancel()
		select {
		case <-ctl.exited:
			return
		case <-ctx.Done():
			return
		default:
		}
		if err != nil {
			// wait-for failed but the client runs: the server is busy or
			// going; the client's %exit says which.
			select {
			case <-ctl.exited:
				return
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		ch.emit(Changed)
	}
}
