package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
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
			events = append(events, event{text: p})
		}
	}
	return events
}

func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {
	var req anthropicRequest
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &req); err != nil {
		s.record(Logged{Time: time.Now(), Method: r.Method, Endpoint: r.URL.Path, Status: http.StatusBadRequest, UserAgent: r.UserAgent()})
		anthropicError(w, http.StatusBadRequest, "fake server: bad request body: "+err.Error())
		return
	}
	l := Logged{
		Time: time.Now(), Method: r.Method, Endpoint: r.URL.Path, Status: http.StatusOK,
		Model: req.Model, Stream: req.Stream, UserAgent: r.UserAgent(), Body: body,
	}
	for _, t := range req.Tools {
		l.Tools = append(l.Tools, t.Name)
	}
	l.Side = len(l.Tools) == 0
	p := decide(anthropicEvents(&req))
	l.Prompt, l.ScriptFrom = p.prompt, p.scriptFrom

	if !l.Side && p.script.apiError != 0 {
		l.Status = p.script.apiError
		s.record(l)
		anthropicError(w, p.script.apiError, fmt.Sprintf("fake server: forced %d", p.script.apiError))
		return
	}

	// The answer: one text block, or one Bash tool_use when the script
	// still has a command to run and the request offers Bash (an
	// AskUserQuestion for a question).
	var block map[string]any
	var input map[string]any
	stop := "end_turn"
	text := p.say
	if p.run != "" && hasTool(l.Tools, "Bash") {
		id := s.newID("toolu")
		input = map[string]any{"command": p.run, "description": "run"}
		block = map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": input}
		stop = "tool_use"
		l.Calls = []Call{{ID: id, Tool: "Bash", Command: p.run}}
		text = ""
	} else if p.ask != "" && hasTool(l.Tools, "AskUserQuestion") {
		id := s.newID("toolu")
		input = map[string]any{"questions": []any{map[string]any{
			"question": p.ask, "header": "Question", "options": yesNo, "multiSelect": false,
		}}}
		block = map[string]any{"type": "tool_use", "id": id, "name": "AskUserQuestion", "input": input}
		stop = "tool_use"
		l.Calls = []Call{{ID: id, Tool: "AskUserQuestion", Command: p.ask}}
		text = ""
	} else {
		if p.run != "" || p.ask != "" {
			// No Bash on offer (a side request): say what we would run.
			text = defaultAnswer
			if p.script.hasSay {
				text = p.script.say
			}
		}
		block = map[string]any{"type": "text", "text": text}
	}
	l.Answer = text
	msgID := s.newID("msg")
	inTokens := estimateTokens(string(mustJSON(req.Messages)))
	outTokens := estimateTokens(text + p.run)
	sleep := p.script.sleep
	if l.Side {
		sleep = 0
	}

	if !req.Stream {
		s.record(l)
		if !s.sleep(r, sleep, nil) {
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": msgID, "type": "message", "role": "assistant", "model": req.Model,
			"content": []any{block}, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": inTokens, "output_tokens": outTokens},
		})
		return
	}

	s.record(l)
	e := startSSE(w)
	err := e.event("message_start", map[string]any{
		"type": "message_start",
		"message": map[string]any{
			"id": msgID, "type": "message", "role": "assistant", "model": req.Model,
			"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{
				"input_tokens": inTokens, "output_tokens": 1,
				"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
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
	if input != nil {
		start := map[string]any{}
		for k, v := range block {
			start[k] = v
		}
		start["input"] = map[string]any{}
		_ = e.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": start})
		_ = e.event("content_block_delta", map[string]any{
			"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(mustJSON(input))},
		})
	} else {
		_ = e.event("content_block_start", map[string]any{
			"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""},
		})
		for _, c := range chunks(text) {
			_ = e.event("content_block_delta", map[string]any{
				"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "text_delta", "text": c},
			})
		}
	}
	_ = e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	_ = e.event("message_delta", map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": outTokens},
	})
	_ = e.event("message_stop", map[string]any{"type": "message_stop"})
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
