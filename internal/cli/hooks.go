package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// newHooksCmd: st hooks install | uninstall | status (being written).
func newHooksCmd(env *Env) *cobra.Command {
	return &cobra.Command{Use: "hooks", Short: "Install the agents' hooks", Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error { return errors.New("not yet") }}
}
