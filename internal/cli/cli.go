// Package cli is st's command line: one file per command group, each
// command parsing its flags into an options struct and calling a plain
// run function. It talks to the daemon through internal/client, runs no
// tmux, and writes none of st's state files: the daemon alone does. (To
// start the daemon it takes $ST_HOME/up.lock and opens daemon.log as the
// daemon's output: see ensureUp.)
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/client"
	"github.com/sophonz/st/internal/cpconfig"
	"github.com/sophonz/st/internal/plain"
	"github.com/sophonz/st/internal/store"
)

// Env is what a command sees of its process: streams and environment.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// SelfIsST says this process is the st program itself (cmd/st sets
	// it), so a command that finds st down may start its daemon by
	// running this executable. A test that calls Main in-process is not
	// st: "itself daemon" would run the test binary again, and each of
	// those its tests, which start more.
	SelfIsST bool
	// Daemon runs st's daemon in this process until ctx ends (st daemon),
	// and answers the exit status to end with. cmd/st sets it to
	// daemon.Serve: the rest of the command line only asks the daemon,
	// over its socket, and links neither it nor tmux (TestImports).
	Daemon func(ctx context.Context, home, stBin string, log io.Writer, getenv func(string) string) (int, error)
	// HTTPClient makes the HTTP client that carries this process's calls
	// to the daemon on socket (cli/cli's HttpClient func()): the client
	// factory's one seam. nil is client.SocketHTTP; a test gives one that
	// a sandbox refuses.
	HTTPClient func(socket string) *http.Client
	// ControlPlane is set in st-control-plane alone, the program that
	// links the control plane's server (internal/controlplane, with its
	// database and meter): the commands of st control-plane run it. In st
	// it is nil, and st control-plane runs st-control-plane in its place
	// (execControlPlane).
	ControlPlane cpconfig.Service
	// started: this process started the daemon (and said so).
	started bool
}

// Home is ST_HOME, by default ~/.sophonz.
func (e *Env) Home() string {
	if h := e.Getenv("ST_HOME"); h != "" {
		return h
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = "/tmp"
	}
	return filepath.Join(home, ".sophonz")
}

// absHome makes a relative ST_HOME absolute, once, before anything uses
// it: the daemon runs in ST_HOME, so a relative one meant another folder
// there (its socket at rel/home/rel/home/st.sock, where no command looked),
// and every window and hook that st starts elsewhere would read it from
// its own folder. An ST_HOME that cannot be made absolute is left as it
// is (CheckHome then says what is wrong with it).
func absHome(getenv func(string) string) func(string) string {
	h := getenv("ST_HOME")
	if h == "" || filepath.IsAbs(h) {
		return getenv
	}
	abs, err := filepath.Abs(h)
	if err != nil {
		return getenv
	}
	return func(k string) string {
		if k == "ST_HOME" {
			return abs
		}
		return getenv(k)
	}
}

// Client returns a client of this ST_HOME's daemon for a command that
// needs it: when st is not running, the first call starts it as st up
// would, and says so on stderr (see startOnDown).
func (e *Env) Client() *client.Client {
	c := e.RunningClient()
	c.OnDown = func(ctx context.Context, cause error) error { return startOnDown(ctx, e, cause) }
	return c
}

// RunningClient returns a client that only talks to a daemon that runs,
// for what must never start one: st down, st status, hooks, completions.
func (e *Env) RunningClient() *client.Client {
	var hc *http.Client
	if e.HTTPClient != nil {
		hc = e.HTTPClient(api.SocketPath(e.Home()))
	}
	return client.NewHTTP(e.Home(), e.Getenv("TMUX"), hc)
}

// Pane is the pane a command acts for, or a refusal outside tmux.
func (e *Env) Pane(cmd string) (string, error) {
	p := e.Getenv("TMUX_PANE")
	if p == "" {
		return "", usageError(fmt.Sprintf("%s acts for the tmux pane it runs in, and this shell is not in tmux ($TMUX_PANE is empty)", cmd),
			"run it inside a pane of the tmux session where the agents are")
	}
	return p, nil
}

// usageError is a refusal of what the user typed, with what to type.
func usageError(msg, hint string) error {
	return &api.Error{Kind: api.KindUsage, Message: msg, Hint: hint}
}

// runFunc is a command's run, given the options its flags parsed into.
// A test passes its own to see the options without running anything
// (cli/cli's runF).
type runFunc[O any] = func(context.Context, *Env, O) error

// bind makes cmd run: fill takes the positional arguments into *o and
// refuses bad flags (it may be nil), then runF is called when a test gave
// one, else run.
func bind[O any](cmd *cobra.Command, env *Env, o *O, fill func(args []string) error, runF, run runFunc[O]) *cobra.Command {
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if fill != nil {
			if err := fill(args); err != nil {
				return err
			}
		}
		if runF != nil {
			return runF(cmd.Context(), env, *o)
		}
		return run(cmd.Context(), env, *o)
	}
	return cmd
}

// exitError carries an exit status other than 1.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

// Main runs st with args and returns its exit status.
func Main(args []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	env.Getenv = absHome(env.Getenv)
	var first string
	if len(args) > 0 {
		first = args[0]
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	force := func() {}
	if env.SelfIsST && first != "daemon" { // the daemon saves its state on its way out
		force = func() {
			fmt.Fprintln(env.Stderr, "st: interrupted")
			os.Exit(exitInterrupted)
		}
	}
	ctx, stop := onInterrupt(context.Background(), sigs, interruptGrace, force)
	defer stop()
	if len(args) == 3 && args[0] == "hook" {
		// The agents' hooks run this on every event: straight to it,
		// without building the command tree.
		runHook(ctx, &env, hookOptions{Agent: args[1], Event: args[2]})
		return 0
	}
	if len(args) > 0 && args[0] == "statusline" {
		// Claude's status line runs this after each response: straight
		// to it too, and with the user's command's exit status.
		if o, ok := statusLineArgs(args[1:]); ok {
			return runStatusLine(ctx, &env, o)
		}
	}
	if len(args) > 0 && args[0] == "control-plane" && env.ControlPlane == nil && env.SelfIsST {
		// Returns only when st-control-plane cannot be run; the command
		// tree then says so (or prints its help).
		execControlPlane(args[1:])
	}
	root := newRootFor(&env, first)
	root.SetArgs(args)
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	err = argsError(cmd, err)
	var xe *exitError
	if errors.As(err, &xe) {
		if xe.err != nil {
			fmt.Fprintln(env.Stderr, "st: "+xe.err.Error())
		}
		return xe.code
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		// Ctrl-C or SIGTERM: not Go's "context canceled".
		fmt.Fprintln(env.Stderr, "st: stopped (interrupted) before it finished")
		return exitInterrupted
	}
	fmt.Fprintln(env.Stderr, "st: "+err.Error())
	return 1
}

// interruptGrace is how long a command has to end after Ctrl-C.
const interruptGrace = 3 * time.Second

// onInterrupt returns a context that ends at the first signal on sigs
// (SIGINT, SIGTERM): each command ends with its context. One that has not
// ended grace later (held in a call no context can cut short, such as an
// open(2) that waits for a FIFO's writer), or that gets a second signal,
// is ended by force: every st command ends on Ctrl-C. stop, called when
// the command returns, lets it be.
func onInterrupt(parent context.Context, sigs <-chan os.Signal, grace time.Duration, force func()) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
		case <-done:
			return
		}
		cancel()
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-sigs:
		case <-t.C:
		case <-done:
			return
		}
		force()
	}()
	var once sync.Once
	return ctx, func() { once.Do(func() { close(done); cancel() }) }
}

// exitInterrupted is the exit status of a command stopped by Ctrl-C, as a
// shell gives one killed by SIGINT.
const exitInterrupted = 130

func newRoot(env *Env) *cobra.Command { return newRootFor(env, "") }

// newRootFor builds st's command tree; when only names one of st's
// commands, the root holds that command alone. A process runs one
// command, and building every command with its flags, and walking them
// for completions, was a tenth of a bare st process's start (each agent
// hook, report and list is one). Help, completion (__complete) and a
// name st does not know get the whole tree.
func newRootFor(env *Env, only string) *cobra.Command {
	root := &cobra.Command{
		Use:           "st",
		Short:         "st lets one coding agent run a team of others in tmux",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetFlagErrorFunc(flagError)
	// ST_HOME must be this user's alone before any command uses it (see
	// store.CheckHome); st version and the completion scripts use none.
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		switch cmd.Name() {
		case "version", "completion", "help":
			return nil
		}
		if p := cmd.Parent(); p != nil && p.Name() == "completion" {
			return nil
		}
		if err := store.CheckHome(env.Home()); err != nil {
			return err
		}
		// The agents the user described in config.toml are kinds like
		// st's own for every command (a refused one is told by st doctor,
		// and by a command that names it).
		agent.LoadDescribed(env.Home())
		return nil
	}
	cmds := commands(env)
	if mk, ok := cmds[only]; ok {
		root.AddCommand(mk())
		return root
	}
	for _, mk := range cmds { // cobra lists them by name
		root.AddCommand(mk())
	}
	addCompletions(root, env)
	return root
}

// commands makes each of st's top-level commands, by name.
func commands(env *Env) map[string]func() *cobra.Command {
	return map[string]func() *cobra.Command{
		"up": func() *cobra.Command { return newUpCmd(env, nil) }, "down": func() *cobra.Command { return newDownCmd(env, nil) },
		"status": func() *cobra.Command { return newStatusCmd(env, nil) }, "daemon": func() *cobra.Command { return newDaemonCmd(env, nil) },
		"version": func() *cobra.Command { return newVersionCmd(env, nil) }, "ls": func() *cobra.Command { return newLsCmd(env, nil) },
		"web": func() *cobra.Command { return newWebCmd(env, nil) }, "orch": func() *cobra.Command { return newOrchCmd(env) },
		"worker": func() *cobra.Command { return newWorkerCmd(env) }, "hook": func() *cobra.Command { return newHookCmd(env, nil) },
		"agent": func() *cobra.Command { return newAgentCmd(env) }, "hooks": func() *cobra.Command { return newHooksCmd(env) },
		"plugin": func() *cobra.Command { return newPluginCmd(env) }, "task": func() *cobra.Command { return newTaskCmd(env) },
		"gate": func() *cobra.Command { return newGateCmd(env) }, "control-plane": func() *cobra.Command { return newControlPlaneCmd(env) },
		"login": func() *cobra.Command { return newLoginCmd(env, nil) }, "logout": func() *cobra.Command { return newLogoutCmd(env, nil) },
		"machines": func() *cobra.Command { return newMachinesCmd(env, nil) }, "completion": func() *cobra.Command { return newCompletionCmd(env, nil) },
		"setup": func() *cobra.Command { return newSetupCmd(env, nil) }, "doctor": func() *cobra.Command { return newDoctorCmd(env, nil) },
		"attention": func() *cobra.Command { return newAttentionCmd(env, nil) }, "statusline": func() *cobra.Command { return newStatusLineCmd(env, nil) },
	}
}

// takeArgs is the fill of a command whose arguments are all it takes:
// each goes into its dst, in order (Args has checked their number).
func takeArgs(dst ...*string) func([]string) error {
	return func(args []string) error {
		for i, d := range dst {
			*d = args[i]
		}
		return nil
	}
}

// printResult prints what the daemon answered: JSON when asked, else text
// for people. An error of the call is returned as it is.
func printResult[T any](env *Env, asJSON bool, v T, err error, text func(io.Writer, T) error) error {
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(env.Stdout, v)
	}
	return text(env.Stdout, v)
}

// jsonFlag is the --json flag of the commands that print JSON on request.
func jsonFlag(cmd *cobra.Command, p *bool) { cmd.Flags().BoolVar(p, "json", false, "print JSON") }

// printTable prints a row per item under a header, in columns; none is
// what it prints when there are no items.
func printTable[T any](w io.Writer, items []T, none, header string, row func(io.Writer, T)) error {
	if len(items) == 0 {
		_, err := fmt.Fprintln(w, none)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, it := range items {
		row(tw, it)
	}
	return tw.Flush()
}

// printJSON prints v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// oneLine shortens text to its first line, at most n runes, shown safely
// (plain.Clean: it is a summary or a question, not st's own words).
func oneLine(s string, n int) string {
	s = strings.TrimSpace(plain.Clean(s))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	r := []rune(s)
	if len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}
