package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sophonz/st/internal/remote"
	"github.com/spf13/cobra"
)

type cpMachinesOptions struct {
	Data, Account string
	JSON          bool
}

// newCPMachinesCmd is st control-plane machines: an account's machines as
// the control plane's folder has them, whether or not serve runs.
func newCPMachinesCmd(env *Env, runF runFunc[cpMachinesOptions]) *cobra.Command {
	var o cpMachinesOptions
	cmd := &cobra.Command{
		Use:   "machines --account ACCOUNT",
		Short: "List an account's machines: last seen, address kind (direct or relay-only) and st version",
		Long: `List the machines of an account as the control plane's folder has them, whether
or not serve runs. Last seen is as serve last wrote it (every 10 s); a machine is
online when its last heartbeat said so within serve's --offline-after plus that.
ADDRESS is direct when the machine has a peer listener the others may dial, and
relay-only when it is reached only through the control plane's relay.`,
		Args: cobra.NoArgs,
	}
	cpDataFlag(cmd, &o.Data)
	cmd.Flags().StringVar(&o.Account, "account", "", "the account whose machines to list")
	jsonFlag(cmd, &o.JSON)
	return bind(cmd, env, &o, func([]string) error {
		if o.Data == "" {
			o.Data = defaultCPData(env)
		}
		if o.Account == "" {
			return usageError("say which account's machines to list", "st control-plane machines --account NAME")
		}
		return nil
	}, runF, runCPMachines)
}

// cpMachinesJSON is what st control-plane machines --json prints.
type cpMachinesJSON struct {
	Account  string           `json:"account"`
	Machines []remote.Machine `json:"machines"`
}

func runCPMachines(_ context.Context, env *Env, o cpMachinesOptions) error {
	svc, err := env.controlPlane()
	if err != nil {
		return err
	}
	ms, err := svc.ListMachines(o.Data, o.Account)
	if err != nil {
		return err
	}
	if o.JSON {
		return printJSON(env.Stdout, cpMachinesJSON{Account: o.Account, Machines: ms})
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tHOST\tSLUG\tSTATUS\tLAST SEEN\tADDRESS\tVERSION\tWORKERS")
	for _, m := range ms {
		status, workers := "offline", "no"
		if m.Online {
			status = "online"
		}
		if m.AcceptRemote {
			workers = "takes workers"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Name, m.Host, m.Slug, status, seenAgo(m.LastSeen, time.Now()),
			orDash(m.AddrKind, "-"), orDash(m.Version, "-"), workers)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "account %s: %d machines\n", o.Account, len(ms))
	for _, m := range ms {
		printMachineNotes(env, m)
	}
	return nil
}

// seenAgo says how long ago t was, for a list.
func seenAgo(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return t.Local().Format("2006-01-02")
}

// printMachineNotes says what a list's row cannot: that a machine's name
// was taken over by st login --replace, or that it had another name.
func printMachineNotes(env *Env, m remote.Machine) {
	if !m.Replaced.IsZero() {
		fmt.Fprintf(env.Stdout, "! %s was taken over by a new sign-in with st login --replace at %s; the key it had before is revoked. If nobody meant to, remove it: st control-plane machine remove %s --account ACCOUNT\n",
			m.Slug, m.Replaced.Local().Format("2006-01-02 15:04"), m.Slug)
	}
	if len(m.Formerly) > 0 {
		fmt.Fprintf(env.Stdout, "  %s was %s before it signed in under its new name (the same key)\n", m.Slug, strings.Join(m.Formerly, ", "))
	}
}

type machineRemoveOptions struct{ Data, Account, Name string }

// newMachineRemoveCmd is st control-plane machine remove: for a lost
// machine.
func newMachineRemoveCmd(env *Env, runF runFunc[machineRemoveOptions]) *cobra.Command {
	var o machineRemoveOptions
	cmd := &cobra.Command{
		Use:   "remove NAME --account ACCOUNT",
		Short: "Sign a machine out of an account and revoke its key (for a lost machine)",
		Long: `Remove a machine (its name, host name or slug) from an account and revoke its
key. Its certificate would be valid for up to 11 hours more; the other machines
learn of the revocation with their next heartbeat and refuse it from then on.
It works whether or not the control plane runs.`,
		Args: exactArgs(1, "st control-plane machine remove NAME --account ACCOUNT"),
	}
	cpDataFlag(cmd, &o.Data)
	cmd.Flags().StringVar(&o.Account, "account", "", "the account the machine is in")
	return bind(cmd, env, &o, func(args []string) error {
		o.Name = args[0]
		if o.Data == "" {
			o.Data = defaultCPData(env)
		}
		if o.Account == "" {
			return usageError("say which account the machine is in", "st control-plane machine remove "+o.Name+" --account NAME")
		}
		return nil
	}, runF, runMachineRemove)
}

func runMachineRemove(_ context.Context, env *Env, o machineRemoveOptions) error {
	svc, err := env.controlPlane()
	if err != nil {
		return err
	}
	m, err := svc.RemoveMachine(o.Data, o.Account, o.Name)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "removed machine %s (%s) from account %s and revoked its key; the other machines refuse it from their next heartbeat\n", m.Name, m.Slug, o.Account)
	return nil
}
