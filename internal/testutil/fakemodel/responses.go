package fakemodel

import (
	"encoding/json"
	"net/http"
	"time"
)

// The OpenAI Responses API, as Codex uses it (its only wire API since
// "chat" was dropped).

type responsesRequest struct {
	Model  string          `json:"model"`
	Stream bool            `json:"stream"`
	Input  json.RawMessage `json:"input"`
	Tools  []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
	Text struct {
		Format struct {
			Type   string     `json:"type"`
			Schema jsonSchema `json:"schema"`
		} `json:"format"`
	} `json:"text"`
}

// jsonSchema is the part of a JSON schema needed to fill in an object.
type jsonSchema struct {
	Type       string                `json:"type"`
	Properties map[string]jsonSchema `json:"properties"`
	Required   []string              `json:"required"`
	MaxLength  int                   `json:"maxLength"`
}

// sample makes a value that satisfies the schema. Codex asks for its
// thread title as structured output ({"title": ...}), and drops a title
// that does not parse.
func (js jsonSchema) sample() any {
	switch js.Type {
	case "object":
		obj := map[string]any{}
		for _, k := range js.Required {
			obj[k] = js.Properties[k].sample()
		}
		return obj
	case "array":
		return []any{}
	case "number", "integer":
		return 0
	case "boolean":
		return false
	case "null":
		return nil
	}
	s := "Fake task"
	if js.MaxLength > 0 && len(s) > js.MaxLength {
		s = s[:js.MaxLength]
	}
	return s
}

type responsesItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Output  json.RawMessage `json:"output"` // function_call_output
}

// responsesEvents turns the input items into the scripting events.
// Developer and assistant messages are skipped, and so are the context
// blocks Codex sends with the user role (environment, AGENTS.md).
func responsesEvents(req *responsesRequest) []event {
	var s string
	if json.Unmarshal(req.Input, &s) == nil {
		return []event{{text: s}}
	}
	var items []responsesItem
	if json.Unmarshal(req.Input, &items) != nil {
		return nil
	}
	var events []event
	for _, it := range items {
		switch it.Type {
		case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
			var out string
			for _, t := range outputText(it.Output) {
				out += t + "\n"
			}
			events = append(events, event{toolResult: true, text: out})
		case "message", "":
			if it.Role != "user" {
				continue
			}
			if p, ok := lastPromptText(rawText(it.Content)); ok {
				events = append(events, event{text: p})
			}
		}
	}
	return events
}

// outputText reads a function_call_output's output, which is a string, or
// an object or list carrying text.
func outputText(raw json.RawMessage) []string {
	if t := rawText(raw); t != nil {
		return t
	}
	var obj struct {
		Content json.RawMessage `json:"content"`
		Output  string          `json:"output"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		if obj.Output != "" {
			return []string{obj.Output}
		}
		return rawText(obj.Content)
	}
	return nil
}

// shellCall builds the function-call arguments for cmd with whichever
// shell tool the request offers, preferring exec_command (Codex 0.171's
// default). It returns "" when no shell tool is on offer.
func shellCall(tools []string, cmd string, escalate bool) (name string, args map[string]any) {
	switch {
	case hasTool(tools, "exec_command"):
		// As long as Codex lets a call wait (30 s): a slower command
		// (st worker start of a Claude, st worker wait) would otherwise
		// come back still running after the default 10 s, and the script
		// would go on before it ended.
		name, args = "exec_command", map[string]any{"cmd": cmd, "yield_time_ms": 30000}
	case hasTool(tools, "shell_command"):
		name, args = "shell_command", map[string]any{"command": cmd}
	case hasTool(tools, "shell"):
		name, args = "shell", map[string]any{"command": []string{"bash", "-lc", cmd}}
	default:
		return "", nil
	}
	if escalate {
		args["sandbox_permissions"] = "require_escalated"
		args["justification"] = "needs it"
	}
	return name, args
}

func (r *responsesRequest) model() string   { return r.Model }
func (r *responsesRequest) streams() bool   { return r.Stream }
func (r *responsesRequest) events() []event { return responsesEvents(r) }

// tools names the tools on offer; Codex's title request offers none and
// must get no tool call.
func (r *responsesRequest) tools() (names []string, side bool) {
	for _, t := range r.Tools {
		if t.Name != "" {
			names = append(names, t.Name)
		}
	}
	return names, len(r.Tools) == 0
}

func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	var req responsesRequest
	l, p, ok := s.begin(w, r, &req, openAIError, openAILimit)
	if !ok {
		return
	}
	s.usedHeadersOpenAI(w)
	item, text := s.responsesItem(&l, p, &req)
	l.Answer = text

	respID := s.newID("resp")
	created := time.Now().Unix()
	inTokens := estimateTokens(string(req.Input))
	outTokens := estimateTokens(text + p.run)
	// A cached part of the input and a few reasoning tokens, numbers of
	// their own: OpenAI counts them inside input_tokens and output_tokens.
	cached, reasoning := inTokens/4, 5
	l.Usage = Usage{Input: inTokens - cached, CacheRead: cached, Output: outTokens, Reasoning: reasoning}
	s.record(l)
	response := func(status string, output []any) map[string]any {
		m := map[string]any{
			"id": respID, "object": "response", "created_at": created,
			"status": status, "model": req.Model, "output": output,
		}
		if status == "completed" {
			m["usage"] = map[string]any{
				"input_tokens": inTokens, "input_tokens_details": map[string]any{"cached_tokens": cached},
				"output_tokens": outTokens + reasoning, "output_tokens_details": map[string]any{"reasoning_tokens": reasoning},
				"total_tokens": inTokens + outTokens + reasoning,
			}
		}
		return m
	}
	sleep := p.pause(l.Side)
	if !req.Stream {
		if !s.sleep(r, sleep, nil) {
			return
		}
		writeJSON(w, http.StatusOK, response("completed", []any{item}))
		return
	}
	s.streamResponse(startSSE(w), r, item, text, sleep, response)
}

// responsesItem is the answer of plan p: a function call when the script
// still has a command or a question and the request offers its tool
// (logged in l), else a message (the schema's sample for a json_schema
// request); text is the message's.
func (s *Server) responsesItem(l *Logged, p plan, req *responsesRequest) (item map[string]any, text string) {
	call := func(name string, args any, c Call) map[string]any {
		c.ID, c.Tool = s.newID("call"), name
		l.Calls = []Call{c}
		return map[string]any{
			"type": "function_call", "id": s.newID("fc"), "status": "completed",
			"name": name, "arguments": string(mustJSON(args)), "call_id": c.ID,
		}
	}
	if name, args := shellCall(l.Tools, p.run, p.script.escalate); p.run != "" && name != "" {
		return call(name, args, Call{Command: p.run, Escalated: p.script.escalate}), ""
	}
	if p.ask != "" && hasTool(l.Tools, "request_user_input") {
		return call("request_user_input", map[string]any{"questions": []any{map[string]any{
			"id": "question", "header": "Question", "question": p.ask, "options": yesNo,
		}}}, Call{Command: p.ask}), ""
	}
	text = p.text()
	if req.Text.Format.Type == "json_schema" {
		text = string(mustJSON(req.Text.Format.Schema.sample()))
	}
	return map[string]any{
		"type": "message", "id": s.newID("msg"), "status": "completed", "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}},
	}, text
}

// streamResponse streams item as server-sent events, keeping the
// connection alive while it sleeps.
func (s *Server) streamResponse(e *sse, r *http.Request, item map[string]any, text string, sleep time.Duration, response func(string, []any) map[string]any) {
	seq := 0
	send := func(name string, data map[string]any) error {
		data["type"] = name
		data["sequence_number"] = seq
		seq++
		return e.event(name, data)
	}
	if send("response.created", map[string]any{"response": response("in_progress", []any{})}) != nil ||
		send("response.in_progress", map[string]any{"response": response("in_progress", []any{})}) != nil {
		return
	}
	if !s.sleep(r, sleep, func() error { return e.comment("keep-alive") }) {
		return
	}
	if item["type"] == "function_call" {
		_ = send("response.output_item.added", map[string]any{"output_index": 0, "item": item})
		_ = send("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	} else {
		id := item["id"]
		part := func(t string) map[string]any {
			return map[string]any{"type": "output_text", "text": t, "annotations": []any{}}
		}
		added := map[string]any{"type": "message", "id": id, "status": "in_progress", "role": "assistant", "content": []any{}}
		_ = send("response.output_item.added", map[string]any{"output_index": 0, "item": added})
		_ = send("response.content_part.added", map[string]any{"item_id": id, "output_index": 0, "content_index": 0, "part": part("")})
		for _, c := range chunks(text) {
			_ = send("response.output_text.delta", map[string]any{"item_id": id, "output_index": 0, "content_index": 0, "delta": c})
		}
		_ = send("response.output_text.done", map[string]any{"item_id": id, "output_index": 0, "content_index": 0, "text": text})
		_ = send("response.content_part.done", map[string]any{"item_id": id, "output_index": 0, "content_index": 0, "part": part(text)})
		_ = send("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	}
	_ = send("response.completed", map[string]any{"response": response("completed", []any{item})})
}

// openAIError answers in the OpenAI error shape Codex parses.
func openAIError(w http.ResponseWriter, code int, msg string) {
	kind := "invalid_request_error"
	switch {
	case code == 429:
		kind = "rate_limit_exceeded"
	case code >= 500:
		kind = "server_error"
	}
	writeJSON(w, code, map[string]any{
		"error": map[string]any{"message": msg, "type": kind, "param": nil, "code": nil},
	})
}
