package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"
)

type accountAddOptions struct{ Data, Name string }

func newAccountAddCmd(env *Env, runF runFunc[accountAddOptions]) *cobra.Command {
	var o accountAddOptions
	cmd := &cobra.Command{
		Use:   "add NAME",
		Short: "Add an account (with its own CA) and print its key, shown this once",
		Args:  exactArgs(1, "st control-plane account add NAME"),
	}
	cpDataFlag(cmd, &o.Data)
	return bind(cmd, env, &o, func(args []string) error {
		o.Name = args[0]
		if o.Data == "" {
			o.Data = defaultCPData(env)
		}
		return nil
	}, runF, runAccountAdd)
}

func runAccountAdd(_ context.Context, env *Env, o accountAddOptions) error {
	svc, err := env.controlPlane()
	if err != nil {
		return err
	}
	key, err := svc.AddAccount(o.Data, o.Name)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "added account %s\nkey: %s\n", o.Name, key)
	fmt.Fprintf(env.Stdout, "The key is shown only this once (the control plane keeps only its hash). Each machine signs in with:\n")
	fmt.Fprintf(env.Stdout, "  st login --control-plane URL --ca %s --account %s --key %s\n", filepath.Join(o.Data, "ca.pem"), o.Name, key)
	return nil
}
