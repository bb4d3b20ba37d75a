package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/sophonz/st/internal/api"
	"github.com/spf13/cobra"
)

func orDash(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// asideRows are the rows of an agent's teammates (of the Claude agent
// team it leads) and subagents, to print under it: id, name, agent,
// state, for how long. An in-process teammate and a subagent have no pane.
func asideRows(mates []api.Teammate, subs []api.Subagent) [][5]string {
	var rows [][5]string
	for _, m := range mates {
		id := m.Pane
		if id == "" {
			id = "-"
		}
		rows = append(rows, [5]string{id, "↳ " + m.Name + " (teammate)", "claude", m.State, m.For})
	}
	for _, s := range subs {
		rows = append(rows, [5]string{"-", "↳ " + orDash(s.Type, "subagent") + " (subagent)", "claude", s.State, s.For})
	}
	return rows
}

// hiddenNote stands where st left out a worker's texts (its report, its
// answers): it is not the asking pane's worker, and st worker read of it
// would be refused.
const hiddenNote = "(not this pane's worker: its report is its coordinator's to read)"

// printWorkerTable is st worker list's table, with each worker's
// teammates and subagents under it.
func printWorkerTable(w io.Writer, ws []api.WorkerView) error {
	return printTable(w, ws, "no workers", "ID\tNAME\tAGENT\tSTATE\tFOR\tTOKENS\tRUN", func(tw io.Writer, v api.WorkerView) {
		name := v.Name
		if v.TeamOf > 0 {
			name += fmt.Sprintf(" (team %d)", v.TeamOf)
		}
		state := stateCell(v.Worker)
		if v.ScreenStates {
			state += " (screen)" // no hooks: read off its screen
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s%s\n", v.ID, name, v.Agent, state, v.For, tokensCell(v.Tokens), v.Run, workerWhere(v))
		for _, r := range asideRows(v.Teammates, v.Subagents) {
			fmt.Fprintf(tw, "%s\t  %s\t%s\t%s\t%s\t\t\n", r[0], r[1], r[2], r[3], r[4])
		}
	})
}

// workerWhere is what st worker list adds after a worker's run: its
// worktree, the machine it runs on or works for, a parent that is gone.
func workerWhere(v api.WorkerView) string {
	extra := ""
	if v.Worktree != nil && v.Worktree.Path != "" {
		extra = "  worktree " + v.Worktree.Path
		if v.Worktree.Merged {
			extra += " (merged)"
		}
	}
	if v.Remote() {
		extra += "  on " + orDash(v.MachineName, v.Machine)
	} else if mach, pane, ok := strings.Cut(v.Parent, "/"); ok {
		// Who it works for, as people there call it (spec: "worker of
		// coordinator on home-macbook"), with the pane for commands.
		extra += "  worker of " + orDash(v.ParentName, pane) + " on " + orDash(v.ParentMachineName, mach) + " (" + v.Parent + ")"
	}
	if v.State == api.Gone && strings.Contains(v.Error, "could not come back") {
		// Its agent could not start again after a tmux restart (orch's
		// restore): the reason is long, so its place is st worker read.
		extra += "  (its agent could not come back: st worker read " + orDash(v.Name, v.ID) + ")"
	}
	if v.ParentGone {
		if v.ParentNow != "" {
			extra += "  ⚠ (parent gone; its coordinator is " + v.ParentNow + " now)"
		} else {
			// The gone pane by the id st keeps it under: after a tmux
			// restart its retired one (%3~mx4egnk7), as a new pane may be %3.
			extra += "  ⚠ (parent gone: " + v.Parent + ")"
		}
	}
	return extra
}

type workerListOptions struct{ All, JSON bool }

func newWorkerListCmd(env *Env, runF runFunc[workerListOptions]) *cobra.Command {
	var o workerListOptions
	cmd := &cobra.Command{Use: "list [--all]", Short: "List this pane's workers (--all: every worker st knows)", Args: cobra.NoArgs}
	cmd.Flags().BoolVar(&o.All, "all", false, "every worker of every run")
	jsonFlag(cmd, &o.JSON)
	return bind(cmd, env, &o, func([]string) error {
		if !o.All && callerPane(env) == "" {
			_, err := env.Pane("st worker list (without --all)")
			return err
		}
		return nil
	}, runF, runWorkerList)
}

func runWorkerList(ctx context.Context, env *Env, o workerListOptions) error {
	req := api.IDRequest{Pane: callerPane(env), All: o.All}
	if o.JSON {
		raw, err := env.Client().ListJSON(ctx, req)
		if err != nil {
			return err
		}
		_, err = env.Stdout.Write(raw)
		return err
	}
	ws, err := env.Client().List(ctx, req)
	return printResult(env, o.JSON, ws, err, printWorkerTable)
}
