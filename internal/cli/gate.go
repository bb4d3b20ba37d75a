package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sophonz/st/internal/orch"
)

func newGateCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{Use: "gate", Short: "Decision gates: questions only a person should answer"}
	cmd.AddCommand(newGateAskCmd(env), newGateListCmd(env), newGateAnswerCmd(env))
	return cmd
}

type gateAskOptions struct {
	Question string
	Options  []string
	Timeout  time.Duration
	JSON     bool
}

func newGateAskCmd(env *Env) *cobra.Command {
	var o gateAskOptions
	cmd := &cobra.Command{
		Use:   `ask "QUESTION" --option A --option B [--timeout D]`,
		Short: "Ask a person; blocks until the first answer and prints it",
		Long: `Ask a person a question with a few options. It blocks until someone answers
(st gate answer, the web UI's buttons, or a push notification's actions) and
prints the chosen option. Exit status: 0 answered, 3 no answer before --timeout.`,
		Args: exactArgs(1, `st gate ask "QUESTION" --option A --option B`),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Question = args[0]
			return runGateAsk(cmd.Context(), env, o)
		},
	}
	cmd.Flags().StringArrayVar(&o.Options, "option", nil, "an answer the person can pick (two or more)")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 0, "give up after this long (default: wait until answered)")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON")
	return cmd
}

func runGateAsk(ctx context.Context, env *Env, o gateAskOptions) error {
	c := env.Client()
	var g orch.Gate
	req := orch.GateRequest{Pane: env.Getenv("TMUX_PANE"), Question: o.Question, Options: o.Options, Timeout: o.Timeout}
	if err := c.Call(ctx, "/v1/gate/ask", req, &g); err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "st: gate %s is open; waiting for a person to answer (st gate answer %s OPTION, or the web UI)\n", g.ID, g.ID)
	for {
		// Wait in pieces, across restarts of st: the gate is on disk.
		err := keepTrying(ctx, env, time.Time{}, 300*time.Millisecond, nil, func() error {
			return c.Call(ctx, "/v1/gate/wait", orch.GateRequest{ID: g.ID, Timeout: time.Minute}, &g)
		})
		if err != nil {
			return err
		}
		switch g.State {
		case orch.GateAnswered:
			if o.JSON {
				return printJSON(env.Stdout, g)
			}
			fmt.Fprintln(env.Stdout, g.Answer)
			return nil
		case orch.GateTimedOut:
			if o.JSON {
				printJSON(env.Stdout, g)
			}
			return &exitError{code: exitTimeout, err: fmt.Errorf("timeout: no one answered gate %s within %s", g.ID, o.Timeout)}
		}
	}
}

func newGateListCmd(env *Env) *cobra.Command {
	var all, asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--all]",
		Short: "List the open gates (--all: answered and timed-out ones too)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var gs []orch.Gate
			if err := env.Client().Call(cmd.Context(), "/v1/gate/list", orch.IDRequest{All: all}, &gs); err != nil {
				return err
			}
			if asJSON {
				return printJSON(env.Stdout, gs)
			}
			if len(gs) == 0 {
				fmt.Fprintln(env.Stdout, "no open gates")
				return nil
			}
			tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "GATE\tSTATE\tFROM\tQUESTION\tOPTIONS\tANSWER")
			for _, g := range gs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", g.ID, g.State, g.Pane, oneLine(g.Question, 60), joinOpts(g.Options), g.Answer)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "answered and timed-out gates too")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func joinOpts(o []string) string {
	s := ""
	for i, x := range o {
		if i > 0 {
			s += " | "
		}
		s += x
	}
	return s
}

func newGateAnswerCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "answer ID OPTION",
		Short: "Answer an open gate",
		Args:  exactArgs(2, "st gate answer ID OPTION"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var g orch.Gate
			if err := env.Client().Call(cmd.Context(), "/v1/gate/answer", orch.GateRequest{Pane: env.Getenv("TMUX_PANE"), ID: args[0], Option: args[1], By: "cli"}, &g); err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "gate %s: answered %s\n", g.ID, g.Answer)
			return nil
		},
	}
}
