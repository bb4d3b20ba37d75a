package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/authz"
	"github.com/sophonz/st/internal/orch"
	"github.com/sophonz/st/internal/peer"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/tmux"
	"github.com/sophonz/st/internal/web"
)

// webSecret is what the web UI's links are made from (web.LinkToken), and
// the port they were made for. Both are kept in $ST_HOME/web.token (mode
// 0600): the secret on the first line, "port N" on the second, so that a
// link that st web printed keeps working across restarts of st on the same
// port, and none made for another port ever opens it.
type webSecret struct {
	secret string
	port   int // 0: not known yet (a new secret, or one kept by an older st)
}

const webSecretFile = "web.token"

// loadWebSecret reads the web UI's secret, or makes one.
func loadWebSecret(home string) (webSecret, error) {
	data, err := os.ReadFile(filepath.Join(home, webSecretFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return webSecret{}, err
	}
	lines := strings.Split(string(data), "\n")
	if s := strings.TrimSpace(lines[0]); len(s) >= 32 {
		ws := webSecret{secret: s}
		if len(lines) > 1 {
			if p, ok := strings.CutPrefix(strings.TrimSpace(lines[1]), "port "); ok {
				ws.port, _ = strconv.Atoi(p)
			}
		}
		return ws, nil
	}
	ws, err := newWebSecret()
	if err != nil {
		return webSecret{}, err
	}
	return ws, ws.save(home)
}

func newWebSecret() (webSecret, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return webSecret{}, err
	}
	return webSecret{secret: hex.EncodeToString(b)}, nil
}

func (ws webSecret) save(home string) error {
	text := ws.secret + "\n"
	if ws.port > 0 {
		text += fmt.Sprintf("port %d\n", ws.port)
	}
	return store.WriteFile(filepath.Join(home, webSecretFile), []byte(text), 0o600)
}

// forPort is the secret for links to port. When the links were made for
// another port, whoever listens there now (another user's server, after
// st gave that port up) may hold one: the secret is made anew, so that no
// link made before opens st anywhere, even should st come back to that
// port; moved is the port the links were made for (0 when they still
// work). A new secret that cannot be kept still serves this run.
func (ws webSecret) forPort(home string, port int, log io.Writer) (out webSecret, moved int, err error) {
	switch {
	case ws.port == port:
		return ws, 0, nil
	case ws.port == 0:
		ws.port = port
		return ws, 0, ws.save(home)
	}
	out, err = newWebSecret()
	if err != nil {
		return ws, 0, err
	}
	out.port = port
	if err := out.save(home); err != nil {
		fmt.Fprintf(log, "web UI: the new secret could not be kept in %s (%v): st web's link works until st stops\n", webSecretFile, err)
	}
	return out, ws.port, nil
}

// keptPortFile holds the port st took when the default was taken, so
// that the web UI's address stays the same across restarts of st.
const keptPortFile = "web.port"

// webListener is where the web UI listens, and what to tell of it.
type webListener struct {
	ln    net.Listener
	note  string     // the port is not the default, and why
	moved string     // the port is not the one st's links were made for: they open nothing now
	err   *api.Error // no listener: why, and what to do
	link  string     // the token of st web's link (web.LinkToken)
}

// listenWeb listens on 127.0.0.1 for the web UI. A port set on purpose
// (web_port, ST_WEB_PORT) is that port or an error. The default gives way:
// st takes the port it kept in $ST_HOME/web.port from an earlier time the
// default was taken, else the default, else a free one, which it keeps.
func listenWeb(home string, cfg Config) webListener {
	listen := func(port int) (net.Listener, error) { return net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)) }
	if cfg.WebPortSet || cfg.WebPort == 0 {
		ln, err := listen(cfg.WebPort)
		if err != nil {
			return webListener{err: &api.Error{Kind: api.KindConflict,
				Message: fmt.Sprintf("the web UI's port 127.0.0.1:%d, set in web_port (config.toml) or ST_WEB_PORT, cannot be used: %v", cfg.WebPort, err),
				Hint:    "free that port, or set another in web_port or ST_WEB_PORT (or remove it: st then takes a free port when 7766 is taken), then st down && st up"}}
		}
		return webListener{ln: ln}
	}
	kept := filepath.Join(home, keptPortFile)
	if b, err := os.ReadFile(kept); err == nil {
		if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && p > 0 && p != cfg.WebPort {
			if ln, err := listen(p); err == nil {
				return webListener{ln: ln, note: fmt.Sprintf("port %d, kept in %s since %d was taken", p, kept, cfg.WebPort)}
			}
		}
	}
	ln, err := listen(cfg.WebPort)
	if err == nil {
		os.Remove(kept)
		return webListener{ln: ln}
	}
	taken := err
	if ln, err = listen(0); err != nil {
		return webListener{err: &api.Error{Kind: api.KindInternal,
			Message: fmt.Sprintf("the web UI could not listen on 127.0.0.1: %d is taken (%v), and no free port was given (%v)", cfg.WebPort, taken, err),
			Hint:    "check the machine's loopback interface, then st down && st up"}}
	}
	port := ln.Addr().(*net.TCPAddr).Port
	why := "was taken"
	if !errors.Is(taken, syscall.EADDRINUSE) {
		why = fmt.Sprintf("could not be used (%v)", taken)
	}
	note := fmt.Sprintf("port %d, since %d %s; kept in %s", port, cfg.WebPort, why, kept)
	if err := store.WriteFile(kept, []byte(strconv.Itoa(port)+"\n"), 0o600); err != nil {
		note += fmt.Sprintf(" (could not be written: %v)", err)
	}
	return webListener{ln: ln, note: note}
}

// serveWeb starts the web UI (listenWeb says where). With no listener st
// goes on without its web UI; st web and st status say why.
func serveWeb(ctx context.Context, home string, cfg Config, ws webSecret, tm *tmux.Client, mgr *orch.Manager, pn *peerNet, log io.Writer) (webListener, string, func()) {
	wl := listenWeb(home, cfg)
	if wl.err != nil {
		fmt.Fprintf(log, "web UI: %s\nTry: %s\n", wl.err.Message, wl.err.Hint)
		return wl, "", func() {}
	}
	ln := wl.ln
	port := ln.Addr().(*net.TCPAddr).Port
	ws, from, err := ws.forPort(home, port, log)
	if err != nil {
		ln.Close()
		wl = webListener{err: &api.Error{Kind: api.KindInternal, Message: "the web UI has no secret: " + err.Error(), Hint: "st down && st up"}}
		fmt.Fprintf(log, "web UI: %s\n", wl.err.Message)
		return wl, "", func() {}
	}
	wl.link = web.LinkToken(ws.secret, port)
	if from != 0 && cfg.WebPort != 0 { // with ST_WEB_PORT=auto no port stays
		wl.moved = movedNote(from, port)
		fmt.Fprintf(log, "web UI: %s\n", wl.moved)
	}
	base := "http://" + ln.Addr().String()
	hosts := append([]string(nil), cfg.WebHosts...)
	if u, err := url.Parse(cfg.PushAnswerURL); err == nil && u.Host != "" {
		hosts = append(hosts, u.Host) // the phone's answers arrive by that name
	}
	h := web.New(web.Config{Secret: ws.secret, Tmux: tm, Backend: &webBackend{mgr: mgr, tmux: tm, peers: pn}, Log: log,
		AllowedHosts: hosts,
		PeerTerm:     pn.client().OpenTerm,
		AnswerPush: func(ctx context.Context, tok string) error {
			_, err := mgr.AnswerGateByToken(ctx, tok)
			return err
		},
		AnswerPushPrompt: func(ctx context.Context, tok string) error {
			_, err := mgr.AnswerPromptByToken(ctx, tok)
			return err
		}})
	hs := &http.Server{Handler: h}
	go hs.Serve(ln)
	fmt.Fprintf(log, "web UI on %s\n", base)
	if wl.note != "" {
		fmt.Fprintf(log, "web UI: %s\n", wl.note)
	}
	return wl, base, func() {
		// Ends the terminals' websockets too, so their grouped sessions go.
		c, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		h.Close(c)
		hs.Close()
	}
}

// movedNote says, loudly, that the web UI is not on the port its links
// were made for.
func movedNote(from, to int) string {
	return fmt.Sprintf("the web UI moved from port %d to port %d: links to 127.0.0.1:%d no longer open st "+
		"(another program may listen there now), and no link made before opens it on %d; open the address st web prints now", from, to, from, to)
}

// webBackend shows orch's state to the web UI and takes its actions.
type webBackend struct {
	mgr   *orch.Manager
	tmux  *tmux.Client
	peers *peerNet

	// others is the last look at the account's other machines, kept for
	// a few seconds so that pages do not make st ask them on every change.
	mu     sync.Mutex
	others *otherMachines
	// last is each machine's agents as it last answered, and when: while
	// it is offline or does not answer, they stay in the page marked
	// unreachable, as st worker list shows this machine's own records of
	// workers there, rather than vanish (issue 32, item 5).
	last map[string]lastLook
}

type lastLook struct {
	at     time.Time
	agents []web.Agent
}

type otherMachines struct {
	at       time.Time
	machines []web.Machine
	agents   []web.Agent
}

func (b *webBackend) Snapshot(ctx context.Context) (web.Snapshot, error) {
	host, _ := os.Hostname()
	snap := web.Snapshot{Machine: host, Agents: []web.Agent{}, Gates: []web.Gate{}, Limits: b.mgr.Limits()}
	panes, err := b.tmux.ListPanes(ctx)
	if err != nil {
		return snap, err
	}
	where := map[string]tmux.Pane{}
	for _, p := range panes {
		where[p.ID] = p
	}
	if self, err := b.peers.client().Self(); err == nil {
		snap.Machine = self
	}
	seen := map[string]bool{}
	// The web UI's session is the person at this machine's browser, who
	// reads every worker: asked of authz all the same, as every route
	// that shows workers asks it.
	graph := b.mgr.ShowTo(b.mgr.Graph(), func(id string) bool {
		return authz.MayRead(authz.Actor{Kind: authz.WebSession}, id, nil)
	}).([]api.GraphAgent)
	for _, a := range graph {
		p := where[a.Pane]
		wa := web.Agent{Pane: a.Pane, Name: a.Name, Kind: a.Kind, Role: a.Role, State: a.State, Since: a.Since,
			Summary: a.Summary, Parent: a.Parent, ParentGone: a.ParentGone, ParentShell: a.ParentShell, Screen: a.Screen, Run: a.Run, TeamOf: a.TeamOf,
			ParentName: a.ParentName, ParentMachine: a.ParentMachineName,
			Session: p.SessionID, Window: p.WindowID, Tokens: a.Tokens}
		if a.Pause != nil {
			wa.Resets, wa.GoesOn = a.Pause.Resets, a.Pause.By
		}
		if mach, pane, ok := strings.Cut(a.Pane, "/"); ok { // a worker on another machine
			wa.Machine, wa.Pane = mach, pane
		}
		// What the page offers is what the authorization model allows a
		// page of this machine to do (another machine's agents, added
		// below, have no record here to release).
		wa.Release = a.Parent != "" &&
			authz.Decide(authz.Actor{Kind: authz.WebSession}, authz.Release, authz.Target{ID: a.Pane}, nil).Allowed
		seen[a.Pane] = true
		if wa.Name == "" {
			wa.Name = p.WindowName
		}
		wa.Subagents, wa.Teammates = webAside(a, where)
		snap.Agents = append(snap.Agents, wa)
	}
	if o := b.otherMachines(ctx, snap.Machine); o != nil {
		snap.Machines = o.machines
		for _, a := range o.agents {
			if !seen[a.Machine+"/"+a.Pane] {
				snap.Agents = append(snap.Agents, a)
			}
		}
	}
	for _, g := range b.mgr.Gates(ctx, false) {
		wg := web.Gate{ID: g.ID, Question: g.Question, Options: g.Options, Pane: g.Pane, Asked: g.Asked}
		if g.Value != nil {
			wg.Value = &web.GateValue{Prefix: g.Value.Prefix}
		}
		snap.Gates = append(snap.Gates, wg)
	}
	for _, p := range b.mgr.Prompts() {
		snap.Prompts = append(snap.Prompts, web.Prompt{ID: p.ID, Pane: p.Pane, Agent: p.Agent, Tool: p.Tool, Command: p.Command,
			Question: p.Question, Options: p.Options, Opened: p.Opened, Deadline: p.Deadline})
	}
	if l, err := b.mgr.Attention(ctx, api.AttentionRequest{}); err == nil {
		for _, a := range l.Items {
			wa := web.Attention{ID: a.ID, Kind: string(a.Kind), Pane: a.Pane, Machine: a.Machine, Name: a.Name, Agent: a.Agent,
				Text: a.Text, Command: a.Command, Options: a.Options, Gate: a.Gate, Opened: a.Opened}
			if mach, pane, ok := strings.Cut(a.Pane, "/"); ok { // a worker on another machine
				wa.Machine, wa.Pane = mach, pane
			}
			snap.Attention = append(snap.Attention, wa)
		}
	}
	return snap, nil
}

func (b *webBackend) Changed() <-chan struct{} { ch, _ := b.mgr.Changes(); return ch }

// Adopt is a person's drop of a card on a coordinator's, which may adopt
// even a teammate of a Claude agent team.
func (b *webBackend) Adopt(ctx context.Context, coordinatorPane, agentPane string) error {
	_, err := b.mgr.AdoptDropped(ctx, api.IDRequest{Pane: coordinatorPane, ID: agentPane})
	return err
}

// webAside is an agent's subagents and teammates as the web UI shows them,
// with the session and window of each teammate's pane (where lists this
// machine's panes; nil for another machine's agents, whose names are
// checked like this machine's hooks).
func webAside(a api.GraphAgent, where map[string]tmux.Pane) ([]web.Subagent, []web.Teammate) {
	var subs []web.Subagent
	for _, s := range a.Subagents {
		if !agent.ValidSubagent(s.ID, s.Type) {
			continue
		}
		subs = append(subs, web.Subagent{ID: s.ID, Type: s.Type, State: s.State, Since: s.Since, Started: s.Started})
	}
	var mates []web.Teammate
	for _, t := range a.Teammates {
		if id := (agent.Teammate{Name: t.Name, Team: t.Team, Pane: t.Pane, Color: t.Color}); !id.Valid() {
			continue
		}
		wt := web.Teammate{Name: t.Name, Team: t.Team, Pane: t.Pane, InProcess: t.InProcess, Color: t.Color,
			State: t.State, Since: t.Since, Started: t.Started}
		if p, ok := where[t.Pane]; ok {
			wt.Session, wt.Window = p.SessionID, p.WindowID
		}
		mates = append(mates, wt)
	}
	return subs, mates
}

func (b *webBackend) Release(ctx context.Context, workerPane string) error {
	_, err := b.mgr.Release(ctx, api.IDRequest{ID: workerPane})
	return err
}

func (b *webBackend) AnswerPrompt(ctx context.Context, promptID, option string) error {
	_, err := b.mgr.AnswerPrompt(ctx, api.PromptAnswerRequest{ID: promptID, Option: option, By: "web"})
	return err
}

func (b *webBackend) AnswerGate(ctx context.Context, gateID, option string) error {
	_, err := b.mgr.AnswerGate(ctx, api.GateRequest{ID: gateID, Option: option, By: "web"})
	return err
}

func (b *webBackend) DismissAttention(ctx context.Context, id string) error {
	_, err := b.mgr.DismissAttention(ctx, api.AttentionRequest{ID: id})
	return err
}

// othersEvery is how long a look at the other machines is reused.
const othersEvery = 3 * time.Second

// otherMachines lists the account's machines and the agents on the ones
// online (each asked for its graph over the peer API), or nil when this
// machine is not signed in.
func (b *webBackend) otherMachines(ctx context.Context, self string) *otherMachines {
	id := b.peers.identity()
	if id == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.others != nil && time.Since(b.others.at) < othersEvery {
		return b.others
	}
	o := &otherMachines{at: time.Now()}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	ms, err := id.Machines(cctx)
	if err != nil {
		if b.others != nil {
			return b.others // the control plane did not answer: keep the last look
		}
		return nil
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	if b.last == nil {
		b.last = map[string]lastLook{}
	}
	for _, m := range ms {
		o.machines = append(o.machines, web.Machine{Slug: m.Slug, Name: m.Name, Online: m.Online, Accepts: m.AcceptRemote, This: m.Slug == self})
		if m.Slug == self {
			continue
		}
		wg.Add(1)
		go func(slug string, online bool) {
			defer wg.Done()
			var agents []web.Agent
			var err error
			if online {
				agents, err = b.lookAt(cctx, slug, self)
			}
			mu.Lock()
			defer mu.Unlock()
			if online && err == nil {
				b.last[slug] = lastLook{at: o.at, agents: agents}
				o.agents = append(o.agents, agents...)
				return
			}
			// Offline, or no answer: its agents as last seen, unreachable.
			l := b.last[slug]
			for _, a := range l.agents {
				if a.State != "done" && a.State != "failed" && a.State != "gone" {
					a.State, a.Since = "unreachable", l.at
				}
				o.agents = append(o.agents, a)
			}
		}(m.Slug, m.Online)
	}
	wg.Wait()
	b.others = o
	return o
}

// lookAt asks machine slug for its graph over the peer API, and returns
// its agents as this machine (self) shows them.
func (b *webBackend) lookAt(ctx context.Context, slug, self string) ([]web.Agent, error) {
	var g []api.GraphAgent
	if err := b.peers.client().Call(ctx, slug, api.PeerRouteGraph, struct{}{}, &g); err != nil {
		return nil, err
	}
	g = peer.CheckGraph(g) // shown in the page: only what passes
	var out []web.Agent
	for _, a := range g {
		wa := web.Agent{Pane: a.Pane, Name: a.Name, Kind: a.Kind, Role: a.Role, State: a.State, Since: a.Since,
			Summary: a.Summary, ParentGone: a.ParentGone, ParentShell: a.ParentShell, Screen: a.Screen, Run: a.Run, TeamOf: a.TeamOf, Machine: slug, Tokens: a.Tokens}
		wa.Subagents, wa.Teammates = webAside(a, nil)
		if strings.Contains(a.Pane, "/") {
			continue // that machine's record of a worker elsewhere
		}
		// Parents as this machine writes them: its own panes bare,
		// that machine's with its slug.
		switch pm, pp, ok := strings.Cut(a.Parent, "/"); {
		case a.Parent == "":
		case !ok:
			wa.Parent = slug + "/" + a.Parent
		case pm == self:
			wa.Parent = pp
		default:
			wa.Parent = a.Parent
		}
		out = append(out, wa)
	}
	return out, nil
}
