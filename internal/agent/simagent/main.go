// Package simagent is `st agent sim`: a small full-screen terminal program
// that imitates Claude Code (2.1.332) closely enough for st's delivery
// logic to be exercised for real in tmux, without a model or a network.
//
// It draws Claude's input box (a rule, ❯ and a no-break space, a rule, a
// footer), echoes a submitted line into the transcript, follows the task
// file the line names (run:, sleep:, ask:, answer:, summary: directives),
// and fires Claude-shaped hook payloads through `st hook sim EVENT`.
// Environment knobs make it hard to drive on purpose, the ways real agents
// are: a trust screen first (ST_SIM_TRUST), a slow start
// (ST_SIM_SLOW_START), keys lost for a while after the box appears
// (ST_SIM_DEAF), keys taken in order but late, as Claude's event loop
// takes them on a loaded machine (ST_SIM_LAG), an Enter dropped when it
// follows text too fast (ST_SIM_SWALLOW_ENTER), no hooks at all
// (ST_SIM_NO_HOOKS), and a pause
// at the start of each turn (ST_SIM_TURN_DELAY); ST_SIM_STATUS_LINES=N
// draws a user's status line of N lines under the box, as Claude does;
// ST_SIM_HOOK_AGENT makes
// its hooks speak as another kind (one described in config.toml). Like Claude it keeps
// a record of each conversation (~/.st-sim/ID), and refuses to resume one
// whose record is not there.
//
// The behaviour is a pure state machine (model.go) driven by a small loop
// that owns the terminal, the hooks and the commands (driver.go).
package simagent

import (
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/term"
)

// Main runs the sim agent until it exits and returns its exit status. args
// are the arguments after `st agent sim` (only --resume ID). stdin is the
// terminal (raw mode is set when it is one), stdout where the screen is
// drawn, env where the knobs are read (os.Getenv in the CLI). Hooks and
// commands get the process environment.
func Main(args []string, stdin *os.File, stdout io.Writer, env func(string) string) int {
	cfg, noHooks, err := configure(args, env)
	if err != nil {
		fmt.Fprintln(stdout, "st agent sim:", err)
		return 2
	}
	if err := keepConversation(cfg); err != nil {
		// As Claude does for a conversation it cannot find: it says so
		// and exits 1, before any screen.
		fmt.Fprintln(stdout, err)
		return 1
	}
	procEnv := os.Environ()
	hook := commandHooks(cfg.stBin, procEnv)
	if noHooks {
		hook = func(string, map[string]any) (bool, string) { return false, "" }
	}

	fd := int(stdin.Fd())
	if term.IsTerminal(fd) {
		if old, err := term.MakeRaw(fd); err == nil {
			defer func() { _ = term.Restore(fd, old) }()
		}
	}
	size := func() (int, int) {
		if w, h, err := term.GetSize(fd); err == nil && w > 0 && h > 0 {
			return w, h
		}
		if f, ok := stdout.(*os.File); ok {
			if w, h, err := term.GetSize(int(f.Fd())); err == nil && w > 0 && h > 0 {
				return w, h
			}
		}
		return 80, 24
	}

	d := newDriver(newModel(cfg), hook, shellRunner(cfg.cwd, procEnv), realClock{}, stdout, size)

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGWINCH)
	defer signal.Stop(sigs)
	go func() {
		for {
			select {
			case s := <-sigs:
				if s == syscall.SIGWINCH {
					d.send(resizeMsg{})
				} else {
					d.send(hangupMsg{})
				}
			case <-d.done:
				return
			}
		}
	}()
	go readInput(stdin, d, cfg.lag)

	// Hide the cursor while drawing: Claude draws its own.
	_, _ = io.WriteString(stdout, "\x1b[?25l")
	code := d.loop()
	_, _ = io.WriteString(stdout, "\x1b[?25h\r\n")
	if code == 0 {
		// Claude prints the same on exit, with its own command.
		_, _ = fmt.Fprintf(stdout, "\r\nResume this session with:\r\nst agent sim --resume %s\r\n", cfg.sessionID)
	}
	return code
}

// readInput stamps each read with the time it arrived: Enter swallowing
// and the deaf period depend on when a key came, not on when the loop got
// to it. An end of input (the terminal closed) is a hangup. With a lag
// (ST_SIM_LAG) each read reaches the model lag after it came, in order
// and stamped with the time it is taken: nothing is lost, all is late,
// which is what st must not mistake for keys dropped (typing the line
// again would put it in the box twice).
func readInput(stdin *os.File, d *driver, lag time.Duration) {
	send := d.send
	if lag > 0 {
		type late struct {
			v  msg
			at time.Time
		}
		queue := make(chan late, 1024)
		go func() {
			for l := range queue {
				time.Sleep(time.Until(l.at.Add(lag)))
				if in, ok := l.v.(inputMsg); ok {
					in.at = d.clock.Now()
					l.v = in
				}
				d.send(l.v)
			}
		}()
		send = func(v msg) { queue <- late{v, time.Now()} }
	}
	buf := make([]byte, 4096)
	for {
		n, err := stdin.Read(buf)
		if n > 0 {
			send(inputMsg{data: append([]byte(nil), buf[:n]...), at: d.clock.Now()})
		}
		if err != nil {
			send(hangupMsg{})
			return
		}
	}
}

// configure reads the arguments and the knobs.
func configure(args []string, env func(string) string) (cfg config, noHooks bool, err error) {
	fl := flag.NewFlagSet("st agent sim", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	resume := fl.String("resume", "", "resume the conversation with this session id")
	if err := fl.Parse(args); err != nil {
		return cfg, false, err
	}
	if fl.NArg() > 0 {
		return cfg, false, fmt.Errorf("unexpected argument %q", fl.Arg(0))
	}
	cwd, err := os.Getwd()
	if err != nil {
		return cfg, false, err
	}
	cfg = config{cwd: cwd, fs: osFS{}, resume: *resume != ""}
	switch {
	case *resume != "":
		cfg.sessionID = *resume
	case env("ST_SIM_SESSION_ID") != "":
		cfg.sessionID = env("ST_SIM_SESSION_ID")
	default:
		cfg.sessionID = newUUID()
	}
	cfg.transcriptPath = filepath.Join(os.TempDir(), "st-sim", cfg.sessionID+".jsonl")
	cfg.home = env("HOME")
	cfg.stBin = env("ST_BIN")
	if cfg.stBin == "" {
		if cfg.stBin, err = os.Executable(); err != nil {
			return cfg, false, fmt.Errorf("cannot find st: set ST_BIN: %w", err)
		}
	}
	cfg.trust = env("ST_SIM_TRUST") == "1"
	cfg.swallowEnter = env("ST_SIM_SWALLOW_ENTER") == "1"
	noHooks = env("ST_SIM_NO_HOOKS") == "1"
	// The kind its hooks speak as (st hook KIND EVENT): sim, or a kind a
	// test describes in config.toml with Claude-like hooks.
	if k := env("ST_SIM_HOOK_AGENT"); k != "" {
		hookAgent = k
	}
	cfg.autoContinue = env("ST_SIM_AUTO_CONTINUE") != "0"
	if v := env("ST_SIM_STATUS_LINES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 100 {
			return cfg, false, fmt.Errorf("ST_SIM_STATUS_LINES=%q: want a number of lines from 0 to 100", v)
		}
		cfg.statusLines = n
	}
	cfg.continueAfter = time.Second
	for _, k := range []struct {
		name string
		dst  *time.Duration
	}{{"ST_SIM_SLOW_START", &cfg.slowStart}, {"ST_SIM_DEAF", &cfg.deaf}, {"ST_SIM_LAG", &cfg.lag}, {"ST_SIM_TURN_DELAY", &cfg.turnDelay}, {"ST_SIM_CONTINUE_AFTER", &cfg.continueAfter}} {
		v := env(k.name)
		if v == "" {
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return cfg, false, fmt.Errorf("%s=%q: want a duration such as 2s", k.name, v)
		}
		*k.dst = d
	}
	return cfg, noHooks, nil
}

// noConversation is the refusal to resume a conversation that is not
// kept, in Claude's words.
type noConversation string

func (id noConversation) Error() string {
	return "No conversation found with session ID: " + string(id)
}

// ConversationFile is where the sim keeps its record of conversation id,
// as Claude keeps its conversations under ~/.claude: ~/.st-sim/ID.
func ConversationFile(home, id string) string {
	if home == "" {
		home = os.TempDir()
	}
	return filepath.Join(home, ".st-sim", id)
}

// keepConversation records a new conversation, or, resuming, finds its
// record: a conversation whose record is gone cannot resume.
func keepConversation(cfg config) error {
	path := ConversationFile(cfg.home, cfg.sessionID)
	if cfg.resume {
		if _, err := os.Stat(path); err != nil {
			return noConversation(cfg.sessionID)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("st agent sim: keep the conversation: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("st agent sim: keep the conversation: %w", err)
	}
	return f.Close()
}

type osFS struct{}

func (osFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }
func (osFS) ReadFile(name string) ([]byte, error)  { return os.ReadFile(name) }

// newUUID makes a random (version 4) UUID, the shape of Claude's session
// ids.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
