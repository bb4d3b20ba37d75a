package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sophonz/st/internal/daemon"
	"github.com/sophonz/st/internal/orch"
)

func newOrchCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{Use: "orch", Short: "Runs: a coordinator's piece of work"}
	cmd.AddCommand(newOrchStartCmd(env), newOrchShowCmd(env), newAcceptRemoteCmd(env))
	return cmd
}

func newAcceptRemoteCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "accept-remote on|off|status",
		Short: "Whether this machine takes workers from the account's other machines (off until turned on)",
		Long: `Another machine of the same account may start agents on this one and type into
them only while this is on. It is off until you turn it on.`,
		Args: exactArgs(1, "st orch accept-remote on|off|status"),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := daemon.AcceptRemoteRequest{Pane: env.Getenv("TMUX_PANE")}
			switch args[0] {
			case "on", "off":
				on := args[0] == "on"
				req.On = &on
			case "status":
			default:
				return &orch.Error{Kind: orch.KindUsage, Message: fmt.Sprintf("st orch accept-remote takes on, off or status, not %q", args[0]), Hint: "st orch accept-remote on"}
			}
			var st daemon.AcceptRemoteStatus
			if err := env.Client().Call(cmd.Context(), "/v1/orch/accept-remote", req, &st); err != nil {
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
		},
	}
}

type orchStartOptions struct {
	Objective string
	JSON      bool
}

func newOrchStartCmd(env *Env) *cobra.Command {
	var o orchStartOptions
	cmd := &cobra.Command{
		Use:   "start --objective TEXT",
		Short: "Make a run whose coordinator is this pane; prints its id",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pane, err := env.Pane("st orch start")
			if err != nil {
				return err
			}
			var r orch.Run
			if err := env.Client().Call(cmd.Context(), "/v1/orch/start", orch.StartRunRequest{Pane: pane, Objective: o.Objective}, &r); err != nil {
				return err
			}
			if o.JSON {
				return printJSON(env.Stdout, r)
			}
			fmt.Fprintln(env.Stdout, r.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&o.Objective, "objective", "", "what the run is for")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON")
	return cmd
}

func newOrchShowCmd(env *Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show [RUN]",
		Short: "Show a run: objective, coordinator, workers and their states",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := orch.IDRequest{Pane: env.Getenv("TMUX_PANE")}
			if len(args) == 1 {
				req.ID = args[0]
			} else if req.Pane == "" {
				return &orch.Error{Kind: orch.KindUsage, Message: "st orch show with no run id shows this pane's run, and this shell is not in tmux", Hint: "st orch show RUN"}
			}
			var v orch.RunView
			if err := env.Client().Call(cmd.Context(), "/v1/orch/show", req, &v); err != nil {
				return err
			}
			if asJSON {
				return printJSON(env.Stdout, v)
			}
			fmt.Fprintf(env.Stdout, "run:         %s\n", v.ID)
			obj := v.Objective
			if obj == "" {
				obj = "(none given)"
			}
			fmt.Fprintf(env.Stdout, "objective:   %s\n", obj)
			fmt.Fprintf(env.Stdout, "coordinator: %s\n", v.Coordinator)
			for _, r := range asideRows(v.Teammates, v.Subagents) {
				fmt.Fprintf(env.Stdout, "  %s %s, %s for %s\n", r[1], r[0], r[3], r[4])
			}
			fmt.Fprintf(env.Stdout, "started:     %s\n", v.Created.Local().Format("2006-01-02 15:04:05"))
			if len(v.Views) == 0 {
				fmt.Fprintln(env.Stdout, "workers:     none yet")
				return nil
			}
			fmt.Fprintln(env.Stdout, "workers:")
			tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "  ID\tNAME\tAGENT\tSTATE\tFOR\tPARENT\tSUMMARY")
			for _, w := range v.Views {
				name := w.Name
				if w.TeamOf > 0 {
					name += fmt.Sprintf(" (team of %d)", w.TeamOf)
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", w.ID, name, w.Agent, w.State, w.For, w.Parent, oneLine(w.Summary, 60))
				for _, r := range asideRows(w.Teammates, w.Subagents) {
					fmt.Fprintf(tw, "  %s\t  %s\t%s\t%s\t%s\t%s\t\n", r[0], r[1], r[2], r[3], r[4], w.ID)
				}
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
