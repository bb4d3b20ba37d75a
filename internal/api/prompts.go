package api

import "time"

// A permission prompt is an agent's own dialog (a tool call waiting for
// Allow / Deny, or Claude's AskUserQuestion with its options) that st can
// answer through the agent's hook: the hook asks st and waits, and a
// person answers from the web UI, a push or a shell. Only an agent whose
// hook can answer opens one (Claude's PermissionRequest, measured on
// 2.1.332); its dialog stays on its screen meanwhile, so a person at the
// pane may answer there instead. Prompts live as long as their hook
// waits: they are not kept across a restart of st (the hook's connection
// ends with st, and the agent's own dialog is left).

// DefaultPromptWait is how long a hook waits for a person's answer to a
// permission prompt unless config.toml says otherwise (permission_wait).
const DefaultPromptWait = 5 * time.Minute

// MaxPromptWait bounds permission_wait: a hook that waits longer than an
// hour holds a process for nothing (the agent's dialog is there all along).
const MaxPromptWait = time.Hour

// Prompt is one open permission prompt.
type Prompt struct {
	ID    string `json:"id"`
	Pane  string `json:"pane"`
	Agent string `json:"agent"` // its kind: claude
	// Tool is the tool it asks for (Bash, Edit, AskUserQuestion).
	Tool string `json:"tool"`
	// Command is what it asks to run or change, in one line: a Bash
	// command, a file's path ("" for a question).
	Command string `json:"command,omitempty"`
	// Question and Options are an AskUserQuestion's first question and
	// its options' labels; empty for a tool call.
	Question string    `json:"question,omitempty"`
	Options  []string  `json:"options,omitempty"`
	Opened   time.Time `json:"opened"`
	Deadline time.Time `json:"deadline"`
	// AnswerKeys are the SHA-256 hashes of the answer tokens a push
	// carried, each good for one option of this prompt, once; never shown.
	AnswerKeys map[string]string `json:"-"`
}

// Prompt answers: a tool call's two, besides a question's own options.
const (
	PromptAllow = "allow" // Allow once
	PromptDeny  = "deny"
)

// Choices are the answers a person may give p: allow and deny for a tool
// call; a question's options, or deny, which refuses the question.
func (p Prompt) Choices() []string {
	if p.Question != "" {
		return append(append([]string{}, p.Options...), PromptDeny)
	}
	return []string{PromptAllow, PromptDeny}
}

// PromptDecision is what a waiting hook is told: Behavior "" when no one
// answered before the deadline (the agent's own dialog stays), else
// PromptAllow or PromptDeny; Option is a question's chosen option.
type PromptDecision struct {
	Behavior string `json:"behavior,omitempty"`
	Option   string `json:"option,omitempty"`
	By       string `json:"by,omitempty"` // web, push, cli
}

// PromptAnswerRequest answers prompt ID with Option (one of its Choices).
type PromptAnswerRequest struct {
	Pane   string `json:"pane,omitempty"` // the caller's (authz)
	ID     string `json:"id"`
	Option string `json:"option"`
	By     string `json:"by,omitempty"`
}
