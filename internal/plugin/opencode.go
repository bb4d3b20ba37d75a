package plugin

import (
	"os"
	"path/filepath"

	"github.com/sophonz/st/internal/api"
)

// opencode as a coordinator: st's two custom commands, Markdown files in
// opencode's config folder's command/ (opencode reads
// {command,commands}/**/*.md there, a file's name less .md being the
// command's; measured on 1.18.33), with a description in their front
// matter and the text the model gets, where $ARGUMENTS stands for what
// the person typed after the command.

// Opencode is opencode, as it appears in reports.
const Opencode = "opencode"

// The names of st's opencode commands: /sophonz-orchestrate and
// /sophonz-worker. A file in a subfolder would be named "sophonz/..."
// there, which its command menu shows as a path; a dash reads as Codex's
// skills do.
const (
	OpencodeOrchestrate = PluginName + "-orchestrate"
	OpencodeWorker      = PluginName + "-worker"
)

// opencodeDir is opencode's config folder (agent.OpencodeConfigDir).
func (c *Config) opencodeDir() string {
	if c.OpencodeDir != "" {
		return c.OpencodeDir
	}
	return filepath.Join(c.Home, ".config", "opencode")
}

// OpencodeCommandsDir is the folder of opencode's user commands, where
// st's two files sit beside the user's own.
func (c *Config) OpencodeCommandsDir() string { return filepath.Join(c.opencodeDir(), "command") }

// opencodeCommands are the files of st's opencode commands.
func (c *Config) opencodeCommands() []string {
	return []string{filepath.Join(c.OpencodeCommandsDir(), OpencodeOrchestrate+".md"), filepath.Join(c.OpencodeCommandsDir(), OpencodeWorker+".md")}
}

// opencodeHasRun reports whether opencode has made its config folder
// here: st writes no folder for an agent the user does not have.
func (c *Config) opencodeHasRun() bool {
	fi, err := os.Stat(c.opencodeDir())
	return err == nil && fi.IsDir()
}

// uninstallOpencode removes st's command files, and opencode's command
// folder if that leaves it empty: the user's own commands stay as they
// are, as does a file of st's name that st did not write.
func uninstallOpencode(c Config) (AgentReport, []*api.Error) {
	ar, errs := removeStamped(AgentReport{Agent: Opencode, Dir: c.OpencodeCommandsDir()}, c.opencodeCommands())
	return ar, errs
}
