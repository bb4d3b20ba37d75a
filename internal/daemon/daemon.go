// Package daemon is st's long-running process: it holds the lock on
// ST_HOME, serves the API that the CLI and the agents' hooks call over
// HTTP on the unix socket $ST_HOME/st.sock (mode 0600, owner only), and
// runs the orch manager and its watchers.
package daemon

import (
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
	"strings"
	"syscall"
	"time"

	"github.com/sophonz/st/internal/orch"
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

// SocketPath is where the daemon of home listens.
func SocketPath(home string) string { return filepath.Join(home, "st.sock") }

// PidPath is where the daemon of home writes its pid.
func PidPath(home string) string { return filepath.Join(home, "st.pid") }

// ErrRunning means another daemon holds ST_HOME.
var ErrRunning = errors.New("st is already running")

// StatusInfo is what /v1/status answers.
type StatusInfo struct {
	PID        int         `json:"pid"`
	Version    string      `json:"version"`
	Home       string      `json:"home"`
	Socket     string      `json:"socket"`
	TmuxSocket string      `json:"tmux_socket"`
	Started    time.Time   `json:"started"`
	Orch       orch.Status `json:"orch"`
	// Web is the web UI's address ("" when it could not listen).
	Web string `json:"web,omitempty"`
	// LastRestore are the figures of st's last restore of the tmux server.
	LastRestore orch.RestoreStats `json:"last_restore"`
	// TmuxDown is since when the tmux server has been gone (absent while
	// it runs); Restoring is set while st brings it back.
	TmuxDown  *time.Time `json:"tmux_down,omitempty"`
	Restoring bool       `json:"restoring,omitempty"`
}

// Run serves until ctx ends or a shutdown request comes.
func Run(ctx context.Context, o Options) error {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if err := os.MkdirAll(o.Home, 0o700); err != nil {
		return fmt.Errorf("make ST_HOME %s: %w", o.Home, err)
	}
	cfg, err := LoadConfig(o.Home, o.Getenv)
	if err != nil {
		return err
	}
	lock, ok, err := store.TryLock(filepath.Join(o.Home, "daemon.lock"))
	if err != nil {
		return fmt.Errorf("lock %s: %w", o.Home, err)
	}
	if !ok {
		return fmt.Errorf("%w for %s", ErrRunning, o.Home)
	}
	defer lock.Unlock()

	sock := SocketPath(o.Home)
	os.Remove(sock) // a stale socket of a daemon that died; we hold the lock
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", sock, err)
	}
	if err := os.Chmod(sock, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("restrict %s: %w", sock, err)
	}
	defer os.Remove(sock)
	os.WriteFile(PidPath(o.Home), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600)
	defer os.Remove(PidPath(o.Home))

	tm := tmux.New(cfg.TmuxSocket)
	// One control client for st's commands, and the server's events.
	events := tm.Start()
	defer tm.Stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	token, err := webToken(o.Home)
	if err != nil {
		ln.Close()
		return fmt.Errorf("make the web UI's token: %w", err)
	}
	pn := newPeerNet(o.Home, cfg.PeerListen, cfg.Heartbeat.Duration, o.Log)
	pn.reload()
	var mgr *orch.Manager
	mgr, err = orch.NewManager(ctx, orch.Config{Home: o.Home, STBin: o.STBin, Tmux: tm, Log: o.Log,
		OnGate: func(g orch.Gate) { pushGate(ctx, cfg.PushURL, cfg.PushAnswerURL, mgr, g, o.Log) },
		Peers:  pn, PeerRetry: cfg.PeerRetry.Duration, Events: events})
	if err != nil {
		ln.Close()
		return err
	}
	defer mgr.Close()
	pn.mgr, pn.tmux = mgr, tm
	peerDone := make(chan struct{})
	go func() { pn.run(ctx); close(peerDone) }()
	defer func() { <-peerDone }()
	go mgr.Watch(ctx)
	webBase, stopWeb := serveWeb(ctx, cfg, token, tm, mgr, pn, o.Log)
	defer stopWeb()

	s := &server{mgr: mgr, tmux: tm, peers: pn, cancel: cancel, info: StatusInfo{
		PID: os.Getpid(), Version: version.Version, Home: o.Home, Socket: sock,
		TmuxSocket: tm.Socket(), Started: time.Now(), Web: webBase,
	}, token: token, proc: realProc}
	hs := &http.Server{
		Handler:     s.routes(),
		ConnContext: peerCheck,
		ErrorLog:    nil,
	}
	fmt.Fprintf(o.Log, "st %s daemon listening on %s (tmux server %s)\n", version.Version, sock, tm.Socket())
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

// peer is who is at the other end of a connection to the socket.
type peer struct {
	owner bool // it runs as this user
	pid   int  // its process, as the kernel says
}

// peerCheck records whether the peer of a unix connection runs as this
// user (the handler refuses any other user even if the socket's mode were
// widened), and its pid, for the requests only a person may make.
func peerCheck(ctx context.Context, c net.Conn) context.Context {
	var p peer
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

// personOnly refuses a request that an agent made: what only a person may
// do (see caller.go). pane is the request's $TMUX_PANE.
func (s *server) personOnly(ctx context.Context, r *http.Request, pane, what string) error {
	p, _ := r.Context().Value(ctxKey{}).(peer)
	panePID := 0
	if tmux.ValidPaneID(pane) {
		if tp, err := s.tmux.Pane(ctx, pane); err == nil {
			panePID = tp.PID
		}
	}
	why := callerCheck(s.proc, p.pid, panePID, map[string]string{"claude": os.Getenv("ST_CLAUDE_BIN"), "codex": os.Getenv("ST_CODEX_BIN")})
	if why == "" {
		return nil
	}
	return &orch.Error{Kind: "forbidden", Message: fmt.Sprintf("refused: %s is a person's to do, and this request came from an agent: %s", what, why),
		Hint: "a person does it from a shell that is not an agent's pane, or in the web UI (st web)"}
}

type server struct {
	mgr    *orch.Manager
	peers  *peerNet
	tmux   *tmux.Client
	cancel context.CancelFunc
	info   StatusInfo
	token  string
	proc   procFS // where callers' processes are read (/proc)
}

// TmuxHeader carries the socket of the caller's tmux server ($TMUX), so
// that a command from a pane of another server is refused.
const TmuxHeader = "X-St-Tmux"

type handler func(ctx context.Context, r *http.Request, body []byte) (any, error)

// call makes a handler of an operation that takes one decoded request.
func call[T, R any](op func(context.Context, T) (R, error)) handler {
	return func(ctx context.Context, r *http.Request, b []byte) (any, error) {
		req, err := decode[T](b)
		if err != nil {
			return nil, err
		}
		return op(ctx, req)
	}
}

func decode[T any](body []byte) (T, error) {
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		return v, &orch.Error{Kind: orch.KindUsage, Message: "bad request: " + err.Error()}
	}
	return v, nil
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	h := map[string]handler{
		"/v1/status": func(ctx context.Context, r *http.Request, b []byte) (any, error) {
			i := s.info
			i.Orch = s.mgr.Status()
			i.LastRestore = s.mgr.LastRestore()
			if d := s.mgr.ServerDown(); !d.IsZero() {
				i.TmuxDown = &d
				i.Restoring = s.mgr.Restoring()
			}
			return i, nil
		},
		"/v1/shutdown": func(ctx context.Context, r *http.Request, b []byte) (any, error) {
			go func() { time.Sleep(50 * time.Millisecond); s.cancel() }()
			return map[string]int{"pid": s.info.PID}, nil
		},
		"/v1/ls": s.ls,
		"/v1/web": func(ctx context.Context, r *http.Request, b []byte) (any, error) {
			if s.info.Web == "" {
				return nil, &orch.Error{Kind: orch.KindInternal, Message: "st's web UI is not running (its port was taken; see the daemon log)", Hint: "set another port with ST_WEB_PORT or web_port in $ST_HOME/config.toml, then st down; st up"}
			}
			return map[string]string{"url": s.info.Web + web.Path + "?token=" + s.token}, nil
		},
		"/v1/orch/start": call(s.mgr.StartRun),
		"/v1/orch/accept-remote": func(ctx context.Context, r *http.Request, b []byte) (any, error) {
			req, err := decode[AcceptRemoteRequest](b)
			if err != nil {
				return nil, err
			}
			if req.On != nil && *req.On {
				if err := s.personOnly(ctx, r, req.Pane, "letting other machines start agents here (accept-remote on)"); err != nil {
					return nil, err
				}
			}
			return s.peers.acceptRemote(ctx, req)
		},
		"/v1/remote/reload": func(ctx context.Context, r *http.Request, b []byte) (any, error) {
			if err := s.peers.reload(); err != nil {
				return nil, err
			}
			return s.peers.acceptRemote(ctx, AcceptRemoteRequest{})
		},
		"/v1/remote/routes": func(ctx context.Context, r *http.Request, b []byte) (any, error) {
			return s.peers.machineRoutes(ctx)
		},
		"/v1/orch/show": func(ctx context.Context, r *http.Request, b []byte) (any, error) {
			req, err := decode[orch.IDRequest](b)
			if err != nil {
				return nil, err
			}
			return s.mgr.Show(ctx, req.Pane, req.ID)
		},
		"/v1/worker/start":   call(s.mgr.StartWorker),
		"/v1/worker/wait":    call(s.mgr.Wait),
		"/v1/worker/done":    call(s.mgr.Done),
		"/v1/worker/read":    call(s.mgr.Read),
		"/v1/worker/send":    call(s.mgr.Send),
		"/v1/worker/stop":    call(s.mgr.Stop),
		"/v1/worker/rename":  call(s.mgr.Rename),
		"/v1/worker/release": call(s.mgr.Release),
		"/v1/worker/adopt":   call(s.mgr.Adopt),
		"/v1/worker/diff":    call(s.mgr.Diff),
		"/v1/worker/merge":   call(s.mgr.Merge),
		"/v1/worker/pick":    call(s.mgr.Pick),
		"/v1/worker/fan":     call(s.mgr.Fan),
		"/v1/worker/list":    call(s.mgr.List),
		"/v1/task/create":    call(s.mgr.CreateTask),
		"/v1/task/list":      call(s.mgr.ListTasks),
		"/v1/task/cancel":    call(s.mgr.CancelTask),
		"/v1/gate/ask":       call(s.mgr.AskGate),
		"/v1/gate/wait":      call(s.mgr.WaitGate),
		"/v1/gate/answer": func(ctx context.Context, r *http.Request, b []byte) (any, error) {
			req, err := decode[orch.GateRequest](b)
			if err != nil {
				return nil, err
			}
			if err := s.personOnly(ctx, r, req.Pane, "answering a decision gate"); err != nil {
				return nil, err
			}
			req.By = "cli"
			return s.mgr.AnswerGate(ctx, req)
		},
		"/v1/worker/offer": func(ctx context.Context, r *http.Request, b []byte) (any, error) {
			req, err := decode[orch.OfferRequest](b)
			if err != nil {
				return nil, err
			}
			if !req.Withdraw {
				if err := s.personOnly(ctx, r, req.Pane, "offering an agent to another machine"); err != nil {
					return nil, err
				}
			}
			return s.mgr.Offer(ctx, req)
		},
		"/v1/gate/list": func(ctx context.Context, r *http.Request, b []byte) (any, error) {
			req, err := decode[orch.IDRequest](b)
			if err != nil {
				return nil, err
			}
			return s.mgr.Gates(ctx, req.All), nil
		},
		"/v1/hook": func(ctx context.Context, r *http.Request, b []byte) (any, error) {
			req, err := decode[orch.HookRequest](b)
			if err != nil {
				return nil, err
			}
			if !s.sameServer(r) {
				return orch.HookResponse{}, nil // an agent on another tmux server
			}
			return s.mgr.Hook(ctx, req)
		},
	}
	for path, fn := range h {
		fn := fn
		needsPane := path != "/v1/status" && path != "/v1/shutdown" && path != "/v1/ls" && path != "/v1/hook" && path != "/v1/web" &&
			!strings.HasPrefix(path, "/v1/gate/") && !strings.HasPrefix(path, "/v1/remote/") && path != "/v1/orch/accept-remote"
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if p, _ := r.Context().Value(ctxKey{}).(peer); !p.owner {
				writeErr(w, &orch.Error{Kind: "forbidden", Message: "st's socket answers only the user who runs st"}, http.StatusForbidden)
				return
			}
			if r.Method != http.MethodPost {
				writeErr(w, &orch.Error{Kind: orch.KindUsage, Message: "use POST"}, http.StatusMethodNotAllowed)
				return
			}
			if needsPane && !s.sameServer(r) {
				writeErr(w, &orch.Error{Kind: orch.KindUsage,
					Message: fmt.Sprintf("this command came from a pane of the tmux server %s, but st drives %s", r.Header.Get(TmuxHeader), s.tmux.Socket()),
					Hint:    "run it in a pane of " + s.tmux.Socket() + ", or run an st for that server with its own ST_HOME"}, http.StatusBadRequest)
				return
			}
			answer(w, r, func(body []byte) (any, error) { return fn(r.Context(), r, body) })
		})
	}
	return mux
}

// sameServer reports whether the caller's $TMUX names this daemon's server
// (or the caller is outside tmux).
func (s *server) sameServer(r *http.Request) bool {
	theirs := r.Header.Get(TmuxHeader)
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
// JSON, or its error as an *orch.Error (kind, message, hint) with 422.
func answer(w http.ResponseWriter, r *http.Request, fn func(body []byte) (any, error)) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		writeErr(w, &orch.Error{Kind: orch.KindUsage, Message: err.Error()}, http.StatusBadRequest)
		return
	}
	res, err := fn(body)
	if err != nil {
		var oe *orch.Error
		if !errors.As(err, &oe) {
			oe = &orch.Error{Kind: orch.KindInternal, Message: err.Error()}
		}
		writeErr(w, oe, http.StatusUnprocessableEntity)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(res)
}

func writeErr(w http.ResponseWriter, e *orch.Error, code int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(e)
}

// LsSession is a session as st ls shows it.
type LsSession struct {
	ID      string     `json:"id"`
	Name    string     `json:"name"`
	Agents  int        `json:"agents"`
	Windows []LsWindow `json:"windows"`
}

// LsWindow is a window as st ls shows it.
type LsWindow struct {
	ID     string   `json:"id"`
	Index  string   `json:"index"`
	Name   string   `json:"name"`
	Panes  []string `json:"panes"`
	Agents []string `json:"agents"` // "%3 sim worker" etc.
}

func (s *server) ls(ctx context.Context, r *http.Request, b []byte) (any, error) {
	panes, err := s.tmux.ListPanes(ctx)
	if err != nil {
		return nil, err
	}
	agents := s.mgr.AgentPanes()
	out := []LsSession{}
	for _, ses := range tmux.Sessions(panes) {
		ls := LsSession{ID: ses.ID, Name: ses.Name}
		for _, w := range ses.Windows {
			lw := LsWindow{ID: w.ID, Index: w.Index, Name: w.Name}
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
					lw.Agents = append(lw.Agents, desc)
					ls.Agents++
				}
			}
			ls.Windows = append(ls.Windows, lw)
		}
		out = append(out, ls)
	}
	return out, nil
}
