package daemon

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sophonz/st/internal/orch"
)

// pushGate sends an open gate to the user's push target, ntfy-style: the
// question as the body, a title, and one action per option that answers
// the gate through st's web API (reachable where the web UI is).
func pushGate(ctx context.Context, target, answerBase, token string, g orch.Gate, log io.Writer) {
	if target == "" {
		return
	}
	var actions []string
	for _, o := range g.Options {
		u := fmt.Sprintf("%s/api/gates/answer?token=%s&id=%s&option=%s&by=push", answerBase,
			url.QueryEscape(token), url.QueryEscape(g.ID), url.QueryEscape(o))
		// ntfy's action syntax: "http, <label>, <url>, method=POST, clear=true"
		label := strings.NewReplacer(",", " ", ";", " ").Replace(o)
		actions = append(actions, fmt.Sprintf("http, %s, %s, method=POST, clear=true", label, u))
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(g.Question))
	if err != nil {
		fmt.Fprintf(log, "push gate %s: %v\n", g.ID, err)
		return
	}
	req.Header.Set("Title", "st: a decision for you ("+g.ID+")")
	req.Header.Set("Tags", "question")
	req.Header.Set("Actions", strings.Join(actions, "; "))
	req.Header.Set("X-St-Gate", g.ID)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(log, "push gate %s to %s: %v\n", g.ID, target, err)
		return
	}
	io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	if res.StatusCode >= 300 {
		fmt.Fprintf(log, "push gate %s to %s: %s\n", g.ID, target, res.Status)
	}
}
