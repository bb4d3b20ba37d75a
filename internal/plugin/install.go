package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/hooks"
	"github.com/sophonz/st/internal/store"
)

// Outcomes of install and uninstall, per agent.
const (
	Installed = "installed" // nothing was there before
	Updated   = "updated"   // some files changed
	Unchanged = "unchanged" // every file was already current
	Removed   = "removed"
	Absent    = "absent" // nothing to remove
)

// States of status, per agent.
const (
	StateCurrent       = "current"
	StateStale         = "stale"          // files missing, different or left over
	StateNotInstalled  = "not installed"  // none of the files
	StateNotRegistered = "not registered" // Claude: files current, claude does not list the plugin
)

// Report says what install or uninstall did.
type Report struct {
	Action  string        `json:"action"`
	STBin   string        `json:"st"`
	Version string        `json:"version"`
	Agents  []AgentReport `json:"agents"`
}

// AgentReport is one agent's part of a Report.
type AgentReport struct {
	Agent   string   `json:"agent"`
	Dir     string   `json:"dir"`
	Outcome string   `json:"outcome"`
	Changed []string `json:"changed,omitempty"` // files written or removed
	// Registered (Claude): after install, Claude Code lists the plugin;
	// after uninstall, taking it out failed, so it may still list it.
	// Always false for Codex, which reads its skills folder as it is.
	Registered bool     `json:"registered"`
	Provides   []string `json:"provides,omitempty"` // what sessions get
	Notes      []string `json:"notes,omitempty"`
	Error      string   `json:"error,omitempty"`
	Hint       string   `json:"hint,omitempty"`
}

// provides is what each agent's sessions get.
func provides(agent string) []string {
	switch agent {
	case Claude:
		return []string{"/" + PluginName + ":orchestrate", "/" + PluginName + ":worker"}
	case Gemini:
		return []string{"/" + GeminiNamespace + ":orchestrate", "/" + GeminiNamespace + ":worker"}
	case Opencode:
		return []string{"/" + OpencodeOrchestrate, "/" + OpencodeWorker}
	}
	return []string{"$" + CodexOrchestrate, "$" + CodexWorker}
}

func (c *Config) dirOf(agent string) string {
	switch agent {
	case Claude:
		return c.ClaudeDir()
	case Gemini:
		return c.GeminiCommandsDir()
	case Opencode:
		return c.OpencodeCommandsDir()
	}
	return c.CodexSkillsDir()
}

// geminiCommands are the files of st's Gemini commands.
func (c *Config) geminiCommands() []string {
	return []string{filepath.Join(c.GeminiCommandsDir(), "orchestrate.toml"), filepath.Join(c.GeminiCommandsDir(), "worker.toml")}
}

// Install writes the files and registers the plugin with Claude Code
// (for c.Agents, by default both). The
// Codex skills are written even when Claude's part fails; the error then
// is an *api.Error that says what to do, and the report still says what
// was done.
func Install(ctx context.Context, c Config) (*Report, error) {
	files, err := Render(c)
	if err != nil {
		return nil, err
	}
	rep := &Report{Action: "install", STBin: c.STBin, Version: c.Version}
	var errs []*api.Error
	for _, agent := range c.agents() {
		ar := AgentReport{Agent: agent, Dir: c.dirOf(agent), Provides: provides(agent)}
		fail := func(e *api.Error) {
			ar.Error, ar.Hint = e.Message, e.Hint
			errs = append(errs, e)
		}
		mine := byAgent(files, agent)
		existed, changed, err := writeFiles(mine)
		if err == nil && agent == Claude {
			var pruned []string
			pruned, err = prune(c.ClaudeDir(), mine)
			changed = append(changed, pruned...)
		}
		ar.Changed = changed
		switch {
		case err != nil:
			fail(&api.Error{Kind: api.KindInternal, Message: fmt.Sprintf("write the %s files: %v", agent, err),
				Hint: "fix the folder's permissions, then st plugin install"})
		case existed == 0:
			ar.Outcome = Installed
		case len(changed) > 0:
			ar.Outcome = Updated
		default:
			ar.Outcome = Unchanged
		}
		if err == nil && agent == Claude {
			if c.ClaudeBin == "" {
				fail(&api.Error{Kind: api.KindUsage,
					Message: fmt.Sprintf("%s, so Claude Code does not know the plugin yet (its files are written in %s)", c.ClaudeMissing, c.ClaudeDir()),
					Hint:    "install Claude Code (npm install -g @anthropic-ai/claude-code), or set ST_CLAUDE_BIN=/path/to/claude, then st plugin install again"})
			} else if err := hooks.KeepOriginal(c.claudeSettings(), "{}\n"); err != nil {
				fail(&api.Error{Kind: api.KindInternal, Message: fmt.Sprintf("keep a copy of %s before Claude Code rewrites it: %v", c.claudeSettings(), err),
					Hint: "make " + filepath.Dir(c.claudeSettings()) + " writable, then st plugin install again"})
			} else {
				notes, err := newClaudeCLI(c).register(ctx, c)
				ar.Notes = append(ar.Notes, notes...)
				if err != nil {
					fail(&api.Error{Kind: api.KindInternal,
						Message: fmt.Sprintf("register the plugin with Claude Code (%s): %v", c.ClaudeBin, err),
						Hint:    "check that claude runs (" + c.ClaudeBin + " --version), then st plugin install again"})
				} else {
					ar.Registered = true
				}
			}
		}
		rep.Agents = append(rep.Agents, ar)
	}
	return rep, joinErrors(errs)
}

// Uninstall unregisters the plugin from Claude Code and removes every file
// install wrote. A Codex skill file that st did not write is left alone.
func Uninstall(ctx context.Context, c Config) (*Report, error) {
	rep := &Report{Action: "uninstall", STBin: c.STBin, Version: c.Version}
	claude, errs := uninstallClaude(ctx, c)
	codex, cerrs := uninstallCodex(c)
	gemini, gerrs := uninstallGemini(c)
	opencode, oerrs := uninstallOpencode(c)
	rep.Agents = append(rep.Agents, claude, codex, gemini, opencode)
	return rep, joinErrors(append(append(append(errs, cerrs...), gerrs...), oerrs...))
}

// uninstallClaude unregisters the plugin first, so Claude Code never
// names a folder that is gone, then removes its files.
func uninstallClaude(ctx context.Context, c Config) (AgentReport, []*api.Error) {
	var errs []*api.Error
	fail := func(ar *AgentReport, e *api.Error) {
		ar.Error, ar.Hint = e.Message, e.Hint
		errs = append(errs, e)
	}
	ar := AgentReport{Agent: Claude, Dir: c.ClaudeDir(), Outcome: Absent}
	keep := false
	_, statErr := os.Stat(c.ClaudeDir())
	switch {
	case c.ClaudeBin == "" && errors.Is(statErr, fs.ErrNotExist):
		// No files and no claude: st never got as far as registering.
	case c.ClaudeBin == "":
		fail(&ar, &api.Error{Kind: api.KindUsage,
			Message: c.ClaudeMissing + ", so st could not take the plugin out of Claude Code's settings (the files are removed)",
			Hint:    "claude plugin uninstall " + PluginID + " && claude plugin marketplace remove " + MarketplaceName + " (or set ST_CLAUDE_BIN and st plugin uninstall again)"})
	default:
		removed, err := newClaudeCLI(c).unregister(ctx, c)
		if err != nil {
			fail(&ar, &api.Error{Kind: api.KindInternal,
				Message: fmt.Sprintf("take the plugin out of Claude Code (%s): %v; its files are kept, since Claude Code still names them", c.ClaudeBin, err),
				Hint:    "check that claude runs (" + c.ClaudeBin + " --version), then st plugin uninstall again"})
			keep = true
			break
		}
		if removed {
			ar.Outcome = Removed
		}
		// claude rewrote settings.json in its own layout, leaving empty
		// objects behind: once nothing of st's is left in it, it goes
		// back to the user's own bytes.
		if back, err := hooks.RestoreOriginal(c.claudeSettings(), "{}\n"); err != nil {
			ar.Notes = append(ar.Notes, "could not put back the original of "+c.claudeSettings()+": "+err.Error())
		} else if back {
			ar.Notes = append(ar.Notes, c.claudeSettings()+" is as it was before st first changed it")
		}
	}
	ar.Registered = keep
	if keep {
		return ar, errs
	}
	gone, err := removeTree(c.ClaudeDir())
	ar.Changed = gone
	if err != nil {
		fail(&ar, &api.Error{Kind: api.KindInternal, Message: "remove the Claude plugin's files: " + err.Error(), Hint: "remove " + c.ClaudeDir() + " by hand"})
	} else if len(gone) > 0 {
		ar.Outcome = Removed
	}
	removeIfEmpty(filepath.Dir(c.ClaudeDir())) // $ST_HOME/plugins
	return ar, errs
}

// uninstallCodex removes st's SKILL.md files and rules file, and their
// folders once empty; the user's own rules stay, as does a skill file
// st did not write.
func uninstallCodex(c Config) (AgentReport, []*api.Error) {
	ar := AgentReport{Agent: Codex, Dir: c.CodexSkillsDir()}
	return removeStamped(ar, []string{filepath.Join(c.CodexSkillsDir(), CodexOrchestrate, "SKILL.md"), filepath.Join(c.CodexSkillsDir(), CodexWorker, "SKILL.md"), c.CodexRule()})
}

// uninstallGemini removes st's command files, then its folder and
// Gemini's commands folder if that leaves them empty: a command of the
// user's own, beside st's or elsewhere in ~/.gemini/commands, stays as it
// is, as does a file of st's name that st did not write.
func uninstallGemini(c Config) (AgentReport, []*api.Error) {
	ar, errs := removeStamped(AgentReport{Agent: Gemini, Dir: c.GeminiCommandsDir()}, c.geminiCommands())
	if ar.Outcome == Removed {
		removeIfEmpty(filepath.Dir(c.GeminiCommandsDir()))
	}
	return ar, errs
}

// removeStamped removes each of paths that st wrote (it bears st's stamp),
// and its folder once empty; it leaves a file st did not write, with a
// note.
func removeStamped(ar AgentReport, paths []string) (AgentReport, []*api.Error) {
	var errs []*api.Error
	ar.Outcome = Absent
	for _, p := range paths {
		dir := filepath.Dir(p)
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil && !stampRE().Match(b) {
			ar.Notes = append(ar.Notes, p+" was not written by st, so it is left alone")
			continue
		}
		if err == nil {
			err = os.Remove(p)
		}
		if err != nil {
			e := &api.Error{Kind: api.KindInternal, Message: "remove a " + agentTitle(ar.Agent) + " file of st's: " + err.Error(), Hint: "remove " + p + " by hand"}
			ar.Error, ar.Hint = e.Message, e.Hint
			errs = append(errs, e)
			continue
		}
		ar.Changed = append(ar.Changed, p)
		ar.Outcome = Removed
		removeIfEmpty(dir)
	}
	return ar, errs
}

// Status is what is installed where, and whether it matches this st.
type Status struct {
	STBin   string        `json:"st"`
	Version string        `json:"version"`
	Agents  []AgentStatus `json:"agents"`
}

// AgentStatus is one agent's part of a Status.
type AgentStatus struct {
	Agent string `json:"agent"`
	Dir   string `json:"dir"`
	State string `json:"state"`
	// Current: every file is there as this st writes it, none is left
	// over, and (Claude) Claude Code lists the plugin, enabled.
	Current bool         `json:"current"`
	Files   []FileStatus `json:"files"`
	// WrittenBy is the st that wrote the files, from their stamp.
	WrittenBy string `json:"written_by,omitempty"`
	// Registered (Claude only): whether `claude plugin list` shows the
	// plugin enabled; absent when claude could not be asked.
	Registered *bool    `json:"registered,omitempty"`
	ClaudeBin  string   `json:"claude_bin,omitempty"`
	Provides   []string `json:"provides"`
	Note       string   `json:"note,omitempty"`
	// Skipped (Gemini and opencode): nothing is installed and the agent has not
	// run here, so st plugin install leaves it out; nothing to fix.
	Skipped bool `json:"skipped,omitempty"`
}

// FileStatus is one file: current, stale (differs), missing, or extra
// (in the plugin's folder but not written by this st).
type FileStatus struct {
	Path  string `json:"path"`
	State string `json:"state"`
}

// GetStatus compares the files on disk with what this st would write, and
// asks claude whether it lists the plugin.
func GetStatus(ctx context.Context, c Config) (*Status, error) {
	files, err := Render(c)
	if err != nil {
		return nil, err
	}
	st := &Status{STBin: c.STBin, Version: c.Version}
	for _, agent := range []string{Claude, Codex, Gemini, Opencode} {
		as := AgentStatus{Agent: agent, Dir: c.dirOf(agent), Provides: provides(agent)}
		mine := byAgent(files, agent)
		present, good := 0, 0
		for _, f := range mine {
			b, err := os.ReadFile(f.Path)
			state := "missing"
			switch {
			case err == nil && bytes.Equal(b, f.Data):
				state = StateCurrent
				present++
				good++
			case err == nil:
				state = StateStale
				present++
			}
			if err == nil && as.WrittenBy == "" {
				if m := stampRE().FindSubmatch(b); m != nil {
					as.WrittenBy = fmt.Sprintf("st %s at %s", m[1], m[2])
				}
			}
			as.Files = append(as.Files, FileStatus{Path: f.Path, State: state})
		}
		extra := 0
		if agent == Claude {
			for _, p := range extras(c.ClaudeDir(), mine) {
				as.Files = append(as.Files, FileStatus{Path: p, State: "extra"})
				extra++
			}
		}
		switch {
		case present == 0 && extra == 0:
			as.State = StateNotInstalled
		case good == len(mine) && extra == 0:
			as.State = StateCurrent
		default:
			as.State = StateStale
		}
		if agent == Claude {
			as.ClaudeBin = c.ClaudeBin
			if c.ClaudeBin == "" {
				as.Note = c.ClaudeMissing + ": cannot tell whether Claude Code has the plugin"
			} else if e, err := newClaudeCLI(c).listed(ctx); err != nil {
				as.Note = "could not ask claude: " + err.Error()
			} else {
				reg := e != nil && e.Enabled
				as.Registered = &reg
				switch {
				case e != nil && !e.Enabled:
					as.Note = "Claude Code has the plugin but it is disabled"
				case e != nil && e.ReadFromFolder != "" && !samePath(e.ReadFromFolder, c.PluginDir()):
					reg = false
					as.Note = "Claude Code reads the plugin from " + e.ReadFromFolder
				}
				if !reg && as.State == StateCurrent {
					as.State = StateNotRegistered
				}
			}
		}
		if fi, err := os.Stat(c.geminiDir()); agent == Gemini && as.State == StateNotInstalled && (err != nil || !fi.IsDir()) {
			as.Skipped = true
			as.Note = "Gemini CLI has not run here (no " + c.geminiDir() + "), so st plugin install leaves it out"
		}
		if agent == Opencode && as.State == StateNotInstalled && !c.opencodeHasRun() {
			as.Skipped = true
			as.Note = "opencode has not run here (no " + c.opencodeDir() + "), so st plugin install leaves it out"
		}
		as.Current = as.State == StateCurrent
		st.Agents = append(st.Agents, as)
	}
	return st, nil
}

// agentTitle is what a person calls an agent.
func agentTitle(agent string) string {
	return map[string]string{Claude: "Claude Code", Codex: "Codex", Gemini: "Gemini CLI", Opencode: "opencode"}[agent]
}

// stampRE finds the line every file st writes bears (a Markdown file's
// last, a rules or TOML file's first).
var stampRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`Written by st plugin install for st (\S+) at (.+?); st plugin install rewrites`)
})

func byAgent(files []File, agent string) []File {
	var out []File
	for _, f := range files {
		if f.Agent == agent {
			out = append(out, f)
		}
	}
	return out
}

// writeFiles writes the files that differ, atomically. existed counts the
// files that were there before.
func writeFiles(files []File) (existed int, changed []string, err error) {
	for _, f := range files {
		old, rerr := os.ReadFile(f.Path)
		if rerr == nil {
			existed++
			if bytes.Equal(old, f.Data) {
				continue
			}
		}
		if err := store.WriteFile(f.Path, f.Data, 0o644); err != nil {
			return existed, changed, err
		}
		changed = append(changed, f.Path)
	}
	return existed, changed, nil
}

// extras lists the files under dir that are not among files.
func extras(dir string, files []File) []string {
	want := map[string]bool{}
	for _, f := range files {
		want[f.Path] = true
	}
	var out []string
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && !want[p] {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// prune removes the files under dir (st's own folder) that this st does
// not write, such as a command an older st had, and empty folders.
func prune(dir string, files []File) ([]string, error) {
	gone := extras(dir, files)
	for _, p := range gone {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	removeEmptyDirs(dir)
	return gone, nil
}

// removeTree removes dir and returns the files it held.
func removeTree(dir string) ([]string, error) {
	gone := extras(dir, nil)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	return gone, nil
}

// removeEmptyDirs removes the empty folders below dir, deepest first.
func removeEmptyDirs(dir string) {
	var dirs []string
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() && p != dir {
			dirs = append(dirs, p)
		}
		return nil
	})
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, d := range dirs {
		os.Remove(d) // fails, as wanted, when not empty
	}
}

func removeIfEmpty(dir string) { os.Remove(dir) }

// joinErrors folds the agents' errors into one *api.Error (or nil).
func joinErrors(errs []*api.Error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	var msgs, hints []string
	for _, e := range errs {
		msgs = append(msgs, e.Message)
		if e.Hint != "" {
			hints = append(hints, e.Hint)
		}
	}
	return &api.Error{Kind: errs[0].Kind, Message: strings.Join(msgs, "; and "), Hint: strings.Join(hints, "; ")}
}
