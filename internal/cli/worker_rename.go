package cli

import (
	"context"
	"fmt"

	"github.com/sophonz/st/internal/api"
	"github.com/spf13/cobra"
)

type workerRenameOptions struct{ ID, Name string }

func newWorkerRenameCmd(env *Env, runF runFunc[workerRenameOptions]) *cobra.Command {
	var o workerRenameOptions
	cmd := &cobra.Command{Use: "rename ID NAME", Short: "Rename a worker (and its window)", Args: exactArgs(2, "st worker rename ID NAME")}
	return bind(cmd, env, &o, takeArgs(&o.ID, &o.Name), runF, runWorkerRename)
}

func runWorkerRename(ctx context.Context, env *Env, o workerRenameOptions) error {
	v, err := env.Client().Rename(ctx, api.IDRequest{Pane: callerPane(env), ID: o.ID, Text: o.Name})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "renamed %s to %s\n", v.ID, v.Name)
	return nil
}
