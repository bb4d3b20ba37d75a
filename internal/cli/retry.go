package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/client"
	"github.com/sophonz/st/internal/syncs"
)

// isTransient reports an error of a daemon that is down or went away
// mid-request, as opposed to an answer of st.
func isTransient(err error) bool {
	if errors.Is(err, client.ErrDown) {
		return true
	}
	// A refusal is an answer; any other failure is the way to the daemon
	// (a daemon killed mid-request, "server closed idle connection", a
	// reset). Trying again is safe: a report of a worker that is already
	// done is recorded again, not twice.
	var oe *api.Error
	return !errors.As(err, &oe)
}

// keepTrying calls call until it returns nil or an answer of st (a
// refusal), while the daemon is down or restarting: every `every`, until
// `until` passes (never, when zero). It gives up at once when ST_HOME is
// gone: no st will answer there again (a test's folder removed under a
// client left running, say). waiting is told of the first failure.
func keepTrying(ctx context.Context, env *Env, until time.Time, every time.Duration, waiting func(error), call func() error) error {
	told := false
	for {
		err := call()
		if err == nil || !isTransient(err) {
			return err
		}
		if _, serr := os.Stat(env.Home()); errors.Is(serr, fs.ErrNotExist) {
			return fmt.Errorf("st's folder %s is gone, so no st will answer there again; stopped trying (%v)", env.Home(), err)
		}
		if !until.IsZero() && time.Now().After(until) {
			return err
		}
		if !told && waiting != nil {
			waiting(err)
			told = true
		}
		if syncs.Sleep(ctx, every) != nil {
			return ctx.Err()
		}
	}
}
