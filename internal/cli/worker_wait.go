package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/spf13/cobra"
)

type workerWaitOptions struct {
	IDs     []string
	Timeout time.Duration
	JSON    bool
}

func newWorkerWaitCmd(env *Env, runF runFunc[workerWaitOptions]) *cobra.Command {
	var o workerWaitOptions
	cmd := &cobra.Command{
		Use:   "wait [ID...] [--timeout 15m]",
		Short: "Wait until workers are done or need attention",
		Long: `Wait until each worker (by default every worker of this pane) is done,
waiting for a person, idle (its turn ended with no report), failed or gone.
A task of this pane's run that has no worker yet (st task create --deps) is
waited for by its name: until its worker starts and settles, or until it
can never start (a dependency failed or was cancelled), printed with why.
Prints a line per worker. Exit status: 0 all done, 2 some need attention
(waiting, idle, blocked, failed or gone), 3 the timeout passed first, 1 an error.`,
	}
	durationFlag(cmd.Flags(), &o.Timeout, "timeout", 15*time.Minute, "how long to wait at most")
	jsonFlag(cmd, &o.JSON)
	return bind(cmd, env, &o, func(args []string) error {
		if len(args) > 0 {
			o.IDs = args
		}
		if len(o.IDs) == 0 && callerPane(env) == "" {
			_, err := env.Pane("st worker wait with no ids")
			return err
		}
		if o.Timeout <= 0 {
			return usageError("--timeout must be more than 0", "st worker wait --timeout 15m")
		}
		return nil
	}, runF, runWorkerWait)
}

func runWorkerWait(ctx context.Context, env *Env, o workerWaitOptions) error {
	c := env.Client()
	deadline := time.Now().Add(o.Timeout)
	var res *api.WaitResult
	// A daemon restarting (st up after a crash) must not end a wait: go on
	// waiting for it until the timeout.
	err := keepTrying(ctx, env, deadline, 200*time.Millisecond, nil, func() (err error) {
		left := max(time.Until(deadline), 0)
		res, err = c.Wait(ctx, api.WaitRequest{Pane: callerPane(env), IDs: o.IDs, Timeout: left + time.Millisecond})
		return err
	})
	if err != nil {
		return err
	}
	if o.JSON {
		printJSON(env.Stdout, res)
	} else {
		printSettled(env.Stdout, res.Workers)
		printUnstarted(env.Stdout, res.Tasks)
	}
	if res.TimedOut {
		return &exitError{code: exitTimeout, err: fmt.Errorf("the timeout (%s) passed before every worker settled", o.Timeout)}
	}
	for _, w := range res.Workers {
		if w.State != api.Done {
			return &exitError{code: exitAttention}
		}
	}
	if len(res.Tasks) > 0 { // a task that can never start
		return &exitError{code: exitAttention}
	}
	return nil
}

// printUnstarted prints a line per task of st worker wait that has no
// worker: it has no pane id, so "-" stands for it, then its name, its
// state and why (what it waits on, or why it never started).
func printUnstarted(w io.Writer, ts []api.TaskView) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, t := range ts {
		fmt.Fprintf(tw, "-\t%s\ttask %s\t%s\n", t.Name, t.State, oneLine(t.Reason, 70))
	}
	return tw.Flush()
}

// printSettled prints a line per worker of st worker wait: how each
// settled, with its summary or error.
func printSettled(w io.Writer, ws []api.WorkerView) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, v := range ws {
		note := ""
		switch {
		case v.TextsHidden:
			note = hiddenNote
		case v.State == api.Done:
			note = oneLine(v.Summary, 70)
		case v.State == api.Failed, v.State == api.Blocked:
			note = oneLine(v.Error, 70)
		}
		if v.Tokens != nil && !v.TextsHidden {
			// What it spent comes with its report (issue 35).
			note += "  [" + strings.Replace(tokensCell(v.Tokens), " ", " tokens ", 1)
			if v.Tokens.CostUSD == nil {
				note += " tokens"
			}
			note += "]"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.ID, v.Name, stateCell(v.Worker), note)
	}
	return tw.Flush()
}
