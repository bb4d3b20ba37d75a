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
	defer outR.Close()
	defer inW.Close()
	stderr := &tailBuffer{max: 4096}
	cmd := exec.Command(bin, "app-server")
	cmd.Env = env
	cmd.Dir = cwd
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, stderr
	// Its own process group, so that ending it ends whatever it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 2 * time.Second
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		return nil, fmt.Errorf("starting %s app-server: %w", bin, err)
	}
	pid := cmd.Process.Pid
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	defer func() {
		inW.Close() // app-server leaves when its input ends
		select {
		case <-exited:
		case <-time.After(2 * time.Second):
		}
		// Whatever is left of its group (the node wrapper's native child,
		// anything they started) goes too. The group's id stays reserved
		// while any member lives, so this reaches no other process.
		syscall.Kill(-pid, syscall.SIGKILL)
		<-exited
	}()

	lines := make(chan []byte, 16)
	go func() {
		defer close(lines)
		r := bufio.NewReaderSize(outR, 64<<10)
		for {
			b, err := r.ReadBytes('\n')
			if len(b) > 0 {
				lines <- b
			}
			if err != nil {
				return
			}
		}
	}()
	// Drain what is left once we stop reading, so the reader never blocks.
	defer func() {
		go func() {
			for range lines {
			}
		}()
	}()

	fail := func(err error) error {
		msg := fmt.Sprintf("%s app-server: %v", bin, err)
		if s := strings.TrimSpace(stderr.String()); s != "" {
			msg += "; its stderr ends with: " + lastLines(s, 5)
		}
		return errors.New(msg)
	}
	send := func(v any) error {
		b, _ := json.Marshal(v)
		_, err := inW.Write(append(b, '\n'))
		return err
	}
	await := func(id int) (json.RawMessage, error) {
		for {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("no answer to request %d: %w", id, ctx.Err())
			case b, ok := <-lines:
				if !ok {
					select {
					case <-exited:
						return nil, fmt.Errorf("it exited before answering (%v)", cmd.ProcessState)
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

	if err := send(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize",
		"params": map[string]any{"clientInfo": map[string]any{"name": "st", "version": version.Version}}}); err != nil {
		return nil, fail(err)
	}
	if _, err := await(1); err != nil {
		return nil, fail(err)
	}
	if err := send(map[string]any{"jsonrpc": "2.0", "method": "initialized"}); err != nil {
		return nil, fail(err)
	}
	if err := send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "hooks/list",
		"params": map[string]any{"cwds": []string{cwd}}}); err != nil {
		return nil, fail(err)
	}
	res, err := await(2)
	if err != nil {
		return nil, fail(err)
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
		return nil, fail(fmt.Errorf("unexpected hooks/list answer: %v", err))
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
