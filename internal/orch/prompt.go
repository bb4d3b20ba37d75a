package orch

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/syncs"
	"github.com/sophonz/st/internal/tmux"
)

// promptBook keeps the permission prompts whose hooks wait for a person
// (api.Prompt): an agent's own dialog that st may answer through its hook.
// It lives in memory only: a prompt is as long as its hook's wait, and
// the hook's connection ends with st. It has its own lock, taken alone.
type promptBook struct {
	now func() time.Time

	mu      sync.Mutex
	prompts map[string]*promptWait
	// held is the new attention item of each pane whose prompt is
	// awaited (promptpush.go); hold is how long at most.
	held map[string]*heldItem
	hold time.Duration
}

// promptWait is an open prompt and its waiting hook's channel.
type promptWait struct {
	p api.Prompt
	// input is the tool call's input as the hook gave it (compacted): a
	// later PostToolUse of the same call closes the prompt.
	input []byte
	// answer gets the one decision: a person's, or none when the agent
	// moved on. Buffered: the sender never waits.
	answer chan api.PromptDecision
}

func newPromptBook(now func() time.Time) *promptBook {
	return &promptBook{now: now, prompts: map[string]*promptWait{}, held: map[string]*heldItem{}, hold: promptHold}
}

// maxPromptText bounds the command or question a prompt shows.
const maxPromptText = 2000

// readPrompt reads a permission hook's payload into a prompt, or reports
// that st cannot offer its answers (ok false): an AskUserQuestion of
// several questions, or a multi-select one, is answered in the window.
func readPrompt(payload []byte) (p api.Prompt, input []byte, ok bool) {
	var in struct {
		Tool  string          `json:"tool_name"`
		Input json.RawMessage `json:"tool_input"`
	}
	if json.Unmarshal(payload, &in) != nil || in.Tool == "" || len(in.Tool) > 200 {
		return p, nil, false
	}
	p.Tool = in.Tool
	var buf bytes.Buffer
	if json.Compact(&buf, in.Input) == nil {
		input = buf.Bytes()
	}
	if in.Tool == "AskUserQuestion" {
		var q struct {
			Questions []struct {
				Question    string `json:"question"`
				MultiSelect bool   `json:"multiSelect"`
				Options     []struct {
					Label string `json:"label"`
				} `json:"options"`
			} `json:"questions"`
		}
		if json.Unmarshal(in.Input, &q) != nil || len(q.Questions) != 1 || q.Questions[0].MultiSelect {
			return p, nil, false
		}
		p.Question = oneLine(q.Questions[0].Question)
		for _, o := range q.Questions[0].Options {
			if l := strings.TrimSpace(o.Label); l != "" && !strings.EqualFold(l, api.PromptDeny) {
				p.Options = append(p.Options, oneLine(l))
			}
		}
		return p, input, p.Question != "" && len(p.Options) > 0
	}
	var fields map[string]json.RawMessage
	json.Unmarshal(in.Input, &fields)
	for _, k := range []string{"command", "cmd", "file_path", "notebook_path", "url", "pattern"} {
		var s string
		if json.Unmarshal(fields[k], &s) == nil && s != "" {
			p.Command = oneLine(s)
			break
		}
	}
	return p, input, true
}

// oneLine is s on one line, bounded.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxPromptText {
		s = s[:maxPromptText] + "…"
	}
	return s
}

// WaitPrompt opens a permission prompt for the hook event req (the
// daemon checked that it comes from a process in req.Pane) and waits up
// to wait for a person's answer. It answers no decision (Behavior "") when
// the agent's kind cannot be answered through this hook, when the deadline
// passes, when the agent moves on (its next hook), or when the hook goes
// away: then the agent's own dialog, on its screen all along, decides.
func (m *Manager) WaitPrompt(ctx context.Context, req api.HookRequest, wait time.Duration) (*api.PromptDecision, error) {
	kind, err := agent.Lookup(req.Agent)
	if err != nil || kind.Hear.Answers == "" || kind.Hear.Answers != req.Event || !tmux.ValidPaneID(req.Pane) {
		return &api.PromptDecision{}, nil
	}
	p, input, ok := readPrompt(req.Payload)
	if !ok {
		m.releaseHeld(req.Pane, "") // its item's push goes without answer links
		return &api.PromptDecision{}, nil
	}
	if wait <= 0 {
		wait = api.DefaultPromptWait
	}
	wait = min(wait, api.MaxPromptWait)
	now := m.cfg.Now()
	p.ID, p.Pane, p.Agent, p.Opened, p.Deadline = newID("prompt-"), req.Pane, kind.Name, now, now.Add(wait)
	pw := &promptWait{p: p, input: input, answer: make(chan api.PromptDecision, 1)}
	m.prompts.open(pw)
	m.logf("prompt %s opened by %s (%s %s): waits up to %s for a person", p.ID, p.Pane, p.Tool, orNone(p.Command+p.Question), wait)
	m.reg.notify()
	if !m.releaseHeld(p.Pane, p.ID) { // its item's one push, with the answer links
		if ev, err := kind.MapEvent(req.Event, req.Payload); err == nil {
			m.promptItem(p.Pane, ev)
		}
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	var d api.PromptDecision
	select {
	case d = <-pw.answer:
	case <-t.C:
		m.logf("prompt %s: no answer within %s; the agent's own dialog decides", p.ID, wait)
	case <-ctx.Done():
		m.logf("prompt %s: its hook went away (answered in the window, or ended by its agent)", p.ID)
	}
	if m.prompts.close(p.ID) {
		m.reg.notify()
	}
	return &d, nil
}

// open adds pw.
func (b *promptBook) open(pw *promptWait) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.prompts[pw.p.ID] = pw
}

// close removes prompt id, and reports whether it was open.
func (b *promptBook) close(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.prompts[id]
	delete(b.prompts, id)
	return ok
}

// Prompts lists the open prompts, the oldest first, without their keys.
func (m *Manager) Prompts() []api.Prompt {
	b := m.prompts
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]api.Prompt, 0, len(b.prompts))
	for _, pw := range b.prompts {
		c := pw.p
		c.AnswerKeys = nil
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Opened.Before(out[j].Opened) })
	return out
}

// AnswerPrompt answers an open prompt with one of its choices: the first
// answer wins, and the prompt closes with it. authz let only a person ask
// (a shell that is no agent's, the web UI's session, a push's token).
func (m *Manager) AnswerPrompt(ctx context.Context, req api.PromptAnswerRequest) (*api.Prompt, error) {
	b := m.prompts
	b.mu.Lock()
	p, err := b.answerLocked(req)
	b.mu.Unlock()
	if err != nil {
		return nil, err
	}
	m.logf("prompt %s answered %q by %s", p.ID, req.Option, orDefaultStr(req.By, "cli"))
	m.reg.notify()
	return &p, nil
}

// answerLocked hands req's answer to the waiting hook and closes the prompt.
func (b *promptBook) answerLocked(req api.PromptAnswerRequest) (api.Prompt, error) {
	syncs.AssertLocked(&b.mu)
	pw := b.prompts[req.ID]
	if pw == nil {
		return api.Prompt{}, errorf(api.KindNotFound, "answer it in the agent's window",
			"there is no open prompt %q (it was answered, its agent moved on, or its wait ended)", req.ID)
	}
	var pick string
	for _, c := range pw.p.Choices() {
		if strings.EqualFold(c, strings.TrimSpace(req.Option)) {
			pick = c
		}
	}
	if pick == "" {
		return api.Prompt{}, errorf(api.KindUsage, "answer with one of: "+strings.Join(pw.p.Choices(), ", "),
			"%q is not an answer of prompt %s", req.Option, req.ID)
	}
	d := api.PromptDecision{Behavior: api.PromptAllow, By: orDefaultStr(req.By, "cli")}
	switch {
	case pick == api.PromptDeny:
		d.Behavior = api.PromptDeny
	case pw.p.Question != "":
		d.Option = pick
	}
	pw.answer <- d
	delete(b.prompts, req.ID)
	c := pw.p
	c.AnswerKeys = nil
	return c, nil
}

// MintPromptTokens makes one answer token per choice of an open prompt,
// for a push's actions: each answers that prompt with its choice once, and
// none works once the prompt is closed. It returns choice -> token.
func (m *Manager) MintPromptTokens(id string) (map[string]string, error) {
	b := m.prompts
	b.mu.Lock()
	defer b.mu.Unlock()
	pw := b.prompts[id]
	if pw == nil {
		return nil, errorf(api.KindNotFound, "", "prompt %s is not open", id)
	}
	if pw.p.AnswerKeys == nil {
		pw.p.AnswerKeys = map[string]string{}
	}
	out := map[string]string{}
	for _, c := range pw.p.Choices() {
		raw := make([]byte, 32)
		if _, err := rand.Read(raw); err != nil {
			return nil, err
		}
		tok := hex.EncodeToString(raw)
		out[c] = tok
		pw.p.AnswerKeys[promptKey(tok)] = c
	}
	return out, nil
}

// promptKey is what is kept of a prompt's answer token: its hash, under a
// label of its own (a gate's token is no prompt's).
func promptKey(tok string) string {
	sum := sha256.Sum256([]byte("st-prompt-answer\x00" + tok))
	return hex.EncodeToString(sum[:])
}

// AnswerPromptByToken answers the prompt whose push carried tok with tok's
// choice (a person on their phone). A token that answers nothing gets the
// same words whatever the reason.
func (m *Manager) AnswerPromptByToken(ctx context.Context, tok string) (*api.Prompt, error) {
	if len(tok) != 64 {
		return nil, ErrBadAnswerToken
	}
	key := promptKey(tok)
	b := m.prompts
	b.mu.Lock()
	var req api.PromptAnswerRequest
	for id, pw := range b.prompts {
		if c, ok := pw.p.AnswerKeys[key]; ok {
			req = api.PromptAnswerRequest{ID: id, Option: c, By: "push"}
		}
	}
	b.mu.Unlock()
	if req.ID == "" {
		return nil, ErrBadAnswerToken
	}
	p, err := m.AnswerPrompt(ctx, req)
	if err != nil {
		return nil, ErrBadAnswerToken
	}
	return p, nil
}

// movedOn closes pane's prompts that ev shows its agent has left behind:
// a turn that started, ended or was interrupted, a session's end, or the
// end of the very tool call a prompt asked for (the person answered in the
// window). Their hooks are told no decision. It reports whether any closed.
func (b *promptBook) movedOn(pane string, ev agent.Event) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	closed := false
	for id, pw := range b.prompts {
		if pw.p.Pane != pane || !leaves(pw, ev) {
			continue
		}
		pw.answer <- api.PromptDecision{}
		delete(b.prompts, id)
		closed = true
	}
	return closed
}

// leaves reports whether ev leaves prompt pw behind.
func leaves(pw *promptWait, ev agent.Event) bool {
	switch ev.Kind {
	case agent.EvTurnStart, agent.EvTurnEnd, agent.EvInterrupt, agent.EvSessionEnd:
		return true
	case agent.EvTool:
		if ev.Before || ev.Tool != pw.p.Tool {
			return false
		}
		var buf bytes.Buffer
		return json.Compact(&buf, ev.ToolInput) == nil && bytes.Equal(buf.Bytes(), pw.input)
	}
	return false
}
