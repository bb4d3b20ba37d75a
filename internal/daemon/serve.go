package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/sophonz/st/internal/atlogin"
)

// Serve is st daemon: Run in this process, with stBin the st program that
// worker windows and hooks call back. cmd/st hands it to the command line
// (cli.Env.Daemon), which itself links neither this package nor tmux. It
// answers, besides the error, the exit status st daemon ends with: another
// daemon holding home is atlogin.ExitRunning, so that a login service does
// not start st again for that.
func Serve(ctx context.Context, home, stBin string, log io.Writer, getenv func(string) string) (int, error) {
	err := Run(ctx, Options{Home: home, STBin: stBin, Log: log, Getenv: getenv})
	switch {
	case err == nil:
		return 0, nil
	case errors.Is(err, ErrRunning):
		return atlogin.ExitRunning, fmt.Errorf("%w\nTry: st status, or st down to stop it", err)
	default:
		return 1, err
	}
}
