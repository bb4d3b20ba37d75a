// Package daemon is st's long-running process: it holds the lock on
// ST_HOME, serves the API that the CLI and the agents' hooks call over
// HTTP on the unix socket $ST_HOME/st.sock (mode 0600, owner only), and
// runs the orch manager and its watchers.
package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/history"
	"github.com/sophonz/st/internal/orch"
	"github.com/sophonz/st/internal/peer"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/tmux"
	"github.com/sophonz/st/internal/version"
	"github.com/sophonz/st/internal/web"
)

// Options configure a daemon.
type Options struct {
	Home  string
	STBin string
	Log   io.Writer
	// Getenv reads settings that override config.toml (os.Getenv when nil).
	Getenv func(string) string
}

// ErrRunning means another daemon holds ST_HOME.
var ErrRunning = errors.New("st is already running")

// Run serves until ctx ends or a shutdown request comes.
func Run(ctx context.Context, o Options) error {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	cfg, unlock, err := claimHome(o)
	if err != nil {
		return err
	}
	defer unlock()
	ln, sock, err := listenSocket(o.Home)
	if err != nil {
		return err
	}
	defer os.Remove(sock)
	defer os.Remove(api.PidPath(o.Home))
	secret, err := loadWebSecret(o.Home)
	if err != nil {
		ln.Close()
		return fmt.Errorf("make the web UI's secret: %w", err)
	}
	tm := tmux.New(cfg.TmuxSocket)
	// One control client for st's commands, and the server's events.
	events := tm.Start()
	defer tm.Stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The other machines: the hub answers them and reaches them through
	// the peer listener's sign-in and connections (pn).
	pn := newPeerNet(ctx, o.Home, cfg.PeerListen, cfg.Heartbeat.Duration, o.Log)
	hub := peer.NewHub(peer.Config{Home: o.Home, Tmux: tm, Log: o.Log, Account: pn.client(), Retry: cfg.PeerRetry.Duration})
	pn.hub = hub
	pn.reload()
	var mgr *orch.Manager
	pusher := &attnPusher{target: cfg.PushURL, rules: cfg.Attention, ready: make(chan struct{}), front: tm.PanesInFront, now: time.Now, log: o.Log,
		post: func(ctx context.Context, title, body string, hdr map[string]string) error {
			return postPush(ctx, cfg.PushURL, title, body, hdr)
		},
		links: func(id string) ([]string, error) { return promptLinks(cfg.PushAnswerURL, mgr, id) }}
	defer pusher.stop()
	statusKick := make(chan struct{}, 1)
	hist := openHistory(o.Home, func(f string, a ...any) { fmt.Fprintf(o.Log, f+"\n", a...) })
	mgr, err = orch.NewManager(ctx, orch.Config{Home: o.Home, STBin: o.STBin, Tmux: tm, Log: o.Log, History: hist,
		OnGate:      func(g api.Gate) { pushGate(ctx, cfg.PushURL, cfg.PushAnswerURL, mgr, g, o.Log) },
		OnAttention: func(a api.Attention) { pusher.item(ctx, a) },
		OnAttentionCount: func() {
			select {
			case statusKick <- struct{}{}:
			default:
			}
		},
		Remote: hub, Events: events, SimForAgents: cfg.AgentsStartSim, NearLimit: cfg.Tokens.NearLimit,
		Prices: cfg.Tokens.Prices, Budget: cfg.Tokens.DefaultBudget(), OnLimitMove: cfg.OnLimitMove})
	if err != nil {
		ln.Close()
		return err
	}
	defer mgr.Close()
	pusher.book = mgr.AttentionBook()
	close(pusher.ready)
	hub.Attach(mgr)
	pn.start() // its listeners serve from now
	var loops sync.WaitGroup
	defer func() { cancel(); loops.Wait() }() // the loops end with ctx
	loops.Add(3)
	go func() { defer loops.Done(); keepStatus(ctx, o.Home, tm, mgr.AttentionCount, statusKick, o.Log) }()
	go func() { defer loops.Done(); pn.run(ctx) }()
	go func() { defer loops.Done(); mgr.Watch(ctx) }()
	wl, webBase, stopWeb := serveWeb(ctx, o.Home, cfg, secret, tm, mgr, pn, o.Log)
	defer stopWeb()
	s := &server{mgr: mgr, hub: hub, tmux: tm, peers: pn, cancel: cancel, info: api.StatusInfo{
		PID: os.Getpid(), Version: version.Version, Commit: version.Current().Commit, Binary: o.STBin, Home: o.Home, Socket: sock,
		TmuxSocket: tm.Socket(), Started: time.Now(), Web: webBase, WebNote: wl.note, WebMoved: wl.moved, WebError: wl.err,
		Push: cfg.PushURL != "", PushButtons: cfg.PushAnswerURL != "",
	}, token: wl.link, proc: realProc, hist: hist, log: o.Log, permissionWait: cfg.PermissionWait.Duration}
	fmt.Fprintf(o.Log, "st %s daemon listening on %s (tmux server %s)\n", version.Version, sock, tm.Socket())
	return s.serve(ctx, ln)
}

// claimHome makes ST_HOME, reads its config and takes its lock: one
// daemon per ST_HOME.
func claimHome(o Options) (Config, func(), error) {
	if err := store.CheckHome(o.Home); err != nil {
		return Config{}, nil, err
	}
	if err := os.MkdirAll(o.Home, 0o700); err != nil {
		return Config{}, nil, store.HomeWriteError(o.Home, "make its folder", err)
	}
	// Again, made: another user could have put a folder of theirs there
	// between the check and MkdirAll.
	if err := store.CheckHome(o.Home); err != nil {
		return Config{}, nil, err
	}
	cfg, err := LoadConfig(o.Home, o.Getenv)
	if err != nil {
		return Config{}, nil, err
	}
	// The agents described there: a refused one leaves the others (st
	// doctor tells what to fix, and a start that names it says so).
	for _, err := range agent.LoadDescribed(o.Home) {
		fmt.Fprintf(os.Stderr, "st: warning: %v\n", err)
	}
	lock, ok, err := store.TryLock(api.LockPath(o.Home))
	if err != nil {
		return Config{}, nil, store.HomeWriteError(o.Home, "take its lock", err)
	}
	if !ok {
		return Config{}, nil, fmt.Errorf("%w for %s", ErrRunning, o.Home)
	}
	if err := checkTmuxServer(o.Home, cfg, o.Getenv); err != nil {
		lock.Unlock()
		return Config{}, nil, err
	}
	return cfg, func() { lock.Unlock() }, nil
}

// listenSocket listens on st's socket (for this user only) and writes the
// daemon's pid beside it.
func listenSocket(home string) (net.Listener, string, error) {
	sock := api.SocketPath(home)
	os.Remove(sock) // a stale socket of a daemon that died; we hold the lock
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, "", store.HomeWriteError(home, "make its socket st.sock", err)
	}
	if err := os.Chmod(sock, 0o600); err != nil {
		ln.Close()
		os.Remove(sock)
		return nil, "", fmt.Errorf("restrict %s: %w", sock, err)
	}
	os.WriteFile(api.PidPath(home), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600)
	return ln, sock, nil
}

// serve answers on ln until ctx ends, then lets the requests in flight
// finish for up to two seconds.
func (s *server) serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s.routes(), ConnContext: peerCheck}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	shut, c2 := context.WithTimeout(context.Background(), 2*time.Second)
	defer c2()
	hs.Shutdown(shut)
	return nil
}

type ctxKey struct{}

// sockPeer is who is at the other end of a connection to the socket.
type sockPeer struct {
	owner bool // it runs as this user
	pid   int  // its process, as the kernel says
}

// peerCheck records whether the peer of a unix connection runs as this
// user (the handler refuses any other user even if the socket's mode were
// widened), and its pid, for the requests only a person may make.
func peerCheck(ctx context.Context, c net.Conn) context.Context {
	var p sockPeer
	if uc, isUnix := c.(*net.UnixConn); isUnix {
		if raw, err := uc.SyscallConn(); err == nil {
			raw.Control(func(fd uintptr) {
				cred, err := syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
				p.owner = err == nil && int(cred.Uid) == os.Getuid()
				if err == nil {
					p.pid = int(cred.Pid)
				}
			})
		}
	}
	return context.WithValue(ctx, ctxKey{}, p)
}

// panePID is the pid of the first process of pane (0 for none).
func (s *server) panePID(ctx context.Context, pane string) int {
	if !tmux.ValidPaneID(pane) {
		return 0
	}
	if tp, err := s.tmux.Pane(ctx, pane); err == nil {
		return tp.PID
	}
	return 0
}

type server struct {
	mgr    *orch.Manager
	hub    *peer.Hub // other machines (internal/peer); the facts authz decides by
	peers  *peerNet
	tmux   *tmux.Client
	cancel context.CancelFunc
	info   api.StatusInfo
	token  string        // the token of st web's link (web.LinkToken of the web UI's port)
	proc   procFS        // where callers' processes are read (/proc)
	hist   *history.Book // the runs that are over, on disk (history.go)
	log    io.Writer     // the daemon's log (nil: none)
	// permissionWait is how long a permission hook waits for a person
	// (permission_wait; 0: orch's default).
	permissionWait time.Duration
}

func decode[T any](body []byte) (T, error) {
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		return v, &api.Error{Kind: api.KindUsage, Message: "bad request: " + err.Error()}
	}
	return v, nil
}

func (s *server) status(ctx context.Context, r *http.Request, b []byte) (any, error) {
	i := s.info
	i.Orch = s.mgr.Status()
	i.LastRestore = s.mgr.LastRestore()
	i.Resuming = s.mgr.Resuming()
	if d := s.mgr.ServerDown(); !d.IsZero() {
		i.TmuxDown = &d
		i.Restoring = s.mgr.Restoring()
	}
	return i, nil
}

// shutdown ends the daemon once the answer is on its way.
func (s *server) shutdown(ctx context.Context, r *http.Request, b []byte) (any, error) {
	time.AfterFunc(50*time.Millisecond, s.cancel)
	return map[string]int{"pid": s.info.PID}, nil
}

func (s *server) webURL(ctx context.Context, r *http.Request, b []byte) (any, error) {
	if s.info.Web == "" {
		if e := s.info.WebError; e != nil {
			return nil, &api.Error{Kind: e.Kind, Message: "st's web UI is not running: " + e.Message, Hint: e.Hint}
		}
		return nil, &api.Error{Kind: api.KindInternal, Message: "st's web UI is not running (see the daemon log)", Hint: "st down && st up"}
	}
	return map[string]string{"url": s.info.Web + web.Path + "?token=" + s.token}, nil
}

func (s *server) remoteReload(ctx context.Context, r *http.Request, b []byte) (any, error) {
	if err := s.peers.reload(); err != nil {
		return nil, err
	}
	return s.peers.acceptRemote(ctx, api.AcceptRemoteRequest{})
}

// remoteRoutes says how each machine of the account is reached.
func (s *server) remoteRoutes(ctx context.Context, r *http.Request, b []byte) (any, error) {
	return s.peers.client().Routes(ctx)
}

func (s *server) hook(ctx context.Context, r *http.Request, b []byte) (any, error) {
	req, err := decode[api.HookRequest](b)
	if err != nil {
		return nil, err
	}
	if !s.sameServer(r) {
		return api.HookResponse{}, nil // an agent on another tmux server
	}
	from, err := s.hookOrigin(ctx, r, req)
	if err != nil {
		return nil, err
	}
	return s.mgr.HookFrom(ctx, req, from)
}

// statusLine is what Claude's status line said of a pane's agent (st
// statusline): like a hook event, it speaks only for the pane its
// process runs in (hookOrigin); one about no pane of st's tells st
// nothing.
func (s *server) statusLine(ctx context.Context, r *http.Request, b []byte) (any, error) {
	req, err := decode[api.HookRequest](b)
	if err != nil {
		return nil, err
	}
	if !s.sameServer(r) || !tmux.ValidPaneID(req.Pane) {
		return struct{}{}, nil
	}
	if _, err := s.hookOrigin(ctx, r, req); err != nil {
		return nil, err
	}
	return struct{}{}, s.mgr.StatusLine(req)
}

// promptWait is a permission hook's wait for a person's answer: from a
// process in the pane it names only (hookOrigin), as any hook event; the
// wait ends with the hook's connection.
func (s *server) promptWait(ctx context.Context, r *http.Request, b []byte) (any, error) {
	req, err := decode[api.HookRequest](b)
	if err != nil {
		return nil, err
	}
	if !s.sameServer(r) || !tmux.ValidPaneID(req.Pane) {
		return api.PromptDecision{}, nil // no pane of st's: nothing st may answer
	}
	if _, err := s.hookOrigin(ctx, r, req); err != nil {
		return nil, err
	}
	return s.mgr.WaitPrompt(ctx, req, s.permissionWait)
}

func (s *server) promptList(ctx context.Context, r *http.Request, b []byte) (any, error) {
	if _, err := decode[api.IDRequest](b); err != nil {
		return nil, err
	}
	return s.mgr.Prompts(), nil
}

func (s *server) promptAnswer(ctx context.Context, r *http.Request, b []byte) (any, error) {
	req, err := decode[api.PromptAnswerRequest](b)
	if err != nil {
		return nil, err
	}
	req.By = "cli" // a person's: the socket asked authz
	return s.mgr.AnswerPrompt(ctx, req)
}

func (s *server) gateList(ctx context.Context, r *http.Request, b []byte) (any, error) {
	req, err := decode[api.IDRequest](b)
	if err != nil {
		return nil, err
	}
	return s.mgr.Gates(ctx, req.All), nil
}

func (s *server) gateAnswer(ctx context.Context, r *http.Request, b []byte) (any, error) {
	req, err := decode[api.GateRequest](b)
	if err != nil {
		return nil, err
	}
	req.By = "cli" // a person's: the socket asked authz
	return s.mgr.AnswerGate(ctx, req)
}

func (s *server) acceptRemote(ctx context.Context, r *http.Request, b []byte) (any, error) {
	req, err := decode[api.AcceptRemoteRequest](b)
	if err != nil {
		return nil, err
	}
	return s.peers.acceptRemote(ctx, req)
}

func (s *server) sameServer(r *http.Request) bool {
	theirs := r.Header.Get(api.TmuxHeader)
	if theirs == "" {
		return true
	}
	return sameFile(theirs, s.tmux.Socket())
}

func sameFile(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// answer reads a request's body, runs fn on it and writes its result as
// JSON, or its error as an *api.Error (kind, message, hint) with 422.
func answer(w http.ResponseWriter, r *http.Request, fn func(body []byte) (any, error)) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		writeErr(w, &api.Error{Kind: api.KindUsage, Message: err.Error()}, http.StatusBadRequest)
		return
	}
	res, err := fn(body)
	if err != nil {
		var fb forbidden
		if errors.As(err, &fb) {
			writeErr(w, fb.e, http.StatusForbidden)
			return
		}
		var oe *api.Error
		if !errors.As(err, &oe) {
			oe = &api.Error{Kind: api.KindInternal, Message: err.Error()}
		}
		writeErr(w, oe, http.StatusUnprocessableEntity)
		return
	}
	// Encoded whole first, so that the answer goes out with its length in
	// one write: written as it was encoded, a list of 100 workers went out
	// chunked, in eleven writes, each parsed again by the command.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if r.Header.Get(api.IndentHeader) != "" {
		enc.SetIndent("", "  ")
		w.Header().Set(api.IndentHeader, "1")
	}
	if err := enc.Encode(res); err != nil {
		writeErr(w, &api.Error{Kind: api.KindInternal, Message: "encode st's answer: " + err.Error()}, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.Write(buf.Bytes())
}

func writeErr(w http.ResponseWriter, e *api.Error, code int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(e)
}

func (s *server) ls(ctx context.Context, r *http.Request, b []byte) (any, error) {
	panes, err := s.tmux.ListPanes(ctx)
	if err != nil {
		return nil, err
	}
	agents := s.mgr.AgentPanes()
	needs := s.mgr.AttentionByPane()
	out := []api.LsSession{}
	for _, ses := range tmux.Sessions(panes) {
		ls := api.LsSession{ID: ses.ID, Name: ses.Name}
		for _, w := range ses.Windows {
			lw := api.LsWindow{ID: w.ID, Index: w.Index, Name: w.Name}
			for _, p := range w.Panes {
				lw.Panes = append(lw.Panes, p.ID)
				kind := agents[p.ID]
				if kind == "" {
					kind = p.StAgent
				}
				if kind != "" {
					desc := p.ID + " " + kind
					if p.StRole != "" {
						desc += " " + p.StRole
					}
					if ad, err := agent.Lookup(kind); err == nil && ad.ScreenStates() {
						desc += " (states from its screen)"
					}
					if a, ok := needs[p.ID]; ok {
						desc += " (needs you: " + string(a.Kind) + ")"
					}
					lw.Agents = append(lw.Agents, desc)
					ls.Agents++
				}
				if _, ok := needs[p.ID]; ok {
					ls.Attention++
				}
			}
			ls.Windows = append(ls.Windows, lw)
		}
		out = append(out, ls)
	}
	return out, nil
}
