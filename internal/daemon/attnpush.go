package daemon

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sophonz/st/internal/syncs"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/attention"
)

// AttentionConfig is config.toml's [attention]: the quiet rules of the
// attention items' pushes (issue 34). Each item is pushed once at most;
// a gate's item is pushed by the gate's own push (with its buttons).
type AttentionConfig struct {
	// Push lists the kinds that push (api.AttentionKinds' names); unset,
	// every kind does.
	Push []string `toml:"push"`
	// QuietFront: nothing is pushed for the pane a person's tmux client
	// shows now (default true).
	QuietFront *bool `toml:"quiet_front"`
	// Summary: when more than this many items open within SummaryWindow,
	// the rest of the window's items go out as one summary push (default
	// 3; 0: one push per item, always).
	Summary       *int     `toml:"summary"`
	SummaryWindow Duration `toml:"summary_window"`
}

// Defaults of the quiet rules.
const (
	defaultSummary       = 3
	defaultSummaryWindow = 30 * time.Second
)

// check refuses kinds st does not know (a misspelt kind would push
// nothing, quietly) and sets the defaults.
func (a *AttentionConfig) check() error {
	for _, k := range a.Push {
		if !api.ValidAttentionKind(api.AttentionKind(k)) {
			var names []string
			for _, x := range api.AttentionKinds {
				names = append(names, string(x))
			}
			return refuseSetting(fmt.Sprintf("[attention] push names %q, which is no kind of attention item", k),
				"push = [\""+strings.Join(names, "\", \"")+"\"] (any of them) in config.toml's [attention]")
		}
	}
	if a.Summary == nil {
		n := defaultSummary
		a.Summary = &n
	}
	if *a.Summary < 0 {
		return refuseSetting("[attention] summary is below zero", "summary = 3 in config.toml's [attention] (0: always one push per item)")
	}
	if a.SummaryWindow.Duration == 0 {
		a.SummaryWindow.Duration = defaultSummaryWindow
	}
	if a.QuietFront == nil {
		t := true
		a.QuietFront = &t
	}
	return nil
}

// pushes reports whether items of kind k push.
func (a *AttentionConfig) pushes(k api.AttentionKind) bool {
	if k == api.AttnGate {
		return false // the gate's own push carries it, with its buttons
	}
	if a.Push == nil {
		return true
	}
	for _, x := range a.Push {
		if api.AttentionKind(x) == k {
			return true
		}
	}
	return false
}

// attnPusher sends the attention items to the push target by the quiet
// rules: one push per item, none for a pane in front of a person, and
// past Summary pushes in SummaryWindow one summary for the rest.
type attnPusher struct {
	target string
	rules  AttentionConfig
	// book is set, and ready closed, once the manager is made: an item
	// may open while it loads.
	book  *attention.Book
	ready chan struct{}
	// front is the panes a person's client shows now.
	front func(context.Context) (map[string]bool, error)
	post  func(ctx context.Context, title, body string, hdr map[string]string) error
	now   func() time.Time
	log   io.Writer
	// links are the ntfy actions that answer prompt id (push_answer_url
	// set), one per choice, each good once; none without push_answer_url.
	links func(id string) ([]string, error)

	mu      sync.Mutex
	recent  []time.Time     // pushes sent in the window
	pending []api.Attention // held for the summary
	timer   *time.Timer
	stopped bool
}

// item is an item that just opened (orch's OnAttention).
func (p *attnPusher) item(ctx context.Context, a api.Attention) {
	if p.target == "" || a.Pushed != nil || !p.rules.pushes(a.Kind) {
		return
	}
	select {
	case <-p.ready:
	case <-ctx.Done():
		return
	}
	if *p.rules.QuietFront && a.Machine == "" && a.Pane != "" {
		front, err := p.front(ctx)
		if err == nil && front[a.Pane] {
			fmt.Fprintf(p.log, "attention %s not pushed: its pane %s is in front of a person's tmux client\n", a.ID, a.Pane)
			return
		}
	}
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	now := p.now()
	p.pruneLocked(now)
	// A prompt st can answer goes on its own, past the summary: its push
	// carries the buttons that answer it from the phone, which a summary
	// cannot (the gate's rule, whose push is its own too).
	if *p.rules.Summary == 0 || len(p.recent) < *p.rules.Summary || a.Prompt != "" {
		p.recent = append(p.recent, now)
		p.mu.Unlock()
		p.send(ctx, []api.Attention{a})
		return
	}
	p.pending = append(p.pending, a)
	if p.timer == nil {
		wait := p.recent[0].Add(p.rules.SummaryWindow.Duration).Sub(now)
		p.timer = time.AfterFunc(max(wait, 0), func() { p.flush(ctx) })
	}
	p.mu.Unlock()
}

// pruneLocked forgets the pushes older than the window.
func (p *attnPusher) pruneLocked(now time.Time) {
	syncs.AssertLocked(&p.mu)
	keep := p.recent[:0]
	for _, t := range p.recent {
		if now.Sub(t) < p.rules.SummaryWindow.Duration {
			keep = append(keep, t)
		}
	}
	p.recent = keep
}

// flush sends the held items that are still open, as one summary.
func (p *attnPusher) flush(ctx context.Context) {
	p.mu.Lock()
	held := p.pending
	p.pending, p.timer = nil, nil
	if p.stopped || ctx.Err() != nil {
		p.mu.Unlock()
		return
	}
	p.recent = append(p.recent, p.now())
	p.mu.Unlock()
	var open []api.Attention
	for _, a := range held {
		if cur, ok := p.book.Get(a.ID); ok && cur.Open() {
			open = append(open, cur)
		}
	}
	if len(open) > 0 {
		p.send(ctx, open)
	}
}

// stop drops what is held: st is going down.
func (p *attnPusher) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	if p.timer != nil {
		p.timer.Stop()
	}
}

// send pushes one item, or a summary of several, and marks them pushed.
// One item of a prompt st can answer carries the prompt's answer links
// (Allow once / Deny, a question's options); a summary carries none (the
// web UI answers each).
func (p *attnPusher) send(ctx context.Context, as []api.Attention) {
	title, body := pushText(as)
	ids := make([]string, len(as))
	for i, a := range as {
		ids[i] = a.ID
	}
	hdr := map[string]string{"Tags": "bell", "X-St-Attention": strings.Join(ids, ",")}
	if len(as) == 1 && as[0].Prompt != "" {
		var actions []string
		var err error
		if p.links != nil {
			actions, err = p.links(as[0].Prompt)
		}
		switch {
		case err != nil:
			// (Its prompt closed meanwhile: answered, or its agent moved on.)
			fmt.Fprintf(p.log, "push attention %s: no answer links: %v\n", as[0].ID, err)
		case len(actions) > 0:
			hdr["Actions"] = strings.Join(actions, "; ")
			hdr["X-St-Prompt"] = as[0].Prompt
		default:
			body += "\nNo answer buttons here: push_answer_url (where your phone reaches st's web UI) is not set in st's config.toml; st doctor says how."
		}
	}
	if err := p.post(ctx, title, body, hdr); err != nil {
		fmt.Fprintf(p.log, "push attention %s: %v\n", strings.Join(ids, ","), err)
		return
	}
	p.book.MarkPushed(ids...)
}

// pushText is a push's title and body: the agent and what it asks, or
// for several, how many and a line each.
func pushText(as []api.Attention) (title, body string) {
	if len(as) == 1 {
		a := as[0]
		return "st: " + whoOf(a) + " needs you (" + string(a.Kind) + ")", itemLine(a, false) + "\n\nst attention lists it; the web UI's Needs you list too."
	}
	lines := make([]string, len(as))
	for i, a := range as {
		lines[i] = "- " + whoOf(a) + ": " + itemLine(a, true)
	}
	return fmt.Sprintf("st: %d agents need you", len(as)), strings.Join(lines, "\n") + "\n\nst attention lists them; the web UI's Needs you list too."
}

// whoOf names an item's agent for a push.
func whoOf(a api.Attention) string {
	who := a.Name
	if who == "" {
		who = strings.TrimSpace(a.Agent + " " + a.Pane)
	}
	if a.Machine != "" {
		who += " on " + a.Machine
	}
	return who
}

// itemLine is what an item asks, in a line.
func itemLine(a api.Attention, kind bool) string {
	s := a.Text
	if a.Command != "" {
		s = "run " + a.Command + "?"
	}
	if len(a.Options) > 0 {
		s += " [" + strings.Join(a.Options, " | ") + "]"
	}
	if kind {
		s = string(a.Kind) + ": " + s
	}
	return s
}

// postPush posts one ntfy-style push to target.
func postPush(ctx context.Context, target, title, body string, hdr map[string]string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(body))
	if err != nil {
		return err
	}
	// A header carries no line breaks: the title is one line already, but
	// an agent's words are in it.
	req.Header.Set("Title", strings.Join(strings.Fields(title), " "))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := pushClient.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	if res.StatusCode >= 300 {
		return fmt.Errorf("%s answered %s", target, res.Status)
	}
	return nil
}
