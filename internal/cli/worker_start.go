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
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/store"
	"github.com/spf13/cobra"
)

type workerStartOptions struct {
	Agent, Task, Name, Cwd string
	Machine, OnLimit       string
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
	f.StringVar(&o.OnLimit, "on-limit", "", "at the agent's usage limit: wait (paused, then on by itself or st types continue), move (the task to another agent), or fail (default wait)")
	jsonFlag(cmd, &o.JSON)
	return bind(cmd, env, &o, func([]string) error {
		if !api.ValidOnLimit(o.OnLimit) {
			return usageError(fmt.Sprintf("--on-limit takes wait, move or fail, not %q", o.OnLimit), "st worker start --on-limit wait|move|fail ...")
		}
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
		Owns: o.Owns, Worktree: o.Worktree, Fan: o.Fan, Machine: o.Machine, OnLimit: o.OnLimit}
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
