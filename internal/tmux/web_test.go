package tmux

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sophonz/st/internal/testutil"
)

func TestIsWebSession(t *testing.T) {
	for name, want := range map[string]bool{
		"st-web-0a1b2c": true, NewWebSessionName(): true, "main": false, "st-webx": false, "": false,
	} {
		if got := IsWebSession(name); got != want {
			t.Errorf("IsWebSession(%q) = %v, want %v", name, got, want)
		}
	}
	if a, b := NewWebSessionName(), NewWebSessionName(); a == b {
		t.Errorf("two names alike: %s", a)
	}
}

// syncBuf collects what a pty prints while the test reads it.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRealTmuxWebSession walks the web terminal's life cycle on a private
// server: group, select, attach small in a pty, and check that the
// window's size and the original session's window in front are untouched,
// and that the grouped session can be cleared after.
func TestRealTmuxWebSession(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a tmux server")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed: scripts/test installs it")
	}
	c := New(filepath.Join(testutil.ShortTempDir(t), "sock"))
	ctx := context.Background()
	t.Cleanup(func() { c.Run(context.Background(), "kill-server") })
	if _, err := c.Run(ctx, "new-session", "-d", "-s", "main", "-x", "100", "-y", "30", "sh"); err != nil {
		t.Fatal(err)
	}
	w2, err := c.NewWindow(ctx, NewWindowOpts{Target: "main", Name: "two", Command: []string{"sh"}})
	if err != nil {
		t.Fatal(err)
	}
	before, err := c.WindowSizeOf(ctx, w2.WindowID)
	if err != nil || before != (WindowSize{100, 30}) {
		t.Fatalf("size before = %v, %v", before, err)
	}
	act, err := c.ActiveWindows(ctx)
	if err != nil || act[w2.SessionID] == "" || act[w2.SessionID] == w2.WindowID {
		t.Fatalf("ActiveWindows = %v, %v; want the first window in front", act, err)
	}

	name := NewWebSessionName()
	if err := c.NewGroupedSession(ctx, w2.SessionID, name); err != nil {
		t.Fatal(err)
	}
	if s, _ := c.Run(ctx, "show-options", "-v", "-t", "="+name+":", "status-left"); s != "[main] \n" {
		t.Errorf("status-left of the grouped session = %q, want [main]", s)
	}
	if err := c.SelectWindow(ctx, name, w2.WindowID); err != nil {
		t.Fatal(err)
	}
	p, err := c.AttachPTY(ctx, AttachOpts{Session: name, ReadOnly: true, Cols: 20, Rows: 5})
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuf
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := p.Read(b)
			out.Write(b[:n])
			if err != nil {
				return
			}
		}
	}()
	testutil.WaitFor(t, 5*time.Second, func() (bool, string) {
		s, _ := c.Run(ctx, "list-clients", "-F", "#{client_session} #{client_flags}")
		return strings.Contains(s, name) && strings.Contains(s, "ignore-size") && strings.Contains(s, "read-only"),
			"clients: " + s
	})
	testutil.WaitFor(t, 5*time.Second, func() (bool, string) {
		return strings.Contains(out.String(), "\x1b["), "the client drew nothing"
	})
	if err := p.Resize(10, 3); err != nil {
		t.Fatal(err)
	}
	// tmux has taken the new size once it lists the client at 10x3: any
	// change of the window's size would have been made by then.
	testutil.WaitFor(t, 20*time.Second, func() (bool, string) {
		s, _ := c.Run(ctx, "list-clients", "-F", "#{client_session} #{client_width}x#{client_height}")
		return strings.Contains(s, name+" 10x3"), "clients: " + s
	})
	if got, err := c.WindowSizeOf(ctx, w2.WindowID); err != nil || got != before {
		t.Errorf("size with a small web client = %v, %v; want %v", got, err, before)
	}
	if got, _ := c.ActiveWindows(ctx); got[w2.SessionID] != act[w2.SessionID] {
		t.Errorf("window in front of main moved: %v, was %v", got, act)
	}

	// Closing the client leaves the session, unattached; st kills it.
	if err := p.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if err := c.KillStaleWebSessions(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	if s, _ := c.Run(ctx, "list-sessions", "-F", "#{session_name}"); !strings.Contains(s, name) {
		t.Errorf("a young session was swept: %s", s)
	}
	if err := c.KillStaleWebSessions(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if s, err := c.Run(ctx, "list-sessions", "-F", "#{session_name}"); strings.Contains(s, name) || !strings.Contains(s, "main") {
		t.Errorf("sessions after the sweep: %s, %v; want main only", s, err)
	}
	if err := c.KillSession(ctx, name); !errors.Is(err, ErrNoPane) {
		t.Errorf("KillSession of a gone session: %v, want ErrNoPane", err)
	}
	if _, err := c.AttachPTY(ctx, AttachOpts{Session: "nosuch"}); !errors.Is(err, ErrNoPane) {
		t.Errorf("AttachPTY to a missing session: %v, want ErrNoPane", err)
	}
	if _, err := c.WindowSizeOf(ctx, "@999"); err == nil {
		t.Error("WindowSizeOf(@999) succeeded")
	}
}
