package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/plugin"
)

func newPluginCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "Install the Claude Code plugin, the Codex skills and the Gemini CLI and opencode commands that teach agents st",
		Long: `The Claude Code plugin "sophonz" gives new sessions /sophonz:orchestrate (make
this session a coordinator) and the skill /sophonz:worker; the Codex skills
sophonz-orchestrate and sophonz-worker do the same for Codex, and the Gemini CLI
commands /sophonz:orchestrate and /sophonz:worker for Gemini CLI, and the opencode
commands /sophonz-orchestrate and /sophonz-worker for opencode. Their texts
name this st by its absolute path, so install again after moving st.`,
	}
	install := newPluginSubCmd(env, "install", "Write the plugin and the skills, and register the plugin with Claude Code", nil)
	install.Long = `Write the Claude Code plugin "sophonz" into the local marketplace
"sophonz-local" under $ST_HOME/plugins/claude and register both with claude
(ST_CLAUDE_BIN, or claude on PATH), and write the Codex skills into
$CODEX_HOME/skills (default ~/.codex/skills), and, where Gemini CLI has run
(~/.gemini is there), its commands into ~/.gemini/commands/sophonz, and where
opencode has run (~/.config/opencode is there), its commands into
~/.config/opencode/command. Running it
again brings every file up to date with this st.`
	cmd.AddCommand(install,
		newPluginSubCmd(env, "uninstall", "Take the plugin out of Claude Code and remove the plugin's, the skills' and the commands' files", nil),
		newPluginSubCmd(env, "status", "Say what is installed where, and whether it matches this st", nil))
	return cmd
}

type pluginOptions struct {
	Action string // install, uninstall or status
	JSON   bool
}

// newPluginSubCmd is st plugin install, uninstall or status (action).
func newPluginSubCmd(env *Env, action, short string, runF runFunc[pluginOptions]) *cobra.Command {
	o := pluginOptions{Action: action}
	cmd := &cobra.Command{Use: action, Short: short, Args: exactArgs(0, "st plugin "+action)}
	jsonFlag(cmd, &o.JSON)
	return bind(cmd, env, &o, nil, runF, runPlugin)
}

// pluginConfig is where this environment puts the plugin and the skills.
func pluginConfig(env *Env) (plugin.Config, error) {
	// claude runs with this process's environment as the caller sees it.
	var environ []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if v := env.Getenv(k); v != "" {
			environ = append(environ, k+"="+v)
		}
	}
	c, err := plugin.ConfigFromEnv(env.Getenv, environ)
	if err != nil {
		return c, err
	}
	c.STHome = env.Home()
	return c, nil
}

func runPlugin(ctx context.Context, env *Env, o pluginOptions) error {
	c, err := pluginConfig(env)
	if err != nil {
		return err
	}
	switch o.Action {
	case "install":
		rep, err := plugin.Install(ctx, c)
		err = printPluginReport(env, o, rep, err, printPluginInstalled)
		if rep != nil && claudeNotFound(env, c) {
			err = noteClaudeMissing(env, rep)
		}
		return err
	case "uninstall":
		rep, err := plugin.Uninstall(ctx, c)
		return printPluginReport(env, o, rep, err, printPluginRemoved)
	}
	s, err := plugin.GetStatus(ctx, c)
	return printResult(env, o.JSON, s, err, printPluginStatus)
}

// printPluginReport prints what install or uninstall did, as JSON or a
// line per agent, and passes their error on: the report says what was
// done even when a part failed.
func printPluginReport(env *Env, o pluginOptions, rep *plugin.Report, err error, line func(io.Writer, plugin.AgentReport)) error {
	if rep == nil {
		return err
	}
	if o.JSON {
		printJSON(env.Stdout, rep)
		return err
	}
	for _, a := range rep.Agents {
		line(env.Stdout, a)
	}
	return err
}

// claudeNotFound reports that there is no claude to register the plugin
// with: none on PATH, and no ST_CLAUDE_BIN. (A ST_CLAUDE_BIN that does not
// run is a mistake to fix, not this.)
func claudeNotFound(env *Env, c plugin.Config) bool {
	return c.ClaudeBin == "" && env.Getenv("ST_CLAUDE_BIN") == ""
}

// noteClaudeMissing turns install's error for a Claude Code that is not
// installed into a note: the plugin's files are written and the Codex
// skills are in place, which is all st can do without claude, and a
// machine that runs only Codex must not see install fail every time.
// The other agent's failure stays an error.
func noteClaudeMissing(env *Env, rep *plugin.Report) error {
	var err error
	for _, a := range rep.Agents {
		switch {
		case a.Error == "":
		case a.Agent == plugin.Claude && a.Outcome != "": // written, not registered
			fmt.Fprintf(env.Stderr, "st: note: Claude Code is not on PATH (and ST_CLAUDE_BIN is not set): the plugin's files are written in %s, but Claude Code does not know the plugin yet\nTry: %s\n", a.Dir, a.Hint)
		default:
			err = &api.Error{Kind: api.KindInternal, Message: a.Error, Hint: a.Hint}
		}
	}
	return err
}

func printPluginInstalled(w io.Writer, a plugin.AgentReport) {
	what := pluginWhat(a.Agent) + " in " + a.Dir
	switch a.Outcome {
	case plugin.Installed:
		fmt.Fprintf(w, "%s: wrote %s\n", a.Agent, what)
	case plugin.Updated:
		fmt.Fprintf(w, "%s: updated %s (%s)\n", a.Agent, what, pluginPlural(len(a.Changed), "file changed", "files changed"))
	case plugin.Unchanged:
		fmt.Fprintf(w, "%s: %s already matched this st; nothing to change\n", a.Agent, what)
	}
	printPluginNotes(w, a)
	if a.Error != "" {
		return // the error is printed on stderr
	}
	switch a.Agent {
	case plugin.Claude:
		fmt.Fprintf(w, "claude: registered with Claude Code; new sessions get %s (running ones after /reload-plugins)\n", strings.Join(a.Provides, " and "))
	case plugin.Gemini:
		fmt.Fprintf(w, "gemini: new sessions get the commands %s (running ones after /commands reload)\n", strings.Join(a.Provides, " and "))
	case plugin.Opencode:
		fmt.Fprintf(w, "opencode: new sessions get the commands %s\n", strings.Join(a.Provides, " and "))
	default:
		fmt.Fprintf(w, "codex: new sessions get the skills %s\n", strings.Join(a.Provides, " and "))
		fmt.Fprintf(w, "codex: the rule in %s lets st's commands, run escalated, leave the sandbox without asking\n",
			filepath.Join(filepath.Dir(a.Dir), "rules", plugin.CodexRulesFile))
	}
}

func printPluginRemoved(w io.Writer, a plugin.AgentReport) {
	switch a.Outcome {
	case plugin.Removed:
		fmt.Fprintf(w, "%s: removed %s from %s\n", a.Agent, pluginWhat(a.Agent), a.Dir)
	case plugin.Absent:
		if a.Error == "" {
			fmt.Fprintf(w, "%s: nothing to remove (%s: not found in %s)\n", a.Agent, pluginWhat(a.Agent), a.Dir)
		}
	}
	printPluginNotes(w, a)
}

func printPluginNotes(w io.Writer, a plugin.AgentReport) {
	for _, n := range a.Notes {
		fmt.Fprintf(w, "%s: (%s)\n", a.Agent, n)
	}
}

func pluginWhat(agent string) string {
	switch agent {
	case plugin.Claude:
		return "the plugin " + plugin.PluginID
	case plugin.Gemini:
		return "the commands /" + plugin.GeminiNamespace + ":orchestrate and /" + plugin.GeminiNamespace + ":worker"
	case plugin.Opencode:
		return "the commands /" + plugin.OpencodeOrchestrate + " and /" + plugin.OpencodeWorker
	}
	return "the skills " + plugin.CodexOrchestrate + " and " + plugin.CodexWorker
}

func printPluginStatus(w io.Writer, s *plugin.Status) error {
	fmt.Fprintf(w, "st %s at %s\n", s.Version, s.STBin)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tSTATE\tWHERE\tGIVES")
	for _, a := range s.Agents {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.Agent, a.State, a.Dir, strings.Join(a.Provides, ", "))
	}
	tw.Flush()
	stale := false
	for _, a := range s.Agents {
		if a.WrittenBy != "" && a.State != plugin.StateCurrent {
			fmt.Fprintf(w, "%s: written by %s\n", a.Agent, a.WrittenBy)
		}
		if a.State == plugin.StateStale {
			for _, f := range a.Files {
				if f.State != plugin.StateCurrent {
					fmt.Fprintf(w, "%s: %s %s\n", a.Agent, f.State, f.Path)
				}
			}
		}
		if a.Note != "" {
			fmt.Fprintf(w, "%s: %s\n", a.Agent, a.Note)
		}
		if !a.Current && !a.Skipped {
			stale = true
		}
	}
	if stale {
		fmt.Fprintln(w, "Try: st plugin install")
	}
	return nil
}

func pluginPlural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
