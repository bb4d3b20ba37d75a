package hooks

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sophonz/st/internal/version"
)

// CodexHook is one hook as `codex app-server` reports it in its answer to
// hooks/list. Key is "<source path>:<event_snake_case>:<group>:<handler>";
// config.toml trusts the hook when [hooks.state."<key>"] has a
// trusted_hash equal to CurrentHash, and TrustStatus is then "trusted"
// (otherwise "untrusted", or "modified" when the hash differs).
type CodexHook struct {
	Key         string  `json:"key"`
	EventName   string  `json:"eventName"` // camelCase: "preToolUse"
	HandlerType string  `json:"handlerType"`
	Command     string  `json:"command"`
	Matcher     *string `json:"matcher"`
	TimeoutSec  int     `json:"timeoutSec"`
	SourcePath  string  `json:"sourcePath"`
	Source      string  `json:"source"` // "user", ...
	Enabled     bool    `json:"enabled"`
	IsManaged   bool    `json:"isManaged"`
	CurrentHash string  `json:"currentHash"`
	TrustStatus string  `json:"trustStatus"`
}

// CodexHookList is the answer to hooks/list for one folder.
type CodexHookList struct {
	Cwd      string      `json:"cwd"`
	Hooks    []CodexHook `json:"hooks"`
	Warnings []string    `json:"warnings,omitempty"`
	Errors   []string    `json:"errors,omitempty"`
}

// ErrNoCodex is returned when no codex program is found.
var ErrNoCodex = errors.New("codex not found")

// DefaultCodexTimeout bounds one run of codex app-server.
const DefaultCodexTimeout = 20 * time.Second

// ListCodexHooks runs `bin app-server` with the environment env (which
// must hold the CODEX_HOME and HOME to look at), asks it over stdio
// JSON-RPC for the hooks that apply in folder cwd (initialize,
// initialized, hooks/list), and ends it: its stdin is closed, and its
// process group is killed if it has not left by itself a moment later.
// It gives up when ctx ends, or after DefaultCodexTimeout if ctx has no
// deadline.
func ListCodexHooks(ctx context.Context, bin string, env []string, cwd string) (*CodexHookList, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultCodexTimeout)
		defer cancel()
	}
	srv, err := startAppServer(bin, env, cwd)
	if err != nil {
		return nil, err
	}
	defer srv.end()
	res, err := srv.listHooks(ctx, cwd)
	if err != nil {
		return nil, srv.fail(err)
	}
	var ans struct {
		Data []struct {
			Cwd      string            `json:"cwd"`
			Hooks    []CodexHook       `json:"hooks"`
			Warnings []json.RawMessage `json:"warnings"`
			Errors   []json.RawMessage `json:"errors"`
		} `json:"data"`
	}
	if err := json.Unmarshal(res, &ans); err != nil {
		return nil, srv.fail(fmt.Errorf("unexpected hooks/list answer: %v", err))
	}
	out := &CodexHookList{Cwd: cwd}
	for _, d := range ans.Data {
		out.Hooks = append(out.Hooks, d.Hooks...)
		for _, w := range d.Warnings {
			out.Warnings = append(out.Warnings, messageOf(w))
		}
		for _, e := range d.Errors {
			out.Errors = append(out.Errors, messageOf(e))
		}
	}
	return out, nil
}

// appServer is one run of `codex app-server`, spoken to over stdio
// JSON-RPC: one request per line on its stdin, its answers and
// notifications one per line on its stdout.
type appServer struct {
	bin    string
	cmd    *exec.Cmd
	in     *os.File // its stdin
	out    *os.File // its stdout, read into lines
	lines  chan []byte
	exited chan struct{}
	stderr *tailBuffer
}

// startAppServer starts bin app-server in a process group of its own, so
// that ending it ends whatever it started.
func startAppServer(bin string, env []string, cwd string) (*appServer, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	s := &appServer{bin: bin, in: inW, out: outR, lines: make(chan []byte, 16), exited: make(chan struct{}), stderr: &tailBuffer{max: 4096}}
	s.cmd = exec.Command(bin, "app-server")
	s.cmd.Env, s.cmd.Dir = env, cwd
	s.cmd.Stdin, s.cmd.Stdout, s.cmd.Stderr = inR, outW, s.stderr
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s.cmd.WaitDelay = 2 * time.Second
	err = s.cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("starting %s app-server: %w", bin, err)
	}
	go func() {
		s.cmd.Wait()
		close(s.exited)
	}()
	go s.read()
	return s, nil
}

// read sends what the server prints, line by line, to s.lines.
func (s *appServer) read() {
	defer close(s.lines)
	r := bufio.NewReaderSize(s.out, 64<<10)
	for {
		b, err := r.ReadBytes('\n')
		if len(b) > 0 {
			s.lines <- b
		}
		if err != nil {
			return
		}
	}
}

// end closes its stdin (app-server leaves when its input ends), and a
// moment later kills whatever is left of its group (the node wrapper's
// native child, anything they started): the group's id stays reserved
// while any member lives, so this reaches no other process. What it
// printed meanwhile is drained, so its reader never blocks.
func (s *appServer) end() {
	go func() {
		for range s.lines {
		}
	}()
	s.in.Close()
	select {
	case <-s.exited:
	case <-time.After(2 * time.Second):
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.exited
	s.out.Close()
}

// fail is err with what the server said on its stderr last.
func (s *appServer) fail(err error) error {
	msg := fmt.Sprintf("%s app-server: %v", s.bin, err)
	if t := strings.TrimSpace(s.stderr.String()); t != "" {
		msg += "; its stderr ends with: " + lastLines(t, 5)
	}
	return errors.New(msg)
}

func (s *appServer) send(v any) error {
	b, _ := json.Marshal(v)
	_, err := s.in.Write(append(b, '\n'))
	return err
}

// listHooks says hello (initialize, initialized) and asks hooks/list for
// the folder cwd, returning its result.
func (s *appServer) listHooks(ctx context.Context, cwd string) (json.RawMessage, error) {
	if err := s.send(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize",
		"params": map[string]any{"clientInfo": map[string]any{"name": "st", "version": version.Version}}}); err != nil {
		return nil, err
	}
	if _, err := s.await(ctx, 1); err != nil {
		return nil, err
	}
	if err := s.send(map[string]any{"jsonrpc": "2.0", "method": "initialized"}); err != nil {
		return nil, err
	}
	if err := s.send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "hooks/list",
		"params": map[string]any{"cwds": []string{cwd}}}); err != nil {
		return nil, err
	}
	return s.await(ctx, 2)
}

// await is the result of request id, skipping what else the server says.
func (s *appServer) await(ctx context.Context, id int) (json.RawMessage, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no answer to request %d: %w", id, ctx.Err())
		case b, ok := <-s.lines:
			if !ok {
				select {
				case <-s.exited:
					return nil, fmt.Errorf("it exited before answering (%v)", s.cmd.ProcessState)
				case <-ctx.Done():
				}
				return nil, errors.New("it closed its output before answering")
			}
			var m struct {
				ID     *int            `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
				Error  *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if json.Unmarshal(b, &m) != nil || m.Method != "" || m.ID == nil || *m.ID != id {
				continue // a notification, a log line, a request of its own
			}
			if m.Error != nil {
				return nil, fmt.Errorf("request %d failed: %s (code %d)", id, m.Error.Message, m.Error.Code)
			}
			return m.Result, nil
		}
	}
}

// messageOf renders a warning or error of hooks/list: a string, an object
// with a message, or its JSON.
func messageOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) == nil {
		if msg, ok := m["message"].(string); ok {
			if p, ok := m["path"].(string); ok {
				return p + ": " + msg
			}
			return msg
		}
	}
	return string(raw)
}

func lastLines(s string, n int) string {
	ls := strings.Split(s, "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, " | ")
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
