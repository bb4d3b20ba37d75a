package cli

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/sophonz/st/internal/agent/simagent"
)

// newAgentCmd holds the agents built into st: `st agent sim`, the
// simulated agent that --agent sim starts.
func newAgentCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{Use: "agent", Short: "Agents built into st", Hidden: true}
	cmd.AddCommand(&cobra.Command{
		Use:                "sim",
		Short:              "The simulated agent (what --agent sim starts)",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := simagent.Main(args, os.Stdin, env.Stdout, env.Getenv); code != 0 {
				return &exitError{code: code}
			}
			return nil
		},
	})
	return cmd
}
