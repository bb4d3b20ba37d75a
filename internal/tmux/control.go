package tmux

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A control-mode client (tmux -C) is one tmux process that takes command
// lines on its stdin and answers each command with a block on its stdout:
//
//	%begin TIME NUMBER FLAGS
//	...output lines...
//	%end TIME NUMBER FLAGS        (or %error, with the error's text above)
//
// in the order the commands were sent, with notifications (%exit,
// %sessions-changed, ...) between the blocks. st keeps one such client for
// its own commands, about a hundred times cheaper than a tmux process per
// command, and it hears the server exit (%exit) the moment it does.
//
// Output is not escaped inside a block, so a block ends only at the
// %end/%error line that repeats its %begin's time, number and flags; and
// a capture of a pane's screen (text any program in the pane may print,
// "%end ..." lines included) is read by its line count, never by looking
// for its end.

// ErrChannelClosed means the control client ended while a command was
// under way: it may or may not have run.
var ErrChannelClosed = errors.New("tmux control client ended")

// block is the answer to one command of a line.
type block struct {
	lines []string
	err   bool // %error
}

// request is one command line sent to the client: it expects one block
// per command in it. count, when set, says how many lines the block i
// has, from the blocks before it (for a capture, whose text is free).
type request struct {
	blocks int
	count  func(i int, prev []block) int
	got    []block
	done   chan struct{}
	closed bool // the client ended first
}

// control is a running control-mode client.
type control struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser

	mu      sync.Mutex
	pending []*request
	dead    bool
	// exited is closed when the client ends: the server went, or this
	// client was detached (its session was killed).
	exited chan struct{}
	// notify gets each notification line (%sessions-changed, %exit, ...).
	notify func(line string)
}

// startControl attaches a control-mode client to session target of the
// server on socket, with no pane output and no part in window sizes.
func startControl(bin, socket, target string, notify func(string)) (*control, error) {
	args := []string{"-u"}
	if socket != "" {
		args = append(args, "-S", socket)
	}
	args = append(args, "-C", "attach-session", "-f", "no-output,ignore-size", "-t", target)
	cmd := exec.Command(bin, args...)
	cmd.Env = envWithout(os.Environ(), "TMUX", "TMUX_PANE")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = nil
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start a tmux control client: %w", err)
	}
	c := &control{cmd: cmd, stdin: stdin, exited: make(chan struct{}), notify: notify}
	ready := make(chan error, 1)
	go c.read(stdout, ready)
	select {
	case err := <-ready:
		if err != nil {
			c.close()
			return nil, err
		}
	case <-time.After(5 * time.Second):
		c.close()
		return nil, errors.New("the tmux control client did not attach within 5s")
	}
	return c, nil
}

// parseBegin reads "%begin TIME NUMBER FLAGS" (or %end, %error) and
// returns the part after the keyword, which its end repeats.
func blockTag(line, keyword string) (string, bool) {
	rest, ok := strings.CutPrefix(line, keyword+" ")
	if !ok {
		return "", false
	}
	f := strings.Fields(rest)
	if len(f) != 3 {
		return "", false
	}
	return rest, true
}

// read runs for the client's life: it hands each block to its request in
// order and each notification to notify. ready gets nil once the client
// has attached (its first, own block ended), or why it did not.
func (c *control) read(stdout io.Reader, ready chan<- error) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	attached := false
	var reqBlock int // index of the next block of the request at the head
	defer func() {
		if !attached {
			ready <- fmt.Errorf("the tmux control client ended before it attached")
		}
		c.close()
	}()
	for sc.Scan() {
		line := sc.Text()
		tag, isBegin := blockTag(line, "%begin")
		if !isBegin {
			if strings.HasPrefix(line, "%") && c.notify != nil {
				c.notify(line)
			}
			if line == "%exit" || strings.HasPrefix(line, "%exit ") {
				return
			}
			continue
		}
		// The flags say whether the client sent the command (1) or the
		// server ran it on its own (0: the attach itself).
		ours := strings.HasSuffix(tag, " 1")
		c.mu.Lock()
		var r *request
		if ours && len(c.pending) > 0 {
			r = c.pending[0]
		}
		c.mu.Unlock()
		n := -1
		if r != nil && r.count != nil {
			n = r.count(reqBlock, r.got)
		}
		b, ok := readBlock(sc, tag, n)
		if !ok {
			return
		}
		if !ours {
			if !attached {
				attached = true
				ready <- nil
			}
			continue
		}
		if r == nil {
			continue // a block nobody waits for
		}
		r.got = append(r.got, b)
		reqBlock++
		// A command that fails ends its line: tmux runs none of the
		// commands chained after it, and sends no block for them. Waiting
		// for those would take the next line's answers for this one's,
		// and every command after it would time out.
		if len(r.got) == r.blocks || b.err {
			c.mu.Lock()
			c.pending = c.pending[1:]
			c.mu.Unlock()
			reqBlock = 0
			close(r.done)
		}
	}
}

// readBlock reads the rest of a block whose %begin had tag: exactly n
// lines of free text when n >= 0 (a capture), else up to its end. ok is
// false when the stream ended or cannot be trusted.
func readBlock(sc *bufio.Scanner, tag string, n int) (b block, ok bool) {
	if n < 0 {
		for sc.Scan() {
			l := sc.Text()
			if l == "%end "+tag {
				return b, true
			}
			if l == "%error "+tag {
				b.err = true
				return b, true
			}
			b.lines = append(b.lines, l)
		}
		return b, false
	}
	// Exactly n lines of free text, then the end. A line that is the end
	// itself comes early only when the command failed (the pane went);
	// text that merely looks like an end is text.
	for i := 0; i < n; i++ {
		if !sc.Scan() {
			return b, false
		}
		l := sc.Text()
		if l == "%end "+tag || l == "%error "+tag {
			b.err = strings.HasPrefix(l, "%error")
			return b, true
		}
		b.lines = append(b.lines, l)
	}
	if !sc.Scan() {
		return b, false
	}
	switch sc.Text() {
	case "%end " + tag:
	case "%error " + tag:
		b.err = true
	default:
		return b, false // the count was wrong: the stream cannot be trusted
	}
	return b, true
}

// close ends the client and fails every command still waiting.
func (c *control) close() {
	c.mu.Lock()
	if c.dead {
		c.mu.Unlock()
		return
	}
	c.dead = true
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	for _, r := range pending {
		r.closed = true
		close(r.done)
	}
	c.stdin.Close()
	if c.cmd.Process != nil {
		c.cmd.Process.Kill()
	}
	go c.cmd.Wait()
	close(c.exited)
}

// alive reports whether the client still runs.
func (c *control) alive() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.dead
}

// quote makes one argument a word of tmux's command language: in double
// quotes, with \, ", $ escaped (tmux expands $NAME and ~ there) .
func quote(a string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range a {
		switch r {
		case '\\', '"', '$':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

// sendable reports whether args can go over the control client: one line,
// so no argument may hold a line break or a NUL.
func sendable(args []string) bool {
	for _, a := range args {
		if strings.ContainsAny(a, "\n\r\x00") {
			return false
		}
	}
	return len(args) > 0
}

// send writes one command line (commands chained with ";" arguments) and
// waits for its blocks. It returns them (fewer than the commands when one
// failed: the last block is then its %error), or ErrChannelClosed when
// the client ended first.
func (c *control) send(ctx context.Context, args []string, count func(int, []block) int) ([]block, error) {
	var line strings.Builder
	blocks := 1
	for i, a := range args {
		if i > 0 {
			line.WriteByte(' ')
		}
		if a == ";" {
			line.WriteByte(';')
			blocks++
			continue
		}
		line.WriteString(quote(a))
	}
	line.WriteByte('\n')
	r := &request{blocks: blocks, count: count, done: make(chan struct{})}
	c.mu.Lock()
	if c.dead {
		c.mu.Unlock()
		return nil, ErrChannelClosed
	}
	c.pending = append(c.pending, r)
	// Written under the lock, so that the order of the queue is the order
	// of the lines.
	_, err := io.WriteString(c.stdin, line.String())
	c.mu.Unlock()
	if err != nil {
		c.close()
		return nil, fmt.Errorf("%w: %v", ErrChannelClosed, err)
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// No answer in time: the server hangs, or the stream is out of
			// step with the requests (every later answer would go to the
			// wrong one). Either way this client is done: the watcher
			// starts a new one, and commands go as processes meanwhile.
			c.close()
		}
		// Otherwise the answer still comes and is read (and dropped): the
		// order of the stream holds.
		return nil, ctx.Err()
	}
	if r.closed {
		return nil, ErrChannelClosed
	}
	return r.got, nil
}

// result turns the blocks of a command line into its output, or the
// *Error of the first command that failed.
func result(args []string, bs []block) (string, error) {
	var out strings.Builder
	for _, b := range bs {
		text := strings.Join(b.lines, "\n")
		if b.err {
			return out.String(), &Error{Args: args, ExitCode: 1, Stderr: text, kind: classify(text)}
		}
		if len(b.lines) > 0 {
			out.WriteString(text)
			out.WriteByte('\n')
		}
	}
	return out.String(), nil
}

// captureCount is the line count of a capture sent as
// "display-message -p -t P #{pane_height} ; capture-pane ...": the first
// block holds the height, the second exactly that many lines.
func captureCount(i int, prev []block) int {
	if i == 0 {
		return -1
	}
	if len(prev) == 0 || prev[0].err || len(prev[0].lines) != 1 {
		return -1 // the pane is gone: the capture fails too, a short %error
	}
	n, err := strconv.Atoi(strings.TrimSpace(prev[0].lines[0]))
	if err != nil || n < 0 || n > 10000 {
		return -1
	}
	return n
}
