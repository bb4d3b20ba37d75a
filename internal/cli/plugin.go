package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// newPluginCmd: st plugin install | uninstall | status (being written).
func newPluginCmd(env *Env) *cobra.Command {
	return &cobra.Command{Use: "plugin", Short: "Install the Claude plugin and Codex skills", Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error { return errors.New("not yet") }}
}
