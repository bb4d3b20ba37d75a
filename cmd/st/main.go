// Command st lets one coding agent run a team of others in tmux.
package main

import (
	"os"

	"github.com/sophonz/st/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, SelfIsST: true}))
}
