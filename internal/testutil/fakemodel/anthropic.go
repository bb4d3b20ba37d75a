package fakemodel

import (
	"encoding/json"
	"net/http"
	"time"
)

// The Anthropic Messages API, as Claude Code uses it.

type anthropicRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

type anthropicBlock struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Content json.RawMessage `json:"content"` // tool_result
}

// anthropicEvents turns messages into the scripting events. Only user
// messages matter: Claude 2.1.332 puts a system-role message after the
// user's, so "the last message" is not the prompt.
func anthropicEvents(req *anthropicRequest) []event {
	var events []event
	for _, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			if !isContextText(s) {
				events = append(events, event{text: s})
			}
			continue
		}
		var blocks []anthropicBlock
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		var texts []string
		for _, b := range blocks {
			switch b.Type {
			case "tool_result":
				var out string
				for _, t := range rawText(b.Content) {
					out += t + "\n"
				}
				events = append(events, event{toolResult: true, text: out})
			case "text":
				texts = append(texts, b.Text)
			}
		}
		if p, ok := lastPromptText(texts); ok {
			// After a failed turn (an API error, a usage limit) Claude
			// merges it with the next into one message: a "continue" there
			// goes on with the script of the failed one.
			if isContinue(p) {
				for _, t := range texts[:len(texts)-1] {
					if !isContextText(t) && !isContinue(t) {
						events = append(events, event{text: t})
					}
				}
			}
			events = append(events, event{text: p})
		}
	}
	return events
}

func (r *anthropicRequest) model() string   { return r.Model }
func (r *anthropicRequest) streams() bool   { return r.Stream }
func (r *anthropicRequest) events() []event { return anthropicEvents(r) }
func (r *anthropicRequest) tools() (names []string, side bool) {
	for _, t := range r.Tools {
		names = append(names, t.Name)
	}
	return names, len(names) == 0
}

func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {
	var req anthropicRequest
	l, p, ok := s.begin(w, r, &req, anthropicError, anthropicLimit)
	if !ok {
		return
	}
	s.usedHeaders(w)
	a := s.anthropicAnswer(&l, p)
	l.Answer = a.text
	a.id, a.model = s.newID("msg"), req.Model
	a.inTokens = estimateTokens(string(mustJSON(req.Messages)))
	a.outTokens = estimateTokens(a.text + p.run)
	// Cache numbers of their own, so that a reader that mixes the kinds
	// up counts wrong.
	a.cacheRead, a.cacheWrite = 3*a.inTokens, 11
	l.Usage = Usage{Input: a.inTokens, Output: a.outTokens, CacheRead: a.cacheRead, CacheWrite: a.cacheWrite}
	sleep := p.pause(l.Side)
	s.record(l)
	if !req.Stream {
		if !s.sleep(r, sleep, nil) {
			return
		}
		content := []any{a.block}
		if a.preface != "" {
			content = []any{map[string]any{"type": "text", "text": a.preface}, a.block}
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": a.id, "type": "message", "role": "assistant", "model": a.model,
			"content": content, "stop_reason": a.stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": a.inTokens, "output_tokens": a.outTokens,
				"cache_creation_input_tokens": a.cacheWrite, "cache_read_input_tokens": a.cacheRead},
		})
		return
	}
	s.streamMessage(startSSE(w), r, a, sleep)
}

// anthropicReply is one answer of the Messages API: one content block.
type anthropicReply struct {
	block     map[string]any
	input     map[string]any // a tool call's input (nil for text)
	stop      string
	text      string // the answer's text: none with a tool call
	id, model string
	inTokens  int
	outTokens int
	// cacheRead and cacheWrite are its cache_read_input_tokens and
	// cache_creation_input_tokens.
	cacheRead, cacheWrite int
	// preface is a text block before a tool call's block (PREFACE:).
	preface string
}

// anthropicAnswer is the answer of plan p: one text block, or one
// tool_use when the script still has a call to make and the request
// offers its tool (Bash, or opencode's bash, for a command, AskUserQuestion for a question,
// Agent or a CALL:'s tool); the call is logged in l.
func (s *Server) anthropicAnswer(l *Logged, p plan) anthropicReply {
	call := func(tool string, input map[string]any, c Call) anthropicReply {
		c.ID, c.Tool = s.newID("toolu"), tool
		l.Calls = []Call{c}
		return anthropicReply{input: input, stop: "tool_use", preface: p.script.preface,
			block: map[string]any{"type": "tool_use", "id": c.ID, "name": tool, "input": input}}
	}
	// Claude Code's shell tool is Bash; opencode's, on the same API, is
	// bash (reference §12).
	shell := "Bash"
	if !hasTool(l.Tools, shell) && hasTool(l.Tools, "bash") {
		shell = "bash"
	}
	switch tool, in := agentCall(p.agent); {
	case p.run != "" && hasTool(l.Tools, shell):
		in := map[string]any{"command": p.run, "description": "run"}
		if p.script.timeout > 0 && shell == "Bash" {
			in["timeout"] = p.script.timeout.Milliseconds()
		}
		return call(shell, in, Call{Command: p.run})
	case p.ask != "" && hasTool(l.Tools, "AskUserQuestion"):
		return call("AskUserQuestion", map[string]any{"questions": []any{map[string]any{
			"question": p.ask, "header": "Question", "options": yesNo, "multiSelect": false,
		}}}, Call{Command: p.ask})
	case in != nil && hasTool(l.Tools, tool):
		return call(tool, in, Call{Command: p.agent.arg, Name: p.agent.member})
	}
	text := p.text()
	return anthropicReply{block: map[string]any{"type": "text", "text": text}, stop: "end_turn", text: text}
}

// streamMessage streams answer a as server-sent events, with pings while
// it sleeps.
func (s *Server) streamMessage(e *sse, r *http.Request, a anthropicReply, sleep time.Duration) {
	err := e.event("message_start", map[string]any{
		"type": "message_start",
		"message": map[string]any{
			"id": a.id, "type": "message", "role": "assistant", "model": a.model,
			"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{
				"input_tokens": a.inTokens, "output_tokens": 1,
				"cache_creation_input_tokens": a.cacheWrite, "cache_read_input_tokens": a.cacheRead,
			},
		},
	})
	if err != nil {
		return
	}
	ping := func() error { return e.event("ping", map[string]any{"type": "ping"}) }
	if ping() != nil || !s.sleep(r, sleep, ping) {
		return
	}
	idx := 0
	if a.input != nil && a.preface != "" {
		// A text block first, then the call: one response, two blocks.
		_ = e.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		_ = e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": a.preface}})
		_ = e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		idx = 1
	}
	if a.input != nil {
		start := map[string]any{}
		for k, v := range a.block {
			start[k] = v
		}
		start["input"] = map[string]any{}
		_ = e.event("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": start})
		_ = e.event("content_block_delta", map[string]any{
			"type": "content_block_delta", "index": idx,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(mustJSON(a.input))},
		})
	} else {
		_ = e.event("content_block_start", map[string]any{
			"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""},
		})
		for _, c := range chunks(a.text) {
			_ = e.event("content_block_delta", map[string]any{
				"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "text_delta", "text": c},
			})
		}
	}
	_ = e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
	_ = e.event("message_delta", map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": a.stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": a.outTokens},
	})
	_ = e.event("message_stop", map[string]any{"type": "message_stop"})
}

// agentCall is the tool and input of an AGENT:, TEAMMATE: or CALL: step
// (nil input for none). The Agent tool requires a short description: the
// teammate's name, or the start of the prompt.
func agentCall(st *step) (string, map[string]any) {
	switch {
	case st == nil:
		return "", nil
	case st.tool == "call":
		var in map[string]any
		if json.Unmarshal([]byte(st.arg), &in) != nil {
			return "", nil
		}
		return st.name, in
	}
	d := "teammate " + st.member
	if st.member == "" {
		d = st.arg
		if len(d) > 40 {
			d = d[:40]
		}
	}
	in := map[string]any{"description": d, "prompt": st.arg}
	if st.member != "" {
		in["name"] = st.member
	}
	return "Agent", in
}

// anthropicError answers in the shape Claude Code shows as
// "API Error: <code> <message>".
func anthropicError(w http.ResponseWriter, code int, msg string) {
	kind := map[int]string{
		400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
		404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
		500: "api_error", 529: "overloaded_error",
	}[code]
	if kind == "" {
		kind = "api_error"
	}
	writeJSON(w, code, map[string]any{
		"type":  "error",
		"error": map[string]any{"type": kind, "message": msg},
	})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
