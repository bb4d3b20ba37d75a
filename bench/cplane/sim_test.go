package cplane

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sophonz/st/bench/benchfig"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/remote"
)

// simMachine is a simulated machine: a signed-in remote.Identity with
// its relay connection, as a daemon keeps them, and (for those that take
// part in relayed starts) a peer server on the relay, as st's.
type simMachine struct {
	name  string
	id    *remote.Identity
	relay *remote.Relay
	net   *remote.Net
	srv   *http.Server
}

// signIn signs a machine called name in to account acme of p, with a
// home of its own under dir.
func signIn(ctx context.Context, p *cpProc, dir, name string) (*simMachine, error) {
	home := filepath.Join(dir, name)
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	id, err := remote.Login(ctx, home, remote.LoginOptions{URL: p.url, CAFile: p.ca, Account: "acme", Key: p.key, Name: name, Host: name + ".local"})
	if err != nil {
		return nil, err
	}
	return &simMachine{name: name, id: id}, nil
}

// connect opens the machine's relay connection.
func (m *simMachine) connect() {
	m.relay = m.id.StartRelay(nil)
	m.net = remote.NewNet(m.id, m.relay, func(string, ...any) {})
}

// serve runs the machine's peer server on the relay (no direct
// listener: every stream to it goes through the control plane). It
// answers a start with a worker view and a report with a short ack, the
// sizes st's answers have.
func (m *simMachine) serve() error {
	ln, err := m.net.Listen(remote.ListenOff)
	if err != nil {
		return err
	}
	answer, _ := json.Marshal(api.WorkerView{Worker: api.Worker{ID: "%12", Name: "w-ios-tests", Agent: "claude", State: "working",
		Since: time.Now(), Task: "ios-tests.md", Window: "w-ios-tests", Session: "st-remote", StartedAt: time.Now()}, Run: "r-20261201-0930-ab12"})
	m.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := m.net.PeerOf(r); !ok {
			http.Error(w, "refused", http.StatusForbidden)
			return
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == api.PeerPrefix+"start" {
			w.Write(answer)
			return
		}
		w.Write([]byte(`{}`))
	}), ErrorLog: log.New(io.Discard, "", 0), ReadHeaderTimeout: 10 * time.Second}
	go m.srv.Serve(ln)
	return nil
}

func (m *simMachine) close() {
	if m.srv != nil {
		m.srv.Close()
	}
	if m.net != nil {
		m.net.CloseIdleConnections()
	}
	if m.relay != nil {
		m.relay.Close()
	}
	m.id.CloseIdleConnections()
}

// startBody is a start as st sends it: a task of 1.5 KB and the rest of
// api.PeerStart.
var startBody, reportBody = func() ([]byte, []byte) {
	task := strings.Repeat("Run the UI tests on the iPhone 16 simulator and report what fails, with the log. ", 19)
	s, _ := json.Marshal(api.PeerStart{Run: "r-20261201-0930-ab12", Coordinator: "%0", Parent: "%0", Level: 1, Ref: "main",
		Agent: "claude", TaskName: "ios-tests.md", TaskText: task, Name: "w-ios-tests", ParentName: "lead on home-macbook",
		HookTimeout: 150 * time.Second})
	r, _ := json.Marshal(api.PeerWatchResult{Boot: "b-1", Seq: 42, Workers: []api.WorkerView{{Worker: api.Worker{ID: "%12", Name: "w-ios-tests",
		Agent: "claude", State: "done", Summary: strings.Repeat("All 212 UI tests pass; 3 were flaky. ", 20)}, Run: "r-20261201-0930-ab12"}}})
	return s, r
}()

// post sends body to path on machine slug over a new relayed connection
// (the first of a start: the relay's stream, the TLS handshake inside,
// the request), and returns how long it took.
func (m *simMachine) post(ctx context.Context, slug, path string, body []byte) (time.Duration, error) {
	m.net.CloseIdleConnections()
	t0 := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+slug+path, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := m.net.Client(slug).Do(req)
	if err != nil {
		return time.Since(t0), err
	}
	_, err = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if err == nil && res.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s answered %s", slug, res.Status)
	}
	return time.Since(t0), err
}

// sample collects durations from many goroutines, and counts failures.
type sample struct {
	mu     sync.Mutex
	ds     []time.Duration
	failed atomic.Int64
	first  string // the first failure's
}

func (s *sample) add(d time.Duration, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.failed.Add(1)
		if s.first == "" {
			s.first = strings.SplitN(err.Error(), "\n", 2)[0]
		}
	}
	s.ds = append(s.ds, d)
}

func (s *sample) stats() stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return benchfig.NewStats(s.ds)
}

func (s *sample) firstErr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first
}

// jitter is a random duration in [0, d).
func jitter(d time.Duration) time.Duration { return time.Duration(rand.Int64N(int64(d))) }

// every runs f at a random offset within period, then every period, until
// ctx ends.
func every(ctx context.Context, period time.Duration, f func()) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(jitter(period)):
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		f()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
