package cli

import (
	"context"
	"errors"
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
prints the chosen option. Ctrl-C withdraws the gate: no one waits for its
answer any more. Exit status: 0 answered, 3 no answer before --timeout,
130 stopped by Ctrl-C.`,
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
			return &exitError{code: exitInterrupted, err: withdrawAsked(ctx, env, g.ID)}
		}
		if err != nil {
			return err
		}
		switch g.State {
		case api.GateWithdrawn:
			return &api.Error{Kind: api.KindConflict, Message: fmt.Sprintf("gate %s was withdrawn: no answer will come", g.ID),
				Hint: `st gate ask "QUESTION" --option A --option B asks again`}
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

// withdrawGrace is how long st gate ask, stopped, tries to withdraw its
// gate: its own context is done, and Main ends it by force soon after.
const withdrawGrace = 2 * time.Second

// withdrawAsked withdraws the gate st gate ask opened, once Ctrl-C (or
// SIGTERM) stopped its wait: no one waits for its answer now, and a gate
// left open would wait for a person forever. What it returns says what
// became of the gate. If st cannot be reached, the gate stays open on
// disk, and the words say how a person answers it.
func withdrawAsked(ctx context.Context, env *Env, id string) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), withdrawGrace)
	defer cancel()
	// A client that never starts st: a daemon started now knows the gate
	// from disk, but a Ctrl-C should not start one.
	_, err := env.RunningClient().WithdrawGate(wctx, api.GateRequest{Pane: callerPane(env), ID: id})
	var ae *api.Error
	switch {
	case err == nil:
		return &api.Error{Kind: api.KindUsage,
			Message: fmt.Sprintf("stopped waiting; gate %s is withdrawn: it left st gate list, and no one can answer it now", id),
			Hint:    `st gate ask "QUESTION" --option A --option B asks again`}
	case errors.As(err, &ae):
		// st answered, and did not withdraw it (answered meanwhile, or
		// refused): its words say why.
		return &api.Error{Kind: api.KindUsage,
			Message: fmt.Sprintf("stopped waiting; gate %s was not withdrawn: %s", id, strings.TrimPrefix(ae.Message, "refused: ")),
			Hint:    "st gate list --all shows the gate and its answer"}
	}
	return &api.Error{Kind: api.KindUsage,
		Message: fmt.Sprintf("stopped waiting; st could not be reached to withdraw gate %s, so it stays open, and its answer will wait in st gate list --all", id),
		Hint:    fmt.Sprintf("st gate answer %s OPTION answers it; st gate list --all shows the answer", id)}
}

type gateListOptions struct{ All, JSON bool }

func newGateListCmd(env *Env, runF runFunc[gateListOptions]) *cobra.Command {
	var o gateListOptions
	cmd := &cobra.Command{Use: "list [--all]", Short: "List the open gates (--all: answered, timed-out and withdrawn ones too)", Args: cobra.NoArgs}
	cmd.Flags().BoolVar(&o.All, "all", false, "answered, timed-out and withdrawn gates too")
	jsonFlag(cmd, &o.JSON)
	return bind(cmd, env, &o, nil, runF, runGateList)
}

func runGateList(ctx context.Context, env *Env, o gateListOptions) error {
	gs, err := env.Client().Gates(ctx, o.All)
	return printResult(env, o.JSON, gs, err, printGates)
}

func printGates(w io.Writer, gs []api.Gate) error {
	return printTable(w, gs, "no open gates", "GATE\tSTATE\tFROM\tQUESTION\tOPTIONS\tANSWER", func(tw io.Writer, g api.Gate) {
		opts := strings.Join(g.Options, " | ")
		if g.Value != nil && g.State == api.GateOpen {
			opts += " | " + g.Value.Prefix + "AMOUNT (--value)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", g.ID, g.State, g.Pane, oneLine(g.Question, 60), opts, g.Answer)
	})
}

type gateAnswerOptions struct{ ID, Option, Value string }

func newGateAnswerCmd(env *Env, runF runFunc[gateAnswerOptions]) *cobra.Command {
	var o gateAnswerOptions
	cmd := &cobra.Command{
		Use:   "answer ID OPTION | answer ID --value AMOUNT",
		Short: "Answer an open gate",
		Long: `Answer an open gate with one of its options. A gate with an option that
takes an amount (a run's budget gate: "go on with a budget of 2M") also takes
that option with another amount, written in full ("go on with a budget of
5M") or as --value 5M.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if v, _ := cmd.Flags().GetString("value"); v != "" && len(args) == 1 {
				return nil
			}
			return exactArgs(2, "st gate answer ID OPTION (or st gate answer ID --value AMOUNT)")(cmd, args)
		},
	}
	cmd.Flags().StringVar(&o.Value, "value", "", "the amount of the gate's option that takes one (a budget: 5M, '$20')")
	return bind(cmd, env, &o, func(args []string) error {
		// (The option may be left out when --value is given.)
		o.ID = args[0]
		if len(args) > 1 {
			o.Option = args[1]
		}
		return nil
	}, runF, runGateAnswer)
}

func runGateAnswer(ctx context.Context, env *Env, o gateAnswerOptions) error {
	g, err := env.Client().AnswerGate(ctx, api.GateRequest{Pane: callerPane(env), ID: o.ID, Option: o.Option, Value: o.Value, By: "cli"})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "gate %s: answered %s\n", g.ID, g.Answer)
	return nil
}
