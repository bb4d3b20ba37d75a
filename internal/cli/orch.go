package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sophonz/st/internal/api"
)

func newOrchCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{Use: "orch", Short: "Runs: a coordinator's piece of work"}
	cmd.AddCommand(newOrchStartCmd(env, nil), newOrchShowCmd(env, nil), newOrchPruneCmd(env, nil), newAcceptRemoteCmd(env, nil))
	return cmd
}

type acceptRemoteOptions struct {
	// On is true for on, false for off, nil for status.
	On *bool
}

func newAcceptRemoteCmd(env *Env, runF runFunc[acceptRemoteOptions]) *cobra.Command {
	var o acceptRemoteOptions
	cmd := &cobra.Command{
		Use:   "accept-remote on|off|status",
		Short: "Whether this machine takes workers from the account's other machines (off until turned on)",
		Long: `Another machine of the same account may start agents on this one and type into
them only while this is on. It is off until you turn it on.`,
		Args: exactArgs(1, "st orch accept-remote on|off|status"),
	}
	return bind(cmd, env, &o, func(args []string) error {
		switch args[0] {
		case "on", "off":
			on := args[0] == "on"
			o.On = &on
		case "status":
		default:
			return usageError(fmt.Sprintf("st orch accept-remote takes on, off or status, not %q", args[0]), "st orch accept-remote on")
		}
		return nil
	}, runF, runAcceptRemote)
}

func runAcceptRemote(ctx context.Context, env *Env, o acceptRemoteOptions) error {
	st, err := env.Client().AcceptRemote(ctx, api.AcceptRemoteRequest{Pane: callerPane(env), On: o.On})
	if err != nil {
		return err
	}
	state := "off: this machine takes no workers from other machines"
	if st.On {
		state = "on: this machine takes workers from the account's other machines"
	}
	fmt.Fprintf(env.Stdout, "accept-remote %s\n", state)
	if !st.SignedIn {
		fmt.Fprintln(env.Stdout, "this machine is not signed in, so no other machine can reach it yet (st login --control-plane URL --account NAME --key KEY)")
	} else {
		where := "through the control plane's relay (no listener of its own: peer_listen off)"
		if st.Addr != "" {
			where = "on " + st.Addr + " and through the control plane's relay"
		}
		fmt.Fprintf(env.Stdout, "machine %s of account %s, taking requests %s\n", st.Machine, st.Account, where)
	}
	return nil
}

type orchStartOptions struct {
	Objective string
	Budget    string
	OnLimit   string
	JSON      bool
}

func newOrchStartCmd(env *Env, runF runFunc[orchStartOptions]) *cobra.Command {
	var o orchStartOptions
	cmd := &cobra.Command{Use: "start --objective TEXT", Short: "Make a run whose coordinator is this pane; prints its id", Args: cobra.NoArgs}
	cmd.Flags().StringVar(&o.Objective, "objective", "", "what the run is for")
	cmd.Flags().StringVar(&o.Budget, "budget", "", "the run's budget: tokens (500k, 2M) or dollars of estimated cost ('$5'); none for no budget (default: config.toml's [tokens] budget)")
	cmd.Flags().StringVar(&o.OnLimit, "on-limit", "", "the run's default of st worker start --on-limit: wait, move or fail")
	jsonFlag(cmd, &o.JSON)
	return bind(cmd, env, &o, func([]string) error {
		if !api.ValidOnLimit(o.OnLimit) {
			return usageError(fmt.Sprintf("--on-limit takes wait, move or fail, not %q", o.OnLimit), "st orch start --on-limit wait|move|fail ...")
		}
		return nil
	}, runF, runOrchStart)
}

func runOrchStart(ctx context.Context, env *Env, o orchStartOptions) error {
	pane, err := env.Pane("st orch start")
	if err != nil {
		return err
	}
	r, err := env.Client().StartRun(ctx, api.StartRunRequest{Pane: pane, Objective: o.Objective, Budget: o.Budget, OnLimit: o.OnLimit})
	return printResult(env, o.JSON, r, err, func(w io.Writer, r *api.Run) error {
		_, err := fmt.Fprintln(w, r.ID)
		return err
	})
}

type orchShowOptions struct {
	Run  string // "": this pane's
	JSON bool
}

func newOrchShowCmd(env *Env, runF runFunc[orchShowOptions]) *cobra.Command {
	var o orchShowOptions
	cmd := &cobra.Command{
		Use:   "show [RUN]",
		Short: "Show a run: objective, coordinator, workers and their states",
		Args:  cobra.MaximumNArgs(1),
	}
	jsonFlag(cmd, &o.JSON)
	return bind(cmd, env, &o, func(args []string) error {
		if len(args) == 1 {
			o.Run = args[0]
		} else if callerPane(env) == "" {
			return usageError("st orch show with no run id shows this pane's run, and this shell is not in tmux", "st orch show RUN")
		}
		return nil
	}, runF, runOrchShow)
}

func runOrchShow(ctx context.Context, env *Env, o orchShowOptions) error {
	v, err := env.Client().ShowRun(ctx, api.IDRequest{Pane: callerPane(env), ID: o.Run})
	return printResult(env, o.JSON, v, err, printRun)
}

func printRun(w io.Writer, v *api.RunView) error {
	fmt.Fprintf(w, "run:         %s\n", v.ID)
	fmt.Fprintf(w, "objective:   %s\n", orDash(v.Objective, "(none given)"))
	fmt.Fprintf(w, "coordinator: %s\n", v.Coordinator)
	if v.CoordinatorPause != nil {
		p := *v.CoordinatorPause
		if v.CoordinatorError != "" {
			// Its continue never went in: the error says why, not "st
			// typed continue".
			p.Typed = false
		}
		fmt.Fprintf(w, "  %s\n", coordStateCell(v.CoordinatorAgent, &p))
		if v.CoordinatorError != "" {
			fmt.Fprintf(w, "  error: %s\n", v.CoordinatorError)
		}
	}
	if v.CoordinatorTokens != nil {
		fmt.Fprintf(w, "  its own tokens: %s\n", tokensLine(v.CoordinatorTokens))
	}
	for _, r := range asideRows(v.Teammates, v.Subagents) {
		fmt.Fprintf(w, "  %s %s, %s for %s\n", r[1], r[0], r[3], r[4])
	}
	fmt.Fprintf(w, "started:     %s\n", v.Created.Local().Format("2006-01-02 15:04:05"))
	if v.Tokens != nil {
		fmt.Fprintf(w, "tokens:      %s\n", tokensLine(v.Tokens))
	}
	if b := v.BudgetUse; b != nil {
		fmt.Fprintf(w, "budget:      %s\n", budgetLine(b))
	}
	if len(v.Views) == 0 {
		fmt.Fprintln(w, "workers:     none yet")
		return nil
	}
	fmt.Fprintln(w, "workers:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tNAME\tAGENT\tSTATE\tFOR\tPARENT\tTOKENS\tSUMMARY")
	for _, wv := range v.Views {
		name := wv.Name
		if wv.TeamOf > 0 {
			name += fmt.Sprintf(" (team of %d)", wv.TeamOf)
		}
		summary := oneLine(wv.Summary, 60)
		if wv.TextsHidden {
			summary = hiddenNote
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", wv.ID, name, wv.Agent, stateCell(wv.Worker), wv.For, wv.Parent, tokensCell(wv.Tokens), summary)
		for _, r := range asideRows(wv.Teammates, wv.Subagents) {
			fmt.Fprintf(tw, "  %s\t  %s\t%s\t%s\t%s\t%s\t\t\n", r[0], r[1], r[2], r[3], r[4], wv.ID)
		}
	}
	return tw.Flush()
}
