package tmux

// What the web terminal needs from tmux. A browser must never change the
// size of a window for its other clients, and must not move the window in
// front of anyone else, so every browser tab gets a session of its own in
// the group of the session it looks at (the windows are shared, the window
// in front is not), attached by a tmux client in a pty with ignore-size.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
)

// WebSessionPrefix starts the name of every grouped session the web
// terminal makes. They are an implementation detail of one browser tab:
// lists of the user's sessions (and list-panes -a, which repeats a grouped
// session's panes under it) should leave them out; see IsWebSession.
const WebSessionPrefix = "st-web-"

// IsWebSession reports whether a session name is one of the web
// terminal's grouped sessions.
func IsWebSession(name string) bool { return strings.HasPrefix(name, WebSessionPrefix) }

// NewWebSessionName returns a fresh, unguessable grouped-session name.
func NewWebSessionName() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return WebSessionPrefix + hex.EncodeToString(b)
}

// NewGroupedSession makes a detached session called name in the group of
// the session target (an id like $1, or a name). It shares target's
// windows but has its own window in front.
func (c *Client) NewGroupedSession(ctx context.Context, target, name string) error {
	if _, err := c.Run(ctx, "new-session", "-d", "-t", target, "-s", name); err != nil {
		return fmt.Errorf("group a session with %s: %w", target, err)
	}
	c.showNameOf(ctx, target, name)
	return nil
}

// showNameOf makes the status line of session name show the name of the
// session it was grouped with, where it would show its own: a person
// looking at "main" should read main, not st-web-3d0c.... Best effort: the
// status line is only cosmetic.
func (c *Client) showNameOf(ctx context.Context, target, name string) {
	orig, err := c.Run(ctx, "display-message", "-p", "-t", target, "#{session_name}")
	if err != nil {
		return
	}
	orig = strings.ReplaceAll(strings.TrimRight(orig, "\n"), "#", "##")
	left, err := c.Run(ctx, "show-options", "-Av", "-t", "="+name+":", "status-left")
	if err != nil {
		return
	}
	left = strings.TrimRight(left, "\n")
	fixed := strings.NewReplacer("#{session_name}", orig, "#S", orig).Replace(left)
	if fixed != left {
		c.Run(ctx, "set-option", "-t", "="+name+":", "status-left", fixed)
	}
}

// homeSession is the id of a session that holds window and is not a web
// terminal's.
func (c *Client) homeSession(ctx context.Context, window string) (string, error) {
	out, err := c.Run(ctx, "list-windows", "-a", "-F", "#{window_id} #{session_id} #{session_name}")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.SplitN(line, " ", 3)
		if len(f) == 3 && f[0] == window && !IsWebSession(f[2]) {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("no session holds window %s", window)
}

// NewWindowSession makes a detached session called name that holds one
// window (an id like @3) and no other: for a web terminal of another
// machine, which must see that window only, whatever its client does.
// The window stays in its own session too; when it closes, this session
// goes with it.
func (c *Client) NewWindowSession(ctx context.Context, name, window string) error {
	// A session needs a window to begin with: a placeholder that runs
	// nothing but cat, closed once the window is linked.
	out, err := c.Run(ctx, "new-session", "-d", "-s", name, "-P", "-F", "#{window_id}", "cat")
	if err != nil {
		return fmt.Errorf("make a session for window %s: %w", window, err)
	}
	placeholder := strings.TrimSpace(out)
	// Its session's name, read before the window is in two sessions; a
	// web terminal's session that still holds it (one being closed) is
	// not its own.
	orig, origErr := c.homeSession(ctx, window)
	if _, err := c.Run(ctx, "link-window", "-s", window, "-t", "="+name+":"); err != nil {
		c.KillSession(ctx, name)
		return fmt.Errorf("show window %s: %w", window, err)
	}
	if _, err := c.Run(ctx, "kill-window", "-t", placeholder); err != nil {
		c.KillSession(ctx, name)
		return fmt.Errorf("make a session for window %s: %w", window, err)
	}
	if origErr == nil {
		c.showNameOf(ctx, strings.TrimSpace(orig), name)
	}
	return nil
}

// SendBytes types bytes into a pane exactly as they are (send-keys -H:
// each byte is written to the pane's input, with no key binding of any
// client in between).
func (c *Client) SendBytes(ctx context.Context, pane string, b []byte) error {
	for len(b) > 0 {
		n := min(len(b), 256)
		args := []string{"send-keys", "-t", pane, "-H"}
		for _, x := range b[:n] {
			args = append(args, fmt.Sprintf("%02x", x))
		}
		if _, err := c.Run(ctx, args...); err != nil {
			return fmt.Errorf("type into %s: %w", pane, err)
		}
		b = b[n:]
	}
	return nil
}

// SelectWindow brings a window (an id like @3) to the front of session
// name only; other sessions of the group keep theirs.
func (c *Client) SelectWindow(ctx context.Context, session, window string) error {
	if _, err := c.Run(ctx, "select-window", "-t", "="+session+":"+window); err != nil {
		return fmt.Errorf("select %s in %s: %w", window, session, err)
	}
	return nil
}

// KillSession closes the session called exactly name. Its windows live on
// while another session of its group holds them.
func (c *Client) KillSession(ctx context.Context, name string) error {
	if _, err := c.Run(ctx, "kill-session", "-t", "="+name); err != nil {
		return fmt.Errorf("close session %s: %w", name, err)
	}
	return nil
}

// KillStaleWebSessions closes the web terminal's grouped sessions that no
// client is attached to and that are older than age: those a browser left
// while st was not there to clean up. The age spares a session that another
// connection has just made and not attached yet.
func (c *Client) KillStaleWebSessions(ctx context.Context, age time.Duration) error {
	out, err := c.Run(ctx, "list-sessions", "-F", "#{session_attached}"+sep+"#{session_created}"+sep+"#{session_name}")
	if errors.Is(err, ErrNoServer) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list sessions: %w", err)
	}
	var errs []error
	for _, line := range strings.Split(out, "\n") {
		f := strings.SplitN(line, sep, 3)
		if len(f) != 3 || f[0] != "0" || !IsWebSession(f[2]) {
			continue
		}
		created, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || time.Since(time.Unix(created, 0)) < age {
			continue
		}
		if err := c.KillSession(ctx, f[2]); err != nil && !errors.Is(err, ErrNoPane) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// WindowSize is the size of a window in cells.
type WindowSize struct{ Cols, Rows int }

// WindowSizeOf reads the size of a window (or of the window of a pane).
func (c *Client) WindowSizeOf(ctx context.Context, target string) (WindowSize, error) {
	out, err := c.Run(ctx, "display-message", "-p", "-t", target, "#{window_width}x#{window_height}")
	if err != nil {
		return WindowSize{}, fmt.Errorf("size of %s: %w", target, err)
	}
	var s WindowSize
	if _, err := fmt.Sscanf(strings.TrimSpace(out), "%dx%d", &s.Cols, &s.Rows); err != nil {
		return WindowSize{}, fmt.Errorf("size of %s: unexpected %q: %w", target, out, ErrNoPane)
	}
	return s, nil
}

// ActiveWindows maps each session id to the id of the window in front of it.
func (c *Client) ActiveWindows(ctx context.Context) (map[string]string, error) {
	out, err := c.Run(ctx, "list-windows", "-a", "-F", "#{session_id}"+sep+"#{window_id}"+sep+"#{window_active}")
	if errors.Is(err, ErrNoServer) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list windows: %w", err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, sep)
		if len(f) == 3 && f[2] == "1" {
			m[f[0]] = f[1]
		}
	}
	return m, nil
}

// AttachOpts describes a tmux client attached in a pty.
type AttachOpts struct {
	Session    string // exact name, normally a grouped session of its own
	ReadOnly   bool
	Cols, Rows int
}

// PTY is a tmux client running in a pseudo-terminal: read what it draws,
// write what is typed. Its size is its own, never the window's.
type PTY struct {
	f    *os.File
	cmd  *exec.Cmd
	done chan struct{}

	anchor     *exec.Cmd
	anchorIn   io.Closer
	anchorDone chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// AttachPTY attaches a tmux client to session in a new pty of the given
// size, so that a browser can show it.
//
// ignore-size alone is not enough: tmux honours the flag only while some
// attached client lacks it, so a browser that is a window's only viewer
// (or the latest of two browsers) would still resize it. So a control-mode
// client without output is attached to the same session first; it counts
// as such a client, and takes no part in sizing itself (control clients
// that never set a size are left out). With it, windows keep the size
// their ordinary clients give them, or the one they had.
//
// The session is not marked destroy-unattached: tmux 3.3a's server can
// crash when it destroys a grouped session that way as its last client
// leaves. Close the PTY, then KillSession; KillStaleWebSessions clears what
// a crashed st left behind.
func (c *Client) AttachPTY(ctx context.Context, o AttachOpts) (*PTY, error) {
	target := "=" + o.Session
	env := append(envWithout(os.Environ(), "TMUX", "TMUX_PANE", "TERM", "COLORTERM"),
		"TERM=xterm-256color", "COLORTERM=truecolor")

	p := &PTY{done: make(chan struct{}), anchorDone: make(chan struct{})}
	p.anchor = exec.Command("tmux", "-u", "-S", c.socket, "-C",
		"attach-session", "-t", target, "-f", "no-output")
	p.anchor.Env = env
	in, err := p.anchor.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := p.anchor.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.anchor.Start(); err != nil {
		return nil, fmt.Errorf("attach to %s: %w (is tmux installed?)", o.Session, err)
	}
	p.anchorIn = in
	attached := make(chan error, 1)
	go func() {
		defer close(p.anchorDone)
		sc := bufio.NewScanner(out)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			if !sent && (strings.HasPrefix(line, "%session-changed") || strings.HasPrefix(line, "%exit")) {
				if strings.HasPrefix(line, "%exit") {
					attached <- fmt.Errorf("attach to %s: %s: %w", o.Session, line, ErrNoPane)
				} else {
					attached <- nil
				}
				sent = true
			}
		}
		_, _ = io.Copy(io.Discard, out) // only if a line was too long for the scanner
		if !sent {
			attached <- fmt.Errorf("attach to %s: control client ended: %w", o.Session, ErrNoPane)
		}
		_ = p.anchor.Wait()
	}()
	wait := time.NewTimer(5 * time.Second)
	defer wait.Stop()
	select {
	case err = <-attached:
	case <-wait.C:
		err = fmt.Errorf("attach to %s: no answer from tmux", o.Session)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		p.closeAnchor()
		return nil, err
	}

	flags := "ignore-size"
	if o.ReadOnly {
		flags += ",read-only"
	}
	p.cmd = exec.Command("tmux", "-u", "-S", c.socket,
		"attach-session", "-t", target, "-f", flags)
	p.cmd.Env = env
	p.f, err = pty.StartWithSize(p.cmd, &pty.Winsize{Cols: clampSize(o.Cols, 80), Rows: clampSize(o.Rows, 24)})
	if err != nil {
		p.closeAnchor()
		return nil, fmt.Errorf("attach to %s: %w", o.Session, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	return p, nil
}

func clampSize(n, def int) uint16 {
	switch {
	case n <= 0:
		return uint16(def)
	case n > 1000:
		return 1000
	}
	return uint16(n)
}

// Read reads what the client draws.
func (p *PTY) Read(b []byte) (int, error) { return p.f.Read(b) }

// Write types into the client.
func (p *PTY) Write(b []byte) (int, error) { return p.f.Write(b) }

// Resize changes the size of the pty only; the window keeps its own.
func (p *PTY) Resize(cols, rows int) error {
	return pty.Setsize(p.f, &pty.Winsize{Cols: clampSize(cols, 80), Rows: clampSize(rows, 24)})
}

// Done is closed when the client has exited (its session or window went,
// or it was detached).
func (p *PTY) Done() <-chan struct{} { return p.done }

// Close ends both clients and waits for them: a hangup first, as a closed
// terminal would give, then a kill if one lingers. The anchor goes last,
// so the browser's client never runs without it.
// Close may be called more than once.
func (p *PTY) Close() error {
	p.closeOnce.Do(func() {
		stop(p.cmd, p.done, syscall.SIGHUP, 0)
		p.closeErr = p.f.Close()
		p.closeAnchor()
	})
	return p.closeErr
}

func (p *PTY) closeAnchor() {
	// A control client leaves when its input ends.
	_ = p.anchorIn.Close()
	stop(p.anchor, p.anchorDone, syscall.SIGTERM, 500*time.Millisecond)
}

// stop waits grace for a process to end by itself, then signals it, and
// kills it if it still lingers.
func stop(cmd *exec.Cmd, done <-chan struct{}, sig os.Signal, grace time.Duration) {
	select {
	case <-done:
		return
	case <-time.After(grace):
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}
