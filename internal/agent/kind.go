package agent

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Kind is an agent kind: one value that says everything st needs of one
// agent program, so that st reads agents as descriptions and not as code
// paths of their own. Claude Code, Codex and the sim are each one Kind, in
// a file of their own (claude.go, codex.go, sim.go); adding an agent is
// adding a Kind and its tests. docs/agents.md documents the fields.
type Kind struct {
	// Name is the kind's name on the command line (--agent NAME), in
	// listings and in run records: claude, codex, sim.
	Name string
	// Title is what a person calls the agent ("Claude Code").
	Title string
	// Icon is the mark listings and the web UI draw for it.
	Icon string

	Launch  Launch
	Hear    Hear
	Screen  ScreenSpec
	Records Records
	// Limits is how it meets its plan's usage limit (limit.go); nil for
	// a kind st does not pause at one.
	Limits *Limits
	// StopTree: stopping it ends its pane's whole process group, not
	// only what tmux ends with the window (Gemini outlives kill-window).
	StopTree bool
	// Described marks a kind a user described in config.toml
	// ([agents.NAME], described.go), not one of st's own.
	Described bool
}

// Launch is how st starts the agent and resumes a conversation.
type Launch struct {
	// Program is the program's name on PATH; "" runs st itself (the sim).
	Program string
	// ProgramEnv names the environment variable that points st at another
	// program of this kind (ST_CLAUDE_BIN).
	ProgramEnv string
	// Tested is the versions on which every scenario of scripts/compat
	// passed (docs/compatibility.md's table), with its npm package;
	// zero for the sim.
	Tested Range
	// Command is the argv that starts it in a new window, resuming
	// o.ResumeSession when set. Its flags may depend on its version
	// (Codex's --no-daemon), which is why it is code and not a template.
	Command func(o LaunchOptions) []string
	// Resume is how a conversation resumes, as a person would type it.
	Resume string
	// Seed is the one-time seeding of its own config that a user (or a
	// test rig) does once: trust, onboarding, auto-update off; what st
	// setup and st doctor say about it.
	Seed []string
	// TrustFolder marks a worktree st made trusted in the agent's own
	// file when its repository is trusted there, and returns a note for
	// the person ("" when nothing was done); nil when the agent has no
	// folder trust.
	TrustFolder func(repoRoot, dir string) string
	// Processes are the names its process goes by: the base name of
	// argv[0], or a word of its command line (its npm package's folder,
	// for a node launcher). st tells an agent's process by them.
	Processes []string
	// ConfigEnv are the environment variables that say where it keeps its
	// settings (CODEX_HOME): a worker's window gets the caller's.
	ConfigEnv []string
	// ProbeEnv is set when st runs the program to read its version.
	ProbeEnv []string
	// Marks are environment variables (names, or name prefixes ending in
	// "*") that only the agent's own commands carry.
	Marks []string
}

// Hear is how st hears the agent: its hook events and what each means.
type Hear struct {
	// Install is how st's hooks are put in place: "claude-settings"
	// (command hooks in Claude's settings.json), "codex-hooks" (command
	// hooks in $CODEX_HOME/hooks.json, trusted), "gemini-settings",
	// "opencode-plugin" (a plugin file st writes into opencode's config
	// folder, which runs st hook for its events), "builtin" (the agent
	// fires st hook itself: the sim), "by-hand" (an agent described in
	// config.toml whose hooks the user wired to st hook: st installs
	// nothing), or "" (no hooks: states come from the screen, and listings
	// say so).
	Install string
	// Events are the agent's own events st subscribes to, in the order
	// they are installed, each with its meaning.
	Events []EventSpec
	// Map turns one of its hook payloads into an Event.
	Map func(name string, payload []byte) (Event, error)
	// ShellTools are its tools that run a shell command (in the input's
	// "command", or Codex's "cmd"); FileTools its tools that write one
	// file, each with the input field that names it: what --owns judges.
	// Any other tool's input is searched for a patch (Codex's apply_patch).
	ShellTools []string
	FileTools  map[string]string
	// QuietEnds: a turn of it may end with no hook at all (Claude's Esc
	// fires none), so st ends a turn whose hooks went quiet once its
	// screen has lost every sign of work. Off for an agent whose every
	// turn ends with a hook (Gemini's Esc fires AfterAgent), whose screen
	// may show no sign of work between two steps of one turn.
	QuietEnds bool
	// QuietPrompts: it may leave a permission prompt or a question with
	// no hook at all (Claude's Esc there fires none, reference §3.6), so
	// st looks at the screen of a prompt whose hooks went quiet, and takes
	// its box back, twice in a row, as the prompt gone (an interrupt).
	// Off for an agent whose Esc at a prompt fires a hook (Codex's
	// Interrupt), whose prompt st's screen reading may not know.
	QuietPrompts bool
	// BeforeTool is its event for a tool about to run, where the guard
	// and --owns scopes answer (PreToolUse, BeforeTool).
	BeforeTool string
	// Answers is its event whose hook may answer a permission prompt or
	// a question for a person (st's hook then asks st and waits, bounded):
	// Claude's and Codex's PermissionRequest, measured on 2.1.332 and
	// 0.171.0 (Claude shows its dialog meanwhile, Codex after the hook). "" when no hook of it can
	// answer (docs/permission-prompts.md says which were measured): a
	// person answers in its window.
	Answers string
	// Refusal is how st's answer to a tool about to run refuses it, on
	// the hook's stdout (Refuse writes it): "claude-json" (hookSpecificOutput
	// permissionDecision deny), "gemini-json" ({"decision":"deny"}),
	// "opencode-plugin" (the same, which st's plugin turns into a throw).
	Refusal string
	// SessionID is the form of its conversation ids: st stores and
	// resumes only an id of this form (compiled at its first use; the
	// forms are in session.go).
	SessionID func() *regexp.Regexp
	// Resumed reads the conversation its process was started to resume
	// from its command line ("" for none): what the agent's own process
	// says, which no hook payload can change.
	Resumed func(argv []string) string
}

// EventSpec is one of an agent's hook events.
type EventSpec struct {
	// Name is the agent's own name for it (PreToolUse).
	Name string
	// Means is what st makes of it, when the payload leaves no doubt
	// (Map decides on the payload; TestKindEventsMeanWhatMapSays checks
	// the two agree on a plain payload).
	Means EventKind
	// Matcher marks an event whose hook group carries "matcher": "*".
	Matcher bool
}

// ScreenSpec is what st reads on its screen and how it types into it.
type ScreenSpec struct {
	// Recognize reads a capture-pane of its pane.
	Recognize func(capture string) View
	// Escapes: Recognize wants capture-pane -e (colours and attributes).
	Escapes bool
	// EnterDelay is the pause between typing a line and pressing Submit,
	// so that the agent takes it as a submit and not as part of a paste.
	EnterDelay time.Duration
	// TypeWait is how long a typed line may take to show in its box
	// before st takes the keys as lost and types it again (0: a second).
	// Too short a wait types the line twice.
	TypeWait time.Duration
	// SessionFirst: its box is drawn before it has settled (Gemini draws
	// it, then its folder-trust dialog 0.75 s later, and fires its
	// SessionStart hook only once past that dialog), so st types into it
	// only once the SessionStart hook came.
	SessionFirst bool
	// BoxUnderDialog: its input box may still be drawn, and take keys,
	// while a permission dialog is up (Gemini's does, before and with the
	// dialog): st then trusts its hooks' word that it waits over a box
	// on its screen, and types nothing.
	BoxUnderDialog bool
	// FirstAlone: keys typed into its empty box may be commands (Gemini
	// CLI takes a "?" for its shortcuts' help and a "!" for its shell
	// mode, and drops them), and a line typed in one burst finds the box
	// still empty at each of its keys: st types a line's first character
	// alone, and the rest once the box shows it.
	FirstAlone bool
	// Submit and Interrupt are the tmux keys that submit a typed line and
	// stop a turn (keys separated by spaces: opencode's Esc only arms its
	// interrupt, a second one stops the turn).
	Submit, Interrupt string
	// Ready, Busy, Prompt are the markers of its input box ready, a turn
	// at work, and a permission prompt or a question, as measured
	// (shared/reference/real-agents.md): what Recognize looks for.
	Ready, Busy, Prompt []string
}

// Records says where the agent keeps its conversation and token counts.
type Records struct {
	Conversation string
	Tokens       string
	// TokenFormat is the form of the file its hooks name in
	// transcript_path, as st's token ledger reads it (internal/tokens:
	// "claude", "codex", "gemini"); "" when st reads no tokens of it.
	TokenFormat string
	// Account names the account whose records the file at a hook's
	// transcript_path is (account.go): its usage limits are that
	// account's. nil when st names none.
	Account func(transcript string) Account
}

// HasHooks reports whether st hears the agent through hooks (else its
// states come from the screen).
func (k *Kind) HasHooks() bool { return k.Hear.Install != "" }

// ScreenStates reports whether st reads the agent's states from its
// screen alone (it has no hooks): listings mark its states so.
func (k *Kind) ScreenStates() bool { return k.Hear.Install == "" }

// EventNames lists the events st subscribes to.
func (k *Kind) EventNames() []string {
	out := make([]string, len(k.Hear.Events))
	for i, e := range k.Hear.Events {
		out[i] = e.Name
	}
	return out
}

// Command is the argv that starts the agent in a new window.
func (k *Kind) Command(o LaunchOptions) []string { return k.Launch.Command(o) }

// Recognize reads a capture-pane of the agent's pane.
func (k *Kind) Recognize(capture string) View { return k.Screen.Recognize(capture) }

// EnterDelay is the pause st leaves between typing text and pressing Enter.
func (k *Kind) EnterDelay() time.Duration { return k.Screen.EnterDelay }

// WantsEscapes reports whether Recognize wants capture-pane -e.
func (k *Kind) WantsEscapes() bool { return k.Screen.Escapes }

// MapEvent maps a hook event (its name and JSON payload) to an Event.
func (k *Kind) MapEvent(name string, payload []byte) (Event, error) {
	return k.Hear.Map(name, payload)
}

// Refuse is what st's hook prints to refuse a tool about to run, in the
// agent's own form, with reason shown to its model.
func (k *Kind) Refuse(reason string) []byte {
	var v any
	switch k.Hear.Refusal {
	case "gemini-json", "opencode-plugin":
		// st's opencode plugin reads the same form and throws the
		// reason, which is how an opencode plugin refuses a call.
		v = map[string]any{"decision": "deny", "reason": reason}
	default:
		v = map[string]any{"hookSpecificOutput": map[string]any{
			"hookEventName": k.Hear.BeforeTool, "permissionDecision": "deny", "permissionDecisionReason": reason,
		}}
	}
	out, _ := json.Marshal(v)
	return out
}

// AnswerPrompt is what st's hook prints (its Answers event's output) to
// answer a permission prompt for a person: behavior "allow" or "deny";
// for an AskUserQuestion, option is the chosen option's label, sent back
// as the tool's input with its "answers" (question -> label) filled in,
// as Claude 2.1.332 takes it (measured: the model is told
// "Your questions have been answered: "Q"="label""). by says who
// answered, for the model's refusal message. nil when nothing is to be
// printed (no decision, or a kind whose hook cannot answer).
func (k *Kind) AnswerPrompt(behavior, option, by string, payload []byte) []byte {
	if k.Hear.Answers == "" || (behavior != "allow" && behavior != "deny") {
		return nil
	}
	decision := map[string]any{"behavior": behavior}
	if behavior == "deny" {
		decision["message"] = "A person denied this through st (" + by + "). Do not try it another way; ask the person if it is needed."
	}
	if behavior == "allow" && option != "" {
		var p struct {
			Input map[string]any `json:"tool_input"`
		}
		if json.Unmarshal(payload, &p) != nil || p.Input == nil {
			return nil
		}
		qs, _ := p.Input["questions"].([]any)
		if len(qs) != 1 {
			return nil
		}
		q, _ := qs[0].(map[string]any)
		text, _ := q["question"].(string)
		if text == "" {
			return nil
		}
		// The label as the agent wrote it; an option it did not offer
		// answers nothing.
		label := ""
		opts, _ := q["options"].([]any)
		for _, o := range opts {
			l, _ := o.(map[string]any)["label"].(string)
			if strings.Join(strings.Fields(l), " ") == option {
				label = l
			}
		}
		if label == "" {
			return nil
		}
		p.Input["answers"] = map[string]any{text: label}
		decision["updatedInput"] = p.Input
	}
	out, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": k.Hear.Answers, "decision": decision}})
	return out
}

// ValidSession reports whether id has the form of the agent's conversation
// ids: only such an id is stored and put on a resume command line, where
// a leading "-" would read as an option.
func (k *Kind) ValidSession(id string) bool {
	return id != "" && !strings.HasPrefix(id, "-") && k.Hear.SessionID != nil && k.Hear.SessionID().MatchString(id)
}

var (
	// kindsMu guards kinds: the daemon reads config.toml's descriptions
	// again at each start (LoadDescribed) while others look kinds up.
	kindsMu sync.RWMutex
	kinds   = map[string]*Kind{}
)

// Register makes a kind known by its name. The built-in kinds register
// themselves from init functions in this package.
func Register(k *Kind) {
	if k.Name == "" || k.Launch.Command == nil || k.Screen.Recognize == nil || k.Hear.Map == nil {
		panic(fmt.Sprintf("agent kind %q lacks a name, a launch, a screen or an event map", k.Name))
	}
	kindsMu.Lock()
	defer kindsMu.Unlock()
	if !k.Described {
		builtins[k.Name] = k
	}
	kinds[k.Name] = k
}

// Lookup finds a kind by name, or says which kinds exist.
func Lookup(name string) (*Kind, error) {
	kindsMu.RLock()
	k, ok := kinds[name]
	kindsMu.RUnlock()
	if ok {
		return k, nil
	}
	if err := brokenDescription(name); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("unknown agent %q: use one of %s", name, strings.Join(Kinds(), ", "))
}

// Kinds lists the known kinds' names, sorted.
func Kinds() []string {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	var ks []string
	for k := range kinds {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// All lists the known kinds, sorted by name.
func All() []*Kind {
	var out []*Kind
	for _, n := range Kinds() {
		if k, err := Lookup(n); err == nil {
			out = append(out, k)
		}
	}
	return out
}

// WithHooks lists the kinds whose hooks st installs in the agent's own
// files (st hooks install, st setup), sorted by name.
func WithHooks() []*Kind {
	var out []*Kind
	for _, k := range All() {
		if k.Hear.Install != "" && k.Hear.Install != "builtin" && k.Hear.Install != installByHand {
			out = append(out, k)
		}
	}
	return out
}

// ByProcess names the kind whose agent a process runs ("" for none), from
// its command line: the base name of argv[0], else a word of its arguments
// (a node launcher names its package's folder). The sim is st itself run
// as "st agent sim". extra are program paths the user configured
// (ST_CLAUDE_BIN...), by kind.
func ByProcess(argv []string, extra map[string]string) string {
	if len(argv) == 0 || argv[0] == "" {
		return ""
	}
	base := filepath.Base(argv[0])
	// The kinds are listed once: the daemon asks this of every process
	// above every caller of its socket.
	all := All()
	for kind, prog := range extra {
		if prog != "" && (argv[0] == prog || base == filepath.Base(prog)) {
			return kind
		}
	}
	for _, k := range all {
		if slices.Contains(k.Launch.Processes, base) {
			return k.Name
		}
	}
	// A node launcher (.bin/gemini, .bin/codex) runs as "node [flags]
	// SCRIPT": the script's name is the program's.
	if base == "node" || base == "nodejs" {
		for _, a := range argv[1:] {
			if strings.HasPrefix(a, "-") {
				continue
			}
			script := strings.TrimSuffix(filepath.Base(a), ".js")
			for _, k := range all {
				if slices.Contains(k.Launch.Processes, script) {
					return k.Name
				}
			}
			break
		}
	}
	if len(argv) >= 3 && argv[1] == "agent" {
		if k, err := Lookup(argv[2]); err == nil && k.Launch.Program == "" {
			return k.Name
		}
	}
	for _, a := range argv[1:] {
		for _, k := range all {
			for _, p := range k.Launch.Processes {
				if strings.HasPrefix(p, "@") && strings.Contains(a, p) {
					return k.Name
				}
			}
		}
	}
	return ""
}

// MarkIn returns the first variable of env ("NAME=value") that only an
// agent's own commands carry, or "".
func MarkIn(env []string) string {
	all := All() // once, not once a variable: an environment has a hundred
	for _, kv := range env {
		name, v, _ := strings.Cut(kv, "=")
		for _, k := range all {
			for _, m := range k.Launch.Marks {
				if p, ok := strings.CutSuffix(m, "*"); ok {
					if strings.HasPrefix(name, p) {
						return kv
					}
				} else if name == m && v != "" && v != "0" {
					return kv
				}
			}
		}
	}
	return ""
}

// ProgramEnvs maps each kind to the program its ProgramEnv names, through
// getenv (ST_CLAUDE_BIN...): agent programs the user configured.
func ProgramEnvs(getenv func(string) string) map[string]string {
	out := map[string]string{}
	for _, k := range All() {
		if k.Launch.ProgramEnv != "" {
			out[k.Name] = getenv(k.Launch.ProgramEnv)
		}
	}
	return out
}
