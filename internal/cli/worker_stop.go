package cli

import (
	"context"
	"fmt"

	"github.com/sophonz/st/internal/api"
	"github.com/spf13/cobra"
)

type workerStopOptions struct {
	ID  string
	Yes bool
}

func newWorkerStopCmd(env *Env, runF runFunc[workerStopOptions]) *cobra.Command {
	var o workerStopOptions
	cmd := &cobra.Command{Use: "stop ID --yes", Short: "Close a worker's window", Args: exactArgs(1, "st worker stop ID --yes")}
	cmd.Flags().BoolVar(&o.Yes, "yes", false, "yes, close it")
	return bind(cmd, env, &o, func(args []string) error {
		o.ID = args[0]
		if !o.Yes {
			return usageError("st worker stop closes the worker's window and ends its agent", "st worker stop "+o.ID+" --yes")
		}
		return nil
	}, runF, runWorkerStop)
}

func runWorkerStop(ctx context.Context, env *Env, o workerStopOptions) error {
	v, err := env.Client().Stop(ctx, api.IDRequest{Pane: callerPane(env), ID: o.ID})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "stopped %s (%s)\n", v.Name, v.ID)
	printNotes(env, v.Notes)
	return nil
}
