package tmux

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/testutil"
)

// channelServer starts a private server with sessions a and b, and a
// Client of it with its control client and event watcher running.
func channelServer(t *testing.T) (*testutil.Tmux, *Client, <-chan Event) {
	t.Helper()
	tm := testutil.NewTmux(t, testutil.ShortTempDir(t))
	os.MkdirAll(filepath.Dir(tm.Socket), 0o700)
	for _, s := range []string{"a", "b"} {
		if _, err := tm.Run("-f", "/dev/null", "new-session", "-d", "-s", s, "-x", "80", "-y", "12", "sh"); err != nil {
			t.Fatal(err)
		}
	}
	c := New(tm.Socket)
	ev := c.Start()
	t.Cleanup(c.Stop)
	waitEvent(t, ev, ServerUp, 5*time.Second)
	testutil.WaitFor(t, 5*time.Second, func() (bool, string) { return c.Connected(), "no control client" })
	return tm, c, ev
}

// waitEvent waits for an event of kind k, and says how long it took.
func waitEvent(t *testing.T, ev <-chan Event, k EventKind, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := time.After(within)
	for {
		select {
		case e := <-ev:
			if e.Kind == k {
				return time.Since(start)
			}
		case <-deadline:
			t.Fatalf("no %s event within %s", k, within)
		}
	}
}

// drain empties the event channel.
func drain(ev <-chan Event) {
	for {
		select {
		case <-ev:
		case <-time.After(50 * time.Millisecond):
			return
		}
	}
}

func TestControlChannelCommands(t *testing.T) {
	tm, c, _ := channelServer(t)
	ctx := context.Background()
	panes, err := c.ListPanes(ctx)
	if err != nil || len(panes) != 2 {
		t.Fatalf("ListPanes over the control client: %v %v", panes, err)
	}
	// Words with tmux's and the shell's special characters arrive as they are.
	odd := `a "b" $HOME \x ; #{pane_id} ~ 'q' {x}`
	if err := c.SetOption(ctx, panes[0].ID, "@st_name", odd); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Option(ctx, panes[0].ID, "@st_name"); err != nil || got != odd {
		t.Errorf("option = %q %v, want %q", got, err, odd)
	}
	// An error keeps its kind.
	if _, err := c.Pane(ctx, "%999"); !errors.Is(err, ErrNoPane) {
		t.Errorf("missing pane: %v", err)
	}
	if err := c.SendKeys(ctx, "%999", "Enter"); !errors.Is(err, ErrNoPane) {
		t.Errorf("send-keys to a missing pane: %v", err)
	}
	// Chained commands: each its block.
	if err := c.SetOptions(ctx, map[string]map[string]string{panes[0].ID: {"@st_run": "run-1", "@st_role": "worker"}, panes[1].ID: {"@st_run": "run-2"}}); err != nil {
		t.Fatal(err)
	}
	if out, _ := tm.Run("show-options", "-p", "-v", "-t", panes[1].ID, "@st_run"); strings.TrimSpace(out) != "run-2" {
		t.Errorf("@st_run on %s = %q", panes[1].ID, out)
	}
	// A line break cannot go over the control client; it goes as a process.
	if err := c.SetOption(ctx, panes[0].ID, "@st_x", "a\nb"); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Option(ctx, panes[0].ID, "@st_x"); got != "a\nb" {
		t.Errorf("a value with a line break = %q", got)
	}
}

// TestControlCaptureIsReadByItsHeight: a pane that prints lines looking
// like the end of a block (with and without the right numbers) is
// captured whole, and the stream goes on in step.
func TestControlCaptureIsReadByItsHeight(t *testing.T) {
	tm, c, _ := channelServer(t)
	ctx := context.Background()
	// Learn the numbers the server is at, and print ends that use them.
	out, err := tm.Run("new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "a:",
		`for n in $(seq 1 400); do :; done; printf 'top\n%%end 1 2 1\n%%error 0 0 1\n%%exit\n%%begin 1 2 1\nbottom\n'; sleep 60`)
	if err != nil {
		t.Fatal(err)
	}
	pane := strings.TrimSpace(out)
	var screen string
	testutil.WaitFor(t, 5*time.Second, func() (bool, string) {
		screen, err = c.Capture(ctx, pane)
		return err == nil && strings.Contains(screen, "bottom"), screen
	})
	lines := strings.Split(strings.TrimSuffix(screen, "\n"), "\n")
	if len(lines) != 12 || lines[0] != "top" || lines[1] != "%end 1 2 1" || lines[5] != "bottom" {
		t.Errorf("capture = %q", lines)
	}
	for i := 0; i < 20; i++ {
		if p, err := c.Pane(ctx, pane); err != nil || p.ID != pane {
			t.Fatalf("after the capture the stream is out of step: %+v %v", p, err)
		}
		if s, err := c.Capture(ctx, pane); err != nil || s != screen {
			t.Fatalf("capture %d differs: %q %v", i, s, err)
		}
	}
	if !c.Connected() {
		t.Error("the control client ended")
	}
	if _, err := c.Capture(ctx, "%999"); !errors.Is(err, ErrNoPane) {
		t.Errorf("capture of a missing pane: %v", err)
	}
}

// TestEventsFromEverySession: changes in any session, not only the one
// the control client is attached to, come as events within milliseconds;
// the server's exit too; a new server is found again.
func TestEventsFromEverySession(t *testing.T) {
	tm, c, ev := channelServer(t)
	drain(ev)
	ctx := context.Background()
	step := func(what string, do func()) {
		t.Helper()
		drain(ev)
		do()
		d := waitEvent(t, ev, Changed, 3*time.Second)
		t.Logf("%s: event after %s", what, d.Round(time.Microsecond))
	}
	var split string
	step("a pane split in session b", func() {
		out, err := tm.Run("split-window", "-d", "-P", "-F", "#{pane_id}", "-t", "b:", "sleep 60")
		if err != nil {
			t.Fatal(err)
		}
		split = strings.TrimSpace(out)
	})
	step("that pane closed", func() { tm.Run("kill-pane", "-t", split) })
	step("a pane's program exits in session b", func() { tm.Run("split-window", "-d", "-t", "b:", "true") })
	step("a window in session b", func() { tm.Run("new-window", "-d", "-t", "b:", "sleep 60") })
	step("session b killed", func() { tm.Run("kill-session", "-t", "b") })
	// The attached session goes: the client attaches to another.
	tm.Run("new-session", "-d", "-s", "c", "sh")
	step("the attached session killed", func() { tm.Run("kill-session", "-t", "a") })
	testutil.WaitFor(t, 5*time.Second, func() (bool, string) { return c.Connected(), "not attached again" })
	if _, err := c.ListPanes(ctx); err != nil {
		t.Fatal(err)
	}
	// The server exits.
	drain(ev)
	tm.Run("kill-server")
	d := waitEvent(t, ev, ServerGone, 3*time.Second)
	t.Logf("server killed: ServerGone after %s", d.Round(time.Microsecond))
	if c.Connected() {
		t.Error("still connected to a dead server")
	}
	// Commands go as processes meanwhile, and say the server is gone.
	if _, err := c.ListPanes(ctx); err != nil {
		t.Errorf("ListPanes with no server: %v", err)
	}
	// A new server is found (st kicks the watcher when it starts one).
	tm.Run("-f", "/dev/null", "new-session", "-d", "-s", "d", "sh")
	c.Kick()
	waitEvent(t, ev, ServerUp, 5*time.Second)
	testutil.WaitFor(t, 5*time.Second, func() (bool, string) { return c.Connected(), "not attached to the new server" })
	// Stop takes st's hooks off.
	c.Stop()
	if out, _ := tm.Run("show-hooks", "-g"); strings.Contains(out, "st-events") {
		t.Errorf("st's hooks are left after Stop:\n%s", out)
	}
}

// TestMarkMovesWithEveryChange: the mark (Client.Mark) is different right
// after each change st's hooks hear of, before any event reaches st (a
// list may trust an unchanged mark and skip reading every pane), and the
// same after commands that change no pane, window or session.
func TestMarkMovesWithEveryChange(t *testing.T) {
	tm, c, _ := channelServer(t)
	ctx := context.Background()
	mark := func() Mark {
		t.Helper()
		m, ok := c.Mark(ctx)
		if !ok {
			t.Fatal("no mark with the control client up")
		}
		if id, err := c.ServerID(ctx); err != nil || m.Server != id {
			t.Fatalf("the mark names the server %q, ServerID %q (%v)", m.Server, id, err)
		}
		return m
	}
	before := mark()
	for _, read := range [][]string{{"list-panes", "-a"}, {"display-message", "-p", "x"}, {"show-options", "-g"}} {
		tm.Run(read...)
	}
	if m := mark(); m != before {
		t.Errorf("reads changed the mark: %v, was %v", m, before)
	}
	out, err := tm.Run("new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "b:", "sleep 60")
	if err != nil {
		t.Fatal(err)
	}
	win := strings.TrimSpace(out)
	var dying string
	for _, ch := range []struct {
		what string
		do   func()
	}{
		{"a window in another session", func() {}},
		{"a pane split", func() {
			out, _ := tm.Run("split-window", "-d", "-P", "-F", "#{pane_id}", "-t", win, "sleep 60")
			dying = strings.TrimSpace(out)
		}},
		{"a pane killed", func() { tm.Run("kill-pane", "-t", dying) }},
		{"a window renamed", func() { tm.Run("rename-window", "-t", win, "other") }},
		{"a window killed", func() { tm.Run("kill-window", "-t", win) }},
		{"a session made", func() { tm.Run("new-session", "-d", "-s", "e", "sleep 60") }},
		{"a session killed", func() { tm.Run("kill-session", "-t", "e") }},
	} {
		ch.do()
		if m := mark(); m == before {
			t.Errorf("%s: the mark did not move (%v)", ch.what, m)
		} else {
			before = m
		}
	}
	// A pane whose program exits by itself: its hook runs as the server
	// notices the exit, not in a command of anyone's; the mark moves by
	// the time st hears of it.
	tm.Run("split-window", "-d", "-t", "b:", "true")
	testutil.WaitFor(t, 5*time.Second, func() (bool, string) {
		m := mark()
		return m != before, "the mark did not move when a pane's program exited"
	})
}
