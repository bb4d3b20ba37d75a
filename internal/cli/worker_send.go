package cli

import (
	"context"
	"fmt"

	"github.com/sophonz/st/internal/api"
	"github.com/spf13/cobra"
)

type workerSendOptions struct{ ID, Text string }

func newWorkerSendCmd(env *Env, runF runFunc[workerSendOptions]) *cobra.Command {
	var o workerSendOptions
	cmd := &cobra.Command{Use: "send ID TEXT", Short: "Type one line into a worker (never over a prompt)", Args: exactArgs(2, `st worker send ID "TEXT"`)}
	return bind(cmd, env, &o, takeArgs(&o.ID, &o.Text), runF, runWorkerSend)
}

func runWorkerSend(ctx context.Context, env *Env, o workerSendOptions) error {
	v, err := env.Client().Send(ctx, api.IDRequest{Pane: callerPane(env), ID: o.ID, Text: o.Text})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "sent to %s (%s)\n", v.Name, v.ID)
	return nil
}
