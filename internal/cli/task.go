package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
)

func newTaskCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{Use: "task", Short: "Tasks: named parts of a run, started in the order of their dependencies"}
	cmd.AddCommand(newTaskCreateCmd(env, nil), newTaskListCmd(env, nil), newTaskCancelCmd(env, nil))
	return cmd
}

type taskCreateOptions struct {
	Name, File, Agent, Cwd string
	Machine                string
	Deps, Owns             []string
	Worktree, JSON         bool
}

func newTaskCreateCmd(env *Env, runF runFunc[taskCreateOptions]) *cobra.Command {
	var o taskCreateOptions
	cmd := &cobra.Command{
		Use:   "create NAME --task FILE --agent A [--deps A,B] [--owns GLOB]... [--worktree]",
		Short: "Keep a task in this pane's run; its worker starts once its dependencies are done",
		Args:  exactArgs(1, "st task create NAME --task FILE --agent A [--deps A,B]"),
	}
	f := cmd.Flags()
	f.StringVar(&o.File, "task", "", "the task file")
	f.StringVar(&o.Agent, "agent", "", "the agent to run: "+strings.Join(agent.Kinds(), ", "))
	f.StringSliceVar(&o.Deps, "deps", nil, "tasks that must be done first (comma-separated)")
	f.StringArrayVar(&o.Owns, "owns", nil, "a glob, relative to the repository root, of what the worker may change (repeatable)")
	f.BoolVar(&o.Worktree, "worktree", false, "a git worktree and branch of the worker's own")
	f.StringVar(&o.Cwd, "cwd", "", "the folder to work in (default: this pane's folder)")
	f.StringVar(&o.Machine, "machine", "", "not available yet: ordered tasks run on this machine only")
	jsonFlag(cmd, &o.JSON)
	return bind(cmd, env, &o, func(args []string) error {
		o.Name = args[0]
		if o.Agent == "" || o.File == "" {
			return usageError("st task create needs --task FILE and --agent", "st task create "+o.Name+" --task FILE --agent claude|codex|sim")
		}
		return nil
	}, runF, runTaskCreate)
}

func runTaskCreate(ctx context.Context, env *Env, o taskCreateOptions) error {
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
	req := api.TaskRequest{Pane: pane, Name: o.Name, File: file, Agent: o.Agent, Deps: o.Deps,
		Owns: o.Owns, Worktree: o.Worktree, Cwd: cwd, Env: passEnv(env), Machine: o.Machine}
	// The worker's start honours them as st worker start's does, whenever
	// its dependencies let it start.
	if req.BlockedTimeout, err = envDuration(env, "ST_BLOCKED_TIMEOUT"); err != nil {
		return err
	}
	if req.HookTimeout, err = envDuration(env, "ST_HOOK_TIMEOUT"); err != nil {
		return err
	}
	v, err := env.Client().CreateTask(ctx, req)
	return printResult(env, o.JSON, v, err, func(w io.Writer, v *api.TaskView) error {
		switch v.State {
		case api.TaskWaiting:
			fmt.Fprintf(w, "task %s: %s\n", v.Name, v.Reason)
		case api.TaskRunning, api.TaskDone:
			fmt.Fprintf(w, "task %s: started as worker %s %s\n", v.Name, v.Worker, v.WorkerName)
		default:
			fmt.Fprintf(w, "task %s: %s %s\n", v.Name, v.State, v.Reason)
		}
		return nil
	})
}

type taskListOptions struct {
	Run  string
	JSON bool
}

func newTaskListCmd(env *Env, runF runFunc[taskListOptions]) *cobra.Command {
	var o taskListOptions
	cmd := &cobra.Command{Use: "list", Short: "List the tasks of this pane's run", Args: cobra.NoArgs}
	jsonFlag(cmd, &o.JSON)
	cmd.Flags().StringVar(&o.Run, "run", "", "the run (default: this pane's)")
	return bind(cmd, env, &o, func([]string) error {
		if o.Run == "" && callerPane(env) == "" {
			_, err := env.Pane("st task list (without --run)")
			return err
		}
		return nil
	}, runF, runTaskList)
}

func runTaskList(ctx context.Context, env *Env, o taskListOptions) error {
	ts, err := env.Client().ListTasks(ctx, api.IDRequest{Pane: callerPane(env), ID: o.Run})
	return printResult(env, o.JSON, ts, err, printTasks)
}

func printTasks(w io.Writer, ts []api.TaskView) error {
	return printTable(w, ts, "no tasks", "TASK\tAGENT\tSTATE\tFOR\tDETAIL", func(tw io.Writer, t api.TaskView) {
		detail := t.Reason
		switch t.State {
		case api.TaskRunning:
			detail = "as worker " + t.Worker + " " + t.WorkerName
		case api.TaskDone:
			detail = "by worker " + t.Worker + " " + t.WorkerName
		case api.TaskWaiting:
			detail = "on " + strings.TrimPrefix(t.Reason, "waiting on ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Name, t.Agent, t.State, t.For, detail)
	})
}

type taskCancelOptions struct{ Name string }

func newTaskCancelCmd(env *Env, runF runFunc[taskCancelOptions]) *cobra.Command {
	var o taskCancelOptions
	cmd := &cobra.Command{Use: "cancel NAME", Short: "Cancel a task that has not finished", Args: exactArgs(1, "st task cancel NAME")}
	return bind(cmd, env, &o, takeArgs(&o.Name), runF, runTaskCancel)
}

func runTaskCancel(ctx context.Context, env *Env, o taskCancelOptions) error {
	pane, err := env.Pane("st task cancel")
	if err != nil {
		return err
	}
	v, err := env.Client().CancelTask(ctx, api.IDRequest{Pane: pane, ID: o.Name})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "task %s: %s\n", v.Name, v.Reason)
	return nil
}
