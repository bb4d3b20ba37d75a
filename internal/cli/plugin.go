package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sophonz/st/internal/plugin"
)

func newPluginCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "Install the Claude Code plugin and the Codex skills that teach agents st",
		Long: `The Claude Code plugin "sophonz" gives new sessions /sophonz:orchestrate (make
this session a coordinator) and the skill /sophonz:worker; the Codex skills
sophonz-orchestrate and sophonz-worker do the same for Codex. Their texts name
this st by its absolute path, so install again after moving st.`,
	}
	cmd.AddCommand(newPluginInstallCmd(env), newPluginUninstallCmd(env), newPluginStatusCmd(env))
	return cmd
}

type pluginOptions struct {
	JSON bool
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

func newPluginInstallCmd(env *Env) *cobra.Command {
	var o pluginOptions
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Write the plugin and the skills, and register the plugin with Claude Code",
		Long: `Write the Claude Code plugin "sophonz" into the local marketplace
"sophonz-local" under $ST_HOME/plugins/claude and register both with claude
(ST_CLAUDE_BIN, or claude on PATH), and write the Codex skills into
$CODEX_HOME/skills (default ~/.codex/skills). Running it again brings every
file up to date with this st.`,
		Args: exactArgs(0, "st plugin install"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPluginInstall(cmd.Context(), env, o)
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON")
	return cmd
}

func runPluginInstall(ctx context.Context, env *Env, o pluginOptions) error {
	c, err := pluginConfig(env)
	if err != nil {
		return err
	}
	rep, err := plugin.Install(ctx, c)
	if rep == nil {
		return err
	}
	if o.JSON {
		printJSON(env.Stdout, rep)
		return err
	}
	for _, a := range rep.Agents {
		printPluginInstalled(env.Stdout, a)
	}
	return err
}

func printPluginInstalled(w io.Writer, a plugin.AgentReport) {
	what := fmt.Sprintf("the plugin %s in %s", plugin.PluginID, a.Dir)
	if a.Agent == plugin.Codex {
		what = fmt.Sprintf("the skills %s and %s in %s", plugin.CodexOrchestrate, plugin.CodexWorker, a.Dir)
	}
	switch a.Outcome {
	case plugin.Installed:
		fmt.Fprintf(w, "%s: wrote %s\n", a.Agent, what)
	case plugin.Updated:
		fmt.Fprintf(w, "%s: updated %s (%s)\n", a.Agent, what, pluginPlural(len(a.Changed), "file changed", "files changed"))
	case plugin.Unchanged:
		fmt.Fprintf(w, "%s: %s already matched this st; nothing to change\n", a.Agent, what)
	}
	for _, n := range a.Notes {
		fmt.Fprintf(w, "%s: (%s)\n", a.Agent, n)
	}
	if a.Error != "" {
		return // the error is printed on stderr
	}
	if a.Agent == plugin.Claude {
		fmt.Fprintf(w, "claude: registered with Claude Code; new sessions get %s (running ones after /reload-plugins)\n", strings.Join(a.Provides, " and "))
	} else {
		fmt.Fprintf(w, "codex: new sessions get the skills %s\n", strings.Join(a.Provides, " and "))
	}
}

func newPluginUninstallCmd(env *Env) *cobra.Command {
	var o pluginOptions
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Take the plugin out of Claude Code and remove the plugin's and the skills' files",
		Args:  exactArgs(0, "st plugin uninstall"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := pluginConfig(env)
			if err != nil {
				return err
			}
			rep, err := plugin.Uninstall(cmd.Context(), c)
			if rep == nil {
				return err
			}
			if o.JSON {
				printJSON(env.Stdout, rep)
				return err
			}
			for _, a := range rep.Agents {
				switch a.Outcome {
				case plugin.Removed:
					fmt.Fprintf(env.Stdout, "%s: removed %s from %s\n", a.Agent, pluginWhat(a.Agent), a.Dir)
				case plugin.Absent:
					if a.Error == "" {
						fmt.Fprintf(env.Stdout, "%s: nothing to remove (%s: not found in %s)\n", a.Agent, pluginWhat(a.Agent), a.Dir)
					}
				}
				for _, n := range a.Notes {
					fmt.Fprintf(env.Stdout, "%s: (%s)\n", a.Agent, n)
				}
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON")
	return cmd
}

func pluginWhat(agent string) string {
	if agent == plugin.Claude {
		return "the plugin " + plugin.PluginID
	}
	return "the skills " + plugin.CodexOrchestrate + " and " + plugin.CodexWorker
}

func newPluginStatusCmd(env *Env) *cobra.Command {
	var o pluginOptions
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Say what is installed where, and whether it matches this st",
		Args:  exactArgs(0, "st plugin status"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := pluginConfig(env)
			if err != nil {
				return err
			}
			s, err := plugin.GetStatus(cmd.Context(), c)
			if err != nil {
				return err
			}
			if o.JSON {
				return printJSON(env.Stdout, s)
			}
			printPluginStatus(env.Stdout, s)
			return nil
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON")
	return cmd
}

func printPluginStatus(w io.Writer, s *plugin.Status) {
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
		if !a.Current {
			stale = true
		}
	}
	if stale {
		fmt.Fprintln(w, "Try: st plugin install")
	}
}

func pluginPlural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
