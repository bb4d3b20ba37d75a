package machines

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sophonz/st/internal/testutil"
)

// These are the holes of issue 23 between machines: what another machine
// may open and type into here, what an offer is, and what a machine keeps
// once it is removed from the account. Each runs direct and relayed.

// two makes alpha (the coordinator's) and beta (takes workers) of account
// acme, signed in and running, with a 1 s heartbeat.
func two(t *testing.T, way string) (c *testutil.Cluster, a, b *testutil.Machine, pa string) {
	t.Helper()
	c = testutil.NewClusterWay(t, way)
	c.Extra = []string{"ST_HEARTBEAT=1s", "ST_PEER_RETRY=20s"}
	a, b = c.Machine("alpha", "127.0.0.2"), c.Machine("beta", "127.0.0.3")
	for _, m := range []*testutil.Machine{a, b} {
		m.Login("acme")
	}
	pa = a.Up()
	b.Up()
	b.MustST("", "orch", "accept-remote", "on")
	return
}

// peerTerm is a terminal of another machine's pane, as a machine's web
// UI page opens it: a websocket to this machine's web UI (/st/term with
// machine and pane), which its st bridges over the peer connection.
type peerTerm struct {
	c      *websocket.Conn
	screen chan []byte // what was drawn, message by message
	closed chan error  // the close, with its code and reason
}

// openPeerTerm opens machine's pane in m's web UI, read-only or not.
func openPeerTerm(t *testing.T, m *testutil.Machine, machine, pane string, readOnly bool) *peerTerm {
	t.Helper()
	u, err := url.Parse(strings.TrimSpace(m.MustST("", "web")))
	if err != nil {
		t.Fatal(err)
	}
	ro := "0"
	if readOnly {
		ro = "1"
	}
	q := url.Values{"machine": {machine}, "pane": {pane}, "cols": {"100"}, "rows": {"30"}, "ro": {ro}, "token": {u.Query().Get("token")}}
	ws := "ws://" + u.Host + "/st/term?" + q.Encode()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, ws, nil)
	if err != nil {
		t.Fatalf("open %s's %s in %s's web UI: %v", machine, pane, m.Name, err)
	}
	c.SetReadLimit(4 << 20)
	p := &peerTerm{c: c, screen: make(chan []byte, 1024), closed: make(chan error, 1)}
	go func() {
		for {
			typ, data, err := c.Read(context.Background())
			if err != nil {
				p.closed <- err
				return
			}
			if typ == websocket.MessageBinary {
				select {
				case p.screen <- data:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() { c.CloseNow() })
	return p
}

// refusedBefore waits for the terminal to be closed by a refusal whose
// reason says want, and fails when any of the pane's screen came first.
func (p *peerTerm) refusedBefore(t *testing.T, want string) {
	t.Helper()
	select {
	case err := <-p.closed:
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != 4403 || !strings.Contains(ce.Reason, want) {
			t.Errorf("closed with %v, want 4403 saying %q", err, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no refusal within 30s (want %q)", want)
	}
	if len(p.screen) > 0 {
		t.Errorf("%d messages of the pane's screen were sent before the refusal", len(p.screen))
	}
}

// drawn waits for the first drawing of the pane.
func (p *peerTerm) drawn(t *testing.T) {
	t.Helper()
	select {
	case <-p.screen:
	case err := <-p.closed:
		t.Fatalf("closed before anything was drawn: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("nothing drawn within 30s")
	}
}

// closeTerms closes the terminals a test opened, and waits until m's st
// has closed their tmux sessions: a tmux 3.3a server whose web sessions
// are still being closed when the test's cleanup kills its st and then
// the server, was seen to outlive kill-server by a minute.
func closeTerms(t *testing.T, m *testutil.Machine, terms ...*peerTerm) {
	t.Helper()
	for _, p := range terms {
		p.c.Close(websocket.StatusNormalClosure, "the test is done")
	}
	testutil.WaitFor(t, 30*time.Second, func() (bool, string) {
		out, err := m.Tmux.Run("list-sessions", "-F", "#{session_name}")
		return err == nil && !strings.Contains(out, "st-web-"), "web sessions still open on " + m.Name + ":\n" + out
	})
}

func (p *peerTerm) typeKeys(text string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return p.c.Write(ctx, websocket.MessageBinary, []byte(text))
}

func TestMachinesPeerTerminalOnlyWhatWasHanded(t *testing.T) {
	eachWay(t, peerTerminalOnlyWhatWasHanded)
}

// peerTerminalOnlyWhatWasHanded (issue 23, item 1): with accept-remote on,
// beta opened to alpha's web UI any agent's window (its own coordinator's
// and workers' too) and took alpha's keys as alpha's page said. Now only a
// pane handed to alpha opens: alpha's worker (typing), an agent a person
// on beta offered to alpha (read-only until alpha adopts it); of the rest,
// not one byte of the screen is sent, and nothing is typed.
func peerTerminalOnlyWhatWasHanded(t *testing.T, way string) {
	c, a, b, pa := two(t, way)
	slow := c.TaskFile("slow.md", "sleep: 300s\nsummary: slept\n")
	// beta's own: a coordinator with a worker, and an agent of no one.
	boss := b.HandAgent("boss")
	mine := has(t, b.MustST(boss, "worker", "start", "--agent", "sim", "--task", slow, "--name", "mine"), `(?m)^(%\d+) mine$`)[1]
	lone := b.HandAgent("lone")
	// alpha's worker on beta.
	far := strings.TrimPrefix(has(t, must(t)(a.In(pa, "worker", "start", "--machine", "beta", "--agent", "sim", "--task", slow, "--name", "far")),
		`(?m)^(beta/%\d+) far$`)[1], "beta/")

	before := map[string]string{}
	for _, p := range []string{boss, mine, lone} {
		before[p] = b.Capture(p)
		term := openPeerTerm(t, a, "beta", p, false)
		term.typeKeys("zz-not-handed-zz")
		term.refusedBefore(t, p+" was not handed to alpha")
	}
	// Offered to alpha: read-only, whatever the page asks.
	b.MustST("", "worker", "offer", lone, "--machine", "alpha")
	offered := openPeerTerm(t, a, "beta", lone, false)
	offered.drawn(t)
	if err := offered.typeKeys("yy-offered-yy"); err != nil {
		t.Fatal(err)
	}
	// alpha's worker: typed into.
	worker := openPeerTerm(t, a, "beta", far, false)
	worker.drawn(t)
	if err := worker.typeKeys("hi-from-alpha"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, func() (bool, string) {
		s := b.Capture(far)
		return strings.Contains(s, "hi-from-alpha"), "far's pane on beta:\n" + s
	})
	// Adopted, the offer is alpha's worker: typed into too (and what was
	// typed while it was only offered never arrived).
	must(t)(a.In(pa, "worker", "adopt", "beta/"+lone))
	adopted := openPeerTerm(t, a, "beta", lone, false)
	adopted.drawn(t)
	adopted.typeKeys("ok-adopted")
	testutil.WaitFor(t, 30*time.Second, func() (bool, string) {
		s := b.Capture(lone)
		return strings.Contains(s, "ok-adopted"), "lone's pane on beta:\n" + s
	})
	if s := b.Capture(lone); strings.Contains(s, "yy") || strings.Contains(s, "zz") {
		t.Errorf("keys typed while lone was not alpha's worker reached it:\n%s", s)
	}
	for _, p := range []string{boss, mine} {
		if s := b.Capture(p); s != before[p] || strings.Contains(s, "zz") {
			t.Errorf("beta's %s changed after alpha's refused terminal:\n%s", p, s)
		}
	}
	if log, _ := os.ReadFile(filepath.Join(b.Home, "daemon.log")); regexp.MustCompile(`opens the window of (` + regexp.QuoteMeta(boss) + `|` + regexp.QuoteMeta(mine) + `)\b`).Match(log) {
		t.Errorf("beta opened a window of its own agents for alpha:\n%s", log)
	}
	closeTerms(t, b, offered, worker, adopted)
}

func TestMachinesOfferIsNotAPaneOption(t *testing.T) { eachWay(t, offerIsNotAPaneOption) }

// offerIsNotAPaneOption (issue 23, item 2): an offer was the pane option
// @st_offer, which any process that reaches beta's tmux socket sets (an
// agent there: tmux set-option -p -t %0 @st_offer alpha), after which
// alpha adopted and typed into that pane. Now offers live in st's own
// state, made by a person's st worker offer: the option offers nothing.
// A real offer outlives a restart of beta's st, and goes with its pane.
func offerIsNotAPaneOption(t *testing.T, way string) {
	_, a, b, pa := two(t, way)
	lone := b.HandAgent("lone")
	must(t)(b.Tmux.Run("set-option", "-p", "-t", lone, "@st_offer", "alpha"))
	out, err := a.In(pa, "worker", "adopt", "beta/"+lone)
	refused(t, out, err, "was not offered to alpha", "st worker offer "+lone+" --machine alpha")
	openPeerTerm(t, a, "beta", lone, false).refusedBefore(t, lone+" was not handed to alpha")
	if l := must(t)(a.In(pa, "worker", "list")); strings.Contains(l, lone) {
		t.Fatalf("alpha lists beta's agent after a refused adoption:\n%s", l)
	}
	// A person's offer: kept by beta's st across its restart.
	b.MustST("", "worker", "offer", lone, "--machine", "alpha")
	b.KillDaemon()
	b.Up()
	has(t, must(t)(a.In(pa, "worker", "adopt", "beta/"+lone)), `adopted beta/`+regexp.QuoteMeta(lone)+` lone \(sim\)`)
	// An offer goes with its pane.
	other := b.HandAgent("other")
	b.MustST("", "worker", "offer", other, "--machine", "alpha")
	must(t)(b.Tmux.Run("kill-pane", "-t", other))
	testutil.WaitFor(t, 30*time.Second, func() (bool, string) {
		data, _ := os.ReadFile(filepath.Join(b.Home, "offers.json"))
		return !strings.Contains(string(data), `"`+other+`"`), "offers.json still holds the closed pane's offer:\n" + string(data)
	})
}

func TestMachinesRevokedTerminalCloses(t *testing.T) { eachWay(t, revokedTerminalCloses) }

// revokedTerminalCloses (issue 23, item 3): after st control-plane machine
// remove alpha, keys typed into a terminal alpha had open on beta still
// arrived seconds later: only new requests were refused. Now beta closes
// every connection of alpha at the heartbeat that tells it (1 s here):
// the terminal closes, and nothing typed after reaches beta.
func revokedTerminalCloses(t *testing.T, way string) {
	c, a, b, pa := two(t, way)
	slow := c.TaskFile("slow.md", "sleep: 300s\nsummary: slept\n")
	far := strings.TrimPrefix(has(t, must(t)(a.In(pa, "worker", "start", "--machine", "beta", "--agent", "sim", "--task", slow, "--name", "far")),
		`(?m)^(beta/%\d+) far$`)[1], "beta/")
	term := openPeerTerm(t, a, "beta", far, false)
	term.drawn(t)
	term.typeKeys("before-removal")
	testutil.WaitFor(t, 30*time.Second, func() (bool, string) {
		s := b.Capture(far)
		return strings.Contains(s, "before-removal"), "far's pane on beta:\n" + s
	})
	has(t, c.RemoveMachine("alpha", "acme"), `removed machine alpha`)
	removed := time.Now()
	// Keys typed all along: none of them may arrive once beta knows.
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if term.typeKeys("k") != nil {
				return
			}
		}
	}()
	defer close(stop)
	select {
	case err := <-term.closed:
		t.Logf("alpha's terminal of far on beta closed %s after alpha's removal (heartbeat 1s): %v",
			time.Since(removed).Round(time.Millisecond), err)
	case <-time.After(60 * time.Second):
		t.Fatalf("alpha's terminal on beta still open 60s after alpha's removal; far's pane:\n%s", b.Capture(far))
	}
	// Closed at both ends: a key typed now goes nowhere.
	if err := term.typeKeys("after-close"); err == nil {
		t.Error("alpha's page could still type into the terminal after it closed")
	}
	out, err := a.In(pa, "worker", "send", "beta/"+far, "after removal")
	refused(t, out, err)
	if s := b.Capture(far); strings.Contains(s, "after removal") {
		t.Errorf("alpha's send reached beta after its removal:\n%s", s)
	}
	closeTerms(t, b)
}
