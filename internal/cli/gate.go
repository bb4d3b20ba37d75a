package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sophonz/st/internal/api"
)

func newGateCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{Use: "gate", Short: "Decision gates: questions only a person should answer"}
	cmd.AddCommand(newGateAskCmd(env, nil), newGateListCmd(env, nil), newGateAnswerCmd(env, nil))
	return cmd
}

type gateAskOptions struct {
	Question string
	Options  []string
	Timeout  time.Duration
	JSON     bool
}

func newGateAskCmd(env *Env, runF runFunc[gateAskOptions]) *cobra.Command {
	var o gateAskOptions
	cmd := &cobra.Command{
		Use:   `ask "QUESTION" --option A --option B [--timeout D]`,
		Short: "Ask a person; blocks until the first answer and prints it",
		Long: `Ask a person a question with a few options. It blocks until someone answers
(st gate answer, the web UI's buttons, or a push notification's actions) and
prints the chosen option. Exit status: 0 answered, 3 no answer before --timeout.`,
		Args: exactArgs(1, `st gate ask "QUESTION" --option A --option B`),
	}
	cmd.Flags().StringArrayVar(&o.Options, "option", nil, "an answer the person can pick (two or more)")
	durationFlag(cmd.Flags(), &o.Timeout, "timeout", 0, "give up after this long (default: wait until answered)")
	jsonFlag(cmd, &o.JSON)
	return bind(cmd, env, &o, takeArgs(&o.Question), runF, runGateAsk)
}

func runGateAsk(ctx context.Context, env *Env, o gateAskOptions) error {
	c := env.Client()
	g, err := c.AskGate(ctx, api.GateRequest{Pane: callerPane(env), Question: o.Question, Options: o.Options, Timeout: o.Timeout})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "st: gate %s is open; waiting for a person to answer (st gate answer %s OPTION, or the web UI)\n", g.ID, g.ID)
	for {
		// Wait in pieces, across restarts of st: the gate is on disk.
		err := keepTrying(ctx, env, time.Time{}, 300*time.Millisecond, nil, func() error {
			w, err := c.WaitGate(ctx, api.GateRequest{ID: g.ID, Timeout: time.Minute})
			if err == nil {
				g = w
			}
			return err
		})
		if err != nil && ctx.Err() != nil {
			// Stopped (Ctrl-C): the gate is on disk and stays open for
			// a person; say so, and how to wait for it again.
			return &exitError{code: exitInterrupted, err: &api.Error{Kind: api.KindUsage,
				Message: fmt.Sprintf("stopped waiting; gate %s stays open, and its answer will wait in st gate list --all", g.ID),
				Hint:    fmt.Sprintf("st gate answer %s OPTION answers it; st gate list --all shows the answer", g.ID)}}
		}
		if err != nil {
			return err
		}
		switch g.State {
		case api.GateAnswered:
			if o.JSON {
				return printJSON(env.Stdout, g)
			}
			fmt.Fprintln(env.Stdout, g.Answer)
			return nil
		case api.GateTimedOut:
			if o.JSON {
				printJSON(env.Stdout, g)
			}
			return &exitError{code: exitTimeout, err: fmt.Errorf("timeout: no one answered gate %s within %s", g.ID, o.Timeout)}
		}
	}
}

type gateListOptions struct{ All, JSON bool }

func newGateListCmd(env *Env, runF runFunc[gateListOptions]) *cobra.Command {
	var o gateListOptions
	cmd := &cobra.Command{Use: "list [--all]", Short: "List the open gates (--all: answered and timed-out ones too)", Args: cobra.NoArgs}
	cmd.Flags().BoolVar(&o.All, "all", false, "answered and timed-out gates too")
	jsonFlag(cmd, &o.JSON)
	return bind(cmd, env, &o, nil, runF, runGateList)
}

func runGateList(ctx context.Context, env *Env, o gateListOptions) error {
	gs, err := env.Client().Gates(ctx, o.All)
	return printResult(env, o.JSON, gs, err, printGates)
}

func printGates(w io.Writer, gs []api.Gate) error {
	return printTable(w, gs, "no open gates", "GATE\tSTATE\tFROM\tQUESTION\tOPTIONS\tANSWER", func(tw io.Writer, g api.Gate) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", g.ID, g.State, g.Pane, oneLine(g.Question, 60), strings.Join(g.Options, " | "), g.Answer)
	})
}

type gateAnswerOptions struct{ ID, Option string }

func newGateAnswerCmd(env *Env, runF runFunc[gateAnswerOptions]) *cobra.Command {
	var o gateAnswerOptions
	cmd := &cobra.Command{Use: "answer ID OPTION", Short: "Answer an open gate", Args: exactArgs(2, "st gate answer ID OPTION")}
	return bind(cmd, env, &o, takeArgs(&o.ID, &o.Option), runF, runGateAnswer)
}

func runGateAnswer(ctx context.Context, env *Env, o gateAnswerOptions) error {
	g, err := env.Client().AnswerGate(ctx, api.GateRequest{Pane: callerPane(env), ID: o.ID, Option: o.Option, By: "cli"})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "gate %s: answered %s\n", g.ID, g.Answer)
	return nil
}
