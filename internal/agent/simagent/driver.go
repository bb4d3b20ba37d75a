package simagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// HookFunc fires one hook event and says whether it refused the tool call
// (only PreToolUse is asked), and why.
type HookFunc func(event string, payload map[string]any) (deny bool, reason string)

// clock is the time the driver stamps input with and sets timers on.
type clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func())
}

type realClock struct{}

func (realClock) Now() time.Time                      { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) { time.AfterFunc(d, f) }

// runFunc runs a shell command and returns its combined output and exit
// code; it stops when ctx is cancelled.
type runFunc func(ctx context.Context, command string) (output string, code int)

// driver carries out the model's effects: it owns the terminal output,
// the hook queue, the running command and the timers, and feeds their
// results back to the model as messages, one at a time, on one goroutine.
type driver struct {
	m      *model
	hook   HookFunc
	run    runFunc
	clock  clock
	out    io.Writer
	size   func() (w, h int)
	events chan msg
	done   chan struct{} // closed when the loop returns, so senders give up
	hooks  *hookQueue

	cancelRun context.CancelFunc
	exitCode  int
	exited    bool
	lastFrame string
}

func newDriver(m *model, hook HookFunc, run runFunc, c clock, out io.Writer, size func() (int, int)) *driver {
	d := &driver{
		m: m, hook: hook, run: run, clock: c, out: out, size: size,
		events: make(chan msg, 64),
		done:   make(chan struct{}),
	}
	d.hooks = newHookQueue(hook, d.send)
	return d
}

// send delivers a message to the loop, or drops it once the loop is over.
func (d *driver) send(v msg) {
	select {
	case d.events <- v:
	case <-d.done:
	}
}

// loop runs the model until it exits, then waits for the hooks already
// fired (SessionEnd last) before it returns the exit code.
func (d *driver) loop() int {
	d.apply(d.m.start(d.clock.Now()))
	d.redraw()
	for !d.exited {
		d.handle(<-d.events)
		// Take whatever else is waiting before drawing: a long line typed
		// at once arrives as one read but a busy loop should not draw a
		// frame per message.
	drain:
		for !d.exited {
			select {
			case v := <-d.events:
				d.handle(v)
			default:
				break drain
			}
		}
		if !d.exited {
			d.redraw()
		}
	}
	d.redraw() // the last frame, so that what led to the exit shows
	if d.cancelRun != nil {
		d.cancelRun()
	}
	d.hooks.closeAndWait()
	close(d.done)
	return d.exitCode
}

// resizeMsg is SIGWINCH: the next frame is drawn even if it is the same,
// since the terminal may have reflowed the last one.
type resizeMsg struct{}

func (d *driver) handle(v msg) {
	if _, ok := v.(resizeMsg); ok {
		d.lastFrame = ""
		return
	}
	d.apply(d.m.update(d.clock.Now(), v))
}

func (d *driver) apply(effects []effect) {
	for _, e := range effects {
		switch e := e.(type) {
		case fireHook:
			d.hooks.push(e)
		case runCommand:
			ctx, cancel := context.WithCancel(context.Background())
			d.cancelRun = cancel
			go func() {
				out, code := d.run(ctx, e.command)
				cancel()
				d.send(commandMsg{tag: e.tag, output: out, code: code})
			}()
		case cancelCommand:
			if d.cancelRun != nil {
				d.cancelRun()
			}
		case startTimer:
			d.clock.AfterFunc(e.after, func() { d.send(timerMsg{tag: e.tag}) })
		case exitProgram:
			d.exited, d.exitCode = true, e.code
		case appendRecords:
			appendTranscript(e)
		}
	}
}

// redraw draws the whole screen: home, clear, then the lines. Raw mode
// turns off the terminal's newline translation, hence \r\n; no newline
// after the last line, so that a full screen does not scroll.
func (d *driver) redraw() {
	w, h := d.size()
	frame := "\x1b[H\x1b[2J" + strings.Join(d.m.render(w, h), "\r\n")
	if frame == d.lastFrame {
		return
	}
	d.lastFrame = frame
	_, _ = io.WriteString(d.out, frame)
}

// hookQueue fires hooks one at a time in the order the model emitted them,
// so that st sees UserPromptSubmit before PreToolUse before Stop, while
// the screen keeps moving and typing keeps working.
type hookQueue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	jobs   []fireHook
	closed bool
	idle   chan struct{}
}

func newHookQueue(hook HookFunc, reply func(msg)) *hookQueue {
	q := &hookQueue{idle: make(chan struct{})}
	q.cond = sync.NewCond(&q.mu)
	go func() {
		defer close(q.idle)
		for {
			q.mu.Lock()
			for len(q.jobs) == 0 && !q.closed {
				q.cond.Wait()
			}
			if len(q.jobs) == 0 {
				q.mu.Unlock()
				return
			}
			job := q.jobs[0]
			q.jobs = q.jobs[1:]
			q.mu.Unlock()
			deny, reason := hook(job.event, job.payload)
			if job.tag != 0 {
				reply(hookMsg{tag: job.tag, deny: deny, reason: reason})
			}
		}
	}()
	return q
}

func (q *hookQueue) push(h fireHook) {
	q.mu.Lock()
	q.jobs = append(q.jobs, h)
	q.mu.Unlock()
	q.cond.Signal()
}

// closeAndWait lets the queued hooks run out. Each hook is bounded by its
// own timeout, so this ends.
func (q *hookQueue) closeAndWait() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Signal()
	<-q.idle
}

// hookTimeout bounds one hook: a stuck st must not stop the agent.
const hookTimeout = 5 * time.Second

// commandHooks fires events by running `<stBin> hook sim <event>` with
// the payload on stdin and the agent's environment (TMUX_PANE tells st
// which worker this is). Its exit status is ignored, except that a
// PreToolUse hook refuses the call by exiting 2 (the reason on stderr) or
// by printing a permissionDecision "deny", as Claude's hooks do.
func commandHooks(stBin string, env []string) HookFunc {
	return func(event string, payload map[string]any) (bool, string) {
		data, err := json.Marshal(payload)
		if err != nil {
			return false, ""
		}
		ctx, cancel := context.WithTimeout(context.Background(), hookTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, stBin, "hook", "sim", event)
		cmd.Stdin = bytes.NewReader(data)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Env = env
		// A hook that leaves a child holding its pipes must not hold the
		// agent past the timeout.
		cmd.WaitDelay = time.Second
		err = cmd.Run()
		if event != "PreToolUse" {
			return false, ""
		}
		return preToolDecision(err, stdout.Bytes(), stderr.Bytes())
	}
}

// preToolDecision reads a PreToolUse hook's verdict the way Claude does.
func preToolDecision(runErr error, stdout, stderr []byte) (bool, string) {
	var ee *exec.ExitError
	if errors.As(runErr, &ee) && ee.ExitCode() == 2 {
		return true, strings.TrimSpace(string(stderr))
	}
	if runErr != nil {
		return false, ""
	}
	var out struct {
		HookSpecificOutput struct {
			PermissionDecision       string `json:"permissionDecision"`
			PermissionDecisionReason string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	if json.Unmarshal(bytes.TrimSpace(stdout), &out) == nil && out.HookSpecificOutput.PermissionDecision == "deny" {
		return true, out.HookSpecificOutput.PermissionDecisionReason
	}
	return false, ""
}

// shellRunner runs commands with `sh -c` in dir. The command gets its own
// process group, so that Esc can stop it with everything it started, and
// /dev/null as stdin, so that it cannot read the keys meant for the box.
func shellRunner(dir string, env []string) runFunc {
	return func(ctx context.Context, command string) (string, int) {
		cmd := exec.CommandContext(ctx, "sh", "-c", command)
		// As Claude Code does for its Bash tool: the command knows it runs
		// for an agent (st refuses such a caller a person's requests).
		cmd.Dir, cmd.Env = dir, append(append([]string(nil), env...), "CLAUDECODE=1")
		var out lockedBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = time.Second
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return out.String(), 0
		case errors.As(err, &ee) && ee.ExitCode() >= 0:
			return out.String(), ee.ExitCode()
		case errors.As(err, &ee): // killed by a signal
			return out.String(), 128 + int(ee.Sys().(syscall.WaitStatus).Signal())
		default:
			return out.String() + err.Error() + "\n", 127
		}
	}
}

// lockedBuffer keeps the tail of what a command writes; stdout and stderr
// write to it from two goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > 2*maxToolOutput {
		b.buf = append([]byte(nil), b.buf[len(b.buf)-maxToolOutput:]...)
	}
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// appendTranscript appends records to the transcript; a failure to write
// it is the sim's to shrug off (its tokens then do not show), as a turn
// goes on when Claude cannot write its own.
func appendTranscript(e appendRecords) {
	if e.path == "" {
		return
	}
	var buf bytes.Buffer
	for _, l := range e.lines {
		b, err := json.Marshal(l)
		if err != nil {
			continue
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if err := os.MkdirAll(filepath.Dir(e.path), 0o700); err != nil {
		return
	}
	f, err := os.OpenFile(e.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	_, _ = f.Write(buf.Bytes())
	_ = f.Close()
}
