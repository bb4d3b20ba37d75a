package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/orch"
	"github.com/sophonz/st/internal/web"
)

// pushClient sends gates to the push service. It follows no redirect (a
// redirect would carry the question, and the answer links, elsewhere) and
// verifies TLS as Go's default does.
var pushClient = &http.Client{
	Timeout: 10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return errors.New("st does not follow a push service's redirect")
	},
}

// pushGate sends an open gate to the user's push target, ntfy-style: the
// question as the body, a title, and, when answerBase (push_answer_url:
// where the phone reaches st's web UI) is set, one action per option. Each
// action is a POST with no body to an answer link of its own, good for
// that option of this gate once (web.PushAnswerURL): the web UI's token,
// which can type into every pane, never leaves this machine. With no
// answerBase the push carries no buttons, and says so under the question
// (pushBody): the options, how to answer, and how to get buttons.
func pushGate(ctx context.Context, target, answerBase string, mgr *orch.Manager, g api.Gate, log io.Writer) {
	if target == "" {
		return
	}
	var actions []string
	if answerBase != "" {
		toks, err := mgr.MintAnswerTokens(g.ID)
		if err != nil {
			fmt.Fprintf(log, "push gate %s: %v\n", g.ID, err)
			return
		}
		for _, o := range g.Options {
			// ntfy's action syntax: "http, <label>, <url>, method=POST, clear=true".
			label := strings.NewReplacer(",", " ", ";", " ", "\"", " ").Replace(o)
			actions = append(actions, fmt.Sprintf("http, %s, %s, method=POST, clear=true", label, web.PushAnswerURL(answerBase, toks[o])))
		}
	}
	sendPush(ctx, target, pushBody(g, len(actions) > 0), map[string]string{
		"Title": "st: a decision for you (" + g.ID + ")", "Tags": "question", "X-St-Gate": g.ID}, actions, "gate "+g.ID, log)
}

// sendPush posts one push: body, headers, and the ntfy actions.
func sendPush(ctx context.Context, target, body string, headers map[string]string, actions []string, what string, log io.Writer) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(body))
	if err != nil {
		fmt.Fprintf(log, "push %s: %v\n", what, err)
		return
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if len(actions) > 0 {
		req.Header.Set("Actions", strings.Join(actions, "; "))
	}
	res, err := pushClient.Do(req)
	if err != nil {
		fmt.Fprintf(log, "push %s to %s: %v\n", what, target, err)
		return
	}
	io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	if res.StatusCode >= 300 {
		fmt.Fprintf(log, "push %s to %s: %s\n", what, target, res.Status)
	}
}

// promptLinks are the ntfy actions of open prompt id for its attention
// item's push (attnPusher): with answerBase (push_answer_url) set, one
// per choice (Allow once, Deny; a question's options), each a one-time
// answer link of its own (web.PushPromptURL); none without it. The
// agent's name stays out of the links: the push service sees the command,
// as it sees a gate's question.
func promptLinks(answerBase string, mgr *orch.Manager, id string) ([]string, error) {
	if answerBase == "" {
		return nil, nil
	}
	var p *api.Prompt
	for _, o := range mgr.Prompts() {
		if o.ID == id {
			p = &o
		}
	}
	if p == nil {
		return nil, fmt.Errorf("prompt %s is not open", id)
	}
	toks, err := mgr.MintPromptTokens(id)
	if err != nil {
		return nil, err
	}
	var actions []string
	for _, c := range p.Choices() {
		label := map[string]string{api.PromptAllow: "Allow once", api.PromptDeny: "Deny"}[c]
		if label == "" {
			label = strings.NewReplacer(",", " ", ";", " ", "\"", " ").Replace(c)
		}
		actions = append(actions, fmt.Sprintf("http, %s, %s, method=POST, clear=true", label, web.PushPromptURL(answerBase, toks[c])))
	}
	return actions, nil
}

// pushBody is the text of a gate's push: its question, and when the push
// carries no buttons (push_answer_url is not set), why, the options, and
// how to answer them, so that a person who gets it on a phone knows what
// to do (issue 32, item 8).
func pushBody(g api.Gate, buttons bool) string {
	if buttons {
		return g.Question
	}
	return fmt.Sprintf("%s\n\nOptions: %s. No buttons here: push_answer_url (where your phone reaches st's web UI) is not set in st's config.toml; st doctor says how. Answer in st's web UI, or with: st gate answer %s OPTION",
		g.Question, strings.Join(g.Options, " | "), g.ID)
}
