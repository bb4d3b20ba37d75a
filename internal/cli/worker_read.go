package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/plain"
	"github.com/spf13/cobra"
)

type workerReadOptions struct {
	ID   string
	JSON bool
}

func newWorkerReadCmd(env *Env, runF runFunc[workerReadOptions]) *cobra.Command {
	var o workerReadOptions
	cmd := &cobra.Command{Use: "read ID", Short: "Print a worker's summary and its last answer", Args: exactArgs(1, "st worker read ID")}
	jsonFlag(cmd, &o.JSON)
	return bind(cmd, env, &o, takeArgs(&o.ID), runF, runWorkerRead)
}

func runWorkerRead(ctx context.Context, env *Env, o workerReadOptions) error {
	v, err := env.Client().Read(ctx, api.IDRequest{Pane: callerPane(env), ID: o.ID})
	return printResult(env, o.JSON, v, err, printWorkerRead)
}

func printWorkerRead(w io.Writer, v *api.WorkerView) error {
	fmt.Fprintf(w, "worker:  %s %s (%s, run %s)\n", v.ID, v.Name, v.Agent, v.Run)
	fmt.Fprintf(w, "state:   %s for %s\n", stateCell(v.Worker), v.For)
	if v.Task != "" {
		fmt.Fprintf(w, "task:    %s\n", v.Task)
	}
	if v.Error != "" {
		fmt.Fprintf(w, "error:   %s\n", v.Error)
	}
	if v.Tokens != nil {
		fmt.Fprintf(w, "tokens:  %s\n", tokensLine(v.Tokens))
	}
	fmt.Fprintf(w, "summary: %s\n", plain.Clean(orDash(v.Summary, "(no report yet)")))
	// The report's answer stays as it came; later turns (a notice typed
	// in, say) show after it, not in its place.
	answer := v.LastAnswer
	if v.ReportedAt != nil && v.ReportAnswer != "" {
		answer = v.ReportAnswer
	}
	fmt.Fprintf(w, "last answer:\n%s\n", indent(plain.Clean(orDash(answer, "(none yet)"))))
	if v.ReportedAt != nil && v.ReportAnswer != "" && v.LastAnswer != v.ReportAnswer {
		fmt.Fprintf(w, "later, after the report:\n%s\n", indent(plain.Clean(v.LastAnswer)))
	}
	return nil
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
