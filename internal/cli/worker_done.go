package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/client"
	"github.com/spf13/cobra"
)

type workerDoneOptions struct {
	Summary string
	Retry   time.Duration
}

func newWorkerDoneCmd(env *Env, runF runFunc[workerDoneOptions]) *cobra.Command {
	var o workerDoneOptions
	cmd := &cobra.Command{
		Use:   `done --summary "<what it did, and how it checked>"`,
		Short: "Report this worker's result (run by the worker, in its own pane)",
		Args:  cobra.NoArgs,
	}
	cmd.Flags().StringVar(&o.Summary, "summary", "", "what it did, and how it checked")
	durationFlag(cmd.Flags(), &o.Retry, "retry", 2*time.Minute, "how long to keep trying while st is down")
	return bind(cmd, env, &o, func([]string) error {
		if _, err := env.Pane("st worker done"); err != nil {
			return err
		}
		if strings.TrimSpace(o.Summary) == "" {
			return usageError("st worker done needs a summary", `st worker done --summary "<what you did, and how you checked it>"`)
		}
		return nil
	}, runF, runWorkerDone)
}

// runWorkerDone reports, and keeps trying while st restarts so that the
// report is not lost; inside a sandbox that refuses st's socket, the
// report is queued for the agent's next hook.
func runWorkerDone(ctx context.Context, env *Env, o workerDoneOptions) error {
	v, queued, err := report(ctx, env, api.DoneRequest{Pane: callerPane(env), Summary: o.Summary}, o.Retry)
	switch {
	case err != nil && isTransient(err):
		return fmt.Errorf("%w\nthe report was not recorded after trying for %s", err, o.Retry)
	case err != nil:
		return err
	case queued != nil:
		// The hook takes the report only from this line of the command's
		// output (client.TakeQueued): keep the digest's words as they are.
		fmt.Fprintf(env.Stdout, "queued: a sandbox keeps this command from reaching st, so the report waits in %s (%s%s); "+
			"your agent's hook hands it to st as this command ends, finding it by this line. Nothing more to do.\n", queued.path, digestMark, queued.digest)
	default:
		fmt.Fprintf(env.Stdout, "reported: %s (%s) is done\n", v.Name, v.ID)
	}
	return nil
}

// queuedReport is where a report a sandbox kept from st waits, and the
// digest of what that file holds.
type queuedReport struct{ path, digest string }

// digestMark begins the digest of a queued report in st worker done's
// output, where the agent's hook looks for it.
const digestMark = "report sha256:"

// report hands a report to st, trying again for up to retry while st is
// down. When a sandbox refuses st's socket it queues the report instead
// and answers where.
//
// It never starts st: it is an agent's report from a pane st made, and a
// st that is down was stopped (st down, which must hold) or is coming
// back; the report waits for it, and the coordinator's next command
// starts st when it finds it down.
func report(ctx context.Context, env *Env, req api.DoneRequest, retry time.Duration) (v *api.WorkerRef, queued *queuedReport, err error) {
	c := env.RunningClient()
	err = keepTrying(ctx, env, time.Now().Add(retry), 200*time.Millisecond,
		func(error) { fmt.Fprintf(env.Stderr, "st: st is not answering; retrying for up to %s\n", retry) },
		func() error {
			var err error
			v, err = c.Done(ctx, req)
			if err == nil || !client.Refused(err) {
				return err
			}
			path, digest, qerr := c.QueueReport(req)
			if qerr != nil {
				return &api.Error{Kind: api.KindInternal, Message: fmt.Sprintf("%v; and the report could not be queued either: %v", err, qerr)}
			}
			queued = &queuedReport{path, digest}
			return nil
		})
	return v, queued, err
}
