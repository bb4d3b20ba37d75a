// Command st lets one coding agent run a team of others in tmux.
package main

import (
	"os"

	"github.com/sophonz/st/internal/cli"
	"github.com/sophonz/st/internal/daemon"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], cli.Env{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv,
		// This process is st: a command may start st's daemon by running
		// it again, and st daemon runs the daemon here.
		SelfIsST: true, Daemon: daemon.Serve,
	}))
}
