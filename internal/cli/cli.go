// Package cli is st's command line: one file per command group, each
// command parsing its flags into an options struct and calling a plain
// run function. It talks to the daemon through internal/client and never
// writes state files itself.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sophonz/st/internal/client"
	"github.com/sophonz/st/internal/orch"
)

// Env is what a command sees of its process: streams and environment.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
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

// Client returns a client of this ST_HOME's daemon.
func (e *Env) Client() *client.Client { return client.New(e.Home(), e.Getenv("TMUX")) }

// Pane is the pane a command acts for, or a refusal outside tmux.
func (e *Env) Pane(cmd string) (string, error) {
	p := e.Getenv("TMUX_PANE")
	if p == "" {
		return "", &orch.Error{Kind: orch.KindUsage,
			Message: fmt.Sprintf("%s acts for the tmux pane it runs in, and this shell is not in tmux ($TMUX_PANE is empty)", cmd),
			Hint:    "run it inside a pane of the tmux session where the agents are"}
	}
	return p, nil
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(args) == 3 && args[0] == "hook" {
		// The agents' hooks run this on every event: straight to it,
		// without building the command tree.
		runHook(ctx, &env, args[1], args[2])
		return 0
	}
	root := newRoot(&env)
	root.SetArgs(args)
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var xe *exitError
	if errors.As(err, &xe) {
		if xe.err != nil {
			fmt.Fprintln(env.Stderr, "st: "+xe.err.Error())
		}
		return xe.code
	}
	fmt.Fprintln(env.Stderr, "st: "+err.Error())
	return 1
}

func newRoot(env *Env) *cobra.Command {
	root := &cobra.Command{
		Use:           "st",
		Short:         "st lets one coding agent run a team of others in tmux",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(
		newUpCmd(env), newDownCmd(env), newStatusCmd(env), newDaemonCmd(env), newVersionCmd(env), newLsCmd(env), newWebCmd(env),
		newOrchCmd(env), newWorkerCmd(env), newHookCmd(env), newAgentCmd(env), newHooksCmd(env), newPluginCmd(env), newTaskCmd(env), newGateCmd(env),
		newControlPlaneCmd(env), newLoginCmd(env), newLogoutCmd(env), newMachinesCmd(env),
	)
	return root
}

// printJSON prints v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// oneLine shortens text to its first line, at most n runes.
func oneLine(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	r := []rune(s)
	if len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}
