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
	"strings"
	"sync"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/orch"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/tmux"
	"github.com/sophonz/st/internal/web"
)

// webToken returns the web UI's secret, made once and kept in
// $ST_HOME/web.token (mode 0600), so that a URL printed by st web keeps
// working across restarts of st.
func webToken(home string) (string, error) {
	path := filepath.Join(home, "web.token")
	data, err := os.ReadFile(path)
	if err == nil && len(strings.TrimSpace(string(data))) >= 32 {
		return strings.TrimSpace(string(data)), nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	tok := hex.EncodeToString(b)
	return tok, store.WriteFile(path, []byte(tok+"\n"), 0o600)
}

// serveWeb starts the web UI on 127.0.0.1:port. A port that is taken is
// reported in the log, and st goes on without its web UI.
func serveWeb(ctx context.Context, cfg Config, token string, tm *tmux.Client, mgr *orch.Manager, pn *peerNet, log io.Writer) (string, func()) {
	port := cfg.WebPort
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		fmt.Fprintf(log, "web UI: cannot listen on 127.0.0.1:%d (%v); set another port with ST_WEB_PORT or web_port in config.toml\n", port, err)
		return "", func() {}
	}
	base := "http://" + ln.Addr().String()
	hosts := append([]string(nil), cfg.WebHosts...)
	if u, err := url.Parse(cfg.PushAnswerURL); err == nil && u.Host != "" {
		hosts = append(hosts, u.Host) // the phone's answers arrive by that name
	}
	h := web.New(web.Config{Token: token, Tmux: tm, Backend: &webBackend{mgr: mgr, tmux: tm, peers: pn}, Log: log,
		AllowedHosts: hosts,
		PeerTerm:     pn.openTerm,
		AnswerPush: func(ctx context.Context, tok string) error {
			_, err := mgr.AnswerGateByToken(ctx, tok)
			return err
		}})
	hs := &http.Server{Handler: h}
	go hs.Serve(ln)
	fmt.Fprintf(log, "web UI on %s\n", base)
	return base, func() {
		// Ends the terminals' websockets too, so their grouped sessions go.
		c, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		h.Close(c)
		hs.Close()
	}
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
}

type otherMachines struct {
	at       time.Time
	machines []web.Machine
	agents   []web.Agent
}

func (b *webBackend) Snapshot(ctx context.Context) (web.Snapshot, error) {
	host, _ := os.Hostname()
	snap := web.Snapshot{Machine: host, Agents: []web.Agent{}, Gates: []web.Gate{}}
	panes, err := b.tmux.ListPanes(ctx)
	if err != nil {
		return snap, err
	}
	where := map[string]tmux.Pane{}
	for _, p := range panes {
		where[p.ID] = p
	}
	if self, err := b.peers.Self(); err == nil {
		snap.Machine = self
	}
	seen := map[string]bool{}
	for _, a := range b.mgr.Graph() {
		p := where[a.Pane]
		wa := web.Agent{Pane: a.Pane, Name: a.Name, Kind: a.Kind, Role: a.Role, State: a.State, Since: a.Since,
			Summary: a.Summary, Parent: a.Parent, ParentGone: a.ParentGone, ParentShell: a.ParentShell, Run: a.Run, TeamOf: a.TeamOf,
			ParentName: a.ParentName, ParentMachine: a.ParentMachineName,
			Session: p.SessionID, Window: p.WindowID}
		if mach, pane, ok := strings.Cut(a.Pane, "/"); ok { // a worker on another machine
			wa.Machine, wa.Pane = mach, pane
		}
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
		snap.Gates = append(snap.Gates, web.Gate{ID: g.ID, Question: g.Question, Options: g.Options, Pane: g.Pane, Asked: g.Asked})
	}
	return snap, nil
}

func (b *webBackend) Changed() <-chan struct{} { return b.mgr.Changed() }

// Adopt is a person's drop of a card on a coordinator's, which may adopt
// even a teammate of a Claude agent team.
func (b *webBackend) Adopt(ctx context.Context, coordinatorPane, agentPane string) error {
	_, err := b.mgr.AdoptDropped(ctx, orch.IDRequest{Pane: coordinatorPane, ID: agentPane})
	return err
}

// webAside is an agent's subagents and teammates as the web UI shows them,
// with the session and window of each teammate's pane (where lists this
// machine's panes; nil for another machine's agents, whose names are
// checked like this machine's hooks).
func webAside(a orch.GraphAgent, where map[string]tmux.Pane) ([]web.Subagent, []web.Teammate) {
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
	_, err := b.mgr.Release(ctx, orch.IDRequest{ID: workerPane})
	return err
}

func (b *webBackend) AnswerGate(ctx context.Context, gateID, option string) error {
	_, err := b.mgr.AnswerGate(ctx, orch.GateRequest{ID: gateID, Option: option, By: "web"})
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
	for _, m := range ms {
		o.machines = append(o.machines, web.Machine{Slug: m.Slug, Name: m.Name, Online: m.Online, Accepts: m.AcceptRemote, This: m.Slug == self})
		if m.Slug == self || !m.Online {
			continue
		}
		wg.Add(1)
		go func(slug string) {
			defer wg.Done()
			var g []orch.GraphAgent
			if err := b.peers.Call(cctx, slug, api.PeerRouteGraph, struct{}{}, &g); err != nil {
				return
			}
			g = orch.CheckPeerGraph(g) // shown in the page: only what passes
			mu.Lock()
			defer mu.Unlock()
			for _, a := range g {
				wa := web.Agent{Pane: a.Pane, Name: a.Name, Kind: a.Kind, Role: a.Role, State: a.State, Since: a.Since,
					Summary: a.Summary, ParentGone: a.ParentGone, ParentShell: a.ParentShell, Run: a.Run, TeamOf: a.TeamOf, Machine: slug}
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
				o.agents = append(o.agents, wa)
			}
		}(m.Slug)
	}
	wg.Wait()
	b.others = o
	return o
}
