package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sophonz/st/internal/api"
)

type orchPruneOptions struct {
	OlderThan string // as typed: 30d, 2w, 12h
	Age       time.Duration
	Yes       bool
	JSON      bool
}

func newOrchPruneCmd(env *Env, runF runFunc[orchPruneOptions]) *cobra.Command {
	var o orchPruneOptions
	cmd := &cobra.Command{
		Use:   "prune --older-than 30d [--yes]",
		Short: "Take old runs out of st's history, for good (a person's: refused from an agent)",
		Long: `A run is in st's history once it is over: none of its workers lives, no task of
it is left to start, and its coordinator's pane is gone. st keeps such a run on
disk ($ST_HOME/orch/RUN/run.json) and reads it only when asked (st orch show RUN,
st worker read, st worker list --all). st orch prune removes the runs of the
history that ended longer ago than --older-than (30d, 2w, 12h), folder and all:
without --yes it only lists them.`,
		Args: cobra.NoArgs,
	}
	cmd.Flags().StringVar(&o.OlderThan, "older-than", "", "how long ago a run ended at the latest to go: 30d, 2w, 12h")
	cmd.Flags().BoolVar(&o.Yes, "yes", false, "yes, remove them")
	jsonFlag(cmd, &o.JSON)
	return bind(cmd, env, &o, func([]string) error {
		if o.OlderThan == "" {
			return usageError("st orch prune needs --older-than: how long ago the runs it removes ended", "st orch prune --older-than 30d")
		}
		d, err := parseAge(o.OlderThan)
		if err != nil {
			return usageError(fmt.Sprintf("--older-than %q: %v", o.OlderThan, err), "st orch prune --older-than 30d (or 2w, 12h)")
		}
		o.Age = d
		return nil
	}, runF, runOrchPrune)
}

// parseAge reads an age as a person types it: a number of days (30d) or
// weeks (2w), or a Go duration (12h, 90m).
func parseAge(s string) (time.Duration, error) {
	unit := map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour}
	for suffix, u := range unit {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			v, err := strconv.ParseFloat(n, 64)
			if err != nil || v < 0 || v > 100*365 {
				return 0, fmt.Errorf("not a number of days or weeks")
			}
			return time.Duration(v * float64(u)), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("not an age (30d, 2w, 12h)")
	}
	return d, nil
}

func runOrchPrune(ctx context.Context, env *Env, o orchPruneOptions) error {
	res, err := env.Client().Prune(ctx, api.PruneRequest{Pane: callerPane(env), OlderThan: o.Age, Yes: o.Yes})
	if err != nil {
		return err
	}
	if o.JSON {
		return printJSON(env.Stdout, res)
	}
	printPrune(env.Stdout, o, res)
	if !o.Yes && len(res.Runs) > 0 {
		return usageError(fmt.Sprintf("nothing was removed: st orch prune takes %s away for good (folders under $ST_HOME/orch and all), so it asks for --yes", runs(len(res.Runs))),
			"st orch prune --older-than "+o.OlderThan+" --yes")
	}
	return nil
}

func printPrune(w io.Writer, o orchPruneOptions, res *api.PruneResult) {
	when := res.Cutoff.Local().Format("2006-01-02 15:04")
	switch {
	case len(res.Runs) == 0:
		fmt.Fprintf(w, "no run of st's history ended before %s (%s ago); it holds %s\n", when, o.OlderThan, runs(res.Kept))
		return
	case res.Removed:
		fmt.Fprintf(w, "removed %s of st's history that ended before %s (%s ago); %s left in it\n", runs(len(res.Runs)), when, o.OlderThan, runs(res.Kept))
	default:
		fmt.Fprintf(w, "%s of st's history ended before %s (%s ago), and would go:\n", runs(len(res.Runs)), when, o.OlderThan)
	}
	for _, r := range res.Runs {
		fmt.Fprintf(w, "  %s  ended %s  %d workers  %s\n", r.ID, r.Ended.Local().Format("2006-01-02 15:04"), r.Workers, oneLine(orDash(r.Objective, "(no objective)"), 60))
	}
}

// runs is "1 run" or "N runs".
func runs(n int) string {
	if n == 1 {
		return "1 run"
	}
	return fmt.Sprintf("%d runs", n)
}
