package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/remote"
	"github.com/spf13/cobra"
)

type machinesOptions struct{ JSON bool }

func newMachinesCmd(env *Env, runF runFunc[machinesOptions]) *cobra.Command {
	var o machinesOptions
	cmd := &cobra.Command{Use: "machines", Short: "List the machines of this machine's account", Args: cobra.NoArgs}
	jsonFlag(cmd, &o.JSON)
	return bind(cmd, env, &o, nil, runF, runMachines)
}

// machinesJSON is what st machines --json prints.
type machinesJSON struct {
	Account  string       `json:"account"`
	This     string       `json:"this_machine"`
	Machines []machineRow `json:"machines"`
}

// machineRow is a machine with how this one reaches it: "direct",
// "relayed" (through the control plane), "unreachable", or "" (this
// machine, an offline one, or st not running here to say).
type machineRow struct {
	remote.Machine
	Route      string `json:"route,omitempty"`
	RouteError string `json:"route_error,omitempty"`
}

func runMachines(ctx context.Context, env *Env, o machinesOptions) error {
	id, err := remote.LoadIdentity(env.Home())
	if err != nil {
		return err
	}
	ms, err := id.Machines(ctx)
	if err != nil {
		return err
	}
	// How each is reached is the daemon's to know (it makes the
	// connections); without it, the column says so.
	rctx, cancel := context.WithTimeout(ctx, 12*time.Second)
	routes, routesErr := env.Client().MachineRoutes(rctx)
	cancel()
	byslug := map[string]api.MachineRoute{}
	for _, r := range routes {
		byslug[r.Slug] = r
	}
	rows := make([]machineRow, len(ms))
	for i, m := range ms {
		rows[i].Machine = m
		if r, ok := byslug[m.Slug]; ok && m.Slug != id.Slug && m.Online {
			rows[i].Route, rows[i].RouteError = r.Route, r.Error
			if r.Route == "" {
				rows[i].Route = "unreachable"
			}
		}
	}
	if o.JSON {
		for i := range rows {
			rows[i].CertPEM = "" // long, and of no use to read
		}
		return printJSON(env.Stdout, machinesJSON{Account: id.Account, This: id.Slug, Machines: rows})
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tHOST\tSLUG\tSTATUS\tWORKERS\tREACHED")
	for _, m := range rows {
		mark, status, workers, reached := " ", "offline", "no", "-"
		if m.Slug == id.Slug {
			mark, reached = "*", "this machine"
		} else if !m.Replaced.IsZero() {
			mark = "!"
		}
		if m.Online {
			status = "online"
		}
		if m.AcceptRemote {
			workers = "takes workers"
		}
		switch {
		case m.Route != "":
			reached = m.Route
		case routesErr != nil && m.Online && m.Slug != id.Slug:
			reached = "?"
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%s\t%s\t%s\t%s\n", mark, m.Name, m.Host, m.Slug, status, workers, reached)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "account %s; * is this machine; reached: directly, or relayed through the control plane\n", id.Account)
	for _, m := range rows {
		printMachineNotes(env, m.Machine)
	}
	if routesErr != nil {
		fmt.Fprintln(env.Stdout, "(? : st is not running here to say how it reaches them; st up)")
	}
	return nil
}
