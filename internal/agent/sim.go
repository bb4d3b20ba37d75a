package agent

import (
	"os"
	"time"
)

// Sim is st's own simulated agent (`st agent sim`, package agent/simagent).
// It draws Claude's screens and sends Claude's hook payloads, so it shares
// Claude's recognizer and event mapper: tests that pass against the sim
// exercise the same code paths as a real Claude.
var Sim = &Kind{
	Name:  "sim",
	Title: "simulated agent",
	Icon:  "◆",
	Launch: Launch{
		// Run from the st binary itself, so a worker needs nothing
		// installed besides st.
		Command:   simCommand,
		Resume:    "st agent sim --resume <session id>",
		Processes: nil, // st itself, run as "st agent sim"
	},
	Hear: Hear{
		// The sim fires st hook sim EVENT itself: nothing to install.
		Install: "builtin",
		Events: []EventSpec{
			{Name: "SessionStart", Means: EvSessionStart},
			{Name: "UserPromptSubmit", Means: EvTurnStart},
			{Name: "PreToolUse", Means: EvTool},
			{Name: "PostToolUse", Means: EvTool},
			{Name: "PostToolUseFailure", Means: EvTool},
			{Name: "PermissionRequest", Means: EvWaiting},
			{Name: "Notification", Means: EvWaiting}, // permission_prompt, after PermissionRequest (permit:)
			{Name: "Stop", Means: EvTurnEnd},
			{Name: "StopFailure", Means: EvTurnEnd},
			{Name: "SessionEnd", Means: EvSessionEnd},
		},
		Map:          mapClaudeLikeEvent,
		ShellTools:   []string{"Bash"},
		FileTools:    map[string]string{"Edit": "file_path", "Write": "file_path"},
		QuietEnds:    true,
		QuietPrompts: true,
		BeforeTool:   "PreToolUse",
		Refusal:      "claude-json",
		// A UUID by default; tests name theirs (ST_SIM_SESSION_ID).
		SessionID: simSessionRE,
		Resumed:   func(argv []string) string { return resumeFlag(simSessionRE, argv, false) },
	},
	Screen: ScreenSpec{
		Recognize: recognizeClaudeLike,
		// Above the 50 ms inside which the sim's ST_SIM_SWALLOW_ENTER
		// knob drops an Enter, like a real agent's paste detection would.
		EnterDelay: 80 * time.Millisecond,
		Submit:     "Enter", Interrupt: "Escape",
		Ready:  []string{boxPrompt + " (between two ──── rules)"},
		Busy:   []string{"esc to interrupt"},
		Prompt: promptMarkers,
	},
	// Like Claude, it stops at a usage limit (a task's limit: line) and
	// goes on by itself a moment after the reset unless
	// ST_SIM_AUTO_CONTINUE=0.
	Limits: &Limits{
		FromRecords:     claudeLimitRecord,
		ContinuesItself: func() bool { return os.Getenv("ST_SIM_AUTO_CONTINUE") != "0" },
		Grace:           10 * time.Second,
		ContinueLine:    "continue",
	},
	Records: Records{
		Conversation: "$HOME/.st-sim/<session>.json (simagent.ConversationFile)",
		Tokens:       "its transcript (the hooks' transcript_path, $TMPDIR/st-sim/<session>.jsonl), in Claude's form: message.usage once per message.id",
		TokenFormat:  "claude",
	},
}

func init() { Register(Sim) }

func simCommand(o LaunchOptions) []string {
	argv := []string{o.STBin, "agent", "sim"}
	if ValidSession("sim", o.ResumeSession) {
		// (Its flag package takes the next word as the value, whatever
		// it starts with.)
		argv = append(argv, "--resume", o.ResumeSession)
	}
	return argv
}
