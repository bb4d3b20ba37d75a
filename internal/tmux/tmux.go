// Package tmux is the only package in st that runs tmux. Every call goes
// through one Runner so that the socket flag, UTF-8 mode and error handling
// are the same everywhere, and so that unit tests can fake the commands.
// Panes are always targeted by id (%7), metadata is read with one
// list-panes -F call, and free text comes last in each format line.
package tmux

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sophonz/st/internal/runerr"
	"github.com/sophonz/st/internal/tmuxenv"
)

// Sentinel errors that callers test with errors.Is.
var (
	// ErrNoServer means no tmux server is running on the socket.
	ErrNoServer = errors.New("no tmux server is running")
	// ErrNoPane means the pane (or window, or session) does not exist.
	ErrNoPane = errors.New("no such pane")
)

// Error is a failed tmux command, with what it printed.
type Error struct {
	Args     []string
	ExitCode int
	Stderr   string
	kind     error
}

func (e *Error) Error() string {
	return runerr.Message("tmux", e.Args, e.Stderr, e.ExitCode)
}

// Unwrap lets errors.Is find ErrNoServer and ErrNoPane.
func (e *Error) Unwrap() error { return e.kind }

func classify(stderr string) error {
	s := strings.ToLower(stderr)
	switch {
	case strings.Contains(s, "no server running"), strings.Contains(s, "error connecting to"),
		strings.Contains(s, "server exited unexpectedly"), strings.Contains(s, "error creating"):
		return ErrNoServer
	case strings.Contains(s, "can't find pane"), strings.Contains(s, "can't find window"),
		strings.Contains(s, "can't find session"), strings.Contains(s, "no such"):
		return ErrNoPane
	}
	return nil
}

// Runner runs one tmux command line (without the program name and socket
// flags) and returns its standard output.
type Runner interface {
	Run(ctx context.Context, args ...string) (string, error)
}

// execRunner runs the tmux program.
type execRunner struct {
	bin    string
	socket string
}

func (r execRunner) Run(ctx context.Context, args ...string) (string, error) {
	full := []string{"-u"}
	if r.socket != "" {
		full = append(full, "-S", r.socket)
	}
	full = append(full, args...)
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, r.bin, full...)
	// A tmux client started from inside a pane would otherwise talk to the
	// server in $TMUX; st always names its server explicitly.
	cmd.Env = envWithout(os.Environ(), "TMUX", "TMUX_PANE")
	cmd.WaitDelay = time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil && cmd.ProcessState.Success() {
		// tmux finished and said yes, but something it started (a server
		// it forked, under load) held its output pipes past WaitDelay.
		// Its answer was written before it exited, so it is whole.
		err = nil
	}
	if err != nil {
		code := -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if ctx.Err() != nil {
			return "", fmt.Errorf("tmux %s: %w", args[0], ctx.Err())
		} else {
			return "", fmt.Errorf("tmux %s: %w (is tmux installed?)", args[0], err)
		}
		return out.String(), &Error{Args: args, ExitCode: code, Stderr: errb.String(), kind: classify(errb.String())}
	}
	if out.Len() == 0 && strings.TrimSpace(errb.String()) != "" {
		// tmux exits 0 for some failures, saying so only on stderr: given
		// -S in a folder that does not exist, new-session prints "error
		// creating ..." and nothing else.
		return "", &Error{Args: args, ExitCode: 0, Stderr: errb.String(), kind: classify(errb.String())}
	}
	return out.String(), nil
}

func envWithout(env []string, keys ...string) []string {
	out := env[:0:0]
next:
	for _, kv := range env {
		for _, k := range keys {
			if strings.HasPrefix(kv, k+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// Client talks to one tmux server.
type Client struct {
	socket string
	r      Runner
	// ownDir: the socket's folder is made (and checked) before a server
	// is started there (New; a client of a fake runner has none).
	ownDir bool
	// ch is the persistent control client and event watcher, once Start
	// ran (events.go); nil means a process per command.
	ch atomic.Pointer[channel]
}

// New returns a client of the server on socket. An empty socket means the
// user's default server, which honours TMUX_TMPDIR.
func New(socket string) *Client {
	if socket == "" {
		socket = DefaultSocket()
	}
	return &Client{socket: socket, r: execRunner{bin: "tmux", socket: socket}, ownDir: true}
}

// NewWithRunner returns a client that runs commands through r (for tests).
func NewWithRunner(socket string, r Runner) *Client { return &Client{socket: socket, r: r} }

// Socket is the path of the server's socket.
func (c *Client) Socket() string { return c.socket }

// DefaultSocket is where tmux puts its default server's socket:
// $TMUX_TMPDIR (or /tmp) / tmux-UID / default.
func DefaultSocket() string { return tmuxenv.DefaultSocket(os.Getenv("TMUX_TMPDIR"), os.Getuid()) }

// Run runs a raw tmux command on this client's server: over the control
// client while it runs, else as a process of its own. A command that only
// reads is run again as a process when the control client ended under
// it; one that acts is not (it may have run), and says so.
func (c *Client) Run(ctx context.Context, args ...string) (string, error) {
	if ctl := c.control(); ctl != nil && sendable(args) && !ownProcess[args[0]] {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
		}
		bs, err := ctl.send(ctx, args, nil)
		switch {
		case err == nil:
			return result(args, bs)
		case errors.Is(err, ErrChannelClosed) && readOnly[args[0]]:
			// the server may be gone: the process says so plainly
		case errors.Is(err, ErrChannelClosed):
			return "", fmt.Errorf("tmux %s: %w (it may or may not have run)", args[0], err)
		default:
			return "", fmt.Errorf("tmux %s: %w", args[0], err)
		}
	}
	return c.r.Run(ctx, args...)
}

// control is the running control client, or nil.
func (c *Client) control() *control {
	ch := c.ch.Load()
	if ch == nil {
		return nil
	}
	if ctl := ch.current(); ctl != nil && ctl.alive() {
		return ctl
	}
	return nil
}

// ownProcess are commands that never go over the control client: they
// wait, attach, or end the server the client lives on.
var ownProcess = map[string]bool{
	"wait-for": true, "attach-session": true, "attach": true, "kill-server": true,
}

// readOnly are commands that change nothing, and so may run twice.
var readOnly = map[string]bool{
	"list-panes": true, "list-windows": true, "list-sessions": true, "list-clients": true,
	"display-message": true, "capture-pane": true, "show-options": true, "show-hooks": true,
	"has-session": true,
}

// sep separates fields in format lines: a printable character that does
// not occur in ids and numbers. Free text always comes last.
const sep = "\x1f"

// paneFormat is the -F format of a Pane; keep in step with parsePane.
var paneFormat = strings.Join([]string{
	"#{pane_id}", "#{window_id}", "#{window_index}", "#{session_id}", "#{pane_pid}",
	"#{pane_dead}", "#{@st_run}", "#{@st_role}", "#{@st_parent}", "#{@st_agent}",
	"#{@st_agent_session}", "#{@st_name}", "#{session_name}", "#{window_name}",
	"#{pane_current_command}", "#{pane_current_path}",
}, sep)

// Pane is what st reads about a pane. The St* fields are st's own pane
// user options, which keep relations on the pane itself.
type Pane struct {
	ID, WindowID, WindowIndex, SessionID string
	PID                                  int
	Dead                                 bool
	StRun, StRole, StParent, StAgent     string
	StAgentSession, StName               string
	SessionName, WindowName              string
	Command, Path                        string
}

// ParsePane parses one line printed with paneFormat.
func ParsePane(line string) (Pane, error) {
	f := strings.SplitN(line, sep, 16)
	if len(f) != 16 || !strings.HasPrefix(f[0], "%") {
		return Pane{}, fmt.Errorf("unexpected pane line %q", line)
	}
	pid, _ := strconv.Atoi(f[4])
	return Pane{
		ID: f[0], WindowID: f[1], WindowIndex: f[2], SessionID: f[3], PID: pid, Dead: f[5] == "1",
		StRun: f[6], StRole: f[7], StParent: f[8], StAgent: f[9], StAgentSession: f[10], StName: f[11],
		SessionName: f[12], WindowName: f[13], Command: f[14], Path: f[15],
	}, nil
}

// parsePanes parses list-panes -a output. The grouped sessions that the
// web terminal makes show every pane a second time; they are left out.
func parsePanes(out string) ([]Pane, error) {
	var panes []Pane
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		p, err := ParsePane(line)
		if err != nil {
			return nil, err
		}
		if IsWebSession(p.SessionName) {
			continue
		}
		panes = append(panes, p)
	}
	return panes, nil
}

// ListPanes lists every pane of the server. No server means no panes.
func (c *Client) ListPanes(ctx context.Context) ([]Pane, error) {
	out, err := c.Run(ctx, "list-panes", "-a", "-F", paneFormat)
	if errors.Is(err, ErrNoServer) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parsePanes(out)
}

// Pane reads one pane by id.
func (c *Client) Pane(ctx context.Context, id string) (Pane, error) {
	if !ValidPaneID(id) {
		return Pane{}, fmt.Errorf("%q is not a pane id: %w", id, ErrNoPane)
	}
	out, err := c.Run(ctx, "display-message", "-p", "-t", id, "-F", paneFormat)
	if err != nil {
		return Pane{}, fmt.Errorf("tmux pane %s: %w", id, err)
	}
	line := strings.TrimRight(out, "\n")
	if strings.Trim(line, sep) == "" {
		// tmux 3.3a prints empty fields, and exits 0, for a missing pane.
		return Pane{}, fmt.Errorf("tmux pane %s: %w", id, ErrNoPane)
	}
	return ParsePane(line)
}

// ValidPaneID reports whether s looks like a tmux pane id (%N).
func ValidPaneID(s string) bool {
	if len(s) < 2 || len(s) > 12 || s[0] != '%' {
		return false
	}
	for _, r := range s[1:] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// NewWindowOpts describes a window (or, with Split, a pane) to open.
type NewWindowOpts struct {
	// Target is the session ($3 or a name) for a window, or the pane to
	// split when Split is set.
	Target string
	Name   string
	Cwd    string
	Env    map[string]string
	// Command is the argv of the program; it is quoted for the shell that
	// tmux runs it with.
	Command []string
	// Split opens a pane beside Target instead of a window.
	Split bool
}

// NewWindow opens a detached window (or split pane) and returns its pane.
func (c *Client) NewWindow(ctx context.Context, o NewWindowOpts) (Pane, error) {
	var args []string
	if o.Split {
		args = []string{"split-window", "-d", "-P", "-F", paneFormat, "-t", o.Target}
	} else {
		target := o.Target
		if !strings.Contains(target, ":") {
			target += ":"
		}
		args = []string{"new-window", "-d", "-P", "-F", paneFormat, "-t", target}
		if o.Name != "" {
			args = append(args, "-n", o.Name)
		}
	}
	if o.Cwd != "" {
		args = append(args, "-c", o.Cwd)
	}
	args = append(args, envArgs(o.Env)...)
	args = append(args, commandArgs(o.Command)...)
	out, err := c.Run(ctx, args...)
	if err != nil {
		return Pane{}, fmt.Errorf("open a window in %s: %w", o.Target, err)
	}
	return ParsePane(strings.TrimRight(out, "\n"))
}

// SendLiteral types text into a pane exactly as written (send-keys -l):
// quotes, $, backticks and ; arrive as they are.
func (c *Client) SendLiteral(ctx context.Context, pane, text string) error {
	if _, err := c.Run(ctx, "send-keys", "-t", pane, "-l", "--", text); err != nil {
		return fmt.Errorf("type into %s: %w", pane, err)
	}
	return nil
}

// SendKeys presses named keys (Enter, Escape, BSpace) in a pane.
func (c *Client) SendKeys(ctx context.Context, pane string, keys ...string) error {
	args := append([]string{"send-keys", "-t", pane}, keys...)
	if _, err := c.Run(ctx, args...); err != nil {
		return fmt.Errorf("press %s in %s: %w", strings.Join(keys, " "), pane, err)
	}
	return nil
}

// Capture returns the visible text of a pane (trailing spaces stripped by tmux).
func (c *Client) Capture(ctx context.Context, pane string) (string, error) {
	return c.capture(ctx, pane, "-p")
}

// CaptureEscapes returns the visible text of a pane with the escape
// sequences of its colours and attributes (capture-pane -e).
func (c *Client) CaptureEscapes(ctx context.Context, pane string) (string, error) {
	return c.capture(ctx, pane, "-p", "-e")
}

func (c *Client) capture(ctx context.Context, pane string, flags ...string) (string, error) {
	args := append(append([]string{"capture-pane"}, flags...), "-t", pane)
	if ctl := c.control(); ctl != nil && sendable([]string{pane}) {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
		}
		// The screen is free text: it is read by the pane's height, asked
		// in the same line (control.go).
		line := append([]string{"display-message", "-p", "-t", pane, "#{pane_height}", ";"}, args...)
		bs, err := ctl.send(ctx, line, captureCount)
		// A pane that is gone fails the first command, and the capture
		// does not run: one %error block.
		if err == nil && (len(bs) == 2 || len(bs) == 1 && bs[0].err) {
			if bs[len(bs)-1].err {
				_, err := result(args, bs)
				return "", fmt.Errorf("tmux capture-pane %s: %w", pane, err)
			}
			var b strings.Builder
			for _, l := range bs[1].lines {
				b.WriteString(l)
				b.WriteByte('\n')
			}
			return b.String(), nil
		}
		if err != nil && !errors.Is(err, ErrChannelClosed) {
			return "", fmt.Errorf("tmux capture-pane %s: %w", pane, err)
		}
	}
	out, err := c.r.Run(ctx, args...)
	if err != nil {
		return "", fmt.Errorf("tmux capture-pane %s: %w", pane, err)
	}
	return out, nil
}

// SetOption sets a pane user option (name starts with @).
func (c *Client) SetOption(ctx context.Context, pane, name, value string) error {
	if _, err := c.Run(ctx, "set-option", "-p", "-t", pane, name, value); err != nil {
		return fmt.Errorf("set %s on %s: %w", name, pane, err)
	}
	return nil
}

// Option reads a pane user option ("" when it is not set).
func (c *Client) Option(ctx context.Context, pane, name string) (string, error) {
	out, err := c.Run(ctx, "show-options", "-p", "-q", "-v", "-t", pane, name)
	if err != nil {
		return "", fmt.Errorf("read %s of %s: %w", name, pane, err)
	}
	return strings.TrimRight(out, "\n"), nil
}

// UnsetOption removes a pane user option.
func (c *Client) UnsetOption(ctx context.Context, pane, name string) error {
	if _, err := c.Run(ctx, "set-option", "-p", "-u", "-t", pane, name); err != nil {
		return fmt.Errorf("unset %s on %s: %w", name, pane, err)
	}
	return nil
}

// KillPane closes a pane (and its window when it is the last pane).
func (c *Client) KillPane(ctx context.Context, pane string) error {
	if _, err := c.Run(ctx, "kill-pane", "-t", pane); err != nil {
		return fmt.Errorf("close %s: %w", pane, err)
	}
	return nil
}

// RenameWindow renames the window that holds pane.
func (c *Client) RenameWindow(ctx context.Context, pane, name string) error {
	if _, err := c.Run(ctx, "rename-window", "-t", pane, name); err != nil {
		return fmt.Errorf("rename the window of %s: %w", pane, err)
	}
	return nil
}

// Session is a session with its windows.
type Session struct {
	ID, Name string
	Windows  []Window
}

// Window is a window with its panes.
type Window struct {
	ID, Index, Name string
	Panes           []Pane
}

// Sessions groups panes by session and window, in tmux's order.
func Sessions(panes []Pane) []Session {
	var out []Session
	si := map[string]int{}
	wi := map[string]int{}
	for _, p := range panes {
		i, ok := si[p.SessionID]
		if !ok {
			i = len(out)
			si[p.SessionID] = i
			out = append(out, Session{ID: p.SessionID, Name: p.SessionName})
		}
		s := &out[i]
		key := p.SessionID + p.WindowID
		j, ok := wi[key]
		if !ok {
			j = len(s.Windows)
			wi[key] = j
			s.Windows = append(s.Windows, Window{ID: p.WindowID, Index: p.WindowIndex, Name: p.WindowName})
		}
		s.Windows[j].Panes = append(s.Windows[j].Panes, p)
	}
	return out
}

// ShellJoin quotes argv for sh so that every argument arrives literally.
func ShellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = ShellQuote(a)
	}
	return strings.Join(q, " ")
}

// ShellQuote quotes one argument for sh.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '-' || r == '_' || r == '.' || r == '=' || r == ':' || r == ',' ||
			r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
