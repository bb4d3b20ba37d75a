package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/cpconfig"
	"github.com/sophonz/st/internal/version"
	"github.com/spf13/cobra"
)

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
