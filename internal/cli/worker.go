package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sophonz/st/internal/client"
	"github.com/sophonz/st/internal/orch"
	"github.com/sophonz/st/internal/plain"
)

// Exit statuses of st worker wait.
const (
	exitAttention = 2 // some worker waits for a person, is idle, failed or gone
	exitTimeout   = 3 // the timeout passed first
)

func newWorkerCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{Use: "worker", Short: "Workers: agents in windows of their own"}
	cmd.AddCommand(newWorkerStartCmd(env), newWorkerWaitCmd(env), newWorkerReadCmd(env), newWorkerDoneCmd(env),
		newWorkerSendCmd(env), newWorkerStopCmd(env), newWorkerListCmd(env), newWorkerRenameCmd(env), newWorkerReleaseCmd(env), newWorkerAdoptCmd(env), newWorkerOfferCmd(env, nil),
		newWorkerDiffCmd(env), newWorkerMergeCmd(env, "merge"), newWorkerMergeCmd(env, "pick"))
	return cmd
}

type workerStartOptions struct {
	Agent, Task, Name, Cwd string
	Machine                string
	Owns                   []string
	Fan                    int
	Worktree, Split, JSON  bool
}

func newWorkerStartCmd(env *Env) *cobra.Command {
	var o workerStartOptions
	cmd := &cobra.Command{
		Use:   "start --agent AGENT --task FILE [--name N] [--cwd DIR]",
		Short: "Open a window, start an agent there and hand it the task file",
		Long: `Open a window named N in this pane's session, start the agent in this pane's
folder (or --cwd), type one line that hands it the task file, and return once
the agent's hook shows its turn started. Prints the worker's id and name.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWorkerStart(cmd.Context(), env, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Agent, "agent", "", "the agent to run: claude, codex or sim")
	f.StringVar(&o.Task, "task", "", "the task file (Markdown or text)")
	f.StringVar(&o.Name, "name", "", "the worker's name (default: from the task file's name)")
	f.StringVar(&o.Cwd, "cwd", "", "the folder to work in (default: this pane's folder)")
	f.BoolVar(&o.Split, "split", false, "open a pane beside this one instead of a window")
	f.StringArrayVar(&o.Owns, "owns", nil, "a glob, relative to the repository root, of what the worker may change (repeatable)")
	f.BoolVar(&o.Worktree, "worktree", false, "a git worktree and branch of the worker's own")
	f.IntVar(&o.Fan, "fan", 0, "start N tries of the task, NAME-1 to NAME-N, each in its own worktree")
	f.StringVar(&o.Machine, "machine", "", "start it on another machine of the account (name, host name or slug; st machines lists them)")
	f.BoolVar(&o.JSON, "json", false, "print JSON")
	return cmd
}

func absPath(p string) (string, error) {
	if strings.HasPrefix(p, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		p = filepath.Join(home, p[2:])
	}
	return filepath.Abs(p)
}

// readableTask makes a task file's path absolute and checks that it can
// be read, so that nothing is opened for a task that is not there.
func readableTask(p string) (string, error) {
	task, err := absPath(p)
	if err != nil {
		return "", err
	}
	f, err := os.Open(task)
	if err != nil {
		return "", &orch.Error{Kind: orch.KindUsage, Message: fmt.Sprintf("cannot read the task file %s: %v", task, errors.Unwrap(err)), Hint: "write the task into a file the worker can read, and pass its path with --task"}
	}
	fi, _ := f.Stat()
	f.Close()
	if fi != nil && fi.IsDir() {
		return "", &orch.Error{Kind: orch.KindUsage, Message: task + " is a folder, not a task file", Hint: "pass a file with --task"}
	}
	return task, nil
}

func runWorkerStart(ctx context.Context, env *Env, o workerStartOptions) error {
	if o.Agent == "" {
		return &orch.Error{Kind: orch.KindUsage, Message: "st worker start needs --agent", Hint: "st worker start --agent claude|codex|sim --task FILE"}
	}
	if o.Task == "" {
		return &orch.Error{Kind: orch.KindUsage, Message: "st worker start needs --task FILE: the worker reads its task from a file", Hint: "write the task into a file, then st worker start --agent " + o.Agent + " --task FILE"}
	}
	task, err := readableTask(o.Task)
	if err != nil {
		return err
	}
	cwd := o.Cwd
	if o.Cwd != "" && o.Machine == "" { // another machine's folder is that machine's business
		if cwd, err = absPath(o.Cwd); err != nil {
			return err
		}
	}
	pane, err := env.Pane("st worker start")
	if err != nil {
		return err
	}
	req := orch.StartRequest{Pane: pane, Agent: o.Agent, Task: task, Name: o.Name, Cwd: cwd, Split: o.Split, Env: passEnv(env),
		Owns: o.Owns, Worktree: o.Worktree, Fan: o.Fan, Machine: o.Machine}
	if d, err := envDuration(env, "ST_BLOCKED_TIMEOUT"); err != nil {
		return err
	} else {
		req.BlockedTimeout = d
	}
	if d, err := envDuration(env, "ST_HOOK_TIMEOUT"); err != nil {
		return err
	} else {
		req.HookTimeout = d
	}
	if o.Fan != 0 {
		var vs []orch.WorkerView
		err := env.Client().Call(ctx, "/v1/worker/fan", req, &vs)
		if o.JSON {
			printJSON(env.Stdout, vs)
		} else {
			for _, v := range vs {
				if v.ID != "" {
					fmt.Fprintf(env.Stdout, "%s %s\n", v.ID, v.Name)
					printNotes(env, v.Notes)
				}
			}
		}
		return err
	}
	var v orch.WorkerView
	if err := env.Client().Call(ctx, "/v1/worker/start", req, &v); err != nil {
		return err
	}
	if o.JSON {
		return printJSON(env.Stdout, v)
	}
	fmt.Fprintf(env.Stdout, "%s %s\n", v.ID, v.Name)
	printNotes(env, v.Notes)
	return nil
}

// printNotes tells the person what they should know, on stderr, so that
// stdout stays "%ID name" for programs.
func printNotes(env *Env, notes []string) {
	for _, n := range notes {
		fmt.Fprintln(env.Stderr, "st: note: "+n)
	}
}

// passEnv is the caller's environment that the worker's window gets:
// PATH, so the agents are found as the caller finds them, where the
// agents keep their settings (CODEX_HOME, CLAUDE_CONFIG_DIR), st's agent
// settings (ST_CLAUDE_*, ST_CODEX_*) and the sim agent's knobs. Other
// variables come from the tmux server's environment, as for any window.
func passEnv(env *Env) map[string]string {
	out := map[string]string{}
	if p := env.Getenv("PATH"); p != "" {
		out["PATH"] = p
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ST_SIM_") || strings.HasPrefix(k, "ST_CLAUDE_") || strings.HasPrefix(k, "ST_CODEX_") ||
			k == "CODEX_HOME" || k == "CLAUDE_CONFIG_DIR" {
			out[k] = env.Getenv(k)
		}
	}
	return out
}

func envDuration(env *Env, key string) (time.Duration, error) {
	s := env.Getenv(key)
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s=%q is not a duration (e.g. 90s): %w", key, s, err)
	}
	return d, nil
}

type workerWaitOptions struct {
	IDs     []string
	Timeout time.Duration
	JSON    bool
}

func newWorkerWaitCmd(env *Env) *cobra.Command {
	var o workerWaitOptions
	cmd := &cobra.Command{
		Use:   "wait [ID...] [--timeout 15m]",
		Short: "Wait until workers are done or need attention",
		Long: `Wait until each worker (by default every worker of this pane) is done,
waiting for a person, idle (its turn ended with no report), failed or gone.
Prints a line per worker. Exit status: 0 all done, 2 some need attention
(waiting, idle, blocked, failed or gone), 3 the timeout passed first, 1 an error.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.IDs = args
			return runWorkerWait(cmd.Context(), env, o)
		},
	}
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 15*time.Minute, "how long to wait at most")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON")
	return cmd
}

func runWorkerWait(ctx context.Context, env *Env, o workerWaitOptions) error {
	pane := env.Getenv("TMUX_PANE")
	if len(o.IDs) == 0 && pane == "" {
		_, err := env.Pane("st worker wait with no ids")
		return err
	}
	if o.Timeout <= 0 {
		return &orch.Error{Kind: orch.KindUsage, Message: "--timeout must be more than 0", Hint: "st worker wait --timeout 15m"}
	}
	c := env.Client()
	deadline := time.Now().Add(o.Timeout)
	var res orch.WaitResult
	// A daemon restarting (st up after a crash) must not end a wait: go on
	// waiting for it until the timeout.
	err := keepTrying(ctx, env, deadline, 200*time.Millisecond, nil, func() error {
		left := time.Until(deadline)
		if left < 0 {
			left = 0
		}
		return c.Call(ctx, "/v1/worker/wait", orch.WaitRequest{Pane: pane, IDs: o.IDs, Timeout: left + time.Millisecond}, &res)
	})
	if err != nil {
		return err
	}
	if o.JSON {
		printJSON(env.Stdout, res)
	} else {
		printWorkers(env.Stdout, res.Workers, false)
	}
	if res.TimedOut {
		return &exitError{code: exitTimeout, err: fmt.Errorf("the timeout (%s) passed before every worker settled", o.Timeout)}
	}
	for _, w := range res.Workers {
		if w.State != orch.Done {
			return &exitError{code: exitAttention}
		}
	}
	return nil
}

func orDash(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// asideRows are the rows of an agent's teammates (of the Claude agent
// team it leads) and subagents, to print under it: id, name, agent,
// state, for how long. An in-process teammate and a subagent have no pane.
func asideRows(mates []orch.Teammate, subs []orch.Subagent) [][5]string {
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

func printWorkers(w io.Writer, ws []orch.WorkerView, header bool) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if header {
		fmt.Fprintln(tw, "ID\tNAME\tAGENT\tSTATE\tFOR\tRUN")
	}
	for _, v := range ws {
		note := ""
		switch v.State {
		case orch.Done:
			note = oneLine(v.Summary, 70)
		case orch.Failed, orch.Blocked:
			note = oneLine(v.Error, 70)
		}
		if header {
			name := v.Name
			if v.TeamOf > 0 {
				name += fmt.Sprintf(" (team %d)", v.TeamOf)
			}
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
			if v.ParentGone {
				if v.ParentNow != "" {
					extra += "  ⚠ (parent gone; its coordinator is " + v.ParentNow + " now)"
				} else {
					extra += "  ⚠ (parent gone: " + orch.PaneOf(v.Parent) + ")"
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s%s\n", v.ID, name, v.Agent, v.State, v.For, v.Run, extra)
			for _, r := range asideRows(v.Teammates, v.Subagents) {
				fmt.Fprintf(tw, "%s\t  %s\t%s\t%s\t%s\t\n", r[0], r[1], r[2], r[3], r[4])
			}
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.ID, v.Name, v.State, note)
		}
	}
	tw.Flush()
}

func newWorkerReadCmd(env *Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "read ID",
		Short: "Print a worker's summary and its last answer",
		Args:  exactArgs(1, "st worker read ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var v orch.WorkerView
			if err := env.Client().Call(cmd.Context(), "/v1/worker/read", orch.IDRequest{Pane: env.Getenv("TMUX_PANE"), ID: args[0]}, &v); err != nil {
				return err
			}
			if asJSON {
				return printJSON(env.Stdout, v)
			}
			fmt.Fprintf(env.Stdout, "worker:  %s %s (%s, run %s)\n", v.ID, v.Name, v.Agent, v.Run)
			fmt.Fprintf(env.Stdout, "state:   %s for %s\n", v.State, v.For)
			if v.Task != "" {
				fmt.Fprintf(env.Stdout, "task:    %s\n", v.Task)
			}
			if v.Error != "" {
				fmt.Fprintf(env.Stdout, "error:   %s\n", v.Error)
			}
			summary := v.Summary
			if summary == "" {
				summary = "(no report yet)"
			}
			fmt.Fprintf(env.Stdout, "summary: %s\n", plain.Clean(summary))
			// The report's answer stays as it came; later turns (a notice
			// typed in, say) show after it, not in its place.
			answer := v.LastAnswer
			if v.ReportedAt != nil && v.ReportAnswer != "" {
				answer = v.ReportAnswer
			}
			if answer == "" {
				answer = "(none yet)"
			}
			fmt.Fprintf(env.Stdout, "last answer:\n%s\n", indent(plain.Clean(answer)))
			if v.ReportedAt != nil && v.ReportAnswer != "" && v.LastAnswer != v.ReportAnswer {
				fmt.Fprintf(env.Stdout, "later, after the report:\n%s\n", indent(plain.Clean(v.LastAnswer)))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

func exactArgs(n int, usage string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return &orch.Error{Kind: orch.KindUsage, Message: fmt.Sprintf("%s takes %d argument(s), got %d", cmd.CommandPath(), n, len(args)), Hint: usage}
		}
		return nil
	}
}

type workerDoneOptions struct {
	Summary string
	Retry   time.Duration
}

func newWorkerDoneCmd(env *Env) *cobra.Command {
	var o workerDoneOptions
	cmd := &cobra.Command{
		Use:   `done --summary "<what it did, and how it checked>"`,
		Short: "Report this worker's result (run by the worker, in its own pane)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWorkerDone(cmd.Context(), env, o)
		},
	}
	cmd.Flags().StringVar(&o.Summary, "summary", "", "what it did, and how it checked")
	cmd.Flags().DurationVar(&o.Retry, "retry", 2*time.Minute, "how long to keep trying while st is down")
	return cmd
}

// runWorkerDone reports, and keeps trying while st restarts so that the
// report is not lost; inside a sandbox that refuses st's socket, the
// report is queued for the agent's next hook.
func runWorkerDone(ctx context.Context, env *Env, o workerDoneOptions) error {
	pane, err := env.Pane("st worker done")
	if err != nil {
		return err
	}
	if strings.TrimSpace(o.Summary) == "" {
		return &orch.Error{Kind: orch.KindUsage, Message: "st worker done needs a summary", Hint: `st worker done --summary "<what you did, and how you checked it>"`}
	}
	c := env.Client()
	req := orch.DoneRequest{Pane: pane, Summary: o.Summary}
	var v orch.WorkerView
	queued := ""
	err = keepTrying(ctx, env, time.Now().Add(o.Retry), 200*time.Millisecond,
		func(error) { fmt.Fprintf(env.Stderr, "st: st is not answering; retrying for up to %s\n", o.Retry) },
		func() error {
			err := c.Call(ctx, "/v1/worker/done", req, &v)
			if err != nil && client.Refused(err) {
				path, qerr := client.QueueReport(req)
				if qerr != nil {
					return &orch.Error{Kind: orch.KindInternal, Message: fmt.Sprintf("%v; and the report could not be queued either: %v", err, qerr)}
				}
				queued = path
				return nil
			}
			return err
		})
	switch {
	case err != nil && isTransient(err):
		return fmt.Errorf("%w\nthe report was not recorded after trying for %s", err, o.Retry)
	case err != nil:
		return err
	case queued != "":
		fmt.Fprintf(env.Stdout, "queued: a sandbox keeps this command from reaching st, so the report waits in %s; your agent's next hook hands it to st. Nothing more to do.\n", queued)
	default:
		fmt.Fprintf(env.Stdout, "reported: %s (%s) is done\n", v.Name, v.ID)
	}
	return nil
}

func newWorkerSendCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "send ID TEXT",
		Short: "Type one line into a worker (never over a prompt)",
		Args:  exactArgs(2, `st worker send ID "TEXT"`),
		RunE: func(cmd *cobra.Command, args []string) error {
			var v orch.WorkerView
			if err := env.Client().Call(cmd.Context(), "/v1/worker/send", orch.IDRequest{Pane: env.Getenv("TMUX_PANE"), ID: args[0], Text: args[1]}, &v); err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "sent to %s (%s)\n", v.Name, v.ID)
			return nil
		},
	}
}

func newWorkerStopCmd(env *Env) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "stop ID --yes",
		Short: "Close a worker's window",
		Args:  exactArgs(1, "st worker stop ID --yes"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !yes {
				return &orch.Error{Kind: orch.KindUsage, Message: "st worker stop closes the worker's window and ends its agent", Hint: "st worker stop " + args[0] + " --yes"}
			}
			var v orch.WorkerView
			if err := env.Client().Call(cmd.Context(), "/v1/worker/stop", orch.IDRequest{Pane: env.Getenv("TMUX_PANE"), ID: args[0]}, &v); err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "stopped %s (%s)\n", v.Name, v.ID)
			printNotes(env, v.Notes)
			return nil
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "yes, close it")
	return cmd
}

func newWorkerListCmd(env *Env) *cobra.Command {
	var all, asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--all]",
		Short: "List this pane's workers (--all: every worker st knows)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pane := env.Getenv("TMUX_PANE")
			if !all && pane == "" {
				_, err := env.Pane("st worker list (without --all)")
				return err
			}
			var ws []orch.WorkerView
			if err := env.Client().Call(cmd.Context(), "/v1/worker/list", orch.IDRequest{Pane: pane, All: all}, &ws); err != nil {
				return err
			}
			if asJSON {
				return printJSON(env.Stdout, ws)
			}
			if len(ws) == 0 {
				fmt.Fprintln(env.Stdout, "no workers")
				return nil
			}
			printWorkers(env.Stdout, ws, true)
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "every worker of every run")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newWorkerRenameCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "rename ID NAME",
		Short: "Rename a worker (and its window)",
		Args:  exactArgs(2, "st worker rename ID NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var v orch.WorkerView
			if err := env.Client().Call(cmd.Context(), "/v1/worker/rename", orch.IDRequest{Pane: env.Getenv("TMUX_PANE"), ID: args[0], Text: args[1]}, &v); err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "renamed %s to %s\n", v.ID, v.Name)
			return nil
		},
	}
}

func newWorkerReleaseCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "release ID",
		Short: "Let a worker go: it leaves the run and is told so",
		Args:  exactArgs(1, "st worker release ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var v orch.WorkerView
			if err := env.Client().Call(cmd.Context(), "/v1/worker/release", orch.IDRequest{Pane: env.Getenv("TMUX_PANE"), ID: args[0]}, &v); err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "released %s (%s) from run %s: it was told it is no one's worker now; send it no more work\n", v.Name, v.ID, v.Run)
			return nil
		},
	}
}

func newWorkerAdoptCmd(env *Env) *cobra.Command {
	var owns []string
	cmd := &cobra.Command{
		Use:   "adopt ID [--owns GLOB]...",
		Short: "Make an agent already running in a pane this pane's worker (nothing is typed into it)",
		Args:  exactArgs(1, "st worker adopt %ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			pane, err := env.Pane("st worker adopt")
			if err != nil {
				return err
			}
			var v orch.WorkerView
			if err := env.Client().Call(cmd.Context(), "/v1/worker/adopt", orch.IDRequest{Pane: pane, ID: args[0], Owns: owns}, &v); err != nil {
				return err
			}
			team := ""
			if v.TeamOf > 0 {
				team = fmt.Sprintf(", a team of %d", v.TeamOf)
			}
			fmt.Fprintf(env.Stdout, "adopted %s %s (%s%s) into run %s\n", v.ID, v.Name, v.Agent, team, v.Run)
			printNotes(env, v.Notes)
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&owns, "owns", nil, "a glob, relative to the repository root, of what the adopted worker may change (repeatable; this machine only)")
	return cmd
}

type workerOfferOptions struct {
	ID, Machine string
	Withdraw    bool
	JSON        bool
}

// newWorkerOfferCmd is st worker offer: a person on this machine lets
// another machine's coordinator adopt an agent here. runF replaces the
// run in tests.
func newWorkerOfferCmd(env *Env, runF func(context.Context, *Env, workerOfferOptions) error) *cobra.Command {
	var o workerOfferOptions
	cmd := &cobra.Command{
		Use:   "offer ID --machine M | offer ID --withdraw",
		Short: "Let another machine's coordinator adopt an agent that runs here (a person's step)",
		Long: `Another machine of the account may adopt an agent of this machine (st worker
adopt THIS-MACHINE/%7 there) only after a person here offers it to that machine.
The offer stays on the pane until that machine adopts it, the pane closes, or
--withdraw. It is refused from an agent's pane: only a person hands an agent over.`,
		Args: exactArgs(1, "st worker offer %ID --machine NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ID = args[0]
			if o.Machine == "" && !o.Withdraw {
				return &orch.Error{Kind: orch.KindUsage, Message: "say which machine may adopt it", Hint: "st worker offer " + o.ID + " --machine NAME (st machines lists them)"}
			}
			if runF != nil {
				return runF(cmd.Context(), env, o)
			}
			return runWorkerOffer(cmd.Context(), env, o)
		},
	}
	cmd.Flags().StringVar(&o.Machine, "machine", "", "the machine whose coordinator may adopt it (name, host name or slug)")
	cmd.Flags().BoolVar(&o.Withdraw, "withdraw", false, "take the offer back")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON")
	return cmd
}

func runWorkerOffer(ctx context.Context, env *Env, o workerOfferOptions) error {
	var v orch.OfferView
	req := orch.OfferRequest{Pane: env.Getenv("TMUX_PANE"), ID: o.ID, Machine: o.Machine, Withdraw: o.Withdraw}
	if err := env.Client().Call(ctx, "/v1/worker/offer", req, &v); err != nil {
		return err
	}
	if o.JSON {
		return printJSON(env.Stdout, v)
	}
	if v.Withdrawn {
		fmt.Fprintf(env.Stdout, "%s is offered to no machine now\n", v.Pane)
		return nil
	}
	fmt.Fprintf(env.Stdout, "%s (%s) is offered to %s: its coordinator may adopt it with st worker adopt <this machine>/%s\n", v.Pane, v.Agent, v.MachineName, v.Pane)
	return nil
}

func newWorkerDiffCmd(env *Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "diff ID",
		Short: "Show a worktree worker's changes against the commit it started from",
		Args:  exactArgs(1, "st worker diff ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var d orch.DiffResult
			if err := env.Client().Call(cmd.Context(), "/v1/worker/diff", orch.IDRequest{Pane: env.Getenv("TMUX_PANE"), ID: args[0]}, &d); err != nil {
				return err
			}
			if asJSON {
				return printJSON(env.Stdout, d)
			}
			fmt.Fprintf(env.Stdout, "worker %s (%s): %d file(s) changed on %s\n", d.Worker.Name, d.Worker.ID, len(d.Changes), d.Worker.Worktree.Branch)
			for _, c := range d.Changes {
				fmt.Fprintf(env.Stdout, "  %-9s %s\n", c.Status, c.Path)
			}
			if len(d.Outside) > 0 {
				fmt.Fprintf(env.Stdout, "outside its scope (%s): %s\n", strings.Join(d.Worker.Scope.Globs, " "), strings.Join(d.Outside, ", "))
			}
			fmt.Fprint(env.Stdout, d.Diff)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newWorkerMergeCmd(env *Env, verb string) *cobra.Command {
	short := "Merge a done worktree worker's branch into the checkout it came from"
	if verb == "pick" {
		short = "Merge the chosen try of a --fan and remove the other tries"
	}
	return &cobra.Command{
		Use:   verb + " ID",
		Short: short,
		Args:  exactArgs(1, "st worker "+verb+" ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var r orch.MergeResult
			if err := env.Client().Call(cmd.Context(), "/v1/worker/"+verb, orch.IDRequest{Pane: env.Getenv("TMUX_PANE"), ID: args[0]}, &r); err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "merged %s (%s): %d file(s), commit %s\n", r.Worker.Name, r.Worker.ID, len(r.Files), r.Commit)
			if len(r.Removed) > 0 {
				fmt.Fprintf(env.Stdout, "removed the other tries: %s\n", strings.Join(r.Removed, ", "))
			}
			return nil
		},
	}
}
