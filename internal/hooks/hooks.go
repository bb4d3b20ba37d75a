// Package hooks installs, removes and reports the command hooks through
// which st learns what Claude Code, Codex and Gemini CLI do, and the
// plugin file through which it learns what opencode does: `st hooks
// install` (opencode.go says how the plugin differs).
//
// Each hook runs "<absolute path of st> hook claude|codex EVENT". Claude
// Code reads them from $HOME/.claude/settings.json ($CLAUDE_CONFIG_DIR
// when set), Codex from $CODEX_HOME/hooks.json, both in the same JSON
// form. These files are the user's: st edits them in place, keeps every
// other key and the user's own hooks in their order, adds its groups after
// the user's, backs the original up once (FILE.st-backup), writes
// atomically, and leaves a file it cannot parse exactly as it was.
//
// Codex runs a hook only once it is trusted: config.toml must hold
// [hooks.state."<key>"] trusted_hash = "<hash>". Codex's own
// `codex app-server` reports each hook's key and current hash (JSON-RPC
// method hooks/list); st asks it, and writes those lines into config.toml
// as text, every other line staying byte for byte.
package hooks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/tidwall/gjson"

	"github.com/sophonz/st/internal/agent"
)

// Options say whose files to edit and with which st. The zero value is the
// running user with the running st.
type Options struct {
	// Home is the user's home folder (default $HOME).
	Home string
	// ClaudeDir is Claude Code's folder (default $CLAUDE_CONFIG_DIR, else
	// Home/.claude).
	ClaudeDir string
	// CodexHome is Codex's folder (default $CODEX_HOME, else Home/.codex).
	CodexHome string
	// GeminiDir is Gemini CLI's folder (default $GEMINI_CLI_HOME/.gemini,
	// else Home/.gemini, as Gemini CLI and the plugin's side read it).
	GeminiDir string
	// OpencodeDir is opencode's config folder, where st's plugin goes in
	// plugin/ (default $XDG_CONFIG_HOME/opencode, else
	// Home/.config/opencode, as opencode reads it).
	OpencodeDir string
	// St is the st program the hooks run (default: Executable()).
	St string
	// CodexBin is the codex program asked for the hooks' hashes (default
	// $ST_CODEX_BIN, else codex on $PATH).
	CodexBin string
	// Agents limits the work to some agents (default: Claude and Codex).
	Agents []string
	// Getenv reads the environment (default os.Getenv).
	Getenv func(string) string
	// Environ is the environment codex runs in (default os.Environ());
	// HOME and CODEX_HOME are set over it.
	Environ []string
	// CodexTimeout bounds one run of codex app-server (default 20 s).
	CodexTimeout time.Duration
}

// Report is the state of st's hooks after an install, an uninstall or a
// status.
type Report struct {
	St     string        `json:"st"`
	Agents []AgentReport `json:"agents"`
}

// AgentReport is one agent's hooks file and st's hooks in it.
type AgentReport struct {
	Agent   string `json:"agent"`
	File    string `json:"file"`
	Exists  bool   `json:"exists"`
	Changed bool   `json:"changed"`           // this run rewrote the file
	Created bool   `json:"created,omitempty"` // ... which was not there before
	Backup  string `json:"backup,omitempty"`  // a backup this run made
	// Error says why the file was not read or not changed (it was then
	// left as it was); the counts below are unknown.
	Error     string       `json:"error,omitempty"`
	Hint      string       `json:"hint,omitempty"`
	Total     int          `json:"total"`
	Installed int          `json:"installed"`         // hooks there that run this st
	Missing   []string     `json:"missing,omitempty"` // events with no st hook
	Other     []string     `json:"other,omitempty"`   // events whose st hook runs another st, or lacks its matcher
	Hooks     []HookStatus `json:"hooks,omitempty"`
	// Warnings are settings that keep the hooks from running.
	Warnings []string     `json:"warnings,omitempty"`
	Trust    *TrustReport `json:"trust,omitempty"` // Codex only
	// Restored (uninstall): the file is back as it was before st first
	// changed it, byte for byte (or gone, when there was none), and its
	// backup is removed.
	Restored bool `json:"restored,omitempty"`
}

// HookStatus is st's hook for one event.
type HookStatus struct {
	Event     string `json:"event"`
	Installed bool   `json:"installed"` // an st hook is there
	Current   bool   `json:"current"`   // and it runs this st, as st writes it
	Command   string `json:"command,omitempty"`
	St        string `json:"st,omitempty"` // the st program it runs
	// Codex: the hook's key, and its trust as Codex reports it (trusted,
	// untrusted, modified, ...), or "unknown" when codex could not be asked.
	Key      string `json:"key,omitempty"`
	Trust    string `json:"trust,omitempty"`
	Disabled bool   `json:"disabled,omitempty"`
}

// TrustReport is the trust of st's Codex hooks, kept in config.toml.
type TrustReport struct {
	File    string `json:"file"`
	Known   bool   `json:"known"` // codex answered hooks/list
	Trusted int    `json:"trusted"`
	Changed bool   `json:"changed"`
	Created bool   `json:"created,omitempty"`
	Backup  string `json:"backup,omitempty"`
	// NoCodex: there is no codex to ask; Error and Hint say so.
	NoCodex bool `json:"noCodex,omitempty"`
	// Restored (uninstall): config.toml is back as it was (see AgentReport).
	Restored bool   `json:"restored,omitempty"`
	Error    string `json:"error,omitempty"`
	Hint     string `json:"hint,omitempty"`
	// What hooks/list said was wrong (a hooks file Codex cannot parse...).
	CodexErrors   []string `json:"codexErrors,omitempty"`
	CodexWarnings []string `json:"codexWarnings,omitempty"`
}

// Problem is a failure a command exits non-zero for, with what to do.
type Problem struct {
	Agent   string `json:"agent"`
	Message string `json:"error"`
	Hint    string `json:"hint,omitempty"`
}

// Problems are the failures in r: files that could not be edited, trust
// that could not be written although codex is installed.
func (r *Report) Problems() []Problem {
	var out []Problem
	for _, a := range r.Agents {
		if a.Error != "" {
			out = append(out, Problem{a.Agent, a.Error, a.Hint})
		}
		if a.Trust != nil && a.Trust.Error != "" && !a.Trust.NoCodex {
			out = append(out, Problem{a.Agent + " trust", a.Trust.Error, a.Trust.Hint})
		}
	}
	return out
}

// Executable is the absolute path of the running program, symlinks
// resolved: the st that hooks run.
func Executable() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return filepath.Abs(p)
}

func (o Options) resolve() (Options, error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Home == "" {
		o.Home = o.Getenv("HOME")
	}
	if o.Home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return o, fmt.Errorf("cannot find the home folder: %w", err)
		}
		o.Home = h
	}
	o = o.agentDirs()
	for _, p := range []*string{&o.Home, &o.ClaudeDir, &o.CodexHome, &o.GeminiDir, &o.OpencodeDir} {
		a, err := filepath.Abs(*p)
		if err != nil {
			return o, err
		}
		*p = a
	}
	if o.St == "" {
		st, err := Executable()
		if err != nil {
			return o, fmt.Errorf("cannot find st's own path for the hooks: %w", err)
		}
		o.St = st
	}
	if !filepath.IsAbs(o.St) {
		return o, fmt.Errorf("the st path for the hooks must be absolute, not %q", o.St)
	}
	if len(o.Agents) == 0 {
		o.Agents = o.presentAgents()
	}
	for _, a := range o.Agents {
		if _, ok := specs[a]; !ok {
			return o, fmt.Errorf("unknown agent %q: st installs hooks for %s", a, strings.Join(Kinds(), ", "))
		}
	}
	if o.Environ == nil {
		o.Environ = os.Environ()
	}
	if o.CodexTimeout <= 0 {
		o.CodexTimeout = DefaultCodexTimeout
	}
	return o, nil
}

// agentDirs fills in where each agent keeps its settings, from the
// environment as each agent reads it.
func (o Options) agentDirs() Options {
	if o.ClaudeDir == "" {
		o.ClaudeDir = o.Getenv("CLAUDE_CONFIG_DIR")
	}
	if o.ClaudeDir == "" {
		o.ClaudeDir = filepath.Join(o.Home, ".claude")
	}
	if o.CodexHome == "" {
		o.CodexHome = o.Getenv("CODEX_HOME")
	}
	if o.CodexHome == "" {
		o.CodexHome = filepath.Join(o.Home, ".codex")
	}
	if o.GeminiDir == "" && o.Getenv("GEMINI_CLI_HOME") != "" {
		// Gemini CLI keeps its .gemini folder there instead of in HOME.
		o.GeminiDir = filepath.Join(o.Getenv("GEMINI_CLI_HOME"), ".gemini")
	}
	if o.GeminiDir == "" {
		o.GeminiDir = filepath.Join(o.Home, ".gemini")
	}
	if o.OpencodeDir == "" {
		home := o.Home
		o.OpencodeDir = agent.OpencodeConfigDir(func(k string) string {
			if k == "HOME" {
				return home
			}
			return o.Getenv(k)
		})
	}
	return o
}

// presentAgents are the agents whose files st's hooks go into when none
// are named.
func (o Options) presentAgents() []string {
	// Claude's and Codex's files are made when missing, as always;
	// Gemini's and opencode's only where they have run (their
	// folders are there),
	// so that st writes no file for an agent the user does not have.
	out := []string{Claude, Codex}
	if fi, err := os.Stat(o.GeminiDir); err == nil && fi.IsDir() {
		out = append(out, Gemini)
	}
	if fi, err := os.Stat(o.OpencodeDir); err == nil && fi.IsDir() {
		out = append(out, Opencode)
	}
	return out
}

// file is the file st's hooks go into, by the kind's form of them.
func (o Options) file(agent string) string {
	switch agent {
	case Claude:
		return filepath.Join(o.ClaudeDir, "settings.json")
	case Gemini:
		return filepath.Join(o.GeminiDir, "settings.json")
	case Opencode:
		return o.opencodeFile()
	}
	return filepath.Join(o.CodexHome, "hooks.json")
}

// Install puts st's hooks into each agent's file, replacing older st
// hooks, and trusts the Codex ones. Problems with one agent are reported
// in its AgentReport and do not stop the other; the error is for options
// that make no sense.
func Install(ctx context.Context, o Options) (*Report, error) {
	return run(ctx, o, modeInstall)
}

// Uninstall takes st's hooks out of each agent's file, and the trust
// entries of st's Codex hooks out of config.toml.
func Uninstall(ctx context.Context, o Options) (*Report, error) {
	return run(ctx, o, modeUninstall)
}

// Status reports st's hooks without changing anything. For Codex it asks
// codex app-server whether they are trusted when codex can run.
func Status(ctx context.Context, o Options) (*Report, error) {
	return run(ctx, o, modeStatus)
}

type mode int

const (
	modeStatus mode = iota
	modeInstall
	modeUninstall
)

func (m mode) String() string { return [...]string{"status", "install", "uninstall"}[m] }

func run(ctx context.Context, o Options, m mode) (*Report, error) {
	o, err := o.resolve()
	if err != nil {
		return nil, err
	}
	r := &Report{St: o.St}
	for _, a := range o.Agents {
		if a == Opencode {
			r.Agents = append(r.Agents, o.editOpencode(m))
			continue
		}
		ar, plans, doc := o.editAgent(specs[a], m)
		if a == Codex && ar.Error == "" {
			o.codexTrust(ctx, &ar, plans, doc, m)
		}
		if m == modeUninstall {
			restoreOriginals(&ar)
		}
		r.Agents = append(r.Agents, ar)
	}
	return r, nil
}

// editAgent edits (or, for status, reads) one agent's hooks file. It
// returns the report, what the edit did, and the file's text after it.
func (o Options) editAgent(sp spec, m mode) (AgentReport, []eventPlan, string) {
	path := o.file(sp.agent)
	ar := AgentReport{Agent: sp.agent, File: path, Total: len(sp.events)}
	for attempt := 0; attempt < 3; attempt++ {
		f, err := loadFile(path, "{}\n")
		if err != nil {
			ar.Error = fmt.Sprintf("cannot read %s: %v", path, unwrapPath(err))
			ar.Hint = "make " + path + " a file st can read and write, then run st hooks " + m.String() + " again"
			return ar, nil, ""
		}
		ar.Exists = f.exists
		fixJSON := "fix the JSON of " + path + " (or move it away), then run st hooks " + m.String() + " again"
		doc := string(f.data)
		if m == modeStatus {
			if strings.TrimSpace(doc) != "" {
				if err := checkDoc(doc, sp); err != nil {
					ar.Error, ar.Hint = (&MalformedError{Path: path, Err: err}).Error(), fixJSON
					return ar, nil, ""
				}
			}
			fillStatus(&ar, doc, sp, o.St)
			return ar, nil, doc
		}
		ed, err := editDoc(doc, sp, o.St, m == modeInstall)
		if err != nil {
			var me *MalformedError
			if errors.As(err, &me) {
				me.Path, ar.Hint = path, fixJSON
			}
			ar.Error = err.Error()
			return ar, nil, ""
		}
		if ed.changed {
			backup, err := f.save([]byte(ed.out))
			if errors.Is(err, errChanged) {
				continue
			}
			if err != nil {
				ar.Error = fmt.Sprintf("cannot write %s: %v", path, unwrapPath(err))
				ar.Hint = "make " + path + " (and its folder) writable, then run st hooks " + m.String() + " again"
				return ar, nil, ""
			}
			ar.Changed, ar.Created, ar.Backup, ar.Exists = true, !f.exists, backup, true
		}
		fillStatus(&ar, ed.out, sp, o.St)
		return ar, ed.events, ed.out
	}
	ar.Error = path + " kept changing while st edited it (is the agent rewriting it?); nothing was written"
	ar.Hint = "run st hooks " + m.String() + " again"
	return ar, nil, ""
}

// restoreOriginals puts an agent's files back as they were before st
// first changed them, once an uninstall left nothing of st's in them
// (RestoreOriginal). A file it cannot put back keeps its backup, which
// the report names.
func restoreOriginals(ar *AgentReport) {
	if ar.Error != "" {
		return
	}
	ar.Restored, _ = RestoreOriginal(ar.File, "{}\n")
	if t := ar.Trust; t != nil && t.Error == "" {
		t.Restored, _ = RestoreOriginal(t.File, "")
	}
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// fillStatus sets the hooks' state in ar from the file's text.
func fillStatus(ar *AgentReport, doc string, sp spec, st string) {
	ar.Hooks, ar.Missing, ar.Other, ar.Installed, ar.Warnings = nil, nil, nil, 0, nil
	if sp.agent == Claude && gjson.Get(doc, "disableAllHooks").Bool() {
		ar.Warnings = append(ar.Warnings, `"disableAllHooks": true in `+ar.File+`: Claude Code runs no hooks, st's included`)
	}
	for _, ev := range sp.events {
		hs := HookStatus{Event: ev}
		want := wantGroup(sp, st, ev)
		for _, g := range readGroups(doc, sp, st, ev) {
			for _, h := range g.handlers {
				if !h.st {
					continue
				}
				if !hs.Installed {
					hs.Installed, hs.Command = true, h.command
					hs.St, _, _ = parseCommand(h.command, sp.agent, st)
				}
				if g.stOnly && len(g.handlers) == 1 && h.command == want.Hooks[0].Command &&
					(want.Matcher == "" || g.matcher.String() == want.Matcher) {
					hs.Current, hs.Command, hs.St = true, h.command, st
				}
			}
		}
		switch {
		case hs.Current:
			ar.Installed++
		case hs.Installed:
			ar.Other = append(ar.Other, ev)
		default:
			ar.Missing = append(ar.Missing, ev)
		}
		ar.Hooks = append(ar.Hooks, hs)
	}
}

// stPositions is where the hook of each event that runs this st is.
func stPositions(doc string, sp spec, st string) map[string]pos {
	out := map[string]pos{}
	for _, ev := range sp.events {
		want := wantGroup(sp, st, ev)
		for i, g := range readGroups(doc, sp, st, ev) {
			if g.stOnly && len(g.handlers) == 1 && g.handlers[0].command == want.Hooks[0].Command {
				out[ev] = pos{i, 0}
				break
			}
		}
	}
	return out
}

// codexTrust writes (install), removes (uninstall) or reads (status) the
// trust of st's Codex hooks.
func (o Options) codexTrust(ctx context.Context, ar *AgentReport, plans []eventPlan, doc string, m mode) {
	tr := &TrustReport{File: filepath.Join(o.CodexHome, "config.toml")}
	ar.Trust = tr
	sources := o.codexSources()
	edit := trustMoves(plans, sources)
	cfgOK := configReadable(tr, m)
	var list *CodexHookList
	if cfgOK && m != modeUninstall && ar.Installed > 0 {
		var err error
		list, err = o.listCodex(ctx)
		if err != nil {
			o.trustFailed(tr, err, m)
		}
	}
	byEvent := o.stCodexHooks(list, ar.File)
	if m == modeInstall && list != nil {
		for _, ev := range CodexEvents {
			if h, ok := byEvent[ev]; ok && h.CurrentHash != "" {
				edit.set = append(edit.set, trust{h.Key, h.CurrentHash})
			}
		}
	}
	if cfgOK && m != modeStatus && !edit.empty() {
		list, byEvent = o.editTrust(ctx, tr, ar, edit, list, byEvent, m)
	}
	if list != nil {
		tr.Known = true
		tr.CodexErrors, tr.CodexWarnings = list.Errors, list.Warnings
	}
	if m == modeUninstall {
		return
	}
	unknown := reportHookTrust(ar, tr, list, byEvent, stPositions(doc, specs[Codex], o.St), sources)
	judgeTrust(ar, tr, list, unknown, m)
}

// trustMoves is what the hooks that left or moved in hooks.json do to
// their trust entries: they take them with them, whether or not codex can
// be asked.
func trustMoves(plans []eventPlan, sources []string) trustEdit {
	edit := trustEdit{rename: map[string]string{}}
	for _, p := range plans {
		for _, src := range sources {
			for _, r := range p.Removed {
				edit.remove = append(edit.remove, codexKey(src, p.Event, r))
			}
			for from, to := range p.Moved {
				edit.rename[codexKey(src, p.Event, from)] = codexKey(src, p.Event, to)
			}
		}
	}
	return edit
}

// configReadable reports whether Codex's config.toml (tr.File) is one
// Codex can read, or absent; one it cannot read is the user's to fix: st
// neither edits it nor asks codex, which would fail on it too.
func configReadable(tr *TrustReport, m mode) bool {
	data, err := os.ReadFile(tr.File)
	if err != nil {
		return true
	}
	if err := checkTOML(data); err != nil {
		tr.Error = fmt.Sprintf("%s: %v; it was left as it was, and Codex cannot read it either", tr.File, err)
		tr.Hint = "fix " + tr.File + ", then run st hooks " + m.String() + " again"
		return false
	}
	return true
}

// editTrust writes the trust entries of edit into config.toml, and asks
// codex again when they changed: the trust Codex sees is the proof.
func (o Options) editTrust(ctx context.Context, tr *TrustReport, ar *AgentReport, edit trustEdit, list *CodexHookList,
	byEvent map[string]CodexHook, m mode) (*CodexHookList, map[string]CodexHook) {
	changed, created, backup, err := editTOMLFile(tr.File, edit)
	tr.Changed, tr.Created, tr.Backup = changed, created, backup
	if err != nil {
		tr.Error, tr.Hint, tr.NoCodex = err.Error(), "fix "+tr.File+", then run st hooks "+m.String()+" again", false
		return list, byEvent
	}
	if !changed || list == nil {
		return list, byEvent
	}
	l2, err := o.listCodex(ctx)
	if err != nil {
		o.trustFailed(tr, err, m)
	}
	return l2, o.stCodexHooks(l2, ar.File)
}

// reportHookTrust says of each installed hook whether codex trusts it
// (byEvent, from its list; the key st expects when codex could not be
// asked), counting the trusted; it returns the events this codex has no
// hook for.
func reportHookTrust(ar *AgentReport, tr *TrustReport, list *CodexHookList, byEvent map[string]CodexHook, positions map[string]pos, sources []string) []string {
	var unknown []string
	for i := range ar.Hooks {
		hs := &ar.Hooks[i]
		if !hs.Installed {
			continue
		}
		switch h, ok := byEvent[hs.Event]; {
		case list == nil:
			hs.Trust = "unknown"
			if p, ok := positions[hs.Event]; ok {
				hs.Key = codexKey(sources[0], hs.Event, p)
			}
		case !ok:
			hs.Trust = "not listed by codex"
			if hs.Current && codexCanLack[hs.Event] {
				unknown = append(unknown, hs.Event)
			}
		default:
			hs.Key, hs.Trust, hs.Disabled = h.Key, h.TrustStatus, !h.Enabled
			if hs.Current && h.TrustStatus == "trusted" {
				tr.Trusted++
			}
			if hs.Disabled {
				ar.Warnings = append(ar.Warnings, fmt.Sprintf("st's %s hook is disabled in %s (%s)", hs.Event, tr.File, h.Key))
			}
		}
	}
	return unknown
}

// judgeTrust says what is wrong when not all of st's hooks are trusted.
func judgeTrust(ar *AgentReport, tr *TrustReport, list *CodexHookList, unknown []string, m mode) {
	switch {
	case !tr.Known || tr.Error != "" || tr.Trusted == ar.Installed:
	case len(list.Errors) == 0 && len(unknown) > 0 && tr.Trusted+len(unknown) == ar.Installed:
		ar.Warnings = append(ar.Warnings, fmt.Sprintf("this codex has no hooks for %s (Codex before 0.150 lacks them), so st watches its workers' screens and windows for those instead",
			strings.Join(unknown, ", ")))
	case len(list.Errors) > 0:
		tr.Error = "codex could not load st's hooks: " + strings.Join(list.Errors, "; ")
		tr.Hint = "fix what codex names, then run st hooks install again"
	case m == modeInstall:
		tr.Error = "codex still reports some of st's hooks as not trusted"
		tr.Hint = "run st hooks status for the details, then st hooks install again"
	}
}

func (o Options) trustFailed(tr *TrustReport, err error, m mode) {
	again := "then run st hooks status"
	if m == modeInstall {
		again = "then run st hooks install again"
	}
	if errors.Is(err, ErrNoCodex) {
		tr.NoCodex = true
		tr.Error = err.Error()
		tr.Hint = "Codex skips hooks until they are trusted: install Codex (npm install -g @openai/codex) or set ST_CODEX_BIN to it, " + again
		return
	}
	tr.Error = fmt.Sprintf("asking codex for the hooks' hashes failed: %v", err)
	tr.Hint = "Codex skips hooks until they are trusted: " + again + "; if it keeps failing, check that `codex app-server` starts"
}

// codexCanLack are the Codex events st can do without: older versions of
// Codex do not have them (0.140.0 lacks Interrupt and SessionEnd, 0.130.0
// SubagentStart and SubagentStop too), and never list or run their hooks.
// st then sees an Esc from the worker's screen (an empty box and a quiet
// turn), the end of the session from its window, and no subagents.
var codexCanLack = map[string]bool{"Interrupt": true, "SessionEnd": true, "SubagentStart": true, "SubagentStop": true}

// codexSources are the paths Codex may give hooks.json in a key: Codex
// resolves symlinks in CODEX_HOME; the plain path is tried too.
func (o Options) codexSources() []string {
	plain := filepath.Join(o.CodexHome, "hooks.json")
	if r, err := filepath.EvalSymlinks(o.CodexHome); err == nil {
		if real := filepath.Join(r, "hooks.json"); real != plain {
			return []string{real, plain}
		}
	}
	return []string{plain}
}

// codexKey is the key Codex gives a hook: "<source>:<event_snake>:<group>:<handler>".
func codexKey(source, event string, p pos) string {
	return fmt.Sprintf("%s:%s:%d:%d", source, snake(event), p.Group, p.Handler)
}

func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// stCodexHooks picks st's hooks out of what hooks/list reported: those
// from our hooks.json whose command runs st, by event.
func (o Options) stCodexHooks(list *CodexHookList, hooksPath string) map[string]CodexHook {
	out := map[string]CodexHook{}
	if list == nil {
		return out
	}
	for _, h := range list.Hooks {
		if !samePath(h.SourcePath, hooksPath) {
			continue
		}
		_, cmdEvent, ok := parseCommand(h.Command, Codex, o.St)
		if !ok {
			continue
		}
		ev := cmdEvent
		for _, e := range CodexEvents {
			if strings.EqualFold(e, h.EventName) || snake(e) == h.EventName {
				ev = e
			}
		}
		if prev, dup := out[ev]; dup && prev.Command == Command(o.St, Codex, ev) {
			continue
		}
		out[ev] = h
	}
	return out
}

func samePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

func (o Options) listCodex(ctx context.Context) (*CodexHookList, error) {
	bin, err := o.codexBin()
	if err != nil {
		return nil, err
	}
	env := slices.DeleteFunc(slices.Clone(o.Environ), func(kv string) bool {
		return strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "CODEX_HOME=")
	})
	env = append(env, "HOME="+o.Home, "CODEX_HOME="+o.CodexHome)
	ctx, cancel := context.WithTimeout(ctx, o.CodexTimeout)
	defer cancel()
	cwd := o.Home
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		cwd = "/"
	}
	return ListCodexHooks(ctx, bin, env, cwd)
}

func (o Options) codexBin() (string, error) {
	if o.CodexBin != "" {
		return o.findExec(o.CodexBin, "the codex program "+o.CodexBin)
	}
	if b := o.Getenv("ST_CODEX_BIN"); b != "" {
		return o.findExec(b, "ST_CODEX_BIN="+b)
	}
	p, err := o.findExec("codex", "codex")
	if err != nil {
		return "", fmt.Errorf("%w (ST_CODEX_BIN is not set and there is no codex on PATH)", ErrNoCodex)
	}
	return p, nil
}

// findExec finds a program as a shell would: a name on $PATH, a path as
// it is. The result is absolute.
func (o Options) findExec(p, what string) (string, error) {
	if !strings.Contains(p, "/") {
		for _, dir := range filepath.SplitList(o.Getenv("PATH")) {
			if dir == "" {
				dir = "."
			}
			if c := filepath.Join(dir, p); isExec(c) {
				return filepath.Abs(c)
			}
		}
		return "", fmt.Errorf("%s: not found on PATH", what)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, unwrapPath(err))
	}
	if !isExec(p) {
		return "", fmt.Errorf("%s is not an executable file (mode %v)", what, fi.Mode())
	}
	return filepath.Abs(p)
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// editTOMLFile applies e to a config.toml, backing it up before st's
// first change.
func editTOMLFile(path string, e trustEdit) (changed, created bool, backup string, err error) {
	for attempt := 0; attempt < 3; attempt++ {
		f, err := loadFile(path, "")
		if err != nil {
			return false, false, "", fmt.Errorf("cannot read %s: %v", path, unwrapPath(err))
		}
		if !f.exists && len(e.set) == 0 {
			return false, false, "", nil
		}
		out, err := editTrust(f.data, e)
		if err != nil {
			return false, false, "", fmt.Errorf("%s: %v; it was left as it was", path, err)
		}
		if string(out) == string(f.data) {
			return false, false, "", nil
		}
		backup, err = f.save(out)
		if errors.Is(err, errChanged) {
			continue
		}
		if err != nil {
			return false, false, backup, fmt.Errorf("cannot write %s: %v", path, unwrapPath(err))
		}
		return true, !f.exists, backup, nil
	}
	return false, false, "", fmt.Errorf("%s kept changing while st edited it; nothing was written", path)
}
