// Command st-control-plane is st's control plane, the account service
// that signs machines' certificates, lists them and relays between them:
// `st-control-plane serve` is `st control-plane serve`, which st runs
// through this program. It is a program of its own because it links
// SQLite and Prometheus's client, which st, started by every agent hook,
// must not (internal/controlplane/cpserver says why).
package main

import (
	"os"

	"github.com/sophonz/st/internal/cli"
	"github.com/sophonz/st/internal/controlplane"
	"github.com/sophonz/st/internal/controlplane/cpserver"
	"github.com/sophonz/st/internal/cpconfig"
)

func main() {
	os.Exit(cli.Main(append([]string{"control-plane"}, os.Args[1:]...), cli.Env{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv,
		ControlPlane: controlplane.Service{NewMeter: func() cpconfig.Meter { return cpserver.NewMeter() }},
	}))
}
