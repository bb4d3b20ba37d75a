package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/client"
	"github.com/sophonz/st/internal/plain"
	"github.com/sophonz/st/internal/store"
)

// Exit statuses of st worker wait.
const (
	exitAttention = 2 // some worker waits for a person, is idle, failed or gone
	exitTimeout   = 3 // the timeout passed first
)

func newWorkerCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{Use: "worker", Short: "Workers: agents in windows of their own"}
	cmd.AddCommand(newWorkerStartCmd(env, nil), newWorkerWaitCmd(env, nil), newWorkerReadCmd(env, nil), newWorkerDoneCmd(env, nil),
		newWorkerSendCmd(env, nil), newWorkerStopCmd(env, nil), newWorkerListCmd(env, nil), newWorkerRenameCmd(env, nil),
		newWorkerReleaseCmd(env, nil), newWorkerAdoptCmd(env, nil), newWorkerOfferCmd(env, nil),
		newWorkerDiffCmd(env, nil), newWorkerMergeCmd(env, "merge", nil), newWorkerMergeCmd(env, "pick", nil))
	return cmd
}

// callerPane is the pane the command runs in, or "" outside tmux (the
// daemon then acts for no pane, or refuses).
func callerPane(env *Env) string { return env.Getenv("TMUX_PANE") }

type workerStartOptions struct {
	Agent, Task, Name, Cwd string
	Machine                string
	Owns                   []string
	Fan                    int
	Worktree, Split, JSON  bool
}

func newWorkerStartCmd(env *Env, runF runFunc[workerStartOptions]) *cobra.Command {
	var o workerStartOptions
	cmd := &cobra.Command{
		Use:   "start --agent AGENT --task FILE [--name N] [--cwd DIR]",
		Short: "Open a window, start an agent there and hand it the task file",
		Long: `Open a window named N in this pane's session, start the agent in this pane's
folder (or --cwd), type one line that hands it the task file, and return once
the agent's hook shows its turn started. Prints the worker's id and name.`,
		Args: cobra.NoArgs,
	}
	f := cmd.Flags()
	f.StringVar(&o.Agent, "agent", "", "the agent to run: "+strings.Join(agent.Kinds(), ", "))
	f.StringVar(&o.Task, "task", "", "the task file (Markdown or text)")
	f.StringVar(&o.Name, "name", "", "the worker's name (default: from the task file's name)")
	f.StringVar(&o.Cwd, "cwd", "", "the folder to work in (default: this pane's folder)")
	f.BoolVar(&o.Split, "split", false, "open a pane beside this one instead of a window")
	f.StringArrayVar(&o.Owns, "owns", nil, "a glob, relative to the repository root, of what the worker may change (repeatable)")
	f.BoolVar(&o.Worktree, "worktree", false, "a git worktree and branch of the worker's own")
	f.IntVar(&o.Fan, "fan", 0, "start N tries of the task, NAME-1 to NAME-N, each in its own worktree")
	f.StringVar(&o.Machine, "machine", "", "start it on another machine of the account (name, host name or slug; st machines lists them)")
	jsonFlag(cmd, &o.JSON)
	return bind(cmd, env, &o, func([]string) error {
		if o.Agent == "" {
			return usageError("st worker start needs --agent", "st worker start --agent claude|codex|sim --task FILE")
		}
		if o.Task == "" {
			return usageError("st worker start needs --task FILE: the worker reads its task from a file",
				"write the task into a file, then st worker start --agent "+o.Agent+" --task FILE")
		}
		return nil
	}, runF, runWorkerStart)
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

// readableTask makes a task file's path absolute and checks that it is a
// regular file that can be read, so that nothing is opened for a task
// that is not there. It never waits: a FIFO (whose open would block until
// a writer came, deaf to Ctrl-C), a device or a folder is refused.
func readableTask(p string) (string, error) {
	task, err := absPath(p)
	if err != nil {
		return "", err
	}
	f, err := store.OpenRegular(task)
	if errors.Is(err, store.ErrNotRegular) {
		return "", usageError("the task file "+err.Error(),
			"write the task into a file, and pass its path with --task")
	}
	if err != nil {
		return "", usageError(fmt.Sprintf("cannot read the task file %s: %v", task, errors.Unwrap(err)),
			"write the task into a file the worker can read, and pass its path with --task")
	}
	f.Close()
	return task, nil
}

// startRequest is what st worker start asks of the daemon: the task file
// checked and its path made absolute, for this pane.
func startRequest(env *Env, o workerStartOptions) (api.StartRequest, error) {
	task, err := readableTask(o.Task)
	if err != nil {
		return api.StartRequest{}, err
	}
	cwd := o.Cwd
	if o.Cwd != "" && o.Machine == "" { // another machine's folder is that machine's business
		if cwd, err = absPath(o.Cwd); err != nil {
			return api.StartRequest{}, err
		}
	}
	pane, err := env.Pane("st worker start")
	if err != nil {
		return api.StartRequest{}, err
	}
	req := api.StartRequest{Pane: pane, Agent: o.Agent, Task: task, Name: o.Name, Cwd: cwd, Split: o.Split, Env: passEnv(env),
		Owns: o.Owns, Worktree: o.Worktree, Fan: o.Fan, Machine: o.Machine}
	if req.BlockedTimeout, err = envDuration(env, "ST_BLOCKED_TIMEOUT"); err != nil {
		return api.StartRequest{}, err
	}
	if req.HookTimeout, err = envDuration(env, "ST_HOOK_TIMEOUT"); err != nil {
		return api.StartRequest{}, err
	}
	return req, nil
}

func runWorkerStart(ctx context.Context, env *Env, o workerStartOptions) error {
	req, err := startRequest(env, o)
	if err != nil {
		return err
	}
	if o.Fan != 0 {
		// The tries that started are printed even when a later one failed.
		vs, err := env.Client().Fan(ctx, req)
		if o.JSON {
			printJSON(env.Stdout, vs)
		} else {
			for _, v := range vs {
				if v.ID != "" {
					printStarted(env, v)
				}
			}
		}
		return err
	}
	v, err := env.Client().StartWorker(ctx, req)
	return printResult(env, o.JSON, v, err, func(io.Writer, *api.WorkerView) error {
		printStarted(env, *v)
		return nil
	})
}

// printStarted prints "%ID name" of a worker that started, and its notes.
func printStarted(env *Env, v api.WorkerView) {
	fmt.Fprintf(env.Stdout, "%s %s\n", v.ID, v.Name)
	printNotes(env, v.Notes)
}

// printNotes tells the person what they should know, on stderr, so that
// stdout stays "%ID name" for programs.
func printNotes(env *Env, notes []string) {
	for _, n := range notes {
		fmt.Fprintln(env.Stderr, "st: note: "+n)
	}
}

// passEnv is the caller's environment that the worker's window gets:
// PATH, so the agents are found as the caller finds them, where each
// agent kind keeps its settings (its description's ConfigEnv: CODEX_HOME,
// CLAUDE_CONFIG_DIR), st's settings of each kind (ST_<KIND>_*: ST_CLAUDE_BIN,
// ST_GEMINI_PERMISSION_MODE...) and the sim agent's knobs (ST_SIM_*). Other
// variables come from the tmux server's environment, as for any window.
func passEnv(env *Env) map[string]string {
	out := map[string]string{}
	if p := env.Getenv("PATH"); p != "" {
		out["PATH"] = p
	}
	pass := func(k string) bool {
		for _, kind := range agent.All() {
			if strings.HasPrefix(k, "ST_"+strings.ToUpper(kind.Name)+"_") || slices.Contains(kind.Launch.ConfigEnv, k) {
				return true
			}
		}
		return false
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); pass(k) {
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

func newWorkerWaitCmd(env *Env, runF runFunc[workerWaitOptions]) *cobra.Command {
	var o workerWaitOptions
	cmd := &cobra.Command{
		Use:   "wait [ID...] [--timeout 15m]",
		Short: "Wait until workers are done or need attention",
		Long: `Wait until each worker (by default every worker of this pane) is done,
waiting for a person, idle (its turn ended with no report), failed or gone.
Prints a line per worker. Exit status: 0 all done, 2 some need attention
(waiting, idle, blocked, failed or gone), 3 the timeout passed first, 1 an error.`,
	}
	durationFlag(cmd.Flags(), &o.Timeout, "timeout", 15*time.Minute, "how long to wait at most")
	jsonFlag(cmd, &o.JSON)
	return bind(cmd, env, &o, func(args []string) error {
		if len(args) > 0 {
			o.IDs = args
		}
		if len(o.IDs) == 0 && callerPane(env) == "" {
			_, err := env.Pane("st worker wait with no ids")
			return err
		}
		if o.Timeout <= 0 {
			return usageError("--timeout must be more than 0", "st worker wait --timeout 15m")
		}
		return nil
	}, runF, runWorkerWait)
}

func runWorkerWait(ctx context.Context, env *Env, o workerWaitOptions) error {
	c := env.Client()
	deadline := time.Now().Add(o.Timeout)
	var res *api.WaitResult
	// A daemon restarting (st up after a crash) must not end a wait: go on
	// waiting for it until the timeout.
	err := keepTrying(ctx, env, deadline, 200*time.Millisecond, nil, func() (err error) {
		left := max(time.Until(deadline), 0)
		res, err = c.Wait(ctx, api.WaitRequest{Pane: callerPane(env), IDs: o.IDs, Timeout: left + time.Millisecond})
		return err
	})
	if err != nil {
		return err
	}
	if o.JSON {
		printJSON(env.Stdout, res)
	} else {
		printSettled(env.Stdout, res.Workers)
	}
	if res.TimedOut {
		return &exitError{code: exitTimeout, err: fmt.Errorf("the timeout (%s) passed before every worker settled", o.Timeout)}
	}
	for _, w := range res.Workers {
		if w.State != api.Done {
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

// printSettled prints a line per worker of st worker wait: how each
// settled, with its summary or error.
func printSettled(w io.Writer, ws []api.WorkerView) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, v := range ws {
		note := ""
		switch {
		case v.TextsHidden:
			note = hiddenNote
		case v.State == api.Done:
			note = oneLine(v.Summary, 70)
		case v.State == api.Failed, v.State == api.Blocked:
			note = oneLine(v.Error, 70)
		}
		if v.Tokens != nil && !v.TextsHidden {
			// What it spent comes with its report (issue 35).
			note += "  [" + strings.Replace(tokensCell(v.Tokens), " ", " tokens ", 1)
			if v.Tokens.CostUSD == nil {
				note += " tokens"
			}
			note += "]"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.ID, v.Name, v.State, note)
	}
	return tw.Flush()
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s%s\n", v.ID, name, v.Agent, v.State, v.For, tokensCell(v.Tokens), v.Run, workerWhere(v))
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
	fmt.Fprintf(w, "state:   %s for %s\n", v.State, v.For)
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

func exactArgs(n int, usage string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError(fmt.Sprintf("%s takes %d argument(s), got %d", cmd.CommandPath(), n, len(args)), usage)
		}
		return nil
	}
}

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

type workerSendOptions struct{ ID, Text string }

func newWorkerSendCmd(env *Env, runF runFunc[workerSendOptions]) *cobra.Command {
	var o workerSendOptions
	cmd := &cobra.Command{Use: "send ID TEXT", Short: "Type one line into a worker (never over a prompt)", Args: exactArgs(2, `st worker send ID "TEXT"`)}
	return bind(cmd, env, &o, takeArgs(&o.ID, &o.Text), runF, runWorkerSend)
}

func runWorkerSend(ctx context.Context, env *Env, o workerSendOptions) error {
	v, err := env.Client().Send(ctx, api.IDRequest{Pane: callerPane(env), ID: o.ID, Text: o.Text})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "sent to %s (%s)\n", v.Name, v.ID)
	return nil
}

type workerStopOptions struct {
	ID  string
	Yes bool
}

func newWorkerStopCmd(env *Env, runF runFunc[workerStopOptions]) *cobra.Command {
	var o workerStopOptions
	cmd := &cobra.Command{Use: "stop ID --yes", Short: "Close a worker's window", Args: exactArgs(1, "st worker stop ID --yes")}
	cmd.Flags().BoolVar(&o.Yes, "yes", false, "yes, close it")
	return bind(cmd, env, &o, func(args []string) error {
		o.ID = args[0]
		if !o.Yes {
			return usageError("st worker stop closes the worker's window and ends its agent", "st worker stop "+o.ID+" --yes")
		}
		return nil
	}, runF, runWorkerStop)
}

func runWorkerStop(ctx context.Context, env *Env, o workerStopOptions) error {
	v, err := env.Client().Stop(ctx, api.IDRequest{Pane: callerPane(env), ID: o.ID})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "stopped %s (%s)\n", v.Name, v.ID)
	printNotes(env, v.Notes)
	return nil
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

type workerRenameOptions struct{ ID, Name string }

func newWorkerRenameCmd(env *Env, runF runFunc[workerRenameOptions]) *cobra.Command {
	var o workerRenameOptions
	cmd := &cobra.Command{Use: "rename ID NAME", Short: "Rename a worker (and its window)", Args: exactArgs(2, "st worker rename ID NAME")}
	return bind(cmd, env, &o, takeArgs(&o.ID, &o.Name), runF, runWorkerRename)
}

func runWorkerRename(ctx context.Context, env *Env, o workerRenameOptions) error {
	v, err := env.Client().Rename(ctx, api.IDRequest{Pane: callerPane(env), ID: o.ID, Text: o.Name})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "renamed %s to %s\n", v.ID, v.Name)
	return nil
}

type workerReleaseOptions struct{ ID string }

func newWorkerReleaseCmd(env *Env, runF runFunc[workerReleaseOptions]) *cobra.Command {
	var o workerReleaseOptions
	cmd := &cobra.Command{Use: "release ID", Short: "Let a worker go: it leaves the run and is told so", Args: exactArgs(1, "st worker release ID")}
	return bind(cmd, env, &o, takeArgs(&o.ID), runF, runWorkerRelease)
}

func runWorkerRelease(ctx context.Context, env *Env, o workerReleaseOptions) error {
	v, err := env.Client().Release(ctx, api.IDRequest{Pane: callerPane(env), ID: o.ID})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "released %s (%s) from run %s: it was told it is no one's worker now; send it no more work\n", v.Name, v.ID, v.Run)
	return nil
}

type workerAdoptOptions struct {
	ID   string
	Owns []string
}

func newWorkerAdoptCmd(env *Env, runF runFunc[workerAdoptOptions]) *cobra.Command {
	var o workerAdoptOptions
	cmd := &cobra.Command{
		Use:   "adopt ID [--owns GLOB]...",
		Short: "Make an agent already running in a pane this pane's worker (nothing is typed into it)",
		Args:  exactArgs(1, "st worker adopt %ID"),
	}
	cmd.Flags().StringArrayVar(&o.Owns, "owns", nil, "a glob, relative to the repository root, of what the adopted worker may change (repeatable; this machine only)")
	return bind(cmd, env, &o, takeArgs(&o.ID), runF, runWorkerAdopt)
}

func runWorkerAdopt(ctx context.Context, env *Env, o workerAdoptOptions) error {
	pane, err := env.Pane("st worker adopt")
	if err != nil {
		return err
	}
	v, err := env.Client().Adopt(ctx, api.IDRequest{Pane: pane, ID: o.ID, Owns: o.Owns})
	if err != nil {
		return err
	}
	team := ""
	if v.TeamOf > 0 {
		team = fmt.Sprintf(", a team of %d", v.TeamOf)
	}
	fmt.Fprintf(env.Stdout, "adopted %s %s (%s%s) into run %s\n", v.ID, v.Name, v.Agent, team, v.Run)
	printNotes(env, v.Notes)
	return nil
}

type workerOfferOptions struct {
	ID, Machine string
	Withdraw    bool
	JSON        bool
}

// newWorkerOfferCmd is st worker offer: a person on this machine lets
// another machine's coordinator adopt an agent here.
func newWorkerOfferCmd(env *Env, runF runFunc[workerOfferOptions]) *cobra.Command {
	var o workerOfferOptions
	cmd := &cobra.Command{
		Use:   "offer ID --machine M | offer ID --withdraw",
		Short: "Let another machine's coordinator adopt an agent that runs here (a person's step)",
		Long: `Another machine of the account may adopt an agent of this machine (st worker
adopt THIS-MACHINE/%7 there) only after a person here offers it to that machine.
The offer stays on the pane until that machine adopts it, the pane closes, or
--withdraw. It is refused from an agent's pane: only a person hands an agent over.`,
		Args: exactArgs(1, "st worker offer %ID --machine NAME"),
	}
	cmd.Flags().StringVar(&o.Machine, "machine", "", "the machine whose coordinator may adopt it (name, host name or slug)")
	cmd.Flags().BoolVar(&o.Withdraw, "withdraw", false, "take the offer back")
	jsonFlag(cmd, &o.JSON)
	return bind(cmd, env, &o, func(args []string) error {
		o.ID = args[0]
		if o.Machine == "" && !o.Withdraw {
			return usageError("say which machine may adopt it", "st worker offer "+o.ID+" --machine NAME (st machines lists them)")
		}
		return nil
	}, runF, runWorkerOffer)
}

func runWorkerOffer(ctx context.Context, env *Env, o workerOfferOptions) error {
	v, err := env.Client().Offer(ctx, api.OfferRequest{Pane: callerPane(env), ID: o.ID, Machine: o.Machine, Withdraw: o.Withdraw})
	return printResult(env, o.JSON, v, err, func(w io.Writer, v *api.OfferView) error {
		if v.Withdrawn {
			fmt.Fprintf(w, "%s is offered to no machine now\n", v.Pane)
		} else {
			fmt.Fprintf(w, "%s (%s) is offered to %s: its coordinator may adopt it with st worker adopt <this machine>/%s\n", v.Pane, v.Agent, v.MachineName, v.Pane)
		}
		return nil
	})
}

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
