package agent

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestAnswerPrompt: what st's hook prints for a person's answer is the
// form Claude 2.1.332 took in the measurements (docs/permission-prompts.md),
// and nothing where the answer cannot be spelled.
func TestAnswerPrompt(t *testing.T) {
	bash := []byte(`{"tool_name":"Bash","tool_input":{"command":"echo hi"}}`)
	q := []byte(`{"tool_name":"AskUserQuestion","tool_input":{"questions":[{"question":"Pick one please","header":"Question",` +
		`"options":[{"label":"Yes","description":"Go on."},{"label":"No  way","description":"Stop here."}],"multiSelect":false}]}}`)
	// Codex 0.171.0 takes Claude's form (measured).
	if out := string(Codex.AnswerPrompt("allow", "", "web", bash)); out != string(Claude.AnswerPrompt("allow", "", "web", bash)) {
		t.Errorf("codex allow: %s", out)
	}
	out := string(Claude.AnswerPrompt("allow", "", "web", bash))
	if out != `{"hookSpecificOutput":{"decision":{"behavior":"allow"},"hookEventName":"PermissionRequest"}}` {
		t.Errorf("allow: %s", out)
	}
	out = string(Claude.AnswerPrompt("deny", "", "push", bash))
	if gjson.Get(out, "hookSpecificOutput.decision.behavior").String() != "deny" ||
		!strings.Contains(gjson.Get(out, "hookSpecificOutput.decision.message").String(), "A person denied this through st (push)") {
		t.Errorf("deny: %s", out)
	}
	// The option as shown (spaces joined) goes back as the agent wrote it.
	out = string(Claude.AnswerPrompt("allow", "No way", "web", q))
	if gjson.Get(out, `hookSpecificOutput.decision.updatedInput.answers.Pick one please`).String() != "No  way" ||
		gjson.Get(out, "hookSpecificOutput.decision.updatedInput.questions.0.header").String() != "Question" {
		t.Errorf("question: %s", out)
	}
	for _, c := range []struct {
		k                *Kind
		behavior, option string
		payload          []byte
	}{
		{Claude, "", "", bash},         // no answer came
		{Claude, "allow", "Maybe", q},  // not an option it offered
		{Claude, "allow", "Yes", bash}, // an option for no question
		{Claude, "ask", "", bash},      // no such behavior
		{Sim, "allow", "", bash},       // its hook cannot answer
		{Gemini, "deny", "", bash},
	} {
		if out := c.k.AnswerPrompt(c.behavior, c.option, "web", c.payload); out != nil {
			t.Errorf("%s %q %q: printed %s, want nothing", c.k.Name, c.behavior, c.option, out)
		}
	}
}
