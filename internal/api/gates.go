package api

import (
	"time"
)

// A decision gate is a question only a person should answer. The agent
// that asks blocks (st gate ask) until the first answer arrives: from st
// gate answer, a button in the web UI, or an action of a push
// notification. Gates are kept in $ST_HOME/gates.json, so an open gate
// outlives a restart of st.

// GateState is a gate's state.
type GateState string

// Gate states.
const (
	GateOpen     GateState = "open"
	GateAnswered GateState = "answered"
	GateTimedOut GateState = "timed-out"
	// GateWithdrawn: its asker stopped waiting (Ctrl-C on st gate ask)
	// and took the question back; no answer is taken any more.
	GateWithdrawn GateState = "withdrawn"
)

// Gate is one question to a person.
type Gate struct {
	ID         string     `json:"id"`
	Question   string     `json:"question"`
	Options    []string   `json:"options"`
	Pane       string     `json:"pane,omitempty"` // the asking agent
	Run        string     `json:"run,omitempty"`
	State      GateState  `json:"state"`
	Asked      time.Time  `json:"asked"`
	Deadline   *time.Time `json:"deadline,omitempty"`
	Answer     string     `json:"answer,omitempty"`
	AnsweredBy string     `json:"answered_by,omitempty"`
	AnsweredAt *time.Time `json:"answered_at,omitempty"`
	// AnswerKeys are the SHA-256 hashes of the answer tokens a push
	// carried, each good for one option of this gate while it is open.
	// Only hashes are kept: the tokens went to the push service.
	AnswerKeys map[string]string `json:"answer_keys,omitempty"`
	// Value, when set, is an option whose amount the person sets: an
	// answer is Value.Prefix followed by the amount (a budget gate's "go
	// on with a budget of 5M"), checked by st before it is taken.
	Value *GateValue `json:"value,omitempty"`
}

// GateValue is a gate's option that takes an amount from the person.
type GateValue struct {
	// Prefix begins the option ("go on with a budget of "); Hint says
	// what amount it takes.
	Prefix string `json:"prefix"`
	Hint   string `json:"hint"`
}

// GateRequest asks, waits for, answers or withdraws a gate.
type GateRequest struct {
	Pane     string        `json:"pane,omitempty"`
	ID       string        `json:"id,omitempty"`
	Question string        `json:"question,omitempty"`
	Options  []string      `json:"options,omitempty"`
	Timeout  time.Duration `json:"timeout,omitempty"` // ask: how long the gate stays open; wait: how long this call waits
	Option   string        `json:"option,omitempty"`
	// Value is the amount of the gate's value option (answer: st gate
	// answer ID --value 5M); Option may then be empty.
	Value string `json:"value,omitempty"`
	By    string `json:"by,omitempty"` // who answers: cli, web, push
}
