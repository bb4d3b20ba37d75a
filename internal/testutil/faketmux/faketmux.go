// Package faketmux is a tmux server for unit tests of the manager
// (internal/orch) and of other machines (internal/peer): it answers the
// commands the manager runs outside of typing (list-panes -a -F,
// display-message -p -t -F, set-option and its -u, show-options,
// capture-pane, rename-window) from panes the test sets up, through
// tmux.NewWithRunner. Any other command is recorded as unexpected (Check fails the test on
// it), since it may come from a goroutine that outlives the test.
package faketmux

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sophonz/st/internal/tmux"
)

// Pane is a pane of the fake server.
type Pane struct {
	ID, Window, Index, Session, SessName, WinName, Cmd, Path string
	PID                                                      int
	Dead                                                     bool
	Opts                                                     map[string]string // pane user options, @st_*
}

// field is the value of one #{...} of a -F format, as tmux would print it.
// A missing pane prints every field empty (tmux 3.3a display-message).
func (p *Pane) field(name string) (string, bool) {
	if p == nil {
		return "", true
	}
	switch name {
	case "pane_id":
		return p.ID, true
	case "window_id":
		return p.Window, true
	case "window_index":
		return p.Index, true
	case "session_id":
		return p.Session, true
	case "pane_pid":
		if p.PID == 0 {
			return "", true
		}
		return strconv.Itoa(p.PID), true
	case "pane_dead":
		if p.Dead {
			return "1", true
		}
		return "0", true
	case "session_name":
		return p.SessName, true
	case "window_name":
		return p.WinName, true
	case "pane_current_command":
		return p.Cmd, true
	case "pane_current_path":
		return p.Path, true
	}
	if strings.HasPrefix(name, "@") {
		return p.Opts[name], true
	}
	return "", false
}

// Server is the fake server. Its lock (Lock, Unlock) guards Panes and
// Unexpected; a test that holds it holds every command (a slow server).
type Server struct {
	sync.Mutex
	Panes      []*Pane
	Unexpected []string
	// Hold, when set (with the lock held), is called with each command
	// before it runs, with the lock let go: a test holds one kind of
	// command there, and lets every other go on.
	Hold func(args []string)
}

// Client is a tmux client of s.
func (s *Server) Client() *tmux.Client { return tmux.NewWithRunner("/tmp/fake.sock", s) }

// Find is the pane id, or nil. Called with s locked.
func (s *Server) Find(id string) *Pane {
	for _, p := range s.Panes {
		if p.ID == id {
			return p
		}
	}
	return nil
}

// Option reads a pane user option, under the lock.
func (s *Server) Option(pane, name string) string {
	s.Lock()
	defer s.Unlock()
	if p := s.Find(pane); p != nil {
		return p.Opts[name]
	}
	return ""
}

// Edit runs f on the server under its lock.
func (s *Server) Edit(f func(*Server)) {
	s.Lock()
	defer s.Unlock()
	f(s)
}

// Check fails t with every unexpected command the server saw.
func (s *Server) Check(t testing.TB) {
	s.Lock()
	defer s.Unlock()
	for _, u := range s.Unexpected {
		t.Errorf("unexpected tmux command: %s", u)
	}
}

func (s *Server) render(format string, p *Pane) string {
	parts := strings.Split(format, "\x1f")
	for i, part := range parts {
		name, ok := strings.CutPrefix(part, "#{")
		name, ok2 := strings.CutSuffix(name, "}")
		v, known := p.field(name)
		if !ok || !ok2 || !known {
			s.Unexpected = append(s.Unexpected, "format field "+part)
		}
		parts[i] = v
	}
	return strings.Join(parts, "\x1f")
}

// held waits in Hold, when one is set.
func (s *Server) held(args []string) {
	s.Lock()
	hold := s.Hold
	s.Unlock()
	if hold != nil {
		hold(args)
	}
}

// renameWindow names the window of pane. Called with s locked.
func (s *Server) renameWindow(pane, name string) error {
	p := s.Find(pane)
	if p == nil {
		return errors.New("can't find pane: " + pane)
	}
	for _, o := range s.Panes {
		if o.Window == p.Window {
			o.WinName = name
		}
	}
	return nil
}

// Run answers one tmux command (tmux.Runner).
func (s *Server) Run(ctx context.Context, args ...string) (string, error) {
	// Commands chained with ";" (SetOptions) run one after another.
	for i, a := range args {
		if a == ";" {
			if _, err := s.Run(ctx, args[:i]...); err != nil {
				return "", err
			}
			return s.Run(ctx, args[i+1:]...)
		}
	}
	s.held(args)
	s.Lock()
	defer s.Unlock()
	is := func(want ...string) bool {
		if len(args) != len(want) {
			return false
		}
		for i, w := range want {
			if w != "*" && args[i] != w {
				return false
			}
		}
		return true
	}
	switch {
	case is("kill-pane", "-t", "*"):
		for i, p := range s.Panes {
			if p.ID == args[2] {
				s.Panes = append(s.Panes[:i], s.Panes[i+1:]...)
				return "", nil
			}
		}
		return "", errors.New("can't find pane: " + args[2])
	case is("list-panes", "-a", "-F", "*"):
		var b strings.Builder
		for _, p := range s.Panes {
			b.WriteString(s.render(args[3], p) + "\n")
		}
		return b.String(), nil
	case is("display-message", "-p", "-t", "*", "-F", "*"):
		return s.render(args[5], s.Find(args[3])) + "\n", nil
	case is("set-option", "-p", "-t", "*", "*", "*"):
		p := s.Find(args[3])
		if p == nil {
			return "", errors.New("no such pane: " + args[3])
		}
		p.Opts[args[4]] = args[5]
		return "", nil
	case is("set-option", "-p", "-u", "-t", "*", "*"):
		p := s.Find(args[4])
		if p == nil {
			return "", errors.New("no such pane: " + args[4])
		}
		delete(p.Opts, args[5])
		return "", nil
	case is("show-options", "-p", "-q", "-v", "-t", "*", "*"):
		p := s.Find(args[5])
		if p == nil {
			return "", errors.New("no such pane: " + args[5])
		}
		return p.Opts[args[6]] + "\n", nil
	case is("capture-pane", "-p", "-t", "*"), is("capture-pane", "-p", "-e", "-t", "*"):
		return "", nil
	case is("rename-window", "-t", "*", "*"):
		return "", s.renameWindow(args[2], args[3])
	}
	s.Unexpected = append(s.Unexpected, strings.Join(args, " "))
	return "", errors.New("unexpected tmux command")
}
