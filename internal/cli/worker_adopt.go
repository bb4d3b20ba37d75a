package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/sophonz/st/internal/api"
	"github.com/spf13/cobra"
)

type workerReleaseOptions struct{ ID string }

func newWorkerReleaseCmd(env *Env, runF runFunc[workerReleaseOptions]) *cobra.Command {
	var o workerReleaseOptions
	cmd := &cobra.Command{Use: "release ID", Short: "Let a worker go: it leaves the run and is told so", Args: exactArgs(1, "st worker release ID")}
	return bind(cmd, env, &o, takeArgs(&o.ID), runF, runWorkerRelease)
}

func runWorkerRelease(ctx context.Context, env *Env, o workerReleaseOptions) error {
	v, err := env.Client().Release(ctx, api.IDRequest{Pane: callerPane(env), ID: o.ID})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "released %s (%s) from run %s: it was told it is no one's worker now; send it no more work\n", v.Name, v.ID, v.Run)
	return nil
}

type workerAdoptOptions struct {
	ID   string
	Owns []string
}

func newWorkerAdoptCmd(env *Env, runF runFunc[workerAdoptOptions]) *cobra.Command {
	var o workerAdoptOptions
	cmd := &cobra.Command{
		Use:   "adopt ID [--owns GLOB]...",
		Short: "Make an agent already running in a pane this pane's worker (nothing is typed into it)",
		Args:  exactArgs(1, "st worker adopt %ID"),
	}
	cmd.Flags().StringArrayVar(&o.Owns, "owns", nil, "a glob, relative to the repository root, of what the adopted worker may change (repeatable; this machine only)")
	return bind(cmd, env, &o, takeArgs(&o.ID), runF, runWorkerAdopt)
}

func runWorkerAdopt(ctx context.Context, env *Env, o workerAdoptOptions) error {
	pane, err := env.Pane("st worker adopt")
	if err != nil {
		return err
	}
	v, err := env.Client().Adopt(ctx, api.IDRequest{Pane: pane, ID: o.ID, Owns: o.Owns})
	if err != nil {
		return err
	}
	team := ""
	if v.TeamOf > 0 {
		team = fmt.Sprintf(", a team of %d", v.TeamOf)
	}
	fmt.Fprintf(env.Stdout, "adopted %s %s (%s%s) into run %s\n", v.ID, v.Name, v.Agent, team, v.Run)
	printNotes(env, v.Notes)
	return nil
}

type workerOfferOptions struct {
	ID, Machine string
	Withdraw    bool
	JSON        bool
}

// newWorkerOfferCmd is st worker offer: a person on this machine lets
// another machine's coordinator adopt an agent here.
func newWorkerOfferCmd(env *Env, runF runFunc[workerOfferOptions]) *cobra.Command {
	var o workerOfferOptions
	cmd := &cobra.Command{
		Use:   "offer ID --machine M | offer ID --withdraw",
		Short: "Let another machine's coordinator adopt an agent that runs here (a person's step)",
		Long: `Another machine of the account may adopt an agent of this machine (st worker
adopt THIS-MACHINE/%7 there) only after a person here offers it to that machine.
The offer stays on the pane until that machine adopts it, the pane closes, or
--withdraw. It is refused from an agent's pane: only a person hands an agent over.`,
		Args: exactArgs(1, "st worker offer %ID --machine NAME"),
	}
	cmd.Flags().StringVar(&o.Machine, "machine", "", "the machine whose coordinator may adopt it (name, host name or slug)")
	cmd.Flags().BoolVar(&o.Withdraw, "withdraw", false, "take the offer back")
	jsonFlag(cmd, &o.JSON)
	return bind(cmd, env, &o, func(args []string) error {
		o.ID = args[0]
		if o.Machine == "" && !o.Withdraw {
			return usageError("say which machine may adopt it", "st worker offer "+o.ID+" --machine NAME (st machines lists them)")
		}
		return nil
	}, runF, runWorkerOffer)
}

func runWorkerOffer(ctx context.Context, env *Env, o workerOfferOptions) error {
	v, err := env.Client().Offer(ctx, api.OfferRequest{Pane: callerPane(env), ID: o.ID, Machine: o.Machine, Withdraw: o.Withdraw})
	return printResult(env, o.JSON, v, err, func(w io.Writer, v *api.OfferView) error {
		if v.Withdrawn {
			fmt.Fprintf(w, "%s is offered to no machine now\n", v.Pane)
		} else {
			fmt.Fprintf(w, "%s (%s) is offered to %s: its coordinator may adopt it with st worker adopt <this machine>/%s\n", v.Pane, v.Agent, v.MachineName, v.Pane)
		}
		return nil
	})
}
