package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The Gemini API (generativelanguage v1beta), as Gemini CLI 0.61.0 uses it
// with GOOGLE_GEMINI_BASE_URL (shared/reference/real-agents.md §11): per
// prompt one generateContent that wants a JSON object back (its router),
// then streamGenerateContent?alt=sse with the tools; countTokens too.

type geminiPart struct {
	Text         string          `json:"text,omitempty"`
	Thought      bool            `json:"thought,omitempty"`
	FunctionCall json.RawMessage `json:"functionCall,omitempty"`
	FunctionResp *struct {
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse,omitempty"`
}

type geminiRequest struct {
	Contents []struct {
		Role  string       `json:"role"`
		Parts []geminiPart `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig struct {
		ResponseMimeType   string          `json:"responseMimeType"`
		ResponseSchema     json.RawMessage `json:"responseSchema"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
	} `json:"generationConfig"`

	modelName string
	stream    bool
}

func (r *geminiRequest) model() string { return r.modelName }
func (r *geminiRequest) streams() bool { return r.stream }
func (r *geminiRequest) tools() (names []string, side bool) {
	for _, t := range r.Tools {
		for _, d := range t.FunctionDeclarations {
			names = append(names, d.Name)
		}
	}
	return names, len(names) == 0
}

// events: a user content's text parts are a prompt (the last one that is
// not context), its functionResponse parts a tool's output.
func (r *geminiRequest) events() []event {
	var events []event
	for _, c := range r.Contents {
		if c.Role != "user" {
			continue
		}
		var texts []string
		for _, p := range c.Parts {
			switch {
			case p.FunctionResp != nil:
				events = append(events, event{toolResult: true, text: geminiOutput(p.FunctionResp.Response)})
			case p.Text != "" && !p.Thought:
				texts = append(texts, p.Text)
			}
		}
		if t, ok := lastPromptText(texts); ok && !isGeminiContext(t) {
			events = append(events, event{text: t})
		}
	}
	return events
}

// isGeminiContext is the setup text Gemini CLI sends as the first user
// turn (the date, the folder, its files): not a prompt.
func isGeminiContext(t string) bool {
	return strings.HasPrefix(strings.TrimSpace(t), "<session_context>") ||
		strings.HasPrefix(strings.TrimSpace(t), "This is the Gemini CLI.")
}

// geminiOutput is a functionResponse's text: its output field, or the
// whole response.
func geminiOutput(raw json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(raw, &m) == nil {
		for _, k := range []string{"output", "llmContent", "error"} {
			if s, ok := m[k].(string); ok {
				return s
			}
		}
	}
	return string(raw)
}

func geminiError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": msg, "status": "INVALID_ARGUMENT"}})
}

// handleGemini serves /v1beta/models/<model>:<method>.
func (s *Server) handleGemini(w http.ResponseWriter, r *http.Request) {
	model, method, _ := strings.Cut(r.PathValue("call"), ":")
	switch method {
	case "countTokens":
		s.record(Logged{Time: time.Now(), Method: r.Method, Endpoint: r.URL.Path, Status: http.StatusOK, UserAgent: r.UserAgent()})
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": 100})
		return
	case "generateContent", "streamGenerateContent":
	default:
		s.handleUnknown(w, r)
		return
	}
	req := geminiRequest{modelName: model, stream: method == "streamGenerateContent"}
	l, p, ok := s.begin(w, r, &req, geminiError, nil)
	if !ok {
		return
	}
	var parts []any
	finish := "STOP"
	switch schema := firstJSON(req.GenerationConfig.ResponseJSONSchema, req.GenerationConfig.ResponseSchema); {
	case schema != nil || req.GenerationConfig.ResponseMimeType == "application/json":
		// The router and the next-speaker check want a JSON object of a
		// schema; no script step is taken there.
		l.Side = true
		l.Answer = string(mustJSON(fillSchema(schema)))
		parts = []any{map[string]any{"text": l.Answer}}
	case p.run != "" && hasTool(l.Tools, "run_shell_command"):
		c := Call{ID: s.newID("call"), Tool: "run_shell_command", Command: p.run}
		l.Calls = []Call{c}
		parts = []any{map[string]any{"functionCall": map[string]any{
			"name": "run_shell_command", "args": map[string]any{"command": p.run, "description": "run"}}}}
	case p.ask != "" && hasTool(l.Tools, "ask_user"):
		// Gemini CLI's question tool, declared as ask_user by 0.59.0 and
		// 0.61.0 alike, only in an interactive session (its -p mode
		// leaves it out): one question of type choice (its default),
		// whose options must each have a label and a description.
		l.Calls = []Call{{ID: s.newID("call"), Tool: "ask_user", Command: p.ask}}
		parts = []any{map[string]any{"functionCall": map[string]any{
			"name": "ask_user", "args": map[string]any{"questions": []any{map[string]any{
				"question": p.ask, "header": "Question", "type": "choice", "options": yesNo, "multiSelect": false,
			}}}}}}
	default:
		l.Answer = p.text()
		parts = []any{map[string]any{"text": l.Answer}}
	}
	sleep := p.pause(l.Side)
	in := estimateTokens(string(mustJSON(req.Contents)))
	out := estimateTokens(l.Answer + p.run)
	// A cached part of the prompt and a few thoughts, numbers of their
	// own (Gemini counts the cached ones inside promptTokenCount).
	cached, thoughts := in/4, 3
	l.Usage = Usage{Input: in - cached, CacheRead: cached, Output: out, Reasoning: thoughts}
	s.record(l)
	body := map[string]any{
		"candidates": []any{map[string]any{
			"content": map[string]any{"role": "model", "parts": parts}, "finishReason": finish, "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": in, "candidatesTokenCount": out, "cachedContentTokenCount": cached,
			"thoughtsTokenCount": thoughts, "totalTokenCount": in + out + thoughts},
		"modelVersion": model,
	}
	if !req.stream {
		if s.sleep(r, sleep, nil) {
			writeJSON(w, http.StatusOK, body)
		}
		return
	}
	e := startSSE(w)
	// No keep-alive comments while it sleeps, unlike the other APIs:
	// Google's stream sends none, and Gemini CLI before 0.61 reads a
	// comment line as part of the next data segment ("Incomplete JSON
	// segment at the end", seen with 0.55.1 and 0.59.0). The request's
	// context still tells when the client left.
	if !s.sleep(r, sleep, nil) {
		return
	}
	b, _ := json.Marshal(body)
	if _, err := fmt.Fprintf(e.w, "data: %s\r\n\r\n", b); err == nil {
		_ = e.rc.Flush()
	}
}

// firstJSON is the first of the raw values that holds something.
func firstJSON(raws ...json.RawMessage) map[string]any {
	for _, raw := range raws {
		var m map[string]any
		if len(raw) > 0 && json.Unmarshal(raw, &m) == nil && m != nil {
			return m
		}
	}
	return nil
}

// fillSchema makes a value of a JSON schema (Gemini's upper-case types or
// JSON Schema's): an enum's "user" where it offers one (which ends Gemini
// CLI's next-speaker check), else its first; integers 50 (the router's
// must be 1-100); strings "fake".
func fillSchema(schema map[string]any) any {
	if schema == nil {
		return map[string]any{}
	}
	if enum, ok := schema["enum"].([]any); ok && len(enum) > 0 {
		for _, v := range enum {
			if v == "user" {
				return v
			}
		}
		return enum[0]
	}
	switch strings.ToLower(fmt.Sprint(schema["type"])) {
	case "object":
		out := map[string]any{}
		props, _ := schema["properties"].(map[string]any)
		for k, v := range props {
			sub, _ := v.(map[string]any)
			out[k] = fillSchema(sub)
		}
		return out
	case "array":
		return []any{}
	case "integer", "number":
		return 50
	case "boolean":
		return false
	}
	return "fake"
}
