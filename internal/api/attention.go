package api

import "time"

// An attention item is st's record of "an agent needs a person, for
// this, since then" (issue 34; internal/attention owns them). It opens
// when an agent st knows waits at a permission prompt or a question, when
// a gate opens, when a worker's turn ends without a report, fails or is
// paused, and when a run finishes; it closes when the agent moves on (its
// own next hook says so) or a person answers or dismisses it. Items are
// kept in $ST_HOME/attention.json, so an open one outlives a restart of
// st. The web UI, the push, st ls / st status, st attention and the tmux
// status segment are views of them.

// AttentionKind is what an item asks of a person.
type AttentionKind string

// Attention kinds.
const (
	AttnPermission AttentionKind = "permission" // a tool call waits for Allow / Deny
	AttnQuestion   AttentionKind = "question"   // the agent asks (AskUserQuestion): pick an option
	AttnGate       AttentionKind = "gate"       // st gate ask: a decision for a person
	AttnNoReport   AttentionKind = "no-report"  // a worker's turn ended without st worker done
	AttnFailed     AttentionKind = "failed"     // a worker failed (its start, or its turn, in an error)
	AttnPaused     AttentionKind = "paused"     // a worker or a coordinator hit a usage limit
	AttnRunDone    AttentionKind = "run-done"   // every worker of a run is done
)

// AttentionKinds lists the kinds in the order people read them.
var AttentionKinds = []AttentionKind{AttnPermission, AttnQuestion, AttnGate, AttnFailed, AttnPaused, AttnNoReport, AttnRunDone}

// ValidAttentionKind reports whether k is a kind st knows.
func ValidAttentionKind(k AttentionKind) bool {
	for _, x := range AttentionKinds {
		if x == k {
			return true
		}
	}
	return false
}

// Attention is one item.
type Attention struct {
	ID   string        `json:"id"`
	Kind AttentionKind `json:"kind"`
	// Pane is the agent's pane (%N); Name its worker name, if it is a
	// worker; Agent its kind (claude, codex, ...).
	Pane  string `json:"pane,omitempty"`
	Name  string `json:"name,omitempty"`
	Agent string `json:"agent,omitempty"`
	// Machine is the slug of the machine the agent runs on; "" for this one.
	Machine string `json:"machine,omitempty"`
	Run     string `json:"run,omitempty"`
	// Text is what a person needs, in one line: the command asked for,
	// the question, the reason of a failure.
	Text string `json:"text"`
	// Tool is the tool a permission is asked for (Bash, run_shell_command).
	Tool string `json:"tool,omitempty"`
	// Command is the shell command a permission is asked for.
	Command string `json:"command,omitempty"`
	// Options are a question's or a gate's options.
	Options []string `json:"options,omitempty"`
	// Gate is the gate of a gate item.
	Gate string `json:"gate,omitempty"`
	// Prompt is the open prompt (api.Prompt) of a permission or question
	// item that st can answer through the agent's hook: set on the item
	// handed to the push, whose answer links are that prompt's. Not kept:
	// a prompt lives as long as its hook waits.
	Prompt string    `json:"prompt,omitempty"`
	Opened time.Time `json:"opened"`
	// Closed is when it closed; nil while it is open. ClosedBy says why:
	// "agent" (it moved on), "answered", "dismissed", "gone", ...
	Closed   *time.Time `json:"closed,omitempty"`
	ClosedBy string     `json:"closed_by,omitempty"`
	// Pushed is when its push was sent (or folded into a summary); nil:
	// none yet. One push per item, across restarts too.
	Pushed *time.Time `json:"pushed,omitempty"`
	// TextHidden says Text was left out: it is a worker's (its last
	// answer, its error), which the asker may not read (st worker read
	// refuses it).
	TextHidden bool `json:"text_hidden,omitempty"`
}

// Open reports whether the item still waits for a person.
func (a *Attention) Open() bool { return a.Closed == nil }

// OfWorkerText reports whether Text is a text of the worker in Pane (its
// last answer, or its error): the texts only who may read that worker
// reads (orch's ShowTo). A permission's command, a question, a gate's
// question and a run's objective are every local process's, as st's
// lists of prompts, gates and runs show them.
func (a *Attention) OfWorkerText() bool {
	switch a.Kind {
	case AttnNoReport, AttnFailed, AttnPaused:
		return true
	}
	return false
}

// HideText leaves out Text, and says so.
func (a *Attention) HideText() {
	a.Text, a.TextHidden = "", true
}

// AttentionRequest lists, waits for or dismisses items.
type AttentionRequest struct {
	// All lists closed items too (the newest first, bounded).
	All bool `json:"all,omitempty"`
	// After: a wait returns once an item opened after this one (its ID)
	// exists; "" waits for any item opened after the call began.
	After string `json:"after,omitempty"`
	// Timeout bounds a wait.
	Timeout time.Duration `json:"timeout,omitempty"`
	// ID is the item to dismiss.
	ID string `json:"id,omitempty"`
	// Pane is the caller's pane (authz).
	Pane string `json:"pane,omitempty"`
}

// AttentionList is what the list and wait routes answer: the items, the
// newest first, and how many are open.
type AttentionList struct {
	Items []Attention `json:"items"`
	Open  int         `json:"open"`
}

// TmuxStatusRequest puts st's attention segment on the tmux status line
// (On) or takes it off (st setup --tmux-status, st setup --undo).
type TmuxStatusRequest struct {
	Pane string `json:"pane,omitempty"` // the caller's (authz)
	On   bool   `json:"on"`
}

// TmuxStatus is the status line after the change.
type TmuxStatus struct {
	On          bool   `json:"on"`
	Changed     bool   `json:"changed"`
	StatusRight string `json:"status_right"`
	Socket      string `json:"socket"`
}
