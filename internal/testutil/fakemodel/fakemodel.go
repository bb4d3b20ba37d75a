// Package fakemodel is a scripted stand-in for the Anthropic Messages API,
// the OpenAI Responses API and the Gemini API, so that the real Claude
// Code, Codex and Gemini CLI programs can be tested offline on 127.0.0.1.
//
// The model is driven by markers in the last prompt the person typed (or in
// a tool result the model just got, such as a task file the agent printed):
//
//	RUN: <cmd>      call the shell tool with cmd; several RUN lines run in order, one per turn
//	AGENT: <prompt> Claude only: call the Agent tool (a subagent, in the background)
//	TEAMMATE: <name> <prompt>  Claude only: call the Agent tool with a name, which
//	                spawns a teammate when agent teams are on; the prompt names a task
//	                file, whose markers the teammate follows
//	ASK: <question> call the agent's question tool (Claude's AskUserQuestion, Codex's
//	                request_user_input, Gemini's ask_user) with options "Yes" and "No";
//	                a step like RUN
//	SAY: <text>     the final answer (default "Tool finished." after a tool, else "Hello from the fake model.")
//	SLEEP: <n>      wait n seconds before each answer, sending keep-alives meanwhile
//	APIERROR: <code> answer with that HTTP error instead
//	LIMIT: <n>      the plan's usage limit is reached, for n seconds from the first
//	                request that carries the marker: each request until then gets the
//	                limit's answer (a Claude subscriber's 429 with the unified headers,
//	                Codex's usage_limit_reached), and the script goes on after it; a
//	                prompt "continue" goes on with the script where it stopped
//	TIMEOUT: <n>    Claude only: each Bash call carries a timeout of n seconds (the
//	                tool's own is 2 minutes; st's skill asks for its most, 600 s)
//	ESCALATE        Codex only: ask for the command to run outside the sandbox
//
// The server keeps one piece of state, a LIMIT:'s first request (by the
// line that carried it), so that its reset is fixed.
//
// Markers may share a line ("RUN: echo hi > out.txt SAY: all done"), because
// a prompt typed into a TUI is one line. The server holds no conversation
// state: it works out its next step from the messages in each request.
//
// It uses only the standard library, so the tests that need it pull in
// nothing else.
package fakemodel

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Server is a fake model server. Its zero value is not usable; use New or
// Start.
type Server struct {
	srv  *http.Server
	done chan struct{} // closed by Close, so that sleeping answers end
	seq  atomic.Int64  // makes ids unique within this process

	mu     sync.Mutex
	limits map[string]time.Time // a LIMIT: marker's reset, by the text that carried it
	// near is the share of a subscriber's limits every answer says is
	// used (SetUsed), nil for none.
	near     *Used
	addr     string
	log      []Logged
	closeErr error
	closed   bool
}

// Logged is one request the server answered, for test assertions.
type Logged struct {
	Time     time.Time
	Method   string
	Endpoint string // the path, without the query ("/v1/messages")
	Status   int
	Model    string
	Stream   bool
	Tools    []string // names of the tools the request offered
	// Side is true for a request that offered no tools at all, such as
	// Codex's per-turn title generation: it gets plain text and ignores
	// RUN, SLEEP and APIERROR.
	Side bool
	// Prompt is the last prompt the person typed, as the server found it.
	Prompt string
	// ScriptFrom says where the markers obeyed came from: "prompt" or
	// "tool_result".
	ScriptFrom string
	Calls      []Call // tool calls the answer made
	Answer     string // text the answer carried
	UserAgent  string
	// Limited is the reset of the usage limit this request was refused
	// at (LIMIT:), zero when it was not.
	Limited time.Time
	// Body is the raw request body, for assertions the fields above miss.
	Body []byte
	// Usage is the tokens the answer said it used (Gemini's: none kept).
	Usage Usage
}

// Usage is the tokens an answer reported, split as st's ledger splits
// them: Input the prompt tokens not read from a cache, CacheRead those
// that were, CacheWrite those written to it, Output the answer's tokens
// other than reasoning, Reasoning the hidden ones (OpenAI's
// input_tokens hold its cached ones, its output_tokens its reasoning
// ones). Each kind gets a number of its own, so that a count put in the
// wrong kind shows.
type Usage struct {
	Input, Output, CacheRead, CacheWrite, Reasoning int
}

// Total is every kind summed.
func (u Usage) Total() int { return u.Input + u.Output + u.CacheRead + u.CacheWrite + u.Reasoning }

// Call is a tool call the fake model made.
type Call struct {
	ID        string
	Tool      string // "Bash", "exec_command", "Agent", ...
	Command   string // the shell command, or the Agent's prompt
	Name      string // the Agent's name (a teammate), if any
	Escalated bool
}

// New returns a server that is not listening yet; see Serve.
func New() *Server {
	s := &Server{done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.handleMessages)
	mux.HandleFunc("POST /v1/messages/count_tokens", s.handleCountTokens)
	mux.HandleFunc("POST /v1/responses", s.handleResponses)
	mux.HandleFunc("POST /v1beta/models/{call}", s.handleGemini)
	mux.HandleFunc("/{$}", s.handleRoot)
	mux.HandleFunc("/", s.handleUnknown)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return s
}

// Start runs a server on 127.0.0.1 on a free port until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("fakemodel: listen: %v", err)
	}
	s := New()
	s.attach(ln)
	go func() { _ = s.srv.Serve(ln) }()
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Serve answers requests on ln until Close, like http.Server.Serve; URL
// is valid from the moment Serve is called.
func (s *Server) Serve(ln net.Listener) error {
	s.attach(ln)
	err := s.srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func (s *Server) attach(ln net.Listener) {
	s.mu.Lock()
	s.addr = ln.Addr().String()
	s.mu.Unlock()
}

// Close stops the server and ends any answer that is still sleeping.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.closeErr
	}
	s.closed = true
	close(s.done)
	s.closeErr = s.srv.Close()
	return s.closeErr
}

// URL is the server's root, "http://127.0.0.1:PORT": the value for
// ANTHROPIC_BASE_URL. Codex's provider base_url is URL()+"/v1".
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.addr == "" {
		return ""
	}
	return "http://" + s.addr
}

// Requests returns a copy of the request log, oldest first.
func (s *Server) Requests() []Logged {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Logged, len(s.log))
	copy(out, s.log)
	return out
}

func (s *Server) record(l Logged) {
	s.mu.Lock()
	s.log = append(s.log, l)
	s.mu.Unlock()
}

// newID gives ids that stay unique across server restarts: Claude silently
// drops a tool_use whose id it has seen before in the conversation.
func (s *Server) newID(prefix string) string {
	return fmt.Sprintf("%s_%d_%d", prefix, time.Now().UnixNano(), s.seq.Add(1))
}

func (s *Server) handleRoot(w http.ResponseWriter, r *http.Request) {
	// Claude probes the base URL with HEAD /.
	s.record(Logged{Time: time.Now(), Method: r.Method, Endpoint: r.URL.Path, Status: http.StatusOK, UserAgent: r.UserAgent()})
	w.WriteHeader(http.StatusOK)
}

func (s *Server) handleUnknown(w http.ResponseWriter, r *http.Request) {
	// Logged, so that a test shows what a new client version asks for.
	s.record(Logged{Time: time.Now(), Method: r.Method, Endpoint: r.URL.Path, Status: http.StatusNotFound, UserAgent: r.UserAgent()})
	http.Error(w, `{"error":{"type":"not_found_error","message":"fake server: no such endpoint"}}`, http.StatusNotFound)
}

func (s *Server) handleCountTokens(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.record(Logged{Time: time.Now(), Method: r.Method, Endpoint: r.URL.Path, Status: http.StatusOK, UserAgent: r.UserAgent()})
	writeJSON(w, http.StatusOK, map[string]any{"input_tokens": estimateTokens(string(body))})
}

// sleep waits d, calling ping every interval, and reports whether the
// answer should still be sent (false when the client left or the server
// closed).
func (s *Server) sleep(r *http.Request, d time.Duration, ping func() error) bool {
	if d <= 0 {
		return true
	}
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-deadline.C:
			return true
		case <-tick.C:
			if ping != nil && ping() != nil {
				return false
			}
		case <-r.Context().Done():
			return false
		case <-s.done:
			return false
		}
	}
}

// sse writes server-sent events and flushes each one, so the client sees
// every event as soon as it is made.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func startSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	e := &sse{w: w, rc: http.NewResponseController(w)}
	_ = e.rc.Flush()
	return e
}

func (e *sse) event(name string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", name, b); err != nil {
		return err
	}
	return e.rc.Flush()
}

func (e *sse) comment(text string) error {
	if _, err := fmt.Fprintf(e.w, ": %s\n\n", text); err != nil {
		return err
	}
	return e.rc.Flush()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func estimateTokens(s string) int { return len(s)/4 + 1 }

// rawText reads content that may be a string or a list of text blocks, as
// both tool results and messages may be.
func rawText(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) == nil {
		var out []string
		for _, b := range blocks {
			if b.Text != "" {
				out = append(out, b.Text)
			}
		}
		return out
	}
	return nil
}

func hasTool(tools []string, name string) bool {
	for _, t := range tools {
		if t == name {
			return true
		}
	}
	return false
}

// chunks splits text into a few pieces, so that streamed answers arrive as
// several deltas the way a real model's do.
func chunks(text string) []string {
	words := strings.SplitAfter(text, " ")
	var out []string
	for i := 0; i < len(words); i += 4 {
		j := min(i+4, len(words))
		out = append(out, strings.Join(words[i:j], ""))
	}
	if len(out) == 0 {
		out = []string{""}
	}
	return out
}

// yesNo are the options of every question the fake model asks.
var yesNo = []any{
	map[string]any{"label": "Yes", "description": "Go on."},
	map[string]any{"label": "No", "description": "Stop here."},
}

// apiRequest is a request of either API, as the handlers share it.
type apiRequest interface {
	model() string
	streams() bool
	events() []event
	// tools names the tools on offer; side marks a side request (a title,
	// a summary), which no tool call may come of.
	tools() (names []string, side bool)
}

// begin reads a request of either API into req, logs it and decides the
// script's next step. A body that does not decode and an error the script
// forces are answered here, by fail in that API's shape; ok is false then.
//
// A script at its usage limit (LIMIT:) is answered by limit, in that API's
// shape, or by fail's 429 when the API has no limit answer of its own.
func (s *Server) begin(w http.ResponseWriter, r *http.Request, req apiRequest, fail func(http.ResponseWriter, int, string), limit func(http.ResponseWriter, time.Time)) (l Logged, p plan, ok bool) {
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, req); err != nil {
		s.record(Logged{Time: time.Now(), Method: r.Method, Endpoint: r.URL.Path, Status: http.StatusBadRequest, UserAgent: r.UserAgent()})
		fail(w, http.StatusBadRequest, "fake server: bad request body: "+err.Error())
		return l, p, false
	}
	l = Logged{
		Time: time.Now(), Method: r.Method, Endpoint: r.URL.Path, Status: http.StatusOK,
		Model: req.model(), Stream: req.streams(), UserAgent: r.UserAgent(), Body: body,
	}
	l.Tools, l.Side = req.tools()
	p = decide(req.events())
	l.Prompt, l.ScriptFrom = p.prompt, p.scriptFrom
	if !l.Side && p.script.apiError != 0 {
		l.Status = p.script.apiError
		s.record(l)
		fail(w, p.script.apiError, fmt.Sprintf("fake server: forced %d", p.script.apiError))
		return l, p, false
	}
	if !l.Side && p.script.limit > 0 {
		if resets := s.limitResets(p.script.limitLine, p.script.limit); l.Time.Before(resets) {
			l.Status, l.Limited = http.StatusTooManyRequests, resets
			s.record(l)
			if limit == nil {
				fail(w, http.StatusTooManyRequests, "fake server: usage limit reached")
			} else {
				limit(w, resets)
			}
			return l, p, false
		}
	}
	return l, p, true
}
