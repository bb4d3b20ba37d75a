package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// Description is an agent st does not know, as a user describes it in
// $ST_HOME/config.toml under [agents.NAME]: enough for st to start it in a
// window, type into it only when its ready marker is up, and read its
// states from its screen (or from Claude-like command hooks the user wires
// to st hook NAME EVENT). Describe turns one into a Kind.
//
// config.toml is the user's own file (store.CheckHome holds ST_HOME to
// them alone), so a description is trusted as the user's word; what it
// says is still checked for form, so that a mistake is told with what to
// fix rather than found as a worker that never starts.
type Description struct {
	Title string `toml:"title"`
	Icon  string `toml:"icon"`
	// Program is the program to run: a name on PATH or an absolute path.
	Program string            `toml:"program"`
	Args    []string          `toml:"args"`
	Env     map[string]string `toml:"env"`
	// Resume is the arguments (after Args) that resume a conversation,
	// one of them holding {id}.
	Resume []string `toml:"resume"`
	// SessionID is a regular expression for its conversation ids (a UUID
	// when empty): only such an id is put on a resume line.
	SessionID string `toml:"session_id"`
	// Ready, Busy, Prompt are its screen's markers: text on the line of
	// its input box (the typed text follows it), on a line while it
	// works, on a line of a question or permission prompt.
	Ready  []string `toml:"ready"`
	Busy   []string `toml:"busy"`
	Prompt []string `toml:"prompt"`
	// Submit and Interrupt are tmux key names (Enter, Escape, C-c).
	Submit    string `toml:"submit"`
	Interrupt string `toml:"interrupt"`
	// EnterDelay is the pause between typing a line and Submit ("150ms").
	EnterDelay string `toml:"enter_delay"`
	// Hooks is "" (none: states from the screen) or "claude": the
	// agent's command hooks run `st hook NAME EVENT` with Claude Code's
	// payloads on stdin, wired by the user in the agent's own settings.
	Hooks string `toml:"hooks"`
}

// Hear.Install of a described kind whose hooks the user wired by hand:
// st hooks install and st setup leave its files alone.
const installByHand = "by-hand"

// claudeLikeEvents are the events a described kind with hooks = "claude"
// may send, in Claude Code's payloads.
var claudeLikeEvents = []EventSpec{
	{Name: "SessionStart", Means: EvSessionStart},
	{Name: "UserPromptSubmit", Means: EvTurnStart},
	{Name: "PreToolUse", Means: EvTool},
	{Name: "PostToolUse", Means: EvTool},
	{Name: "PermissionRequest", Means: EvWaiting},
	{Name: "Stop", Means: EvTurnEnd},
	{Name: "SessionEnd", Means: EvSessionEnd},
}

// The forms of a described kind's name, its environment's variables and
// the keys it names, compiled at their first use.
var (
	kindNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`) })
	envNameRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
	tmuxKeyRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:[CM]-)*[A-Za-z0-9]{1,10}$`) })
)

// ValidKindName reports whether name has the form of a kind's name: the
// rule a described kind's table name ([agents.NAME]) meets, which st's
// own kinds meet too. Another machine's kinds are taken by this form
// alone, since that machine's config.toml may describe kinds this one
// does not.
func ValidKindName(name string) bool { return kindNameRE().MatchString(name) }

// DescriptionError is what is wrong with one [agents.NAME], with what to
// write instead.
type DescriptionError struct {
	Name    string
	Problem string
	Fix     string
}

func (e *DescriptionError) Error() string {
	return fmt.Sprintf("config.toml [agents.%s]: %s; %s", e.Name, e.Problem, e.Fix)
}

// Describe builds the Kind that d describes, or says what to fix.
func Describe(name string, d Description) (*Kind, error) {
	bad := func(problem, fix string, a ...any) error {
		return &DescriptionError{Name: name, Problem: problem, Fix: fmt.Sprintf(fix, a...)}
	}
	if err := checkDescribedName(name, bad); err != nil {
		return nil, err
	}
	if err := checkDescribedProgram(d, bad); err != nil {
		return nil, err
	}
	keys, err := checkDescribedEnv(name, d, bad)
	if err != nil {
		return nil, err
	}
	scr, err := describedScreen(d, bad)
	if err != nil {
		return nil, err
	}
	k := &Kind{
		Name:      name,
		Title:     cmpOr(d.Title, name),
		Icon:      cmpOr(d.Icon, "●"),
		Described: true,
		Launch: Launch{
			Program:   d.Program,
			Resume:    strings.Join(append(append([]string{d.Program}, d.Args...), d.Resume...), " "),
			Processes: []string{filepath.Base(d.Program)},
		},
		Hear: Hear{
			SessionID: scr.session,
			Map:       noHooks(name),
			Resumed:   func([]string) string { return "" },
		},
		Screen: ScreenSpec{
			Recognize:  recognizeByMarkers(d.Ready, d.Busy, d.Prompt),
			EnterDelay: scr.delay,
			Submit:     scr.submit, Interrupt: scr.interrupt,
			Ready: d.Ready, Busy: d.Busy, Prompt: d.Prompt,
		},
		Records: Records{Conversation: "not known to st (described in config.toml)"},
	}
	k.Launch.Command = describedCommand(k, d, keys)
	if err := describedHooks(k, name, d, scr.session, bad); err != nil {
		return nil, err
	}
	return k, nil
}

// badFunc makes a DescriptionError of one description.
type badFunc func(problem, fix string, a ...any) error

// checkDescribedName refuses a name that is not a kind's, or st's own.
func checkDescribedName(name string, bad badFunc) error {
	if !ValidKindName(name) {
		return bad("the name is not a kind's name", "name it with lower-case letters, digits and '-', a letter first, as [agents.my-agent]")
	}
	kindsMu.RLock()
	b, ok := builtins[name]
	kindsMu.RUnlock()
	if ok {
		return bad("st knows "+name+" already ("+b.Title+")", "name yours otherwise, or remove [agents.%s] to use st's own", name)
	}
	return nil
}

// checkDescribedProgram refuses a program st could not start, or would
// take for one of its own kinds'.
func checkDescribedProgram(d Description, bad badFunc) error {
	if d.Program == "" {
		return bad("program is missing", `write program = "my-agent" (a name on PATH) or an absolute path`)
	}
	// (env, which sets its variables, would read a word with "=" as one
	// more, and one starting with "-" as its own option.)
	if strings.ContainsAny(d.Program, "=\x00\n") || strings.HasPrefix(d.Program, "-") {
		return bad(fmt.Sprintf("program %q is not a program's name or path", d.Program), "give its absolute path, or a name on PATH, with no '=' in it")
	}
	if strings.Contains(d.Program, "/") && !filepath.IsAbs(d.Program) {
		return bad(fmt.Sprintf("program %q is a relative path, which would depend on each worker's folder", d.Program), "give its absolute path, or a name on PATH")
	}
	// st tells an agent's process by its program's name (ByProcess): one
	// that is st's own kind's would be taken for it, or take it over.
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	for _, b := range builtins {
		if slices.Contains(b.Launch.Processes, filepath.Base(d.Program)) {
			return bad(fmt.Sprintf("program %s has the name of %s's program, and st would take one for the other", d.Program, b.Title),
				"start it through a link or script of another name, or use --agent %s", b.Name)
		}
	}
	return nil
}

// checkDescribedEnv checks the arguments and the environment, and
// returns the environment's names in order.
func checkDescribedEnv(name string, d Description, bad badFunc) ([]string, error) {
	for _, a := range append(slices.Clone(d.Args), d.Resume...) {
		if strings.ContainsRune(a, 0) {
			return nil, bad("an argument holds a NUL byte", "remove it from args or resume")
		}
	}
	keys := make([]string, 0, len(d.Env))
	for k, v := range d.Env {
		if !envNameRE().MatchString(k) || strings.ContainsRune(v, 0) {
			return nil, bad(fmt.Sprintf("env has %q, which is not a variable's name", k), "name variables with letters, digits and '_', as [agents.%s.env] MY_VAR = \"1\"", name)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(d.Resume) > 0 && !slices.ContainsFunc(d.Resume, func(a string) bool { return strings.Contains(a, "{id}") }) {
		return nil, bad("resume has no {id}", `write where the conversation's id goes, as resume = ["--resume", "{id}"]`)
	}
	return keys, nil
}

// describedScreenSpec is what a description says of its screen and ids.
type describedScreenSpec struct {
	session           func() *regexp.Regexp
	submit, interrupt string
	delay             time.Duration
}

// describedScreen checks the markers, keys, pause and id form.
func describedScreen(d Description, bad badFunc) (describedScreenSpec, error) {
	out := describedScreenSpec{session: uuidRE, delay: 150 * time.Millisecond}
	if d.SessionID != "" {
		re, err := regexp.Compile(`^(?:` + d.SessionID + `)$`)
		if err != nil {
			return out, bad(fmt.Sprintf("session_id %q is not a regular expression (%v)", d.SessionID, err), `write one such as session_id = "[a-z0-9-]{8,64}"`)
		}
		out.session = func() *regexp.Regexp { return re }
	}
	if len(d.Ready) == 0 || slices.Contains(d.Ready, "") {
		return out, bad("ready names no marker of its input box", `write the text on the line where a line is typed, as ready = ["> "]: st types only when it is up`)
	}
	for _, ms := range [][]string{d.Busy, d.Prompt} {
		if slices.Contains(ms, "") {
			return out, bad("busy or prompt holds an empty marker, which every line would match", "remove the empty string")
		}
	}
	out.submit, out.interrupt = cmpOr(d.Submit, "Enter"), cmpOr(d.Interrupt, "Escape")
	for _, k := range []string{out.submit, out.interrupt} {
		if !tmuxKeyRE().MatchString(k) {
			return out, bad(fmt.Sprintf("%q is not a tmux key name", k), `write a key as tmux names it: Enter, Escape, C-c, C-m`)
		}
	}
	if d.EnterDelay != "" {
		v, err := time.ParseDuration(d.EnterDelay)
		if err != nil || v <= 0 || v > 5*time.Second {
			return out, bad(fmt.Sprintf("enter_delay %q is not a pause from 1ms to 5s", d.EnterDelay), `write enter_delay = "150ms"`)
		}
		out.delay = v
	}
	return out, nil
}

// describedCommand is the argv of a described kind: env with its
// variables, its program and arguments, and its resume words.
func describedCommand(k *Kind, d Description, keys []string) func(o LaunchOptions) []string {
	return func(o LaunchOptions) []string {
		var argv []string
		if len(keys) > 0 {
			argv = append(argv, "env")
			for _, key := range keys {
				argv = append(argv, key+"="+d.Env[key])
			}
		}
		argv = append(argv, d.Program)
		argv = append(argv, d.Args...)
		if len(d.Resume) > 0 && k.ValidSession(o.ResumeSession) {
			for _, a := range d.Resume {
				argv = append(argv, strings.ReplaceAll(a, "{id}", o.ResumeSession))
			}
		}
		return argv
	}
}

// describedHooks wires the hooks a description says it has.
func describedHooks(k *Kind, name string, d Description, sessionRE func() *regexp.Regexp, bad badFunc) error {
	switch d.Hooks {
	case "":
	case "claude":
		k.Hear.Install = installByHand
		k.Hear.Events = claudeLikeEvents
		k.Hear.Map = mapClaudeLikeEvent
		k.Hear.BeforeTool = "PreToolUse"
		k.Hear.Refusal = "claude-json"
		k.Hear.ShellTools = []string{"Bash"}
		k.Hear.FileTools = map[string]string{"Edit": "file_path", "Write": "file_path"}
		k.Hear.QuietEnds = true
		if len(d.Resume) > 0 {
			k.Hear.Resumed = func(argv []string) string { return resumedBy(d.Resume, sessionRE, argv) }
		}
	default:
		return bad(fmt.Sprintf("hooks = %q is not a kind of hooks st reads", d.Hooks), `leave hooks out (states from its screen), or write hooks = "claude" when its command hooks run st hook %s EVENT with Claude Code's payloads`, name)
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// noHooks is the event map of a kind without hooks: st refuses an event
// said to come from it, which its agent cannot send.
func noHooks(name string) func(string, []byte) (Event, error) {
	return func(string, []byte) (Event, error) {
		return Event{}, fmt.Errorf("the agent %s has no hooks (config.toml describes none): st reads its states from its screen", name)
	}
}

// resumedBy reads the conversation a command line resumes, by the
// description's resume arguments: the word where {id} stands, after the
// words before it.
func resumedBy(resume []string, form func() *regexp.Regexp, argv []string) string {
	at := slices.IndexFunc(resume, func(a string) bool { return strings.Contains(a, "{id}") })
	pre, suf, _ := strings.Cut(resume[at], "{id}")
	for i := range argv {
		if i+at >= len(argv) {
			break
		}
		if !slices.Equal(argv[i:i+at], resume[:at]) {
			continue
		}
		w := argv[i+at]
		if strings.HasPrefix(w, pre) && strings.HasSuffix(w, suf) && len(w) >= len(pre)+len(suf) {
			if id := w[len(pre) : len(w)-len(suf)]; form().MatchString(id) {
				return id
			}
		}
	}
	return ""
}

// markerWindow is how many non-blank lines from the bottom of a screen
// recognizeByMarkers reads: an agent draws its box and its state at the
// bottom, and what scrolled above is old.
const markerWindow = 12

// recognizeByMarkers reads a screen by a description's markers: the
// lowest line (of the bottom markerWindow non-blank lines) that holds a
// marker says the screen — its input box (the text after the ready marker,
// and on the lines under it where a long line wrapped, is what is typed in
// it, down to a rule of ─ under the box, if any), a turn at work, or a
// question (isRule is Claude's: a label may sit inside it). A line that
// holds a ready marker and a busy one reads as at work.
func recognizeByMarkers(ready, busy, prompt []string) func(string) View {
	trim := func(ms []string) []string {
		out := make([]string, len(ms))
		for i, m := range ms {
			out[i] = strings.TrimRight(m, " ")
			if out[i] == "" {
				out[i] = m
			}
		}
		return out
	}
	ready, busy, prompt = trim(ready), trim(busy), trim(prompt)
	has := func(l string, ms []string) int {
		for _, m := range ms {
			if i := strings.Index(l, m); i >= 0 {
				return i + len(m)
			}
		}
		return -1
	}
	return func(capture string) View {
		lines := strings.Split(strings.ReplaceAll(capture, "\r\n", "\n"), "\n")
		seen := 0
		var below []string // the lines under the one looked at, bottom first
		for i := len(lines) - 1; i >= 0 && seen < markerWindow; i-- {
			l := strings.TrimRight(lines[i], " \t\r")
			if strings.TrimSpace(l) == "" {
				continue
			}
			seen++
			if has(l, prompt) >= 0 {
				return View{Screen: ScreenPrompt}
			}
			if has(l, busy) >= 0 {
				return View{Screen: ScreenWorking}
			}
			if at := has(l, ready); at >= 0 {
				// The box's text runs from the marker to the bottom: a
				// long line wraps onto the lines under it.
				text := l[at:]
				for j := len(below) - 1; j >= 0; j-- {
					text += below[j]
				}
				if box := strings.TrimSpace(text); box != "" {
					return View{Screen: ScreenTyped, Box: box}
				}
				return View{Screen: ScreenReady}
			}
			if isRule(strings.TrimSpace(l)) {
				below = below[:0] // under a rule: a footer, not the box's text
				continue
			}
			below = append(below, l)
		}
		return View{Screen: ScreenUnknown}
	}
}

// builtins are st's own kinds, registered before any description is read.
var builtins = map[string]*Kind{}

var described struct {
	sync.Mutex
	// broken: descriptions that were refused, by name, so that Lookup
	// says what is wrong rather than that the kind is unknown.
	broken map[string]error
}

// LoadDescribed reads the [agents.NAME] tables of home's config.toml and
// registers a Kind for each one that is whole. It returns the problems
// (a description refused, or a config.toml that cannot be read), which
// st doctor prints; a kind refused is told by Lookup too.
func LoadDescribed(home string) []error {
	path := filepath.Join(home, "config.toml")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return []error{fmt.Errorf("read %s: %w", path, err)}
	}
	ds, err := ParseDescriptions(data)
	if err != nil {
		return []error{fmt.Errorf("%s: %w", path, err)}
	}
	var errs []error
	names := make([]string, 0, len(ds))
	for n := range ds {
		names = append(names, n)
	}
	sort.Strings(names)
	broken := map[string]error{}
	for _, n := range names {
		k, err := Describe(n, ds[n])
		if err != nil {
			errs = append(errs, err)
			broken[n] = err
			continue
		}
		Register(k)
	}
	described.Lock()
	described.broken = broken
	described.Unlock()
	return errs
}

// ParseDescriptions reads the [agents] table of a config.toml; a key a
// description does not have is refused (a misspelt marker would be one
// st never looks for).
func ParseDescriptions(data []byte) (map[string]Description, error) {
	var top struct {
		Agents map[string]any `toml:"agents"`
	}
	if err := toml.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("not TOML st can read: %w", err)
	}
	out := map[string]Description{}
	for n, raw := range top.Agents {
		b, err := toml.Marshal(raw)
		if err != nil {
			return nil, fmt.Errorf("[agents.%s]: %w", n, err)
		}
		var d Description
		if err := toml.NewDecoder(bytes.NewReader(b)).DisallowUnknownFields().Decode(&d); err != nil {
			var sm *toml.StrictMissingError
			if errors.As(err, &sm) && len(sm.Errors) > 0 {
				return nil, &DescriptionError{Name: n, Problem: fmt.Sprintf("st does not know the key %s", strings.Join(sm.Errors[0].Key(), ".")),
					Fix: "the keys are title, icon, program, args, env, resume, session_id, ready, busy, prompt, submit, interrupt, enter_delay, hooks"}
			}
			return nil, &DescriptionError{Name: n, Problem: err.Error(), Fix: "see docs/agents.md, \"An agent st does not know\""}
		}
		out[n] = d
	}
	return out, nil
}

// brokenDescription is the problem of a refused description named name.
func brokenDescription(name string) error {
	described.Lock()
	defer described.Unlock()
	return described.broken[name]
}
