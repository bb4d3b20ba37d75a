package fakemodel

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseScript(t *testing.T) {
	tests := []struct {
		text  string
		want  script
		found bool
	}{
		{"hello", script{}, false},
		{"RUN: echo hi > out.txt SAY: all done", script{steps: []step{{tool: "shell", arg: "echo hi > out.txt"}}, say: "all done", hasSay: true}, true},
		{"do this\nRUN: a\n  RUN:b\nSAY: x y\n", script{steps: []step{{tool: "shell", arg: "a"}, {tool: "shell", arg: "b"}}, say: "x y", hasSay: true}, true},
		{"Please RUN: ls\tSLEEP: 1.5", script{steps: []step{{tool: "shell", arg: "ls"}}, sleep: 1500 * time.Millisecond}, true},
		{"APIERROR: 400", script{apiError: 400}, true},
		{"APIERROR: 200", script{}, true},
		{"ESCALATE RUN: rm x", script{steps: []step{{tool: "shell", arg: "rm x"}}, escalate: true}, true},
		{"ESCALATED plans", script{}, false},
		{"TIMEOUT: 600 RUN: st worker wait", script{steps: []step{{tool: "shell", arg: "st worker wait"}}, timeout: 600 * time.Second}, true},
		{"TIMEOUT: soon RUN: a", script{steps: []step{{tool: "shell", arg: "a"}}}, true},
		{"XRUN: no", script{}, false},
		{"SAY:", script{hasSay: true}, true},
		{"AGENT: look around SAY: ok", script{steps: []step{{tool: "agent", arg: "look around"}}, say: "ok", hasSay: true}, true},
		{"TEAMMATE: alpha Your task is in the file /w/a.md TEAMMATE: beta do b", script{steps: []step{
			{tool: "agent", member: "alpha", arg: "Your task is in the file /w/a.md"}, {tool: "agent", member: "beta", arg: "do b"}}}, true},
		{"TEAMMATE: alone", script{}, true},
		{`CALL: SendMessage {"to":"alpha","message":"go"} RUN: ls`, script{steps: []step{
			{tool: "call", name: "SendMessage", arg: `{"to":"alpha","message":"go"}`}, {tool: "shell", arg: "ls"}}}, true},
		{"CALL: SendMessage not json", script{}, true},
		{"CALL: TaskList []", script{}, true},
		{"RUN: a ASK: Which one? RUN: b", script{steps: []step{{tool: "shell", arg: "a"}, {tool: "ask", arg: "Which one?"}, {tool: "shell", arg: "b"}}}, true},
		{"RUN: ASK: x", script{steps: []step{{tool: "ask", arg: "x"}}}, true},
	}
	for _, tt := range tests {
		got, found := parseScript(tt.text)
		if !reflect.DeepEqual(got, tt.want) || found != tt.found {
			t.Errorf("parseScript(%q) = %+v, %v; want %+v, %v", tt.text, got, found, tt.want, tt.found)
		}
	}
}

func TestDecide(t *testing.T) {
	prompt := func(s string) event { return event{text: s} }
	result := func(s string) event { return event{toolResult: true, text: s} }
	tests := []struct {
		name     string
		events   []event
		run, say string
		from     string
		ask      string
	}{
		{"plain", []event{prompt("hi")}, "", defaultAnswer, "prompt", ""},
		{"first run", []event{prompt("RUN: a RUN: b")}, "a", "", "prompt", ""},
		{"second run", []event{prompt("RUN: a\nRUN: b"), result("")}, "b", "", "prompt", ""},
		{"runs done", []event{prompt("RUN: a\nRUN: b"), result(""), result("")}, "", defaultAfterTool, "prompt", ""},
		{"runs done, say", []event{prompt("RUN: a SAY: ok"), result("")}, "", "ok", "prompt", ""},
		{"new prompt resets", []event{prompt("RUN: a"), result(""), prompt("RUN: c")}, "c", "", "prompt", ""},
		{"old turn's results do not count", []event{prompt("RUN: a"), result(""), prompt("SAY: hi")}, "", "hi", "prompt", ""},
		{"task file", []event{prompt("RUN: cat task.md"), result("RUN: x\nRUN: y\nSAY: done")}, "x", "", "tool_result", ""},
		{"task file progress", []event{prompt("RUN: cat task.md"), result("RUN: x\nRUN: y\nSAY: done"), result("out")}, "y", "", "tool_result", ""},
		{"task file done", []event{prompt("RUN: cat task.md"), result("RUN: x\nSAY: done"), result("out")}, "", "done", "tool_result", ""},
		{"ask first", []event{prompt("ASK: Go on? RUN: a")}, "", "", "prompt", "Go on?"},
		{"run after the answer", []event{prompt("ASK: Go on? RUN: a"), result("Yes")}, "a", "", "prompt", ""},
	}
	for _, tt := range tests {
		p := decide(tt.events)
		if p.run != tt.run || p.say != tt.say || p.scriptFrom != tt.from || p.ask != tt.ask {
			t.Errorf("%s: run=%q say=%q from=%q ask=%q; want run=%q say=%q from=%q ask=%q", tt.name, p.run, p.say, p.scriptFrom, p.ask, tt.run, tt.say, tt.from, tt.ask)
		}
	}
}

type sseEvent struct {
	name string
	data map[string]any
}

func readSSE(t *testing.T, r io.Reader) (events []sseEvent, comments int) {
	t.Helper()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var cur sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, ":"):
			comments++
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.data); err != nil {
				t.Fatalf("bad data line %q: %v", line, err)
			}
		case line == "" && cur.name != "":
			events = append(events, cur)
			cur = sseEvent{}
		}
	}
	return events, comments
}

func names(events []sseEvent) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.name)
	}
	return out
}

func post(t *testing.T, url string, body any) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// claudeBody is shaped like Claude Code 2.1.332's request: a reminder
// block before the prompt, and a system-role message after it.
func claudeBody(stream bool, messages ...map[string]any) map[string]any {
	return map[string]any{
		"model": "claude-opus-5-5", "stream": stream, "max_tokens": 1000,
		"tools":    []any{map[string]any{"name": "Bash"}, map[string]any{"name": "Read"}},
		"messages": messages,
	}
}

func userText(texts ...string) map[string]any {
	var blocks []any
	for _, t := range texts {
		blocks = append(blocks, map[string]any{"type": "text", "text": t})
	}
	return map[string]any{"role": "user", "content": blocks}
}

var systemMsg = map[string]any{"role": "system", "content": "# Environment\n..."}

func TestClaudeToolLoop(t *testing.T) {
	s := Start(t)
	url := s.URL() + "/v1/messages?beta=true"
	first := userText("<system-reminder>\nRUN: not this\n</system-reminder>", "RUN: echo a\nRUN: echo b SAY: all done")

	resp := post(t, url, claudeBody(true, first, systemMsg))
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events, _ := readSSE(t, resp.Body)
	want := []string{"message_start", "ping", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if got := names(events); !reflect.DeepEqual(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	block := events[2].data["content_block"].(map[string]any)
	if block["type"] != "tool_use" || block["name"] != "Bash" {
		t.Fatalf("content_block = %v", block)
	}
	var input map[string]any
	if err := json.Unmarshal([]byte(events[3].data["delta"].(map[string]any)["partial_json"].(string)), &input); err != nil {
		t.Fatal(err)
	}
	if input["command"] != "echo a" || input["description"] != "run" {
		t.Errorf("input = %v", input)
	}
	if r := events[5].data["delta"].(map[string]any)["stop_reason"]; r != "tool_use" {
		t.Errorf("stop_reason = %v", r)
	}
	id1 := block["id"].(string)

	toolResult := func(id, out string) map[string]any {
		return map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": out}}}
	}
	assistant := func(id string) map[string]any {
		return map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{}}}}
	}
	resp = post(t, url, claudeBody(true, first, systemMsg, assistant(id1), toolResult(id1, "(Bash completed with no output)")))
	events, _ = readSSE(t, resp.Body)
	block = events[2].data["content_block"].(map[string]any)
	id2, _ := block["id"].(string)
	if block["type"] != "tool_use" || id2 == id1 || !strings.HasPrefix(id2, "toolu_") {
		t.Fatalf("second call: %v (first id %s)", block, id1)
	}

	resp = post(t, url, claudeBody(true, first, systemMsg, assistant(id1), toolResult(id1, ""), assistant(id2), toolResult(id2, "b")))
	events, _ = readSSE(t, resp.Body)
	var text string
	for _, e := range events {
		if e.name == "content_block_delta" {
			text += e.data["delta"].(map[string]any)["text"].(string)
		}
	}
	if text != "all done" {
		t.Errorf("final text = %q", text)
	}

	reqs := s.Requests()
	if len(reqs) != 3 {
		t.Fatalf("logged %d requests", len(reqs))
	}
	if reqs[0].Prompt != "RUN: echo a\nRUN: echo b SAY: all done" || reqs[0].Endpoint != "/v1/messages" ||
		len(reqs[0].Calls) != 1 || reqs[0].Calls[0].Command != "echo a" || reqs[2].Answer != "all done" {
		t.Errorf("log = %+v", reqs)
	}
}

func TestClaudeMergedAfterError(t *testing.T) {
	s := Start(t)
	url := s.URL() + "/v1/messages?beta=true"
	resp := post(t, url, claudeBody(false, userText("APIERROR: 400"), systemMsg))
	var e struct {
		Type  string `json:"type"`
		Error struct{ Type, Message string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 400 || e.Type != "error" || e.Error.Type != "invalid_request_error" {
		t.Fatalf("status %d, body %+v", resp.StatusCode, e)
	}
	// Claude then merges the failed turn with the next into one message.
	resp = post(t, url, claudeBody(false, userText("APIERROR: 400", "SAY: recovered"), systemMsg))
	var m struct {
		Content    []struct{ Type, Text string }
		StopReason string `json:"stop_reason"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || len(m.Content) != 1 || m.Content[0].Text != "recovered" || m.StopReason != "end_turn" {
		t.Errorf("status %d, message %+v", resp.StatusCode, m)
	}
}

func TestClaudeNoBashOffered(t *testing.T) {
	s := Start(t)
	body := claudeBody(false, userText("RUN: ls SAY: fine"))
	body["tools"] = []any{map[string]any{"name": "Read"}}
	resp := post(t, s.URL()+"/v1/messages", body)
	var m struct{ Content []struct{ Type, Text string } }
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if len(m.Content) != 1 || m.Content[0].Type != "text" || m.Content[0].Text != "fine" {
		t.Errorf("content = %+v", m.Content)
	}
}

func TestSleepPings(t *testing.T) {
	s := Start(t)
	start := time.Now()
	resp := post(t, s.URL()+"/v1/messages", claudeBody(true, userText("SLEEP: 1.2 SAY: late")))
	events, _ := readSSE(t, resp.Body)
	if d := time.Since(start); d < 1200*time.Millisecond {
		t.Errorf("answered after %v", d)
	}
	pings := 0
	for _, e := range events {
		if e.name == "ping" {
			pings++
		}
	}
	if pings < 2 {
		t.Errorf("%d pings in %v", pings, names(events))
	}
}

func TestCloseEndsSleep(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	url := "http://" + ln.Addr().String()
	done := make(chan struct{})
	go func() {
		defer close(done)
		b, _ := json.Marshal(claudeBody(true, userText("SLEEP: 30")))
		resp, err := http.Post(url+"/v1/messages", "application/json", bytes.NewReader(b))
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for len(s.Requests()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if s.URL() != url {
		t.Errorf("URL() = %q, want %q", s.URL(), url)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a sleeping answer outlived Close")
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

func TestMiscEndpoints(t *testing.T) {
	s := Start(t)
	for _, m := range []string{http.MethodHead, http.MethodGet} {
		req, _ := http.NewRequest(m, s.URL()+"/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s / = %d", m, resp.StatusCode)
		}
	}
	resp := post(t, s.URL()+"/v1/messages/count_tokens?beta=true", claudeBody(false, userText("hello")))
	var c struct {
		InputTokens int `json:"input_tokens"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || resp.StatusCode != 200 || c.InputTokens <= 0 {
		t.Errorf("count_tokens: %d %+v %v", resp.StatusCode, c, err)
	}
	resp = post(t, s.URL()+"/v1/elsewhere", map[string]any{})
	if resp.StatusCode != 404 {
		t.Errorf("unknown endpoint = %d", resp.StatusCode)
	}
	if got := s.Requests()[len(s.Requests())-1]; got.Endpoint != "/v1/elsewhere" || got.Status != 404 {
		t.Errorf("unknown endpoint logged as %+v", got)
	}
}

// codexBody is shaped like Codex 0.171's request: developer messages and an
// environment block before the prompt.
func codexBody(tools []string, input ...map[string]any) map[string]any {
	var ts []any
	for _, n := range tools {
		ts = append(ts, map[string]any{"type": "function", "name": n})
	}
	ts = append(ts, map[string]any{"type": "web_search"})
	items := []any{
		map[string]any{"type": "message", "role": "developer", "content": []any{map[string]any{"type": "input_text", "text": "RUN: not this"}}},
		map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"}}},
	}
	for _, i := range input {
		items = append(items, i)
	}
	return map[string]any{"model": "gpt-fake", "stream": true, "tools": ts, "input": items}
}

func codexUser(text string) map[string]any {
	return map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": text}}}
}

var codexTools = []string{"exec_command", "write_stdin"}

func TestCodexFunctionCall(t *testing.T) {
	s := Start(t)
	url := s.URL() + "/v1/responses"
	prompt := codexUser("ESCALATE RUN: echo hi > out.txt SAY: all done")
	events, _ := readSSE(t, post(t, url, codexBody(codexTools, prompt)).Body)
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.output_item.done", "response.completed"}
	if got := names(events); !reflect.DeepEqual(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	item := events[3].data["item"].(map[string]any)
	var args map[string]any
	if err := json.Unmarshal([]byte(item["arguments"].(string)), &args); err != nil {
		t.Fatal(err)
	}
	wantArgs := map[string]any{"cmd": "echo hi > out.txt", "sandbox_permissions": "require_escalated", "justification": "needs it", "yield_time_ms": float64(30000)}
	if item["type"] != "function_call" || item["name"] != "exec_command" || !reflect.DeepEqual(args, wantArgs) {
		t.Fatalf("item = %v", item)
	}
	callID := item["call_id"].(string)
	if resp := events[4].data["response"].(map[string]any); resp["status"] != "completed" || resp["usage"] == nil {
		t.Errorf("completed response = %v", resp)
	}

	call := map[string]any{"type": "function_call", "name": "exec_command", "arguments": item["arguments"], "call_id": callID}
	output := map[string]any{"type": "function_call_output", "call_id": callID, "output": "Chunk ID: 1\nProcess exited with code 0\nOutput:\n"}
	events, _ = readSSE(t, post(t, url, codexBody(codexTools, prompt, call, output)).Body)
	want = []string{
		"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.done", "response.content_part.done",
		"response.output_item.done", "response.completed",
	}
	if got := names(events); !reflect.DeepEqual(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	if got := events[5].data["text"]; got != "all done" {
		t.Errorf("text = %v", got)
	}
	for i, e := range events {
		if e.data["sequence_number"] != float64(i) {
			t.Errorf("%s sequence_number = %v, want %d", e.name, e.data["sequence_number"], i)
		}
	}
	reqs := s.Requests()
	if len(reqs) != 2 || reqs[0].Prompt != "ESCALATE RUN: echo hi > out.txt SAY: all done" ||
		!reflect.DeepEqual(reqs[0].Calls, []Call{{ID: callID, Tool: "exec_command", Command: "echo hi > out.txt", Escalated: true}}) {
		t.Errorf("log = %+v", reqs)
	}
}

func TestCodexTaskFileInToolOutput(t *testing.T) {
	s := Start(t)
	url := s.URL() + "/v1/responses"
	prompt := codexUser("RUN: cat task.md")
	call := map[string]any{"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": "c1"}
	output := map[string]any{"type": "function_call_output", "call_id": "c1", "output": "Output:\nRUN: make test\nSAY: tested\n"}
	events, _ := readSSE(t, post(t, url, codexBody([]string{"shell"}, prompt, call, output)).Body)
	item := events[len(events)-2].data["item"].(map[string]any)
	if item["name"] != "shell" || item["arguments"] != `{"command":["bash","-lc","make test"]}` {
		t.Errorf("item = %v", item)
	}
	if r := s.Requests()[0]; r.ScriptFrom != "tool_result" || r.Prompt != "RUN: cat task.md" {
		t.Errorf("log = %+v", r)
	}
}

func TestCodexTitleRequest(t *testing.T) {
	s := Start(t)
	body := codexBody(nil, codexUser("Generate a concise, single-line task title...\n\nUser prompt:\nRUN: rm -rf x SLEEP: 20 APIERROR: 500"))
	body["tools"] = []any{}
	body["text"] = map[string]any{"format": map[string]any{
		"type": "json_schema", "name": "codex_output_schema", "strict": true,
		"schema": map[string]any{
			"type": "object", "required": []string{"title"}, "additionalProperties": false,
			"properties": map[string]any{"title": map[string]any{"type": "string", "minLength": 1, "maxLength": 36}},
		},
	}}
	start := time.Now()
	resp := post(t, s.URL()+"/v1/responses", body)
	events, _ := readSSE(t, resp.Body)
	if resp.StatusCode != 200 || time.Since(start) > 5*time.Second {
		t.Fatalf("status %d after %v", resp.StatusCode, time.Since(start))
	}
	var text string
	for _, e := range events {
		if e.name == "response.output_text.done" {
			text = e.data["text"].(string)
		}
	}
	if text != `{"title":"Fake task"}` {
		t.Errorf("title answer = %q", text)
	}
	if r := s.Requests()[0]; !r.Side || len(r.Calls) != 0 {
		t.Errorf("log = %+v", r)
	}
}

func TestCodexErrorAndSleep(t *testing.T) {
	s := Start(t)
	resp := post(t, s.URL()+"/v1/responses", codexBody(codexTools, codexUser("APIERROR: 400")))
	var e struct {
		Error struct{ Message, Type string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || resp.StatusCode != 400 || e.Error.Type != "invalid_request_error" {
		t.Errorf("status %d, %+v, %v", resp.StatusCode, e, err)
	}
	start := time.Now()
	resp = post(t, s.URL()+"/v1/responses", codexBody(codexTools, codexUser("SLEEP: 1.1")))
	events, comments := readSSE(t, resp.Body)
	if time.Since(start) < 1100*time.Millisecond || comments < 2 || events[0].name != "response.created" {
		t.Errorf("after %v: %d keep-alives, events %v", time.Since(start), comments, names(events))
	}
}

// TestClaudeTeamTools: TEAMMATE: calls the Agent tool with a name (which
// spawns a teammate when agent teams are on), AGENT: without one, CALL:
// any offered tool; "Tool loaded." beside a ToolSearch result and a
// teammate's idle notice go on with the script instead of starting anew.
func TestClaudeTeamTools(t *testing.T) {
	s := Start(t)
	url := s.URL() + "/v1/messages"
	body := func(messages ...map[string]any) map[string]any {
		b := claudeBody(false, messages...)
		b["tools"] = []any{map[string]any{"name": "Bash"}, map[string]any{"name": "Agent"}, map[string]any{"name": "SendMessage"}}
		return b
	}
	type toolUse struct {
		Type, ID, Name string
		Input          map[string]any
	}
	answer := func(b map[string]any) toolUse {
		t.Helper()
		var m struct{ Content []toolUse }
		if err := json.NewDecoder(post(t, url, b).Body).Decode(&m); err != nil || len(m.Content) != 1 {
			t.Fatalf("answer %+v: %v", m, err)
		}
		return m.Content[0]
	}
	result := func(id string, blocks ...any) map[string]any {
		content := append([]any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": "ok"}}, blocks...)
		return map[string]any{"role": "user", "content": content}
	}
	called := func(u toolUse) map[string]any {
		return map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": u.ID, "name": u.Name, "input": u.Input}}}
	}
	prompt := userText(`TEAMMATE: alpha Your task is in the file /w/alpha.md AGENT: look around CALL: SendMessage {"to":"alpha","message":"again"} SAY: team at work`)

	u1 := answer(body(prompt))
	if u1.Type != "tool_use" || u1.Name != "Agent" || u1.Input["name"] != "alpha" || u1.Input["prompt"] != "Your task is in the file /w/alpha.md" || u1.Input["description"] == "" {
		t.Fatalf("first call %+v", u1)
	}
	u2 := answer(body(prompt, called(u1), result(u1.ID)))
	if u2.Name != "Agent" || u2.Input["name"] != nil || u2.Input["prompt"] != "look around" {
		t.Fatalf("second call %+v", u2)
	}
	// Claude adds "Tool loaded." beside a ToolSearch result.
	u3 := answer(body(prompt, called(u1), result(u1.ID), called(u2), result(u2.ID, map[string]any{"type": "text", "text": "Tool loaded."})))
	if u3.Name != "SendMessage" || u3.Input["to"] != "alpha" || u3.Input["message"] != "again" {
		t.Fatalf("third call %+v", u3)
	}
	done := []map[string]any{prompt, called(u1), result(u1.ID), called(u2), result(u2.ID), called(u3), result(u3.ID)}
	if u := answer(body(done...)); u.Type != "text" {
		t.Fatalf("after the calls: %+v", u)
	}
	// A teammate's idle notice is no new prompt: the lead says its script's last word again.
	idle := userText("Another Claude session sent a message:\n<teammate-message teammate_id=\"alpha\" color=\"blue\">\n" +
		`{"type":"idle_notification","from":"alpha","idleReason":"available"}` + "\n</teammate-message>")
	var m struct{ Content []struct{ Type, Text string } }
	if err := json.NewDecoder(post(t, url, body(append(done, map[string]any{"role": "assistant", "content": "team at work"}, idle)...)).Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if len(m.Content) != 1 || m.Content[0].Text != "team at work" {
		t.Errorf("after an idle notice: %+v", m.Content)
	}
	// The log names each call and the teammate it spawned.
	l := s.Requests()
	if c := l[0].Calls; len(c) != 1 || c[0].Tool != "Agent" || c[0].Name != "alpha" {
		t.Errorf("logged calls %+v", c)
	}
	// Without the Agent tool on offer, TEAMMATE: answers in words.
	b := claudeBody(false, prompt)
	var w struct{ Content []struct{ Type, Text string } }
	if err := json.NewDecoder(post(t, url, b).Body).Decode(&w); err != nil || len(w.Content) != 1 || w.Content[0].Type != "text" {
		t.Errorf("no Agent tool: %+v %v", w, err)
	}
}

// TestQuestionCalls: ASK makes each agent's question tool come up with
// the question and the options Yes and No, and the script goes on once
// the answer comes back as the tool's result.
func TestQuestionCalls(t *testing.T) {
	s := Start(t)
	body := claudeBody(false, userText("ASK: Which colour? SAY: thanks"))
	body["tools"] = []any{map[string]any{"name": "Bash"}, map[string]any{"name": "AskUserQuestion"}}
	var m struct {
		Content []struct {
			Type, Name string
			Input      struct {
				Questions []struct {
					Question string
					Options  []struct{ Label string }
				}
			}
		}
		StopReason string `json:"stop_reason"`
	}
	if err := json.NewDecoder(post(t, s.URL()+"/v1/messages", body).Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if len(m.Content) != 1 || m.Content[0].Name != "AskUserQuestion" || m.StopReason != "tool_use" ||
		len(m.Content[0].Input.Questions) != 1 || m.Content[0].Input.Questions[0].Question != "Which colour?" ||
		len(m.Content[0].Input.Questions[0].Options) != 2 || m.Content[0].Input.Questions[0].Options[0].Label != "Yes" {
		t.Fatalf("claude: %+v", m)
	}

	prompt := codexUser("ASK: Which colour? SAY: thanks")
	tools := append([]string{"request_user_input"}, codexTools...)
	events, _ := readSSE(t, post(t, s.URL()+"/v1/responses", codexBody(tools, prompt)).Body)
	item := events[3].data["item"].(map[string]any)
	var args struct {
		Questions []struct{ ID, Question string }
	}
	if err := json.Unmarshal([]byte(item["arguments"].(string)), &args); err != nil {
		t.Fatal(err)
	}
	if item["name"] != "request_user_input" || len(args.Questions) != 1 || args.Questions[0].Question != "Which colour?" {
		t.Fatalf("codex: %v", item)
	}
	call := map[string]any{"type": "function_call", "name": "request_user_input", "arguments": item["arguments"], "call_id": item["call_id"]}
	output := map[string]any{"type": "function_call_output", "call_id": item["call_id"], "output": `{"answers":{"question":{"answers":["Yes"]}}}`}
	events, _ = readSSE(t, post(t, s.URL()+"/v1/responses", codexBody(tools, prompt, call, output)).Body)
	if got := events[5].data["text"]; got != "thanks" {
		t.Errorf("after the answer: %v", got)
	}
	if r := s.Requests(); r[0].Calls[0].Tool != "AskUserQuestion" || r[1].Calls[0].Tool != "request_user_input" {
		t.Errorf("log = %+v", r)
	}
}

// TestClaudeBashTimeout: TIMEOUT: puts its time, in milliseconds, in each
// Bash call's input (Claude's tool stops a command at 2 minutes without
// one); a script without it leaves the tool's own.
func TestClaudeBashTimeout(t *testing.T) {
	s := Start(t)
	for _, c := range []struct {
		prompt string
		want   any
	}{
		{"TIMEOUT: 600 RUN: st worker wait --timeout 9m", float64(600000)},
		{"RUN: st worker wait --timeout 100s", nil},
	} {
		resp := post(t, s.URL()+"/v1/messages", claudeBody(false, userText(c.prompt)))
		var m struct {
			Content []struct {
				Type  string
				Input map[string]any
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		if len(m.Content) != 1 || m.Content[0].Type != "tool_use" || m.Content[0].Input["timeout"] != c.want {
			t.Errorf("%q: content %+v, want a Bash call with timeout %v", c.prompt, m.Content, c.want)
		}
	}
}

// TestGeminiQuestionCall: ASK makes Gemini CLI's ask_user come up when a
// request declares it (Gemini CLI 0.59.0 and 0.61.0 declare it in an
// interactive session), with one question of type choice whose options
// carry the label and description its validation requires; the script
// goes on once the answer comes back as a functionResponse. A request
// that does not declare it (Gemini's -p mode) gets the text instead.
func TestGeminiQuestionCall(t *testing.T) {
	s := Start(t)
	url := s.URL() + "/v1beta/models/gemini-2.5-pro:generateContent"
	decl := func(names ...string) []any {
		var ds []any
		for _, n := range names {
			ds = append(ds, map[string]any{"name": n})
		}
		return []any{map[string]any{"functionDeclarations": ds}}
	}
	user := map[string]any{"role": "user", "parts": []any{map[string]any{"text": "ASK: Which colour? SAY: thanks"}}}
	type reply struct {
		Candidates []struct {
			Content struct {
				Parts []struct {
					Text         string
					FunctionCall *struct {
						Name string
						Args struct {
							Questions []struct {
								Question, Header, Type string
								Options                []struct{ Label, Description string }
							}
						}
					}
				}
			}
		}
	}
	ask := func(contents []any, tools []any) reply {
		t.Helper()
		var r reply
		body := map[string]any{"contents": contents, "tools": tools}
		if err := json.NewDecoder(post(t, url, body).Body).Decode(&r); err != nil || len(r.Candidates) != 1 || len(r.Candidates[0].Content.Parts) != 1 {
			t.Fatalf("reply %+v %v", r, err)
		}
		return r
	}

	r := ask([]any{user}, decl("run_shell_command", "ask_user"))
	fc := r.Candidates[0].Content.Parts[0].FunctionCall
	if fc == nil || fc.Name != "ask_user" || len(fc.Args.Questions) != 1 {
		t.Fatalf("no ask_user call: %+v", r)
	}
	q := fc.Args.Questions[0]
	if q.Question != "Which colour?" || q.Type != "choice" || q.Header == "" || len(q.Options) != 2 ||
		q.Options[0].Label != "Yes" || q.Options[1].Label != "No" || q.Options[0].Description == "" {
		t.Errorf("question %+v", q)
	}

	call := map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"name": "ask_user"}}}}
	answer := map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{
		"name": "ask_user", "response": map[string]any{"output": `{"answers":{"0":"Yes"}}`}}}}}
	if got := ask([]any{user, call, answer}, decl("run_shell_command", "ask_user")).Candidates[0].Content.Parts[0].Text; got != "thanks" {
		t.Errorf("after the answer: %q", got)
	}

	if p := ask([]any{user}, decl("run_shell_command")).Candidates[0].Content.Parts[0]; p.FunctionCall != nil {
		t.Errorf("ask_user called where the request does not declare it: %+v", p)
	}
	if r := s.Requests(); len(r[0].Calls) != 1 || r[0].Calls[0].Tool != "ask_user" || r[0].Calls[0].Command != "Which colour?" {
		t.Errorf("log = %+v", r[0])
	}
}
