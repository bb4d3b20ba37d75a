package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/sophonz/st/internal/store"
)

// Codex is the Codex CLI (shared/reference/real-agents.md §4).
var Codex = &Kind{
	Name:  "codex",
	Title: "Codex",
	Icon:  "◎",
	Launch: Launch{
		Program:    "codex",
		ProgramEnv: "ST_CODEX_BIN",
		Tested:     Range{Oldest: "0.130.0", Newest: "0.171.0", Package: "@openai/codex"},
		Command:    codexCommand,
		Resume:     "codex resume <session id>",
		Seed: []string{
			`$CODEX_HOME/config.toml: a model provider (or a sign-in), check_for_update_on_startup = false, disable_paste_burst = true`,
			`$CODEX_HOME/config.toml: [projects."<folder>"] trust_level = "trusted" for a git repository, or its trust screen stops a start`,
			`st's hooks trusted in config.toml's [hooks.state] (st hooks install does it)`,
			`$CODEX_HOME/config.toml: [notice] hide_rate_limit_model_nudge = true, or at a usage limit a model-switch modal may take the line st types after the reset`,
		},
		TrustFolder: codexTrustFolder,
		Processes:   []string{"codex", "@openai/codex"},
		Marks:       []string{"CODEX_MANAGED_BY_NPM", "CODEX_SANDBOX*", "CODEX_THREAD_ID", "CODEX_TOOL_CALL_ID"},
		ConfigEnv:   []string{"CODEX_HOME"},
	},
	Hear: Hear{
		Install: "codex-hooks",
		// Codex has no Notification; it has Interrupt, fired by Esc
		// during a turn.
		Events: []EventSpec{
			{Name: "SessionStart", Means: EvSessionStart},
			{Name: "UserPromptSubmit", Means: EvTurnStart},
			{Name: "PreToolUse", Means: EvTool, Matcher: true},
			{Name: "PermissionRequest", Means: EvWaiting},
			{Name: "PostToolUse", Means: EvTool},
			{Name: "Stop", Means: EvTurnEnd},
			{Name: "Interrupt", Means: EvInterrupt},
			{Name: "SessionEnd", Means: EvSessionEnd},
			{Name: "SubagentStart", Means: EvSubagent},
			{Name: "SubagentStop", Means: EvSubagent},
		},
		Map: mapCodexEvent,
		// Hooks name its shell tool Bash; exec_command and shell are the
		// model's own names for it. Its edits are patches (apply_patch).
		ShellTools: []string{"Bash", "exec_command", "shell"},
		QuietEnds:  true,
		BeforeTool: "PreToolUse",
		// Its PermissionRequest hook answers in Claude's form (measured on
		// 0.171.0: allow runs the command with no dialog, deny refuses it,
		// nothing shows its dialog), but Codex draws its dialog only once
		// the hook is back: while st's hook waits, its screen says
		// "Running hook" (docs/permission-prompts.md).
		Answers:   "PermissionRequest",
		Refusal:   "claude-json",
		SessionID: uuidRE,
		Resumed: func(argv []string) string {
			for i, a := range argv {
				if a == "resume" {
					if id := codexResumeArg(argv[i+1:]); uuidRE().MatchString(id) {
						return id
					}
				}
			}
			return ""
		},
	},
	Screen: ScreenSpec{
		Recognize: recognizeCodex,
		// Codex draws its placeholder dim in the composer; only the
		// escapes tell it from text someone typed.
		Escapes: true,
		// Codex takes an Enter within a paste burst as part of the paste
		// (reference §4.4: 50 ms and more worked).
		EnterDelay: 150 * time.Millisecond,
		Submit:     "Enter", Interrupt: "Escape",
		Ready:  []string{"› (the composer) above its model line `<model> · <folder>`"},
		Busy:   []string{"esc to interrupt"},
		Prompt: codexPrompt,
	},
	// Codex fires no hook at its usage limit and does not go on by itself
	// (reference §13): st hears the limit in its rollout when its turn
	// went quiet, and types once its composer is up (never into its
	// model-switch modal, which a typed line would answer).
	Limits: &Limits{
		FromRecords:     codexLimitRecord,
		Silent:          true,
		ContinuesItself: func() bool { return false },
		ContinueLine:    "continue",
	},
	Records: Records{
		Conversation: "the hooks' transcript_path: $CODEX_HOME/sessions/YYYY/MM/DD/rollout-…-<session>.jsonl",
		Tokens:       "token_count events (total_token_usage) in the rollout",
		TokenFormat:  "codex",
		Account:      codexAccount,
	},
}

func init() { Register(Codex) }

// codexCommand starts Codex with --no-daemon: with the shared background
// server, hooks carry the TMUX_PANE of whichever pane started it, and the
// sessions outlive their windows. Versions without the flag (0.150.0 has
// none; 0.160.1 has it) refuse to start with it, and have no background
// server either (measured on 0.150.0: no daemon process, hooks from its
// own pane), so they get none. NetworkAccess lifts the sandbox's block on
// sockets, for users who choose it (st never does on its own).
func codexCommand(o LaunchOptions) []string {
	prog := o.Program
	if prog == "" {
		prog = "codex"
	}
	argv := []string{prog}
	resume := ValidSession("codex", o.ResumeSession)
	if resume {
		argv = append(argv, "resume")
	}
	if codexTakesNoDaemon(prog, o.Path) {
		argv = append(argv, "--no-daemon")
	}
	if o.NetworkAccess {
		argv = append(argv, "-c", "sandbox_workspace_write.network_access=true")
	}
	if resume {
		// After "--": an id is never read as an option.
		argv = append(argv, "--", o.ResumeSession)
	}
	return argv
}

// codexTakesNoDaemon asks the program (once per version of its file)
// whether it has --no-daemon. When it cannot be asked, the flag goes in, as
// every version st was tested on from 0.160.1 up takes it.
func codexTakesNoDaemon(prog, pathEnv string) bool {
	path, err := LookProgram("codex", prog, pathEnv)
	if err != nil {
		return true
	}
	p := ProbeProgram(context.Background(), "codex", path)
	return p.Version == "" || p.NoDaemon
}

var (
	ansiRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\x1b\[[0-9;:?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]`)
	})
	// codexFooterRE is the model line under the composer ("gpt-5 high ·
	// /path"); it appears once the splash is over and Codex takes input.
	codexFooterRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s+\S.* · [/~]`) })
)

// The markers of Codex's screens that only a person may answer, as
// captured from 0.130.0 to 0.171.0 (testdata/screens/codex). Up to 0.15x
// the trust screen says "Welcome to Codex" too, like the sign-in screen,
// so trust is looked for first.
var (
	codexTrust = []string{"Trust this folder?", "Folder access", "Hooks need review",
		"Do you trust the contents of this directory?"}
	codexLogin  = []string{"Welcome to Codex", "Sign in with ChatGPT", "Sign in with Device Code", "Use an OpenAI API key"}
	codexPrompt = []string{"Would you like to run the following command?", "Would you like to make the following edits?",
		"Press enter to confirm or esc to cancel", "Would you like to",
		// request_user_input (plan mode): its footer, under the options.
		"enter to submit answer"}
)

// recognizeCodex reads a capture-pane -e of Codex.
func recognizeCodex(capture string) View {
	raw := strings.Split(strings.ReplaceAll(capture, "\r\n", "\n"), "\n")
	plain := make([]string, len(raw))
	for i, l := range raw {
		plain[i] = strings.TrimRight(ansiRE().ReplaceAllString(l, ""), " \t")
	}
	if s, ok := codexDialog(plain); ok {
		return View{Screen: s}
	}
	// The composer is the last line starting with "›" that is not an
	// option of a menu ("› 1. Yes").
	comp := -1
	for i := len(plain) - 1; i >= 0; i-- {
		if strings.HasPrefix(plain[i], "›") {
			comp = i
			break
		}
	}
	if comp < 0 {
		return View{Screen: ScreenUnknown}
	}
	box, end := codexBox(raw, plain, comp)
	for _, l := range plain[max(0, comp-4):] {
		if strings.Contains(l, "esc to interrupt") {
			return View{Screen: ScreenWorking, Box: box}
		}
	}
	ready := false
	for _, l := range plain[end:] {
		if codexFooterRE().MatchString(l) {
			ready = true
		}
	}
	if !ready {
		return View{Screen: ScreenUnknown, Box: box} // the splash: not taking input yet
	}
	if box != "" {
		return View{Screen: ScreenTyped, Box: box}
	}
	return View{Screen: ScreenReady}
}

// codexDialog is the dialog Codex draws over its composer, if any (trust,
// login, a question): looked for from the last transcript item ("•")
// down.
func codexDialog(plain []string) (Screen, bool) {
	has := func(lines []string, marks []string) bool {
		for _, l := range lines {
			for _, m := range marks {
				if strings.Contains(l, m) {
					return true
				}
			}
		}
		return false
	}
	last := 0
	for i := range plain {
		if strings.HasPrefix(plain[i], "• ") {
			last = i
		}
	}
	switch {
	case has(plain[last:], codexTrust):
		return ScreenTrust, true
	case has(plain[last:], codexLogin):
		return ScreenLogin, true
	case has(plain[last:], codexPrompt):
		return ScreenPrompt, true
	}
	return ScreenUnknown, false
}

// codexBox is the composer's text (at line comp): its first line after
// "› " and the lines up to the blank line above the footer; end is the
// line after it.
func codexBox(raw, plain []string, comp int) (box string, end int) {
	var text []string
	first := strings.TrimPrefix(strings.TrimPrefix(plain[comp], "›"), " ")
	if !isDimAfterPrompt(raw[comp]) {
		text = append(text, first)
	}
	end = comp + 1
	for ; end < len(plain) && plain[end] != ""; end++ {
		if codexFooterRE().MatchString(plain[end]) {
			break
		}
		text = append(text, strings.TrimSpace(plain[end]))
	}
	return strings.TrimSpace(strings.Join(text, "")), end
}

// isDimAfterPrompt reports whether the composer line's text is drawn dim
// (SGR 2): the placeholder, not typed text.
func isDimAfterPrompt(line string) bool {
	i := strings.Index(line, "›")
	if i < 0 {
		return false
	}
	rest := line[i+len("›"):]
	// Skip resets and spaces up to the first printable character, noting
	// whether a dim attribute was switched on on the way.
	dim := false
	for len(rest) > 0 {
		if loc := ansiRE().FindStringIndex(rest); loc != nil && loc[0] == 0 {
			seq := rest[:loc[1]]
			if strings.HasSuffix(seq, "m") {
				params := strings.Split(strings.TrimSuffix(strings.TrimPrefix(seq, "\x1b["), "m"), ";")
				for _, p := range params {
					if p == "2" {
						dim = true
					}
					if p == "0" || p == "22" || p == "" {
						dim = false
					}
				}
			}
			rest = rest[loc[1]:]
			continue
		}
		if rest[0] == ' ' {
			rest = rest[1:]
			continue
		}
		return dim
	}
	return true // nothing after the prompt: an empty composer
}

// mapCodexEvent maps Codex's hooks, which use Claude's payloads, plus its
// Interrupt (Esc during a turn).
func mapCodexEvent(name string, payload []byte) (Event, error) {
	ev, err := mapClaudeLikeEvent(name, payload)
	if err != nil {
		return ev, err
	}
	if name == "Interrupt" {
		ev.Kind = EvInterrupt
	}
	return ev, nil
}

// codexTrustFolder marks dir trusted in Codex's config.toml when repoRoot
// is.
func codexTrustFolder(repoRoot, dir string) string {
	ch := os.Getenv("CODEX_HOME")
	if ch == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		ch = filepath.Join(home, ".codex")
	}
	path := filepath.Join(ch, "config.toml")
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	table := func(p string) string { return fmt.Sprintf("[projects.%q]", p) }
	text := string(data)
	if !strings.Contains(text, table(repoRoot)) || strings.Contains(text, table(dir)) {
		return ""
	}
	// Appended, so every comment and table of the user's stays as it was.
	text = strings.TrimRight(text, "\n") + "\n\n" + table(dir) + "\ntrust_level = \"trusted\"\n"
	if store.WriteFile(path, []byte(text), 0o600) != nil {
		return ""
	}
	return fmt.Sprintf("marked the worktree %s trusted in %s, as its repository is", dir, path)
}
