package cli

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/sophonz/st/internal/agent/simagent"
)

// newAgentCmd holds the agents built into st: `st agent sim`, the
// simulated agent that --agent sim starts.
func newAgentCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{Use: "agent", Short: "Agents built into st", Hidden: true}
	cmd.AddCommand(newAgentSimCmd(env, nil))
	return cmd
}

type agentSimOptions struct {
	// Args are the sim agent's own, passed on as they are.
	Args []string
}

func newAgentSimCmd(env *Env, runF runFunc[agentSimOptions]) *cobra.Command {
	var o agentSimOptions
	cmd := &cobra.Command{
		Use:                "sim",
		Short:              "The simulated agent (what --agent sim starts)",
		DisableFlagParsing: true,
	}
	return bind(cmd, env, &o, func(args []string) error {
		o.Args = args
		return nil
	}, runF, runAgentSim)
}

// runAgentSim runs the sim agent on the terminal itself (os.Stdin): it
// reads keys the way a real agent does in its pane.
func runAgentSim(_ context.Context, env *Env, o agentSimOptions) error {
	if code := simagent.Main(o.Args, os.Stdin, env.Stdout, env.Getenv); code != 0 {
		return &exitError{code: code}
	}
	return nil
}
