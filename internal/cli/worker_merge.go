package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/sophonz/st/internal/api"
	"github.com/spf13/cobra"
)

type workerDiffOptions struct {
	ID   string
	JSON bool
}

func newWorkerDiffCmd(env *Env, runF runFunc[workerDiffOptions]) *cobra.Command {
	var o workerDiffOptions
	cmd := &cobra.Command{
		Use:   "diff ID",
		Short: "Show a worktree worker's changes against the commit it started from",
		Args:  exactArgs(1, "st worker diff ID"),
	}
	jsonFlag(cmd, &o.JSON)
	return bind(cmd, env, &o, takeArgs(&o.ID), runF, runWorkerDiff)
}

func runWorkerDiff(ctx context.Context, env *Env, o workerDiffOptions) error {
	d, err := env.Client().Diff(ctx, api.IDRequest{Pane: callerPane(env), ID: o.ID})
	return printResult(env, o.JSON, d, err, printDiff)
}

func printDiff(w io.Writer, d *api.DiffResult) error {
	fmt.Fprintf(w, "worker %s (%s): %d file(s) changed on %s\n", d.Worker.Name, d.Worker.ID, len(d.Changes), d.Worker.Worktree.Branch)
	for _, c := range d.Changes {
		fmt.Fprintf(w, "  %-9s %s\n", c.Status, c.Path)
	}
	if len(d.Outside) > 0 {
		fmt.Fprintf(w, "outside its scope (%s): %s\n", strings.Join(d.Worker.Scope.Globs, " "), strings.Join(d.Outside, ", "))
	}
	_, err := fmt.Fprint(w, d.Diff)
	return err
}

type workerMergeOptions struct {
	ID string
	// Pick is st worker pick: merge one try of a --fan and remove the others.
	Pick bool
}

// newWorkerMergeCmd is st worker merge, or with verb "pick" st worker pick.
func newWorkerMergeCmd(env *Env, verb string, runF runFunc[workerMergeOptions]) *cobra.Command {
	o := workerMergeOptions{Pick: verb == "pick"}
	short := "Merge a done worktree worker's branch into the checkout it came from"
	if o.Pick {
		short = "Merge the chosen try of a --fan and remove the other tries"
	}
	cmd := &cobra.Command{Use: verb + " ID", Short: short, Args: exactArgs(1, "st worker "+verb+" ID")}
	return bind(cmd, env, &o, takeArgs(&o.ID), runF, runWorkerMerge)
}

func runWorkerMerge(ctx context.Context, env *Env, o workerMergeOptions) error {
	r, err := env.Client().Merge(ctx, api.IDRequest{Pane: callerPane(env), ID: o.ID}, o.Pick)
	if err != nil {
		return err
	}
	if r.Commit == "" {
		// Its branch had no commit that the checkout lacks: no merge
		// commit was made.
		fmt.Fprintf(env.Stdout, "nothing to merge: %s (%s) has no change that the checkout does not have already\n", r.Worker.Name, r.Worker.ID)
	} else {
		fmt.Fprintf(env.Stdout, "merged %s (%s): %d file(s), commit %s\n", r.Worker.Name, r.Worker.ID, len(r.Files), r.Commit)
	}
	if len(r.Removed) > 0 {
		fmt.Fprintf(env.Stdout, "removed the other tries: %s\n", strings.Join(r.Removed, ", "))
	}
	return nil
}
