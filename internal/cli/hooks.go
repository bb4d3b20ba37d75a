package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/hooks"
)

type hooksOptions struct {
	Action string // install, uninstall or status
	Agents []string
	JSON   bool
}

// hooksActions are the functions of package hooks that st hooks runs.
var hooksActions = map[string]func(context.Context, hooks.Options) (*hooks.Report, error){
	"install": hooks.Install, "uninstall": hooks.Uninstall, "status": hooks.Status,
}

func newHooksCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hooks",
		Short: "Install the hooks through which st follows Claude Code and Codex",
		Long: `st learns what each agent does from the agent's own command hooks, which run
"<this st> hook claude|codex EVENT". st hooks install writes them into
~/.claude/settings.json and $CODEX_HOME/hooks.json (~/.codex by default),
keeping everything else in those files, and trusts the Codex ones in
$CODEX_HOME/config.toml (Codex skips hooks that are not trusted).`,
	}
	cmd.AddCommand(
		newHooksSubCmd(env, "install", "Install st's hooks for Claude Code and Codex (again: updates them)", nil),
		newHooksSubCmd(env, "uninstall", "Take st's hooks out, leaving the rest of the files as they are", nil),
		newHooksSubCmd(env, "status", "Show whether st's hooks are installed, point at this st, and are trusted", nil),
	)
	return cmd
}

// newHooksSubCmd is st hooks install, uninstall or status (action).
func newHooksSubCmd(env *Env, action, short string, runF runFunc[hooksOptions]) *cobra.Command {
	o := hooksOptions{Action: action}
	kinds := hooks.Kinds()
	cmd := &cobra.Command{Use: action + " [--agent " + strings.Join(kinds, "|") + "] [--json]", Short: short, Args: cobra.NoArgs}
	cmd.Flags().StringSliceVar(&o.Agents, "agent", nil, "only this agent: "+strings.Join(kinds, " or ")+" (default every one)")
	jsonFlag(cmd, &o.JSON)
	return bind(cmd, env, &o, func([]string) error {
		for _, a := range o.Agents {
			if !slices.Contains(kinds, a) {
				return usageError(fmt.Sprintf("unknown agent %q: st has hooks for %s", a, strings.Join(kinds, " and ")),
					"st hooks "+action+" --agent "+kinds[0]+" (or "+strings.Join(kinds[1:], ", ")+")")
			}
		}
		return nil
	}, runF, runHooks)
}

func runHooks(ctx context.Context, env *Env, o hooksOptions) error {
	r, err := hooksActions[o.Action](ctx, hooks.Options{Getenv: env.Getenv, Agents: o.Agents})
	if err != nil {
		return usageError(err.Error(), "st hooks "+o.Action+" from a shell of the user whose agents st follows")
	}
	if o.JSON {
		if err := printJSON(env.Stdout, r); err != nil {
			return err
		}
	} else {
		printHooksReport(env.Stdout, r, o.Action)
	}
	if o.Action == "status" {
		return nil
	}
	return hooksProblems(r)
}

// hooksProblems is the error of an install or uninstall that left an
// agent's files as they were: each agent's message, and what to do.
func hooksProblems(r *hooks.Report) error {
	ps := r.Problems()
	if len(ps) == 0 {
		return nil
	}
	var msgs, hints []string
	for _, p := range ps {
		msgs = append(msgs, p.Agent+": "+p.Message)
		if p.Hint != "" && !slices.Contains(hints, p.Hint) {
			hints = append(hints, p.Hint)
		}
	}
	if len(r.Agents) > len(ps) {
		msgs = append(msgs, "(the rest was done)")
	}
	return &api.Error{Kind: api.KindConflict, Message: strings.Join(msgs, "\n"), Hint: strings.Join(hints, "; ")}
}

func printHooksReport(w io.Writer, r *hooks.Report, name string) {
	if name == "status" {
		fmt.Fprintf(w, "st: %s\n", r.St)
	}
	needInstall := false
	for _, a := range r.Agents {
		if a.Error != "" {
			fmt.Fprintf(w, "%s: left as it was: %s (see the error below)\n", a.Agent, a.File)
			if name == "status" {
				fmt.Fprintf(w, "  %s\n", a.Error)
			}
			continue
		}
		fmt.Fprintf(w, "%s: %s%s\n", a.Agent, hooksHeadline(a, name), hooksWritten(a.Changed, a.Created, a.Backup, name))
		if a.Restored {
			fmt.Fprintf(w, "  %s is as it was before st first changed it (its backup is removed)\n", a.File)
		}
		for _, warn := range a.Warnings {
			fmt.Fprintf(w, "  warning: %s\n", warn)
		}
		if len(a.Other) > 0 && name != "uninstall" {
			printOtherHooks(w, a, r.St)
		}
		needInstall = needInstall || (name == "status" && a.Installed < a.Total)
		if t := a.Trust; t != nil && name != "uninstall" && (a.Installed > 0 || t.Error != "") {
			written := ""
			if t.Known || t.Changed {
				written = hooksWritten(t.Changed, t.Created, t.Backup, name)
			}
			fmt.Fprintf(w, "%s trust: %s%s\n", a.Agent, trustHeadline(a, name), written)
			if t.Hint != "" {
				fmt.Fprintf(w, "  Try: %s\n", t.Hint)
			}
			for _, e := range append(slices.Clone(t.CodexErrors), t.CodexWarnings...) {
				fmt.Fprintf(w, "  codex reports: %s\n", e)
			}
			needInstall = needInstall || (name == "status" && t.Known && t.Trusted < a.Installed)
		}
		if t := a.Trust; t != nil && name == "uninstall" && (t.Changed || t.Error != "") {
			if t.Error != "" {
				fmt.Fprintf(w, "%s trust: %s\n", a.Agent, t.Error)
			} else {
				fmt.Fprintf(w, "%s trust: st's entries removed from %s\n", a.Agent, t.File)
			}
			if t.Restored {
				fmt.Fprintf(w, "  %s is as it was before st first changed it (its backup is removed)\n", t.File)
			}
		}
	}
	if needInstall {
		fmt.Fprintln(w, "Try: st hooks install")
	}
}

func hooksHeadline(a hooks.AgentReport, name string) string {
	if name == "uninstall" {
		switch {
		case a.Installed+len(a.Other) > 0:
			return fmt.Sprintf("%d st hooks left in %s", a.Installed+len(a.Other), a.File)
		case a.Changed:
			return "removed st's hooks from " + a.File
		}
		return "no st hooks in " + a.File
	}
	switch {
	case a.Installed == a.Total:
		return fmt.Sprintf("installed (%d/%d) in %s", a.Installed, a.Total, a.File)
	case a.Installed == 0 && len(a.Other) == 0:
		return fmt.Sprintf("not installed (0/%d) in %s", a.Total, a.File)
	case a.Installed == 0 && len(a.Missing) == 0:
		return fmt.Sprintf("installed for another st (0/%d run this st) in %s", a.Total, a.File)
	}
	var parts []string
	if len(a.Missing) > 0 {
		parts = append(parts, "missing: "+strings.Join(a.Missing, ", "))
	}
	if len(a.Other) > 0 {
		parts = append(parts, "another st: "+strings.Join(a.Other, ", "))
	}
	return fmt.Sprintf("%s (%d/%d installed) in %s", strings.Join(parts, "; "), a.Installed, a.Total, a.File)
}

func trustHeadline(a hooks.AgentReport, name string) string {
	t := a.Trust
	if !t.Known {
		msg := "unknown"
		if name == "install" {
			msg = "not written"
		}
		if t.Error != "" {
			msg += ": " + t.Error
		}
		return msg
	}
	if t.Error != "" && t.Trusted < a.Installed {
		return "error: " + t.Error
	}
	if t.Trusted == a.Installed {
		return fmt.Sprintf("trusted (%d/%d) in %s", t.Trusted, a.Installed, t.File)
	}
	var not []string
	for _, h := range a.Hooks {
		if h.Current && h.Trust != "trusted" {
			not = append(not, fmt.Sprintf("%s (%s)", h.Event, h.Trust))
		}
	}
	return fmt.Sprintf("not trusted: %s (%d/%d trusted)", strings.Join(not, ", "), t.Trusted, a.Installed)
}

func hooksWritten(changed, created bool, backup, name string) string {
	switch {
	case name == "status":
		return ""
	case !changed:
		return " (unchanged)"
	case created:
		return " (created)"
	case backup != "":
		return " (written; the original is kept in " + backup + ")"
	default:
		return " (written)"
	}
}

// printOtherHooks says, by program, which of st's hooks do not run this st
// as st writes them.
func printOtherHooks(w io.Writer, a hooks.AgentReport, st string) {
	var progs []string
	events := map[string][]string{}
	for _, h := range a.Hooks {
		if h.Installed && !h.Current {
			if _, ok := events[h.St]; !ok {
				progs = append(progs, h.St)
			}
			events[h.St] = append(events[h.St], h.Event)
		}
	}
	for _, p := range progs {
		evs := strings.Join(events[p], ", ")
		if len(events[p]) == a.Total {
			evs = "all"
		}
		if p == st {
			fmt.Fprintf(w, "  not as st writes them (matcher or group changed): %s\n", evs)
		} else {
			fmt.Fprintf(w, "  hooks running %s: %s\n", p, evs)
		}
	}
}
