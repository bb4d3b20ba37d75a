package tmux

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Layout is what st keeps of a tmux server so that it can bring the
// sessions back after the server goes down: sessions, windows with their
// layouts, and panes with their folders and st's options.
type Layout struct {
	// Format is the version of tmux-layout.json's form (LayoutFormat when
	// written; 0 in files of st before formats were numbered).
	Format   int             `json:"format"`
	Sessions []LayoutSession `json:"sessions"`
	// Server names the server's life (its pid and start time): pane ids
	// of another life mean other panes.
	Server string `json:"server,omitempty"`
	// Socket is the path of the server's socket: a server on another
	// socket is another server, never this one restarted.
	Socket string `json:"socket,omitempty"`
}

// LayoutFormat is the form of tmux-layout.json this st writes, and the
// newest it reads.
const LayoutFormat = 1

// LayoutSession is one session of a Layout.
type LayoutSession struct {
	Name    string         `json:"name"`
	Windows []LayoutWindow `json:"windows"`
}

// LayoutWindow is one window of a Layout.
type LayoutWindow struct {
	Index  int          `json:"index"`
	Name   string       `json:"name"`
	Layout string       `json:"layout"`
	Active bool         `json:"active,omitempty"`
	Panes  []LayoutPane `json:"panes"`
}

// LayoutPane is one pane of a Layout.
type LayoutPane struct {
	ID    string `json:"id"`
	Index int    `json:"index"`
	Path  string `json:"path"`
	// PID is the pane's first process, which leads its process group:
	// an agent that outlives its window (Gemini CLI) is ended by it
	// before the restore starts it again.
	PID int `json:"pid,omitempty"`
	// Options are st's pane options (@st_*), which say which agent ran
	// there and its relations.
	Options map[string]string `json:"options,omitempty"`
}

// layoutFormat starts with a tag of its own: a line of another command's
// answer (list-panes' pane format has as many fields) handed back for this
// one by a control client cut off as its server died is refused, never
// read as sessions named after panes (seen once in the fault row of a
// server killed during a restore).
var layoutFormat = strings.Join([]string{
	layoutTag, "#{session_name}", "#{window_index}", "#{window_active}", "#{pane_index}", "#{pane_id}",
	"#{window_layout}", "#{@st_run}", "#{@st_role}", "#{@st_parent}", "#{@st_agent}", "#{@st_agent_session}",
	"#{@st_name}", "#{pid}:#{start_time}", "#{window_name}", "#{pane_pid}", "#{pane_current_path}",
}, sep)

const layoutTag = "st-layout"

var layoutOptions = []string{"@st_run", "@st_role", "@st_parent", "@st_agent", "@st_agent_session", "@st_name"}

// ReadLayout reads the whole server. No server means an empty layout.
func (c *Client) ReadLayout(ctx context.Context) (Layout, error) {
	out, err := c.Run(ctx, "list-panes", "-a", "-F", layoutFormat)
	if err != nil {
		if isNoServer(err) {
			return Layout{}, nil
		}
		return Layout{}, err
	}
	l, err := parseLayout(out)
	if err == nil && len(l.Sessions) > 0 {
		l.Socket = c.socket
	}
	return l, err
}

func isNoServer(err error) bool {
	e, ok := err.(*Error)
	return ok && e.kind == ErrNoServer
}

func parseLayout(out string) (Layout, error) {
	var l Layout
	si := map[string]int{}
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.SplitN(line, sep, 17)
		if len(f) != 17 || f[0] != layoutTag {
			return Layout{}, fmt.Errorf("unexpected layout line %q", line)
		}
		f = f[1:]
		l.Server = f[12]
		f = append(f[:12], f[13:]...) // the rest as it was
		if IsWebSession(f[0]) {
			continue // a web terminal's view, not a session to bring back
		}
		i, ok := si[f[0]]
		if !ok {
			i = len(l.Sessions)
			si[f[0]] = i
			l.Sessions = append(l.Sessions, LayoutSession{Name: f[0]})
		}
		s := &l.Sessions[i]
		widx, _ := strconv.Atoi(f[1])
		var w *LayoutWindow
		for j := range s.Windows {
			if s.Windows[j].Index == widx {
				w = &s.Windows[j]
			}
		}
		if w == nil {
			s.Windows = append(s.Windows, LayoutWindow{Index: widx, Name: f[12], Layout: f[5], Active: f[2] == "1"})
			w = &s.Windows[len(s.Windows)-1]
		}
		pidx, _ := strconv.Atoi(f[3])
		ppid, _ := strconv.Atoi(f[13])
		p := LayoutPane{ID: f[4], Index: pidx, Path: f[14], PID: ppid}
		for k, name := range layoutOptions {
			if v := f[6+k]; v != "" {
				if p.Options == nil {
					p.Options = map[string]string{}
				}
				p.Options[name] = v
			}
		}
		w.Panes = append(w.Panes, p)
	}
	for i := range l.Sessions {
		ws := l.Sessions[i].Windows
		sort.Slice(ws, func(a, b int) bool { return ws[a].Index < ws[b].Index })
		for j := range ws {
			ps := ws[j].Panes
			sort.Slice(ps, func(a, b int) bool { return ps[a].Index < ps[b].Index })
		}
	}
	return l, nil
}

// ServerID names the server's life as Layout.Server does (its pid and
// start time); "" with no server.
func (c *Client) ServerID(ctx context.Context) (string, error) {
	out, err := c.Run(ctx, "display-message", "-p", "#{pid}:#{start_time}")
	if isNoServer(err) {
		return "", nil
	}
	return strings.TrimSpace(out), err
}

// Running reports whether the server answers.
func (c *Client) Running(ctx context.Context) bool {
	_, err := c.Run(ctx, "list-sessions", "-F", "#{session_id}")
	return err == nil
}

// NewSession starts a detached session (and with it the server, when it
// is down) whose first window runs argv in cwd.
func (c *Client) NewSession(ctx context.Context, name, window, cwd string, env map[string]string, argv []string) (Pane, error) {
	if c.ownDir {
		// tmux makes the folder of its default socket itself, but not one
		// given with -S (st always gives it): after a reboot emptied /tmp
		// the server could not start, and tmux said so only on stderr.
		if err := SocketDir(c.socket); err != nil {
			return Pane{}, fmt.Errorf("make session %s: %w", name, err)
		}
	}
	args := []string{"new-session", "-d", "-P", "-F", paneFormat, "-s", name, "-x", "200", "-y", "50"}
	if window != "" {
		args = append(args, "-n", window)
	}
	if cwd != "" {
		args = append(args, "-c", cwd)
	}
	args = append(args, envArgs(env)...)
	args = append(args, commandArgs(argv)...)
	out, err := c.Run(ctx, args...)
	if err != nil {
		return Pane{}, fmt.Errorf("make session %s: %w", name, err)
	}
	return ParsePane(strings.TrimRight(out, "\n"))
}

// SelectLayout gives a window a layout string read with ReadLayout.
func (c *Client) SelectLayout(ctx context.Context, target, layout string) error {
	if _, err := c.Run(ctx, "select-layout", "-t", target, layout); err != nil {
		return fmt.Errorf("lay out %s: %w", target, err)
	}
	return nil
}

// MakeCurrent makes the window of a pane the current one of its session.
func (c *Client) MakeCurrent(ctx context.Context, pane string) error {
	_, err := c.Run(ctx, "select-window", "-t", pane)
	return err
}

func envArgs(env map[string]string) []string {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var args []string
	for _, k := range keys {
		args = append(args, "-e", k+"="+env[k])
	}
	return args
}

// commandArgs passes argv to tmux: several arguments run the program with
// no shell between; one is a shell command, so it is quoted.
func commandArgs(argv []string) []string {
	switch len(argv) {
	case 0:
		return nil
	case 1:
		return []string{ShellQuote(argv[0])}
	}
	return argv
}

// Find reads a pane by any tmux target: a pane id, or session:window.pane.
func (c *Client) Find(ctx context.Context, target string) (Pane, error) {
	if strings.HasPrefix(target, "-") || target == "" {
		return Pane{}, fmt.Errorf("%q is not a tmux target: %w", target, ErrNoPane)
	}
	out, err := c.Run(ctx, "display-message", "-p", "-t", target, "-F", paneFormat)
	if err != nil {
		return Pane{}, fmt.Errorf("tmux pane %s: %w", target, err)
	}
	line := strings.TrimRight(out, "\n")
	if strings.Trim(line, sep) == "" {
		return Pane{}, fmt.Errorf("tmux pane %s: %w", target, ErrNoPane)
	}
	return ParsePane(line)
}

// SetOptions sets many pane user options in one tmux call (commands
// chained with ";"), which matters when a restart relinks many panes. A
// pane that is gone fails only its own options: tmux stops a chain at its
// first failure, so a chain that met one is set again pane by pane, and
// every other pane still gets its options. The error then names the panes
// that are gone (errors.Is ErrNoPane). Each call has its own deadline.
func (c *Client) SetOptions(ctx context.Context, opts map[string]map[string]string) error {
	panes := make([]string, 0, len(opts))
	for p := range opts {
		panes = append(panes, p)
	}
	sort.Strings(panes)
	var gone []string
	var chunk []string // the panes of the chain being built
	var args []string
	size := 0
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		err := c.setChain(ctx, args)
		if errors.Is(err, ErrNoPane) && len(chunk) > 1 {
			// Which pane failed is in tmux's words only: set each again.
			err = nil
			for _, p := range chunk {
				if e := c.setChain(ctx, optionArgs(p, opts[p])); errors.Is(e, ErrNoPane) {
					gone = append(gone, p)
				} else if e != nil && err == nil {
					err = e
				}
			}
		} else if errors.Is(err, ErrNoPane) {
			gone, err = append(gone, chunk...), nil
		}
		args, chunk, size = nil, nil, 0
		return err
	}
	for _, p := range panes {
		cmd := optionArgs(p, opts[p])
		n := 0
		for _, a := range cmd {
			n += len(a) + 1
		}
		// tmux takes a command line of at most one message (16 KiB with
		// its header): a long chain goes in several calls.
		if size+n > maxCommandBytes {
			if err := flush(); err != nil {
				return fmt.Errorf("set st's options on %d panes: %w", len(panes), err)
			}
		}
		if len(args) > 0 {
			args = append(args, ";")
		}
		args = append(args, cmd...)
		chunk = append(chunk, p)
		size += n + 2
	}
	if err := flush(); err != nil {
		return fmt.Errorf("set st's options on %d panes: %w", len(panes), err)
	}
	if len(gone) > 0 {
		return fmt.Errorf("set st's options on %d panes: %s gone (the others are set): %w", len(panes), strings.Join(gone, ", "), ErrNoPane)
	}
	return nil
}

// optionArgs are the set-option commands of one pane, chained.
func optionArgs(pane string, o map[string]string) []string {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var args []string
	for _, k := range keys {
		if len(args) > 0 {
			args = append(args, ";")
		}
		args = append(args, "set-option", "-p", "-t", pane, k, o[k])
	}
	return args
}

// setChain runs one chain of set-option commands with a deadline of its
// own, so that no chain waits on another's.
func (c *Client) setChain(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, setTimeout)
	defer cancel()
	_, err := c.Run(cctx, args...)
	return err
}

// setTimeout bounds one call that sets options.
const setTimeout = 5 * time.Second

// maxCommandBytes bounds the arguments of one chained tmux call, well
// under the size of the one message a tmux client sends its server.
const maxCommandBytes = 8000

// Placeholder is the command of a pane that st opens now and starts its
// program in a moment later (Respawn): it waits, quietly.
var Placeholder = []string{"cat"}

// Respawn starts argv (a shell when empty) in pane (opened with
// Placeholder), in cwd with env,
// and keeps the pane when its program exits (remain-on-exit), so that
// what the program said before it exited (a resume refused, a program
// not found) can still be read (CaptureHistory) before st closes it. The
// option is set before the program starts, in the same command line: a
// program that exits at once cannot close its pane first.
func (c *Client) Respawn(ctx context.Context, pane, cwd string, env map[string]string, argv []string) error {
	args := []string{"set-option", "-p", "-t", pane, "remain-on-exit", "on", ";", "respawn-pane", "-k", "-t", pane}
	if cwd != "" {
		args = append(args, "-c", cwd)
	}
	args = append(args, envArgs(env)...)
	args = append(args, commandArgs(argv)...)
	if _, err := c.Run(ctx, args...); err != nil {
		what := "a shell"
		if len(argv) > 0 {
			what = argv[0]
		}
		return fmt.Errorf("start %s in %s: %w", what, pane, err)
	}
	return nil
}

// CaptureHistory returns the last lines of a pane's screen and history,
// as a process of its own (the control client reads a capture by the
// pane's height only). For a pane whose program exited: tmux scrolls its
// last words into the history when it marks the pane dead.
func (c *Client) CaptureHistory(ctx context.Context, pane string, lines int) (string, error) {
	out, err := c.r.Run(ctx, "capture-pane", "-p", "-J", "-S", "-"+strconv.Itoa(lines), "-t", pane)
	if err != nil {
		return "", fmt.Errorf("tmux capture-pane %s: %w", pane, err)
	}
	return out, nil
}

// Exited says whether the program of pane has exited (its pane kept by
// remain-on-exit), and its exit status then.
func (c *Client) Exited(ctx context.Context, pane string) (dead bool, status int, err error) {
	out, err := c.Run(ctx, "display-message", "-p", "-t", pane, "#{pane_id}"+sep+"#{pane_dead}"+sep+"#{pane_dead_status}")
	if err != nil {
		return false, 0, fmt.Errorf("tmux pane %s: %w", pane, err)
	}
	f := strings.Split(strings.TrimRight(out, "\n"), sep)
	if len(f) != 3 || f[0] != pane {
		// tmux 3.3a prints empty fields, and exits 0, for a missing pane.
		return false, 0, fmt.Errorf("tmux pane %s: %w", pane, ErrNoPane)
	}
	status, _ = strconv.Atoi(f[2])
	return f[1] == "1", status, nil
}
