package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sophonz/st/internal/orch"
)

func newTaskCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{Use: "task", Short: "Tasks: named parts of a run, started in the order of their dependencies"}
	cmd.AddCommand(newTaskCreateCmd(env), newTaskListCmd(env), newTaskCancelCmd(env))
	return cmd
}

type taskCreateOptions struct {
	Name, File, Agent, Cwd string
	Machine                string
	Deps, Owns             []string
	Worktree, JSON         bool
}

func newTaskCreateCmd(env *Env) *cobra.Command {
	var o taskCreateOptions
	cmd := &cobra.Command{
		Use:   "create NAME --task FILE --agent A [--deps A,B] [--owns GLOB]... [--worktree]",
		Short: "Keep a task in this pane's run; its worker starts once its dependencies are done",
		Args:  exactArgs(1, "st task create NAME --task FILE --agent A [--deps A,B]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			return runTaskCreate(cmd.Context(), env, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.File, "task", "", "the task file")
	f.StringVar(&o.Agent, "agent", "", "the agent to run: claude, codex or sim")
	f.StringSliceVar(&o.Deps, "deps", nil, "tasks that must be done first (comma-separated)")
	f.StringArrayVar(&o.Owns, "owns", nil, "a glob, relative to the repository root, of what the worker may change (repeatable)")
	f.BoolVar(&o.Worktree, "worktree", false, "a git worktree and branch of the worker's own")
	f.StringVar(&o.Cwd, "cwd", "", "the folder to work in (default: this pane's folder)")
	f.StringVar(&o.Machine, "machine", "", "not available yet: ordered tasks run on this machine only")
	f.BoolVar(&o.JSON, "json", false, "print JSON")
	return cmd
}

func runTaskCreate(ctx context.Context, env *Env, o taskCreateOptions) error {
	if o.Agent == "" || o.File == "" {
		return &orch.Error{Kind: orch.KindUsage, Message: "st task create needs --task FILE and --agent", Hint: "st task create " + o.Name + " --task FILE --agent claude|codex|sim"}
	}
	file, err := readableTask(o.File)
	if err != nil {
		return err
	}
	cwd := ""
	if o.Cwd != "" {
		if cwd, err = absPath(o.Cwd); err != nil {
			return err
		}
	}
	pane, err := env.Pane("st task create")
	if err != nil {
		return err
	}
	var v orch.TaskView
	req := orch.TaskRequest{Pane: pane, Name: o.Name, File: file, Agent: o.Agent, Deps: o.Deps, Owns: o.Owns, Worktree: o.Worktree, Cwd: cwd, Env: passEnv(env), Machine: o.Machine}
	if err := env.Client().Call(ctx, "/v1/task/create", req, &v); err != nil {
		return err
	}
	if o.JSON {
		return printJSON(env.Stdout, v)
	}
	switch v.State {
	case orch.TaskWaiting:
		fmt.Fprintf(env.Stdout, "task %s: %s\n", v.Name, v.Reason)
	case orch.TaskRunning, orch.TaskDone:
		fmt.Fprintf(env.Stdout, "task %s: started as worker %s %s\n", v.Name, v.Worker, v.WorkerName)
	default:
		fmt.Fprintf(env.Stdout, "task %s: %s %s\n", v.Name, v.State, v.Reason)
	}
	return nil
}

func newTaskListCmd(env *Env) *cobra.Command {
	var asJSON bool
	var run string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the tasks of this pane's run",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pane := env.Getenv("TMUX_PANE")
			if pane == "" && run == "" {
				_, err := env.Pane("st task list (without --run)")
				return err
			}
			var ts []orch.TaskView
			if err := env.Client().Call(cmd.Context(), "/v1/task/list", orch.IDRequest{Pane: pane, ID: run}, &ts); err != nil {
				return err
			}
			if asJSON {
				return printJSON(env.Stdout, ts)
			}
			if len(ts) == 0 {
				fmt.Fprintln(env.Stdout, "no tasks")
				return nil
			}
			tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "TASK\tAGENT\tSTATE\tFOR\tDETAIL")
			for _, t := range ts {
				detail := t.Reason
				switch t.State {
				case orch.TaskRunning:
					detail = "as worker " + t.Worker + " " + t.WorkerName
				case orch.TaskDone:
					detail = "by worker " + t.Worker + " " + t.WorkerName
				case orch.TaskWaiting:
					detail = "on " + strings.TrimPrefix(t.Reason, "waiting on ")
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Name, t.Agent, t.State, t.For, detail)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&run, "run", "", "the run (default: this pane's)")
	return cmd
}

func newTaskCancelCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel NAME",
		Short: "Cancel a task that has not finished",
		Args:  exactArgs(1, "st task cancel NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			pane, err := env.Pane("st task cancel")
			if err != nil {
				return err
			}
			var v orch.TaskView
			if err := env.Client().Call(cmd.Context(), "/v1/task/cancel", orch.IDRequest{Pane: pane, ID: args[0]}, &v); err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "task %s: %s\n", v.Name, v.Reason)
			return nil
		},
	}
}
