package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sophonz/st/internal/api"
)

type attentionOptions struct {
	All     bool
	JSON    bool
	Wait    bool
	Timeout time.Duration
	// now is the clock the ages are counted from.
	now func() time.Time
}

func newAttentionCmd(env *Env, runF runFunc[attentionOptions]) *cobra.Command {
	var o attentionOptions
	cmd := &cobra.Command{
		Use:   "attention [--all] [--wait [--timeout D]] [--json]",
		Short: "List the agents that need a person: permission prompts, questions, gates, turns ended without a report, failures, runs finished",
		Long: `List what waits for a person, the newest first, with its age: an agent at a
permission prompt or a question, an open gate, a worker whose turn ended without
a report, that failed or is paused, a run whose workers are all done. An item
closes by itself when the agent moves on or the gate is answered; dismiss the
rest with st attention dismiss ID.

--wait returns when a new item opens (for a person's scripts), and prints it;
exit status 3 when --timeout passes first.`,
		Args: cobra.NoArgs,
	}
	cmd.Flags().BoolVar(&o.All, "all", false, "closed items too (the newest kept)")
	cmd.Flags().BoolVar(&o.Wait, "wait", false, "wait until a new item opens, and print it")
	durationFlag(cmd.Flags(), &o.Timeout, "timeout", 0, "with --wait: give up after this long (default: wait on)")
	jsonFlag(cmd, &o.JSON)
	cmd.AddCommand(newAttentionDismissCmd(env, nil))
	return bind(cmd, env, &o, nil, runF, runAttention)
}

func runAttention(ctx context.Context, env *Env, o attentionOptions) error {
	if o.now == nil {
		o.now = time.Now
	}
	c := env.Client()
	if !o.Wait {
		l, err := c.Attention(ctx, api.AttentionRequest{All: o.All})
		return printResult(env, o.JSON, l, err, func(w io.Writer, l *api.AttentionList) error { return printAttention(w, l, o.now()) })
	}
	// What opens after the newest item there is now, whatever becomes
	// of st meanwhile: the items are on disk, and their ids go on.
	var after string
	err := keepTrying(ctx, env, time.Time{}, 300*time.Millisecond, nil, func() error {
		l, err := c.Attention(ctx, api.AttentionRequest{All: true})
		if err == nil && len(l.Items) > 0 {
			after = l.Items[0].ID
		}
		return err
	})
	if err != nil {
		return err
	}
	var until time.Time
	if o.Timeout > 0 {
		until = o.now().Add(o.Timeout)
	}
	for {
		piece := time.Minute
		if !until.IsZero() {
			left := until.Sub(o.now())
			if left <= 0 {
				return &exitError{code: exitTimeout, err: fmt.Errorf("timeout: no agent needed a person within %s", o.Timeout)}
			}
			piece = min(piece, left)
		}
		var got *api.AttentionList
		err := keepTrying(ctx, env, until, 300*time.Millisecond, nil, func() error {
			l, err := c.WaitAttention(ctx, api.AttentionRequest{After: after, Timeout: piece})
			got = l
			return err
		})
		if err != nil {
			return err
		}
		if len(got.Items) > 0 {
			return printResult(env, o.JSON, got, nil, func(w io.Writer, l *api.AttentionList) error { return printAttention(w, l, o.now()) })
		}
	}
}

// printAttention prints the items as a table, the newest first.
func printAttention(w io.Writer, l *api.AttentionList, now time.Time) error {
	if err := printTable(w, l.Items, "no agent needs you", "ID\tKIND\tAGENT\tAGE\tWHAT", func(tw io.Writer, a api.Attention) {
		kind := string(a.Kind)
		if !a.Open() {
			kind += " (closed: " + a.ClosedBy + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.ID, kind, attentionWho(a), Age(now.Sub(a.Opened)), oneLine(attentionWhat(a), 80))
	}); err != nil {
		return err
	}
	if l.Open > 0 && len(l.Items) > 0 {
		_, err := fmt.Fprintf(w, "%d open\n", l.Open)
		return err
	}
	return nil
}

// attentionWho names the agent of an item as people read it.
func attentionWho(a api.Attention) string {
	who := a.Pane
	if a.Name != "" {
		who = a.Name + " (" + a.Pane + ")"
	}
	if a.Agent != "" {
		who += " " + a.Agent
	}
	if a.Machine != "" {
		who += " on " + a.Machine
	}
	return strings.TrimSpace(who)
}

// attentionWhat is what an item asks, in a line.
func attentionWhat(a api.Attention) string {
	what := a.Text
	if a.TextHidden {
		what = "(the worker's answer left out: st worker read refuses it to this pane)"
	}
	if len(a.Options) > 0 {
		what += " [" + strings.Join(a.Options, " | ") + "]"
	}
	if a.Kind == api.AttnGate {
		what += " (st gate answer " + a.Gate + " OPTION)"
	}
	return what
}

// Age is d as a person reads an age: 45s, 3m, 2h, 4d.
func Age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(0, int(d/time.Second)))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

type attentionDismissOptions struct {
	ID   string
	JSON bool
}

func newAttentionDismissCmd(env *Env, runF runFunc[attentionDismissOptions]) *cobra.Command {
	var o attentionDismissOptions
	cmd := &cobra.Command{
		Use:   "dismiss ID",
		Short: "Close an attention item a person has seen to (a person's act: agents are refused)",
		Args:  exactArgs(1, "st attention dismiss ID"),
	}
	jsonFlag(cmd, &o.JSON)
	return bind(cmd, env, &o, takeArgs(&o.ID), runF, runAttentionDismiss)
}

func runAttentionDismiss(ctx context.Context, env *Env, o attentionDismissOptions) error {
	a, err := env.Client().DismissAttention(ctx, api.AttentionRequest{ID: o.ID, Pane: callerPane(env)})
	return printResult(env, o.JSON, a, err, func(w io.Writer, a *api.Attention) error {
		_, err := fmt.Fprintf(w, "dismissed %s (%s of %s)\n", a.ID, a.Kind, attentionWho(*a))
		return err
	})
}
