package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/cpconfig"
	"github.com/sophonz/st/internal/remote"
	"github.com/sophonz/st/internal/version"
)

// This file holds the commands of the account and its machines: the
// control plane (st control-plane serve, st control-plane account add),
// a machine's sign-in (st login, st logout) and st machines.

func newControlPlaneCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "control-plane",
		Short: "The account service: signs machines' certificates and lists the machines (never sees tasks or answers)",
	}
	account := &cobra.Command{Use: "account", Short: "Accounts of the control plane"}
	machine := &cobra.Command{Use: "machine", Short: "Machines of an account"}
	machine.AddCommand(newMachineRemoveCmd(env, nil))
	account.AddCommand(newAccountAddCmd(env, nil))
	cmd.AddCommand(newControlPlaneServeCmd(env, nil), account, machine, newCPMachinesCmd(env, nil))
	cmd.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		if env.ControlPlane == nil && env.SelfIsST {
			// Main found no st-control-plane to run in st's place.
			self, _ := os.Executable()
			return &api.Error{Kind: api.KindNotFound, Message: "st control-plane runs st-control-plane, the control plane's own program, and there is none beside " + self + " or on PATH",
				Hint: "install both: scripts/install from st's checkout, or go install github.com/sophonz/st/cmd/st-control-plane@latest"}
		}
		if env.ControlPlane != nil {
			warnOtherBuild(env)
		}
		return c.Root().PersistentPreRunE(c, args)
	}
	return cmd
}

// callerBuildVar carries, from st to the st-control-plane it runs, st's
// own build (version.Full), so that a pair of two builds says so: an st
// upgraded alone (go install of cmd/st only) would run the control plane
// of before, and nothing else would show it.
const callerBuildVar = "ST_CONTROL_PLANE_CALLER"

// warnOtherBuild says, on stderr, when the st that ran this
// st-control-plane is another build. A warning, not a refusal: a control
// plane a service manager restarts must come up, and two builds that
// speak the same protocol work together (the version matrix).
func warnOtherBuild(env *Env) {
	caller := env.Getenv(callerBuildVar)
	if caller == "" || caller == version.Full() {
		return
	}
	fmt.Fprintf(env.Stderr, "warning: st %s ran st-control-plane %s, another build: the control plane is the older or newer one. Try: install both from one checkout (scripts/install), or go install both commands at one version\n", caller, version.Full())
}

// controlPlaneProgram is the control plane's own program: st-control-plane
// beside st's executable, else on PATH; "" when there is none. It is a
// program of its own because it links SQLite and Prometheus's client,
// whose package initialisation would add about 1 ms to the start of every
// st process (each agent hook, report and list is one): see
// internal/controlplane/cpserver.
func controlPlaneProgram() string {
	const name = "st-control-plane"
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return ""
}

// execControlPlane replaces this process with st-control-plane and args
// (the same pid, so a service manager or a test that started st
// control-plane serve still holds the control plane's). It returns only
// when there is no such program or it cannot be run.
func execControlPlane(args []string) {
	p := controlPlaneProgram()
	if p == "" {
		return
	}
	environ := []string{callerBuildVar + "=" + version.Full()}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, callerBuildVar+"=") {
			environ = append(environ, kv)
		}
	}
	_ = syscall.Exec(p, append([]string{p}, args...), environ)
}

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

// portOf is the port of a URL.
func portOf(u string) string {
	if i := strings.LastIndex(u, ":"); i >= 0 {
		return u[i+1:]
	}
	return ""
}

// defaultCPData is the control plane's folder when --data is not given.
func defaultCPData(env *Env) string { return filepath.Join(env.Home(), "control-plane") }

// cpDataFlag is the --data flag of the control plane's commands.
func cpDataFlag(cmd *cobra.Command, data *string) {
	cmd.Flags().StringVar(data, "data", "", "the control plane's folder (default $ST_HOME/control-plane)")
}

type cpServeOptions struct {
	Data             string
	Listen           string
	OfflineAfter     time.Duration
	Cert, Key        string
	Names            []string
	HTTP             bool
	RelayStreams     int
	RelayPairStreams int
	RelayRateMiB     float64
	RelayRecord      string
	Metrics          string
	CertLifetime     time.Duration
}

func newControlPlaneServeCmd(env *Env, runF runFunc[cpServeOptions]) *cobra.Command {
	var o cpServeOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the control plane in the foreground (HTTPS; it makes its CA in --data on first start)",
		Args:  cobra.NoArgs,
	}
	cpDataFlag(cmd, &o.Data)
	f := cmd.Flags()
	f.StringVar(&o.Listen, "listen", "127.0.0.1:0", "host:port to listen on; port 0 picks a free one")
	durationFlag(f, &o.OfflineAfter, "offline-after", cpconfig.DefaultOfflineAfter, "a machine with no heartbeat for this long is offline")
	f.StringVar(&o.Cert, "cert", "", "its own TLS certificate (PEM, with its chain), such as a public CA's; machines then sign in without --ca")
	f.StringVar(&o.Key, "key", "", "the key of --cert (PEM)")
	f.StringSliceVar(&o.Names, "name", nil, "a host name machines reach it by, for the certificate it makes itself (repeat or separate with commas)")
	f.BoolVar(&o.HTTP, "http", false, "serve plain HTTP, for a TLS terminator in front (Caddy, nginx, a load balancer) that passes websockets; machines sign in at the terminator's https URL")
	f.IntVar(&o.RelayStreams, "relay-streams", cpconfig.DefaultRelayStreams, "streams a machine may have opened through the relay at once")
	f.IntVar(&o.RelayPairStreams, "relay-pair-streams", cpconfig.DefaultRelayPairStreams, "of those, streams to one machine (so that no machine uses up another's)")
	f.StringVar(&o.Metrics, "metrics", "", "serve /metrics (Prometheus) on this loopback host:port, such as 127.0.0.1:9464; off when empty")
	f.Float64Var(&o.RelayRateMiB, "relay-rate", float64(cpconfig.DefaultRelayRate)/(1<<20), "MiB a second a machine may send through the relay (0: no limit)")
	f.StringVar(&o.RelayRecord, "relay-record", "", "keep the bytes of every relayed stream in this folder, as the relay read them (for audits and tests: TLS records only)")
	f.MarkHidden("relay-record")
	durationFlag(f, &o.CertLifetime, "cert-lifetime", 0, "how long the machines' certificates it signs last (0: 11 hours; shorter for tests: a laptop's certificate that ends while it sleeps)")
	f.MarkHidden("cert-lifetime")
	return bind(cmd, env, &o, func([]string) error {
		if o.Data == "" {
			o.Data = defaultCPData(env)
		}
		return nil
	}, runF, runControlPlaneServe)
}

// controlPlane is the control plane's service, or why there is none: a
// command of st control-plane runs in st only when st found no
// st-control-plane to run in its place (PersistentPreRunE refuses it
// then), or in a test that gives no Env.ControlPlane.
func (e *Env) controlPlane() (cpconfig.Service, error) {
	if e.ControlPlane == nil {
		return nil, &api.Error{Kind: api.KindNotFound, Message: "this program does not run the control plane (st-control-plane does)",
			Hint: "run st-control-plane, or install it beside st: scripts/install from st's checkout"}
	}
	return e.ControlPlane, nil
}

func runControlPlaneServe(ctx context.Context, env *Env, o cpServeOptions) error {
	rate := int64(o.RelayRateMiB * (1 << 20))
	if o.RelayRateMiB <= 0 {
		rate = -1
	}
	svc, err := env.controlPlane()
	if err != nil {
		return err
	}
	cp, err := svc.Start(cpconfig.ServerOptions{Data: o.Data, OfflineAfter: o.OfflineAfter, Log: env.Stderr,
		CertFile: o.Cert, KeyFile: o.Key, Names: o.Names, PlainHTTP: o.HTTP,
		RelayStreams: o.RelayStreams, RelayPairStreams: o.RelayPairStreams, RelayRate: rate, RelayRecord: o.RelayRecord,
		MetricsAddr: o.Metrics, CertLifetime: o.CertLifetime}, o.Listen)
	if err != nil {
		return err
	}
	// The URL first and alone on its line: scripts and tests read it.
	fmt.Fprintf(env.Stdout, "control plane listening on %s\n", cp.URL())
	if u := cp.MetricsURL(); u != "" {
		fmt.Fprintf(env.Stdout, "metrics on %s (loopback only)\n", u)
	}
	switch {
	case o.HTTP:
		fmt.Fprintf(env.Stdout, "plain HTTP: put a TLS terminator in front that passes websockets (caddy reverse-proxy --from cp.example.net --to %s)\n", strings.TrimPrefix(cp.URL(), "http://"))
		fmt.Fprintln(env.Stdout, "machines sign in with: st login --control-plane https://cp.example.net --account NAME --key KEY")
	case o.Cert != "":
		fmt.Fprintf(env.Stdout, "machines sign in with: st login --control-plane https://NAME-IN-THE-CERTIFICATE:%s --account NAME --key KEY\n", portOf(cp.URL()))
	default:
		fmt.Fprintf(env.Stdout, "machines sign in with: st login --control-plane %s --ca %s --account NAME --key KEY\n", cp.URL(), cp.CAFile())
	}
	fmt.Fprintf(env.Stdout, "add an account with: st control-plane account add NAME --data %s\n", o.Data)
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return cp.Shutdown(sctx)
}

type accountAddOptions struct{ Data, Name string }

func newAccountAddCmd(env *Env, runF runFunc[accountAddOptions]) *cobra.Command {
	var o accountAddOptions
	cmd := &cobra.Command{
		Use:   "add NAME",
		Short: "Add an account (with its own CA) and print its key, shown this once",
		Args:  exactArgs(1, "st control-plane account add NAME"),
	}
	cpDataFlag(cmd, &o.Data)
	return bind(cmd, env, &o, func(args []string) error {
		o.Name = args[0]
		if o.Data == "" {
			o.Data = defaultCPData(env)
		}
		return nil
	}, runF, runAccountAdd)
}

func runAccountAdd(_ context.Context, env *Env, o accountAddOptions) error {
	svc, err := env.controlPlane()
	if err != nil {
		return err
	}
	key, err := svc.AddAccount(o.Data, o.Name)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "added account %s\nkey: %s\n", o.Name, key)
	fmt.Fprintf(env.Stdout, "The key is shown only this once (the control plane keeps only its hash). Each machine signs in with:\n")
	fmt.Fprintf(env.Stdout, "  st login --control-plane URL --ca %s --account %s --key %s\n", filepath.Join(o.Data, "ca.pem"), o.Name, key)
	return nil
}

// newLoginCmd is st login; what a flag does not give comes from the
// environment (ST_CONTROL_PLANE, ST_ACCOUNT, ...).
func newLoginCmd(env *Env, runF runFunc[remote.LoginOptions]) *cobra.Command {
	var o remote.LoginOptions
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Sign this machine in to an account, so the account's machines can reach each other's st",
		Args:  cobra.NoArgs,
	}
	f := cmd.Flags()
	f.StringVar(&o.URL, "control-plane", "", "the control plane's URL, as st control-plane serve printed it (or $ST_CONTROL_PLANE)")
	f.StringVar(&o.CAFile, "ca", "", "the control plane's CA, the ca.pem in its --data folder (or $ST_CONTROL_PLANE_CA)")
	f.StringVar(&o.Account, "account", "", "the account (or $ST_ACCOUNT)")
	f.StringVar(&o.Key, "key", "", "the account's key (or $ST_ACCOUNT_KEY)")
	f.StringVar(&o.Name, "name", "", "how the account calls this machine (or $ST_MACHINE_NAME; default its host name)")
	f.StringVar(&o.Host, "host", "", "this machine's host name (or $ST_HOSTNAME; default the system's)")
	f.BoolVar(&o.Replace, "replace", false, "take over the name and host of a machine signed in with another key (its key is lost: a new disk, a reinstall); that key is revoked, and st machines on every machine shows it")
	return bind(cmd, env, &o, func([]string) error {
		for v, key := range map[*string]string{&o.URL: "ST_CONTROL_PLANE", &o.CAFile: "ST_CONTROL_PLANE_CA", &o.Account: "ST_ACCOUNT",
			&o.Key: "ST_ACCOUNT_KEY", &o.Name: "ST_MACHINE_NAME", &o.Host: "ST_HOSTNAME"} {
			if *v == "" {
				*v = env.Getenv(key)
			}
		}
		return nil
	}, runF, runLogin)
}

func runLogin(ctx context.Context, env *Env, o remote.LoginOptions) error {
	id, err := remote.Login(ctx, env.Home(), o)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "signed in to account %s as %s (slug %s) until %s\n", id.Account, id.Name, id.Slug, id.Expires.Local().Format("15:04"))
	if id.Formerly != "" {
		fmt.Fprintf(env.Stdout, "this machine was %s before: its name follows its key, so %s is listed no more\n", id.Formerly, id.Formerly)
	}
	if id.Replaced != "" {
		fmt.Fprintf(env.Stdout, "took the name over from key %s, which is revoked now; the account's other machines show %s as replaced\n", id.Replaced, id.Slug)
	}
	fmt.Fprintln(env.Stdout, "The account's other machines start workers here only after: st orch accept-remote on")
	reloadDaemon(ctx, env)
	return nil
}

// reloadDaemon tells this machine's daemon, if one runs, that the
// sign-in changed. It is best effort: a daemon that is down reads the
// sign-in when it starts.
func reloadDaemon(ctx context.Context, env *Env) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, _ = env.RunningClient().ReloadRemote(ctx)
}

type logoutOptions struct{}

func newLogoutCmd(env *Env, runF runFunc[logoutOptions]) *cobra.Command {
	var o logoutOptions
	cmd := &cobra.Command{Use: "logout", Short: "Sign this machine out of its account", Args: cobra.NoArgs}
	return bind(cmd, env, &o, nil, runF, runLogout)
}

func runLogout(ctx context.Context, env *Env, _ logoutOptions) error {
	id, err := remote.LoadIdentity(env.Home())
	if errors.Is(err, remote.ErrNotSignedIn) {
		fmt.Fprintln(env.Stdout, "this machine is not signed in")
		return nil
	}
	if err != nil {
		return err
	}
	err = remote.Logout(ctx, env.Home())
	if err != nil && !errors.Is(err, remote.ErrControlPlaneNotTold) {
		return err
	}
	reloadDaemon(ctx, env)
	if err != nil {
		// Signed out here all the same; the rest is the control plane's list.
		fmt.Fprintf(env.Stderr, "st: %v\n", err)
	}
	fmt.Fprintf(env.Stdout, "signed out of account %s (this machine was %s)\n", id.Account, id.Slug)
	return nil
}

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
