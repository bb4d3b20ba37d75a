// Package plugin is `st plugin install | uninstall | status`: it teaches
// the agents st's workflow. Claude Code gets the plugin "sophonz" (the
// command /sophonz:orchestrate and the skill /sophonz:worker) from a local
// directory marketplace, "sophonz-local", that st writes under
// $ST_HOME/plugins/claude and registers with the real claude CLI; Codex
// gets the skills sophonz-orchestrate and sophonz-worker in
// $CODEX_HOME/skills, and a rule in $CODEX_HOME/rules/sophonz.rules that
// lets the st commands Codex runs escalated (its sandbox refuses st's
// socket) run without a person approving each; Gemini CLI gets the custom
// commands /sophonz:orchestrate and /sophonz:worker, TOML files in
// ~/.gemini/commands/sophonz (a subfolder is a command's namespace there);
// opencode gets the custom commands /sophonz-orchestrate and
// /sophonz-worker, Markdown files in its config folder's command/
// (opencode.go).
//
// The texts are templates embedded in the binary. They name st by the
// absolute path of the binary that installs them, because an agent's shell
// may not find st on its PATH (Codex resets PATH through a login shell), so
// a file is current only while it matches what this binary would write.
package plugin

import (
	"bytes"
	"cmp"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"text/template"
	"unicode"

	"github.com/pelletier/go-toml/v2"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/version"
)

// Names that the agents see.
const (
	PluginName       = "sophonz"       // the Claude plugin: /sophonz:orchestrate
	MarketplaceName  = "sophonz-local" // the local directory marketplace that holds it
	PluginID         = PluginName + "@" + MarketplaceName
	CodexOrchestrate = "sophonz-orchestrate"
	CodexWorker      = "sophonz-worker"
	CodexRulesFile   = "sophonz.rules" // in $CODEX_HOME/rules, beside the user's own
	// GeminiNamespace is the folder under ~/.gemini/commands that holds
	// Gemini's commands, and so the part before the colon of their names.
	GeminiNamespace = PluginName
)

// Agents, as they appear in reports.
const (
	Claude = "claude"
	Codex  = "codex"
	Gemini = "gemini"
)

// Descriptions shown in the agents' menus and used by them to pick a skill.
const (
	orchestrateDescription = "Coordinate a team of Claude Code, Codex and Gemini CLI workers with st: split the job into parts, " +
		"start a worker for each in a tmux window of its own, wait for them, check their work and report. " +
		"Use when the person asks to orchestrate, delegate or hand parts of a job to other agents."
	workerDescription = "Use when st has handed you a task, with a line like: Your task is in the file ... - read it and do it, " +
		"then report with st worker done. How an st worker does its task, checks it and reports."
	// Gemini CLI shows a command's description cut at 100 characters.
	geminiOrchestrateDescription = "Coordinate agent workers with st: split the job, start a worker per part, wait, check, report"
	geminiWorkerDescription      = "How an st worker does the task st handed it, checks it and reports with st worker done"
)

//go:embed all:templates
var templates embed.FS

// Config says who st is and where everything goes. ConfigFromEnv fills it
// the way the CLI does; tests set it by hand.
type Config struct {
	// STBin is the absolute path of st written into the texts (by default
	// the running binary, symlinks resolved: see Executable).
	STBin string
	// Version is st's version, written into the plugin's manifest.
	Version string
	// STHome is ST_HOME; the Claude marketplace goes under STHome/plugins/claude.
	STHome string
	// Home is the user's HOME, given to claude.
	Home string
	// CodexHome is CODEX_HOME (default Home/.codex).
	CodexHome string
	// ClaudeConfigDir is Claude Code's config folder (CLAUDE_CONFIG_DIR,
	// default Home/.claude), where it keeps its copy of installed plugins.
	ClaudeConfigDir string
	// ClaudeBin is the claude program, from ST_CLAUDE_BIN or PATH; empty
	// when none was found, and ClaudeMissing then says why.
	ClaudeBin     string
	ClaudeMissing string
	// GeminiDir is Gemini CLI's folder: $GEMINI_CLI_HOME/.gemini, else
	// Home/.gemini (empty: Home/.gemini).
	GeminiDir string
	// OpencodeDir is opencode's config folder: $XDG_CONFIG_HOME/opencode,
	// else Home/.config/opencode (empty: the latter).
	OpencodeDir string
	// Env is the environment claude runs with (HOME among it).
	Env []string
	// Agents limits Install to some agents (default: Claude and Codex,
	// and Gemini CLI and opencode where they have run, their folders
	// there): st setup
	// installs only for the agents that are there.
	Agents []string
}

// agents is what Install works on. Gemini's commands go in by default only
// where Gemini CLI has made its folder, as its hooks do, so that st makes
// no folder for an agent the user does not have.
func (c *Config) agents() []string {
	if len(c.Agents) > 0 {
		return c.Agents
	}
	out := []string{Claude, Codex}
	if fi, err := os.Stat(c.geminiDir()); err == nil && fi.IsDir() {
		out = append(out, Gemini)
	}
	if c.opencodeHasRun() {
		out = append(out, Opencode)
	}
	return out
}

func (c *Config) geminiDir() string {
	if c.GeminiDir != "" {
		return c.GeminiDir
	}
	return filepath.Join(c.Home, ".gemini")
}

// GeminiCommandsDir is st's folder among Gemini CLI's user commands: its
// files there are the commands /sophonz:orchestrate and /sophonz:worker.
// A user's own files may sit beside them.
func (c *Config) GeminiCommandsDir() string {
	return filepath.Join(c.geminiDir(), "commands", GeminiNamespace)
}

// ClaudeDir is the marketplace folder st writes.
func (c *Config) ClaudeDir() string { return filepath.Join(c.STHome, "plugins", "claude") }

// claudeSettings is the user's Claude Code settings, which claude's
// plugin commands rewrite.
func (c *Config) claudeSettings() string { return filepath.Join(c.ClaudeConfigDir, "settings.json") }

// PluginDir is the plugin's own folder inside the marketplace.
func (c *Config) PluginDir() string { return filepath.Join(c.ClaudeDir(), PluginName) }

// CodexSkillsDir is where Codex reads the user's skills.
func (c *Config) CodexSkillsDir() string { return filepath.Join(c.CodexHome, "skills") }

// CodexRulesDir is where Codex reads its rules (every *.rules file), the
// user's own among them.
func (c *Config) CodexRulesDir() string { return filepath.Join(c.CodexHome, "rules") }

// CodexRule is the rules file st writes: it lets Codex run st's commands
// outside its sandbox, unprompted, when the model asks for escalation.
func (c *Config) CodexRule() string { return filepath.Join(c.CodexRulesDir(), CodexRulesFile) }

// Executable is the absolute path of the running st, symlinks resolved, so
// that the texts keep working when a symlink on PATH changes.
func Executable() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find st's own path: %w", err)
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return filepath.Abs(p)
}

// ConfigFromEnv builds a Config from an environment: ST_HOME, HOME,
// CODEX_HOME, CLAUDE_CONFIG_DIR, GEMINI_CLI_HOME, XDG_CONFIG_HOME,
// ST_CLAUDE_BIN and PATH. environ is the
// whole environment claude inherits (its values are overridden by
// getenv's for the keys above).
func ConfigFromEnv(getenv func(string) string, environ []string) (Config, error) {
	c := Config{Version: version.Version}
	bin, err := Executable()
	if err != nil {
		return c, err
	}
	c.STBin = bin
	c.Home = getenv("HOME")
	if c.Home == "" {
		if c.Home, err = os.UserHomeDir(); err != nil {
			return c, fmt.Errorf("find the home folder: %w", err)
		}
	}
	c.STHome = getenv("ST_HOME")
	if c.STHome == "" {
		c.STHome = filepath.Join(c.Home, ".sophonz")
	}
	c.CodexHome = getenv("CODEX_HOME")
	if c.CodexHome == "" {
		c.CodexHome = filepath.Join(c.Home, ".codex")
	}
	c.ClaudeConfigDir = getenv("CLAUDE_CONFIG_DIR")
	if c.ClaudeConfigDir == "" {
		c.ClaudeConfigDir = filepath.Join(c.Home, ".claude")
	}
	// Gemini CLI takes GEMINI_CLI_HOME for the home it puts .gemini in.
	c.GeminiDir = filepath.Join(cmp.Or(getenv("GEMINI_CLI_HOME"), c.Home), ".gemini")
	c.OpencodeDir = agent.OpencodeConfigDir(func(k string) string {
		if k == "HOME" {
			return c.Home
		}
		return getenv(k)
	})
	for _, p := range []*string{&c.STHome, &c.CodexHome, &c.ClaudeConfigDir, &c.GeminiDir, &c.OpencodeDir, &c.Home} {
		if *p, err = filepath.Abs(*p); err != nil {
			return c, err
		}
	}
	c.ClaudeBin, c.ClaudeMissing = findClaude(getenv)
	set := map[string]string{"HOME": c.Home}
	for _, k := range []string{"PATH", "CODEX_HOME", "CLAUDE_CONFIG_DIR", "ST_HOME"} {
		set[k] = getenv(k)
	}
	c.Env = overlay(environ, set)
	return c, nil
}

// findClaude finds the claude program: ST_CLAUDE_BIN, else claude on PATH.
func findClaude(getenv func(string) string) (bin, missing string) {
	if b := getenv("ST_CLAUDE_BIN"); b != "" {
		if fi, err := os.Stat(b); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return "", fmt.Sprintf("ST_CLAUDE_BIN=%s is not a program st can run", b)
		}
		abs, _ := filepath.Abs(b)
		return abs, ""
	}
	for _, dir := range filepath.SplitList(getenv("PATH")) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, "claude")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			abs, _ := filepath.Abs(p)
			return abs, ""
		}
	}
	return "", "claude (Claude Code) is not on PATH and ST_CLAUDE_BIN is not set"
}

// overlay returns environ with the keys of set replaced (an empty value
// drops the key).
func overlay(environ []string, set map[string]string) []string {
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			out = append(out, kv)
		}
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if set[k] != "" {
			out = append(out, k+"="+set[k])
		}
	}
	return out
}

// File is one rendered file.
type File struct {
	Agent string // Claude, Codex, Gemini or Opencode
	Path  string // absolute
	Data  []byte
}

// data is what the templates see.
type data struct {
	ST                     string // st's path, quoted for a shell when it must be
	STPath                 string // st's path as it is
	Version                string
	PluginVersion          string // Version as the semantic version a manifest needs
	Plugin, Marketplace    string
	Agent                  string // claude, codex, gemini or opencode: the agent that reads the text
	OrchestrateDescription string
	WorkerDescription      string
	// The descriptions Gemini's menu shows (at most 100 characters).
	GeminiOrchestrateDescription, GeminiWorkerDescription string
}

// Render returns every file that install writes, Claude's first, in a
// fixed order.
func Render(c Config) ([]File, error) {
	if !filepath.IsAbs(c.STBin) {
		return nil, fmt.Errorf("st's path %q is not absolute", c.STBin)
	}
	// A line break in the path would end the stamp's comment line and
	// make the rest of it code in a rules or TOML file.
	if strings.ContainsFunc(c.STBin, unicode.IsControl) {
		return nil, fmt.Errorf("st's path %q holds a control character, which st cannot write into the agents' files; move st to a plain path", c.STBin)
	}
	base := template.New("").Funcs(template.FuncMap{"json": jsonString, "yaml": jsonString, "toml": tomlString,
		"include": func(string, any) (string, error) { return "", nil }})
	parts, err := templates.ReadFile("templates/parts.tmpl")
	if err != nil {
		return nil, err
	}
	if _, err := base.Parse(string(parts)); err != nil {
		return nil, fmt.Errorf("template parts.tmpl: %w", err)
	}
	d := data{
		ST: shellQuote(c.STBin), STPath: c.STBin, Version: c.Version, PluginVersion: semver(c.Version),
		Plugin: PluginName, Marketplace: MarketplaceName,
		OrchestrateDescription: orchestrateDescription, WorkerDescription: workerDescription,
		GeminiOrchestrateDescription: geminiOrchestrateDescription, GeminiWorkerDescription: geminiWorkerDescription,
	}
	var files []File
	for _, part := range []struct{ agent, dir, root string }{
		{Claude, "templates/claude", c.ClaudeDir()},
		{Codex, "templates/codex", c.CodexSkillsDir()},
		{Codex, "templates/codex-rules", c.CodexRulesDir()},
		{Gemini, "templates/gemini", c.GeminiCommandsDir()},
		{Opencode, "templates/opencode", c.OpencodeCommandsDir()},
	} {
		agent, dir, root := part.agent, part.dir, part.root
		var names []string
		err := fs.WalkDir(templates, dir, func(p string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				names = append(names, p)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(names)
		for _, name := range names {
			src, err := templates.ReadFile(name)
			if err != nil {
				return nil, err
			}
			t, err := base.Clone()
			if err != nil {
				return nil, err
			}
			if _, err := t.New(name).Parse(string(src)); err != nil {
				return nil, fmt.Errorf("template %s: %w", name, err)
			}
			t.Funcs(template.FuncMap{"include": func(name string, d any) (string, error) {
				var b strings.Builder
				err := t.ExecuteTemplate(&b, name, d)
				return b.String(), err
			}})
			d.Agent = agent
			var b bytes.Buffer
			if err := t.ExecuteTemplate(&b, name, d); err != nil {
				return nil, fmt.Errorf("template %s: %w", name, err)
			}
			rel := strings.TrimPrefix(name, dir+"/")
			files = append(files, File{Agent: agent, Path: filepath.Join(root, filepath.FromSlash(path.Clean(rel))), Data: b.Bytes()})
		}
	}
	return files, nil
}

// jsonString quotes s as a JSON string, which is also a YAML double-quoted
// scalar, so descriptions with colons or quotes stay one value.
func jsonString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// tomlString quotes s as a TOML string: a multi-line one ("""...""") when
// it holds line breaks, with go-toml escaping what TOML needs escaped (a
// quote run, a backslash, a control character).
func tomlString(s string) (string, error) {
	type one struct {
		V string `toml:"v"`
	}
	type multi struct {
		V string `toml:"v,multiline"`
	}
	var v any = one{s}
	if strings.Contains(s, "\n") {
		v = multi{s}
	}
	b, err := toml.Marshal(v)
	if err != nil {
		return "", err
	}
	out, ok := strings.CutPrefix(strings.TrimSuffix(string(b), "\n"), "v = ")
	if !ok {
		return "", fmt.Errorf("toml: unexpected form %q", b)
	}
	return out, nil
}

var shellSafe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_./+,:@%=-]+$`) })

// shellQuote returns p as a shell word.
func shellQuote(p string) string {
	if shellSafe().MatchString(p) {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}

var semverRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
})

// semver makes st's version a semantic version for the plugin manifest
// ("v0.3.1" -> "0.3.1"; anything else -> "0.0.0-<it>").
func semver(v string) string {
	v = strings.TrimPrefix(v, "v")
	if semverRE().MatchString(v) {
		return v
	}
	clean := regexp.MustCompile(`[^0-9A-Za-z.-]+`).ReplaceAllString(v, "-")
	clean = strings.Trim(clean, ".-")
	if clean == "" {
		clean = "unknown"
	}
	return "0.0.0-" + clean
}
