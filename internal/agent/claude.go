package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/sophonz/st/internal/store"
)

// Claude is Claude Code (shared/reference/real-agents.md §3).
var Claude = &Kind{
	Name:  "claude",
	Title: "Claude Code",
	Icon:  "✻",
	Launch: Launch{
		Program:    "claude",
		ProgramEnv: "ST_CLAUDE_BIN",
		Tested:     Range{Oldest: "2.1.100", Newest: "2.1.332", Package: "@anthropic-ai/claude-code"},
		Command:    claudeCommand,
		Resume:     "claude --resume <session id>",
		Seed: []string{
			`~/.claude.json: "hasCompletedOnboarding": true (without it Claude exits at its connectivity check offline)`,
			`~/.claude.json: projects[<folder>].hasTrustDialogAccepted: true, or its trust screen stops a start`,
			`DISABLE_AUTOUPDATER=1 in its environment`,
		},
		TrustFolder: claudeTrustFolder,
		Processes:   []string{"claude", "claude.exe", "@anthropic-ai/claude-code"},
		Marks:       []string{"CLAUDECODE"},
		ConfigEnv:   []string{"CLAUDE_CONFIG_DIR"},
	},
	Hear: Hear{
		Install: "claude-settings",
		Events: []EventSpec{
			{Name: "SessionStart", Means: EvSessionStart},
			{Name: "UserPromptSubmit", Means: EvTurnStart},
			{Name: "PreToolUse", Means: EvTool, Matcher: true},
			{Name: "PostToolUse", Means: EvTool, Matcher: true},
			{Name: "PostToolUseFailure", Means: EvTool, Matcher: true},
			{Name: "PermissionRequest", Means: EvWaiting, Matcher: true},
			{Name: "Notification", Means: EvWaiting}, // permission_prompt, agent_needs_input, elicitation_dialog
			{Name: "Stop", Means: EvTurnEnd},
			{Name: "StopFailure", Means: EvTurnEnd},
			{Name: "SubagentStart", Means: EvSubagent},
			{Name: "SubagentStop", Means: EvSubagent},
			{Name: "TeammateIdle", Means: EvTeammateIdle},
			{Name: "SessionEnd", Means: EvSessionEnd},
		},
		Map:          mapClaudeLikeEvent,
		ShellTools:   []string{"Bash"},
		FileTools:    map[string]string{"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"},
		QuietEnds:    true,
		QuietPrompts: true,
		BeforeTool:   "PreToolUse",
		Answers:      "PermissionRequest",
		Refusal:      "claude-json",
		SessionID:    uuidRE,
		Resumed:      func(argv []string) string { return resumeFlag(uuidRE, argv, true) },
	},
	Screen: ScreenSpec{
		Recognize: recognizeClaudeLike,
		// Claude drops an Enter that follows a long line typed the moment
		// its box appears (5 of 8 tries at once, 0 of 6 with 300 ms).
		EnterDelay: 300 * time.Millisecond,
		Submit:     "Enter", Interrupt: "Escape",
		Ready:  []string{boxPrompt + " (between two ──── rules)"},
		Busy:   []string{"esc to interrupt"},
		Prompt: promptMarkers,
	},
	Limits: &Limits{
		FromRecords:     claudeLimitRecord,
		ContinuesItself: claudeContinuesItself,
		// Claude goes on 30-90 s after the reset (reference §13).
		Grace:        120 * time.Second,
		Itself:       [2]time.Duration{30 * time.Second, 90 * time.Second},
		ContinueLine: "continue",
		Menu:         claudeLimitMenu,
		MenuKey:      "Escape",
		Waiting:      claudeWaiting,
		CancelKey:    "Escape",
	},
	Records: Records{
		Conversation: "the hooks' transcript_path: ~/.claude/projects/<folder>/<session>.jsonl",
		Tokens:       "assistant records' message.usage in the transcript, once per message.id; subagents in <session>/subagents/",
		TokenFormat:  "claude",
		Account:      claudeAccount,
	},
}

func init() { Register(Claude) }

// claudeCommand starts Claude in its "default" (manual) permission mode
// unless the user chose a mode with ST_CLAUDE_PERMISSION_MODE: 2.1.332
// defaults to auto mode, whose server-side check cannot work behind a
// gateway and stops the first tool call with a dialog.
func claudeCommand(o LaunchOptions) []string {
	prog := o.Program
	if prog == "" {
		prog = "claude"
	}
	argv := []string{prog}
	mode := o.PermissionMode
	if mode == "" {
		mode = "default"
	}
	argv = append(argv, "--permission-mode", mode)
	if ValidSession("claude", o.ResumeSession) {
		// One word: an id is never read as an option of its own.
		argv = append(argv, "--resume="+o.ResumeSession)
	}
	return argv
}

// claudeTrustFolder marks dir trusted in ~/.claude.json when repoRoot is.
func claudeTrustFolder(repoRoot, dir string) string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	path := filepath.Join(home, ".claude.json")
	if d := os.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
		path = filepath.Join(d, ".claude.json")
	}
	data, err := os.ReadFile(path)
	if err != nil || !gjson.ValidBytes(data) {
		return ""
	}
	key := func(p string) string {
		return "projects." + strings.NewReplacer(".", `\.`, "*", `\*`, "?", `\?`).Replace(p)
	}
	if !gjson.GetBytes(data, key(repoRoot)+".hasTrustDialogAccepted").Bool() {
		return ""
	}
	out, err := sjson.SetBytes(data, key(dir)+".hasTrustDialogAccepted", true)
	if err != nil || store.WriteFile(path, out, 0o600) != nil {
		return ""
	}
	return fmt.Sprintf("marked the worktree %s trusted in %s, as its repository is", dir, path)
}
