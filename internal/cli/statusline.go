package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/tidwall/gjson"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/store"
)

// st statusline is Claude Code's status-line command once st setup put it
// in settings.json (internal/hooks statusline.go): Claude runs it with a
// JSON of the session on stdin (its cost, its account's usage limits) at
// its start and after each response. It hands that JSON to st for the
// pane's agent, and runs the user's own status-line command (--then) with
// the same stdin, printing its output byte for byte and exiting with its
// status, so that the user's status line looks as before. st never holds
// Claude up: the hand-over has a short deadline and runs beside the
// user's command, and st down (or not set up) is just a pass-through.

// statusLineDeadline bounds the hand-over to st: Claude waits for its
// status line, and a person sees it.
const statusLineDeadline = 500 * time.Millisecond

type statusLineOptions struct{ Then string }

func newStatusLineCmd(env *Env, runF runFunc[statusLineOptions]) *cobra.Command {
	var o statusLineOptions
	cmd := &cobra.Command{
		Use:    "statusline [--then COMMAND]",
		Short:  "Hand Claude Code's status line to st, and print the user's own (run by Claude's statusLine)",
		Hidden: true,
		Args:   cobra.NoArgs,
	}
	cmd.Flags().StringVar(&o.Then, "then", "", "the user's own status-line command, run with the same stdin (sh -c)")
	return bind(cmd, env, &o, nil, runF, func(ctx context.Context, env *Env, o statusLineOptions) error {
		if code := runStatusLine(ctx, env, o); code != 0 {
			return &exitError{code: code}
		}
		return nil
	})
}

// statusLineArgs reads st statusline's arguments as Main's fast path
// takes them: nothing, or --then COMMAND (--then=COMMAND).
func statusLineArgs(args []string) (statusLineOptions, bool) {
	switch {
	case len(args) == 0:
		return statusLineOptions{}, true
	case len(args) == 2 && args[0] == "--then":
		return statusLineOptions{Then: args[1]}, true
	case len(args) == 1 && len(args[0]) > 7 && args[0][:7] == "--then=":
		return statusLineOptions{Then: args[0][7:]}, true
	}
	return statusLineOptions{}, false
}

// runStatusLine is st statusline; it returns the exit status: the user's
// command's, or 0.
func runStatusLine(ctx context.Context, env *Env, o statusLineOptions) int {
	// Read up to the cap (in a second at most: a stdin that never
	// closes must not hold Claude); the user's command gets the same
	// bytes, and whatever lies past the cap, untouched.
	head, err := readStatusLine(env.Stdin)
	var stdin io.Reader = bytes.NewReader(head)
	if env.Stdin != nil && len(head) > api.MaxStatusLineBytes {
		stdin = io.MultiReader(stdin, env.Stdin)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err == nil {
			handStatusLine(ctx, env, head)
		}
	}()
	code := 0
	if o.Then != "" {
		code = runUserStatusLine(ctx, env, o.Then, stdin)
	}
	<-done
	return code
}

// readStatusLine reads stdin up to one byte past the cap, giving up after
// a second; an error means st takes nothing from it.
func readStatusLine(r io.Reader) ([]byte, error) {
	if r == nil {
		return nil, errors.New("no stdin")
	}
	type res struct {
		b   []byte
		err error
	}
	ch := make(chan res, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(r, api.MaxStatusLineBytes+1))
		ch <- res{b, err}
	}()
	select {
	case x := <-ch:
		if x.err == nil && len(x.b) > api.MaxStatusLineBytes {
			x.err = fmt.Errorf("the status line's JSON is more than %d bytes", api.MaxStatusLineBytes)
		}
		return x.b, x.err
	case <-time.After(time.Second):
		return nil, errors.New("no status line on stdin within 1s")
	}
}

// handStatusLine gives the payload to st for this pane, when it is a JSON
// object, st runs, and this runs in a pane; every failure is silent (the
// status line is no place for st's errors; ST_HOOK_DEBUG prints them).
func handStatusLine(ctx context.Context, env *Env, payload []byte) {
	pane := callerPane(env)
	if pane == "" || !gjson.ValidBytes(payload) || !gjson.ParseBytes(payload).IsObject() {
		return
	}
	if store.CheckHome(env.Home()) != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, statusLineDeadline)
	defer cancel()
	err := env.RunningClient().StatusLine(ctx, api.HookRequest{Agent: "claude", Event: "StatusLine", Pane: pane, Payload: payload})
	if err != nil && env.Getenv("ST_HOOK_DEBUG") != "" {
		fmt.Fprintf(env.Stderr, "st statusline: %v\n", err)
	}
}

// runUserStatusLine runs the user's command as Claude would (sh -c, in
// this folder and environment), its stdout and stderr straight through,
// and returns its exit status (a shell's: 128+N for a signal N, 127 when
// sh cannot run).
func runUserStatusLine(ctx context.Context, env *Env, command string, stdin io.Reader) int {
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, env.Stdout, env.Stderr
	err := cmd.Run()
	var xe *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &xe):
		if ws, ok := xe.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return xe.ExitCode()
	}
	fmt.Fprintf(env.Stderr, "st statusline: %v\n", err)
	return 127
}
