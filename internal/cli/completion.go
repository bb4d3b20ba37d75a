package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/hooks"
)

type completionOptions struct{ Shell string }

// shells are the shells st writes a completion script for (cobra's
// generators).
var shells = []string{"bash", "zsh", "fish"}

func newCompletionCmd(env *Env, runF runFunc[completionOptions]) *cobra.Command {
	var o completionOptions
	cmd := &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print the shell completion script of st",
		Long: `Print the script that completes st's commands, flags, agent kinds, and the
names and ids of the workers of the st that runs (nothing when st is down;
completing never starts it). Load it in your shell:

  bash:  source <(st completion bash)       (in ~/.bashrc)
  zsh:   source <(st completion zsh)        (in ~/.zshrc, after compinit)
  fish:  st completion fish > ~/.config/fish/completions/st.fish`,
		ValidArgs: shells,
		Args:      exactArgs(1, "st completion bash|zsh|fish"),
	}
	return bind(cmd, env, &o, func(args []string) error {
		if !slices.Contains(shells, args[0]) {
			return usageError(fmt.Sprintf("st has no completion for %q", args[0]), "st completion bash|zsh|fish")
		}
		o.Shell = args[0]
		return nil
	}, runF, func(_ context.Context, env *Env, o completionOptions) error {
		r := cmd.Root()
		switch o.Shell {
		case "bash":
			return r.GenBashCompletionV2(env.Stdout, true)
		case "zsh":
			return r.GenZshCompletion(env.Stdout)
		default:
			return r.GenFishCompletion(env.Stdout, true)
		}
	})
}

// workerArgs are the commands whose first argument is a worker (wait: each
// of its arguments).
var workerArgs = []string{"read", "send", "stop", "rename", "release", "adopt", "offer", "diff", "merge", "pick"}

// addCompletions makes the command tree complete agent kinds and the
// workers of the running st.
func addCompletions(root *cobra.Command, env *Env) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if f := c.Flags().Lookup("agent"); f != nil {
			kinds := agent.Kinds()
			if c.Parent() != nil && c.Parent().Name() == "hooks" {
				kinds = hooks.Kinds() // the agents with hooks to install
			}
			c.RegisterFlagCompletionFunc("agent", cobra.FixedCompletions(kinds, cobra.ShellCompDirectiveNoFileComp))
		}
		if c.Parent() != nil && c.Parent().Name() == "worker" {
			switch {
			case c.Name() == "wait":
				c.ValidArgsFunction = completeWorkers(env, true)
			case slices.Contains(workerArgs, c.Name()):
				c.ValidArgsFunction = completeWorkers(env, false)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// completeWorkers completes a worker's name or id from the st that runs:
// nothing when it is down (it never starts st), and within a second.
func completeWorkers(env *Env, many bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 && !many {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		ws, err := env.RunningClient().List(ctx, api.IDRequest{Pane: callerPane(env), All: true})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		add := func(word, desc string) {
			if word != "" && strings.HasPrefix(word, toComplete) && !slices.Contains(args, word) {
				out = append(out, cobra.CompletionWithDesc(word, desc))
			}
		}
		for _, w := range ws {
			desc := fmt.Sprintf("%s, %s", w.Agent, w.State)
			add(w.Name, w.ID+" "+desc)
			add(w.ID, w.Name+" "+desc)
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
