package cli

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/sophonz/st/internal/cpconfig"
	"github.com/sophonz/st/internal/remote"
)

// These tests run each command as cobra parses it, with a runF that
// records the options: what the flags and arguments parse into, and which
// command lines are refused before anything runs. No daemon, no tmux.

// parseCase is one command line, the environment it runs in, and the
// options it must parse into, or (err) a part of the refusal it must give.
type parseCase[O any] struct {
	args []string
	env  map[string]string
	want O
	err  string
}

// parsedPaths are the commands checkParse saw, by path ("worker start").
var parsedPaths = map[string]bool{}

// inPane is the environment of a command run in a tmux pane.
var inPane = map[string]string{"TMUX_PANE": "%1", "ST_HOME": "/h"}

// outside is the environment of a command run outside tmux.
var outside = map[string]string{"ST_HOME": "/h"}

// checkParse runs the command newCmd makes, for each case.
func checkParse[O any](t *testing.T, path string, newCmd func(*Env, runFunc[O]) *cobra.Command, cases []parseCase[O]) {
	t.Helper()
	parsedPaths[path] = true
	for _, c := range cases {
		t.Run(path+" "+strings.Join(c.args, " "), func(t *testing.T) {
			var out bytes.Buffer
			env := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out, Getenv: func(k string) string { return c.env[k] }}
			var got *O
			cmd := newCmd(env, func(ctx context.Context, e *Env, o O) error {
				if e != env || ctx == nil {
					t.Errorf("runF got env %p and context %v, want %p and the command's", e, ctx, env)
				}
				got = &o
				return nil
			})
			cmd.SetArgs(append([]string{}, c.args...)) // not nil: cobra would take os.Args
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.Execute()
			switch {
			case c.err != "":
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("error %v, want one that says %q", err, c.err)
				}
				if got != nil {
					t.Errorf("refused, yet ran with %s", show(*got))
				}
			case err != nil:
				t.Errorf("refused: %v", err)
			case got == nil:
				t.Errorf("runF was not called")
			case !reflect.DeepEqual(*got, c.want):
				t.Errorf("options:\n got %s\nwant %s", show(*got), show(c.want))
			}
			if out.Len() > 0 {
				t.Errorf("printed while only parsing:\n%s", out.String())
			}
		})
	}
}

// show prints options with what their pointers point at.
func show(o any) string {
	v := reflect.ValueOf(o)
	var parts []string
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() == reflect.Pointer && !f.IsNil() {
			f = f.Elem()
		}
		parts = append(parts, fmt.Sprintf("%s:%#v", v.Type().Field(i).Name, f.Interface()))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// TestCommandOptions checks every command's parse, and that no command of
// st's tree is left out.
func TestCommandOptions(t *testing.T) {
	daemonOptionsCases(t)
	workerStartOptionsCases(t)
	workerOptionsCases(t)
	workerIDOptionsCases(t)
	orchOptionsCases(t)
	taskOptionsCases(t)
	gateOptionsCases(t)
	attentionOptionsCases(t)
	setupOptionsCases(t)
	setupDoctorOptionsCases(t)
	remoteOptionsCases(t)

	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() {
			path := strings.TrimPrefix(c.CommandPath(), "st ")
			if !parsedPaths[path] {
				t.Errorf("st %s has no options test", path)
			}
			delete(parsedPaths, path)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot(&Env{Getenv: func(string) string { return "" }}))
	for p := range parsedPaths {
		t.Errorf("an options test for %q, which is no command of st", p)
	}
}

func daemonOptionsCases(t *testing.T) {
	checkParse(t, "up", newUpCmd, []parseCase[upOptions]{{args: nil}, {args: []string{"now"}, err: `unknown command "now"`},
		{args: []string{"--at-login"}, want: upOptions{AtLogin: true}}})
	checkParse(t, "down", newDownCmd, []parseCase[downOptions]{{args: nil}, {args: []string{"--yes"}, err: "unknown flag: --yes"},
		{args: []string{"--at-login"}, want: downOptions{AtLogin: true}}})
	checkParse(t, "completion", newCompletionCmd, []parseCase[completionOptions]{{args: []string{"zsh"}, want: completionOptions{Shell: "zsh"}},
		{args: []string{"powershell"}, err: `st has no completion for "powershell"`}, {args: nil, err: "st completion bash|zsh|fish"}})
	checkParse(t, "daemon", newDaemonCmd, []parseCase[daemonOptions]{{args: nil}, {args: []string{"x"}, err: `unknown command "x"`}})
	checkParse(t, "version", newVersionCmd, []parseCase[versionOptions]{{args: nil}, {args: []string{"--json"}, err: "unknown flag: --json"}})
	checkParse(t, "web", newWebCmd, []parseCase[webOptions]{{args: nil}, {args: []string{"open"}, err: `unknown command "open"`}})
	checkParse(t, "status", newStatusCmd, []parseCase[statusOptions]{
		{args: nil}, {args: []string{"--json"}, want: statusOptions{JSON: true}}, {args: []string{"all"}, err: `unknown command "all"`}})
	checkParse(t, "ls", newLsCmd, []parseCase[lsOptions]{
		{args: nil}, {args: []string{"--json"}, want: lsOptions{JSON: true}}, {args: []string{"--json=maybe"}, err: `invalid argument "maybe"`}})
	checkParse(t, "hook", newHookCmd, []parseCase[hookOptions]{
		{args: []string{"claude", "Stop"}, want: hookOptions{Agent: "claude", Event: "Stop"}},
		{args: []string{"claude"}, err: "takes 2 argument(s), got 1\nTry: st hook claude|codex|gemini|opencode|sim EVENT < payload.json"}})
	checkParse(t, "statusline", newStatusLineCmd, []parseCase[statusLineOptions]{
		{args: nil, want: statusLineOptions{}},
		{args: []string{"--then", "echo 'hi'"}, want: statusLineOptions{Then: "echo 'hi'"}},
		{args: []string{"extra"}, err: "unknown command"}})
	// The sim agent's flags are its own: st passes them on unparsed.
	checkParse(t, "agent sim", newAgentSimCmd, []parseCase[agentSimOptions]{
		{args: nil, want: agentSimOptions{Args: []string{}}},
		{args: []string{"--no-hooks", "--name", "x"}, want: agentSimOptions{Args: []string{"--no-hooks", "--name", "x"}}}})
}

func workerStartOptionsCases(t *testing.T) {
	checkParse(t, "worker start", newWorkerStartCmd, []parseCase[workerStartOptions]{
		{args: []string{"--agent", "sim", "--task", "t.md"}, env: inPane, want: workerStartOptions{Agent: "sim", Task: "t.md"}},
		{args: []string{"--agent=claude", "--task=t.md", "--name", "n", "--cwd", "d", "--split", "--owns", "a/**", "--owns", "b,c",
			"--worktree", "--fan", "3", "--machine", "laptop", "--json"}, env: inPane,
			want: workerStartOptions{Agent: "claude", Task: "t.md", Name: "n", Cwd: "d", Split: true, Owns: []string{"a/**", "b,c"},
				Worktree: true, Fan: 3, Machine: "laptop", JSON: true}},
		// Whether it runs in a pane is the run's business: the task file is
		// checked first, as the worker would read it.
		{args: []string{"--agent", "sim", "--task", "t.md"}, env: outside, want: workerStartOptions{Agent: "sim", Task: "t.md"}},
		{args: []string{"--task", "t.md"}, env: inPane, err: "st worker start needs --agent\nTry: st worker start --agent claude|codex|sim --task FILE"},
		{args: []string{"--agent", "codex"}, env: inPane, err: "needs --task FILE: the worker reads its task from a file\nTry: write the task into a file, then st worker start --agent codex --task FILE"},
		{args: []string{"--agent", "sim", "--task", "t.md", "--fan", "two"}, env: inPane, err: `invalid argument "two" for "--fan"`},
		{args: []string{"--agent", "sim", "--task", "t.md", "extra"}, env: inPane, err: `unknown command "extra"`},
	})
}

func workerOptionsCases(t *testing.T) {
	checkParse(t, "worker wait", newWorkerWaitCmd, []parseCase[workerWaitOptions]{
		{args: nil, env: inPane, want: workerWaitOptions{Timeout: 15 * time.Minute}},
		{args: []string{"%3", "%4", "--timeout", "90s", "--json"}, env: outside, want: workerWaitOptions{IDs: []string{"%3", "%4"}, Timeout: 90 * time.Second, JSON: true}},
		{args: nil, env: outside, err: "st worker wait with no ids acts for the tmux pane it runs in"},
		{args: []string{"--timeout", "0s"}, env: inPane, err: "--timeout must be more than 0\nTry: st worker wait --timeout 15m"},
		{args: []string{"--timeout", "soon"}, env: inPane, err: `invalid argument "soon" for "--timeout"`},
	})
	checkParse(t, "worker done", newWorkerDoneCmd, []parseCase[workerDoneOptions]{
		{args: []string{"--summary", "did it; ran the tests"}, env: inPane, want: workerDoneOptions{Summary: "did it; ran the tests", Retry: 2 * time.Minute}},
		{args: []string{"--summary", "x", "--retry", "5s"}, env: inPane, want: workerDoneOptions{Summary: "x", Retry: 5 * time.Second}},
		{args: []string{"--summary", "x"}, env: outside, err: "st worker done acts for the tmux pane it runs in, and this shell is not in tmux"},
		{args: []string{"--summary", "  \n"}, env: inPane, err: "st worker done needs a summary\nTry: st worker done --summary"},
		{args: []string{"did it"}, env: inPane, err: `unknown command "did it"`},
	})
	checkParse(t, "worker list", newWorkerListCmd, []parseCase[workerListOptions]{
		{args: nil, env: inPane},
		{args: []string{"--all", "--json"}, env: outside, want: workerListOptions{All: true, JSON: true}},
		{args: nil, env: outside, err: "st worker list (without --all) acts for the tmux pane it runs in"},
	})
	checkParse(t, "worker offer", newWorkerOfferCmd, []parseCase[workerOfferOptions]{
		{args: []string{"%7", "--machine", "home-mac"}, want: workerOfferOptions{ID: "%7", Machine: "home-mac"}},
		{args: []string{"%7", "--withdraw", "--json"}, want: workerOfferOptions{ID: "%7", Withdraw: true, JSON: true}},
		{args: []string{"%7"}, err: "say which machine may adopt it\nTry: st worker offer %7 --machine NAME"},
		{args: []string{"--machine", "m"}, err: "takes 1 argument(s), got 0\nTry: st worker offer %ID --machine NAME"},
	})
	checkParse(t, "worker adopt", newWorkerAdoptCmd, []parseCase[workerAdoptOptions]{
		{args: []string{"%9"}, want: workerAdoptOptions{ID: "%9"}},
		{args: []string{"%9", "--owns", "web/**", "--owns", "docs/*.md"}, want: workerAdoptOptions{ID: "%9", Owns: []string{"web/**", "docs/*.md"}}},
		{args: []string{"%9", "%10"}, err: "takes 1 argument(s), got 2\nTry: st worker adopt %ID"},
	})
}

func workerIDOptionsCases(t *testing.T) {
	checkParse(t, "worker read", newWorkerReadCmd, []parseCase[workerReadOptions]{
		{args: []string{"%3"}, want: workerReadOptions{ID: "%3"}},
		{args: []string{"w1", "--json"}, want: workerReadOptions{ID: "w1", JSON: true}},
		{args: nil, err: "takes 1 argument(s), got 0\nTry: st worker read ID"},
	})
	checkParse(t, "worker send", newWorkerSendCmd, []parseCase[workerSendOptions]{
		{args: []string{"%3", "go on, and -- keep --flags as text"}, want: workerSendOptions{ID: "%3", Text: "go on, and -- keep --flags as text"}},
		{args: []string{"%3"}, err: "takes 2 argument(s), got 1\nTry: st worker send ID \"TEXT\""},
	})
	checkParse(t, "worker stop", newWorkerStopCmd, []parseCase[workerStopOptions]{
		{args: []string{"%3", "--yes"}, want: workerStopOptions{ID: "%3", Yes: true}},
		{args: []string{"%3"}, err: "st worker stop closes the worker's window and ends its agent\nTry: st worker stop %3 --yes"},
	})
	checkParse(t, "worker rename", newWorkerRenameCmd, []parseCase[workerRenameOptions]{
		{args: []string{"%3", "tests"}, want: workerRenameOptions{ID: "%3", Name: "tests"}},
		{args: []string{"tests"}, err: "takes 2 argument(s), got 1\nTry: st worker rename ID NAME"},
	})
	checkParse(t, "worker release", newWorkerReleaseCmd, []parseCase[workerReleaseOptions]{
		{args: []string{"%3"}, want: workerReleaseOptions{ID: "%3"}},
		{args: []string{"%3", "--yes"}, err: "unknown flag: --yes"},
	})
	checkParse(t, "worker diff", newWorkerDiffCmd, []parseCase[workerDiffOptions]{
		{args: []string{"%3", "--json"}, want: workerDiffOptions{ID: "%3", JSON: true}},
		{args: nil, err: "Try: st worker diff ID"},
	})
	for _, verb := range []string{"merge", "pick"} {
		newCmd := func(env *Env, runF runFunc[workerMergeOptions]) *cobra.Command {
			return newWorkerMergeCmd(env, verb, runF)
		}
		checkParse(t, "worker "+verb, newCmd, []parseCase[workerMergeOptions]{
			{args: []string{"%3"}, want: workerMergeOptions{ID: "%3", Pick: verb == "pick"}},
			{args: []string{"%3", "%4"}, err: "takes 1 argument(s), got 2\nTry: st worker " + verb + " ID"},
		})
	}
}

func orchOptionsCases(t *testing.T) {
	on, off := true, false
	checkParse(t, "orch accept-remote", newAcceptRemoteCmd, []parseCase[acceptRemoteOptions]{
		{args: []string{"on"}, want: acceptRemoteOptions{On: &on}},
		{args: []string{"off"}, want: acceptRemoteOptions{On: &off}},
		{args: []string{"status"}, want: acceptRemoteOptions{}},
		{args: []string{"yes"}, err: "st orch accept-remote takes on, off or status, not \"yes\"\nTry: st orch accept-remote on"},
		{args: nil, err: "Try: st orch accept-remote on|off|status"},
	})
	checkParse(t, "orch start", newOrchStartCmd, []parseCase[orchStartOptions]{
		{args: nil},
		{args: []string{"--objective", "ship v2", "--json"}, want: orchStartOptions{Objective: "ship v2", JSON: true}},
		{args: []string{"ship v2"}, err: `unknown command "ship v2"`},
	})
	checkParse(t, "orch show", newOrchShowCmd, []parseCase[orchShowOptions]{
		{args: nil, env: inPane},
		{args: []string{"r-1", "--json"}, env: outside, want: orchShowOptions{Run: "r-1", JSON: true}},
		{args: nil, env: outside, err: "st orch show with no run id shows this pane's run, and this shell is not in tmux\nTry: st orch show RUN"},
		{args: []string{"r-1", "r-2"}, env: inPane, err: "accepts at most 1 arg(s), received 2"},
	})
	day := 24 * time.Hour
	checkParse(t, "orch prune", newOrchPruneCmd, []parseCase[orchPruneOptions]{
		{args: []string{"--older-than", "30d"}, env: outside, want: orchPruneOptions{OlderThan: "30d", Age: 30 * day}},
		{args: []string{"--older-than", "2w", "--yes", "--json"}, env: inPane, want: orchPruneOptions{OlderThan: "2w", Age: 14 * day, Yes: true, JSON: true}},
		{args: []string{"--older-than", "12h"}, want: orchPruneOptions{OlderThan: "12h", Age: 12 * time.Hour}},
		{args: []string{"--older-than", "1.5d"}, want: orchPruneOptions{OlderThan: "1.5d", Age: 36 * time.Hour}},
		{args: nil, err: "st orch prune needs --older-than: how long ago the runs it removes ended\nTry: st orch prune --older-than 30d"},
		{args: []string{"--older-than", "-3d"}, err: `--older-than "-3d": not a number of days or weeks`},
		{args: []string{"--older-than", "-1h"}, err: `--older-than "-1h": not an age (30d, 2w, 12h)`},
		{args: []string{"--older-than", "month"}, err: `--older-than "month": not an age`},
		{args: []string{"old"}, err: `unknown command "old"`},
	})
}

func taskOptionsCases(t *testing.T) {
	checkParse(t, "task create", newTaskCreateCmd, []parseCase[taskCreateOptions]{
		{args: []string{"build", "--task", "b.md", "--agent", "sim"}, want: taskCreateOptions{Name: "build", File: "b.md", Agent: "sim"}},
		{args: []string{"test", "--task", "t.md", "--agent", "codex", "--deps", "build,lint", "--deps", "docs", "--owns", "x/**",
			"--worktree", "--cwd", "sub", "--machine", "m", "--json"},
			want: taskCreateOptions{Name: "test", File: "t.md", Agent: "codex", Deps: []string{"build", "lint", "docs"}, Owns: []string{"x/**"},
				Worktree: true, Cwd: "sub", Machine: "m", JSON: true}},
		{args: []string{"build", "--agent", "sim"}, err: "st task create needs --task FILE and --agent\nTry: st task create build --task FILE --agent claude|codex|sim"},
		{args: []string{"build", "--task", "b.md"}, err: "needs --task FILE and --agent"},
		{args: []string{"--task", "b.md", "--agent", "sim"}, err: "takes 1 argument(s), got 0"},
	})
	checkParse(t, "task list", newTaskListCmd, []parseCase[taskListOptions]{
		{args: nil, env: inPane},
		{args: []string{"--run", "r-2", "--json"}, env: outside, want: taskListOptions{Run: "r-2", JSON: true}},
		{args: nil, env: outside, err: "st task list (without --run) acts for the tmux pane it runs in"},
	})
	checkParse(t, "task cancel", newTaskCancelCmd, []parseCase[taskCancelOptions]{
		{args: []string{"build"}, want: taskCancelOptions{Name: "build"}},
		{args: nil, err: "Try: st task cancel NAME"},
	})
}

func gateOptionsCases(t *testing.T) {
	checkParse(t, "gate ask", newGateAskCmd, []parseCase[gateAskOptions]{
		{args: []string{"Ship it?", "--option", "yes", "--option", "no, wait"}, want: gateAskOptions{Question: "Ship it?", Options: []string{"yes", "no, wait"}}},
		{args: []string{"Ship it?", "--option", "a", "--timeout", "10m", "--json"}, want: gateAskOptions{Question: "Ship it?", Options: []string{"a"}, Timeout: 10 * time.Minute, JSON: true}},
		{args: []string{"--option", "a"}, err: "Try: st gate ask \"QUESTION\" --option A --option B"},
		{args: []string{"Q", "--timeout", "later"}, err: `invalid argument "later" for "--timeout"`},
	})
	checkParse(t, "gate list", newGateListCmd, []parseCase[gateListOptions]{
		{args: nil},
		{args: []string{"--all", "--json"}, want: gateListOptions{All: true, JSON: true}},
		{args: []string{"open"}, err: `unknown command "open"`},
	})
	checkParse(t, "gate answer", newGateAnswerCmd, []parseCase[gateAnswerOptions]{
		{args: []string{"g-1", "no, wait"}, want: gateAnswerOptions{ID: "g-1", Option: "no, wait"}},
		{args: []string{"g-1"}, err: "takes 2 argument(s), got 1\nTry: st gate answer ID OPTION (or st gate answer ID --value AMOUNT)"},
		{args: []string{"g-1", "--value", "5M"}, want: gateAnswerOptions{ID: "g-1", Value: "5M"}},
		{args: []string{"g-1", "go on with a budget of", "--value", "$20"}, want: gateAnswerOptions{ID: "g-1", Option: "go on with a budget of", Value: "$20"}},
	})
}

// setupOptionsCases: st hooks and st plugin, one command per action.
func setupOptionsCases(t *testing.T) {
	for _, action := range []string{"install", "uninstall", "status"} {
		newHooks := func(env *Env, runF runFunc[hooksOptions]) *cobra.Command {
			return newHooksSubCmd(env, action, "", runF)
		}
		checkParse(t, "hooks "+action, newHooks, []parseCase[hooksOptions]{
			{args: nil, want: hooksOptions{Action: action}},
			{args: []string{"--agent", "claude,codex", "--json"}, want: hooksOptions{Action: action, Agents: []string{"claude", "codex"}, JSON: true}},
			{args: []string{"--agent", "codex", "--agent", "claude"}, want: hooksOptions{Action: action, Agents: []string{"codex", "claude"}}},
			{args: []string{"--agent", "aider"}, err: "unknown agent \"aider\": st has hooks for claude and codex and gemini and opencode\nTry: st hooks " + action + " --agent claude (or codex, gemini, opencode)"},
		})
		newPlugin := func(env *Env, runF runFunc[pluginOptions]) *cobra.Command {
			return newPluginSubCmd(env, action, "", runF)
		}
		checkParse(t, "plugin "+action, newPlugin, []parseCase[pluginOptions]{
			{args: nil, want: pluginOptions{Action: action}},
			{args: []string{"--json"}, want: pluginOptions{Action: action, JSON: true}},
			{args: []string{"claude"}, err: "takes 0 argument(s), got 1\nTry: st plugin " + action},
		})
	}
}

func setupDoctorOptionsCases(t *testing.T) {
	checkParse(t, "setup", newSetupCmd, []parseCase[setupOptions]{
		{args: nil}, {args: []string{"--undo"}, want: setupOptions{Undo: true}},
		{args: []string{"--tmux-status"}, want: setupOptions{TmuxStatus: true}}, {args: []string{"claude"}, err: `unknown command "claude"`}})
	checkParse(t, "doctor", newDoctorCmd, []parseCase[doctorOptions]{
		{args: nil}, {args: []string{"--json"}, want: doctorOptions{JSON: true}}, {args: []string{"--fix"}, err: "unknown flag: --fix"}})
}

func remoteOptionsCases(t *testing.T) {
	checkParse(t, "control-plane serve", newControlPlaneServeCmd, []parseCase[cpServeOptions]{
		{args: nil, env: outside, want: cpServeOptions{Data: "/h/control-plane", Listen: "127.0.0.1:0", OfflineAfter: cpconfig.DefaultOfflineAfter,
			RelayStreams: cpconfig.DefaultRelayStreams, RelayPairStreams: cpconfig.DefaultRelayPairStreams, RelayRateMiB: 16}},
		{args: []string{"--data", "/cp", "--listen", "127.0.0.1:8443", "--offline-after", "1m"}, want: cpServeOptions{Data: "/cp", Listen: "127.0.0.1:8443", OfflineAfter: time.Minute,
			RelayStreams: cpconfig.DefaultRelayStreams, RelayPairStreams: cpconfig.DefaultRelayPairStreams, RelayRateMiB: 16}},
		{args: []string{"--http", "--cert", "/c.pem", "--key", "/k.pem", "--name", "cp.example.net,cp", "--relay-streams", "4", "--relay-pair-streams", "2", "--relay-rate", "0",
			"--metrics", "127.0.0.1:9464"},
			want: cpServeOptions{Data: "/h/control-plane", Listen: "127.0.0.1:0", OfflineAfter: cpconfig.DefaultOfflineAfter, HTTP: true, Cert: "/c.pem", Key: "/k.pem",
				Names: []string{"cp.example.net", "cp"}, RelayStreams: 4, RelayPairStreams: 2, Metrics: "127.0.0.1:9464"}, env: outside},
		{args: []string{"--offline-after", "never"}, err: `invalid argument "never" for "--offline-after"`},
	})
	checkParse(t, "control-plane account add", newAccountAddCmd, []parseCase[accountAddOptions]{
		{args: []string{"acme"}, env: outside, want: accountAddOptions{Name: "acme", Data: "/h/control-plane"}},
		{args: []string{"acme", "--data", "/cp"}, want: accountAddOptions{Name: "acme", Data: "/cp"}},
		{args: nil, err: "takes 1 argument(s), got 0\nTry: st control-plane account add NAME"},
	})
	checkParse(t, "control-plane machines", newCPMachinesCmd, []parseCase[cpMachinesOptions]{
		{args: []string{"--account", "acme"}, env: outside, want: cpMachinesOptions{Account: "acme", Data: "/h/control-plane"}},
		{args: []string{"--account", "acme", "--data", "/cp", "--json"}, want: cpMachinesOptions{Account: "acme", Data: "/cp", JSON: true}},
		{args: nil, err: "say which account's machines to list\nTry: st control-plane machines --account NAME"},
		{args: []string{"acme"}, err: `unknown command "acme"`},
	})
	checkParse(t, "control-plane machine remove", newMachineRemoveCmd, []parseCase[machineRemoveOptions]{
		{args: []string{"old-mac", "--account", "acme"}, env: outside, want: machineRemoveOptions{Name: "old-mac", Account: "acme", Data: "/h/control-plane"}},
		{args: []string{"old-mac"}, err: "say which account the machine is in\nTry: st control-plane machine remove old-mac --account NAME"},
	})
	// What a flag does not give comes from the environment.
	loginEnv := map[string]string{"ST_CONTROL_PLANE": "https://cp", "ST_CONTROL_PLANE_CA": "/ca.pem", "ST_ACCOUNT": "acme",
		"ST_ACCOUNT_KEY": "stk_env", "ST_MACHINE_NAME": "Mac", "ST_HOSTNAME": "mac.local"}
	checkParse(t, "login", newLoginCmd, []parseCase[remote.LoginOptions]{
		{args: nil, env: loginEnv, want: remote.LoginOptions{URL: "https://cp", CAFile: "/ca.pem", Account: "acme", Key: "stk_env", Name: "Mac", Host: "mac.local"}},
		{args: []string{"--key", "stk_flag", "--name", "Laptop", "--control-plane", "https://x", "--ca", "/x.pem", "--account", "b", "--host", "h"}, env: loginEnv,
			want: remote.LoginOptions{URL: "https://x", CAFile: "/x.pem", Account: "b", Key: "stk_flag", Name: "Laptop", Host: "h"}},
		{args: []string{"--replace"}, env: loginEnv,
			want: remote.LoginOptions{URL: "https://cp", CAFile: "/ca.pem", Account: "acme", Key: "stk_env", Name: "Mac", Host: "mac.local", Replace: true}},
		{args: []string{"acme"}, err: `unknown command "acme"`},
	})
	checkParse(t, "logout", newLogoutCmd, []parseCase[logoutOptions]{{args: nil}, {args: []string{"--all"}, err: "unknown flag: --all"}})
	checkParse(t, "machines", newMachinesCmd, []parseCase[machinesOptions]{
		{args: nil}, {args: []string{"--json"}, want: machinesOptions{JSON: true}}, {args: []string{"acme"}, err: `unknown command "acme"`}})
}
