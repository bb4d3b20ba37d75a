package cli

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/doctor"
	"github.com/sophonz/st/internal/hooks"
	"github.com/sophonz/st/internal/plugin"
)

// This file holds st setup (the daemon, the hooks, the plugin and the
// skills in one go, and --undo) and st doctor; the checks both print are
// package doctor's.

type doctorOptions struct{ JSON bool }

func newDoctorCmd(env *Env, runF runFunc[doctorOptions]) *cobra.Command {
	var o doctorOptions
	cmd := &cobra.Command{
		Use:   "doctor [--json]",
		Short: "Check what st needs here (tmux, daemon, agents, hooks, plugin, web UI, sign-in); each problem with the command that fixes it",
		Long: `st doctor checks tmux, st's daemon, the agents on PATH (their versions, and
whether st was tested on them), st's hooks in their files, the Claude plugin,
the Codex skills and rule, the web UI, accept-remote and this machine's
sign-in. It changes nothing. Each problem comes with a "Try:" line to type.
It exits 1 when anything is wrong, 0 when all is well.`,
		Args: cobra.NoArgs,
	}
	jsonFlag(cmd, &o.JSON)
	return bind(cmd, env, &o, nil, runF, runDoctor)
}

// doctorConfig is where doctor looks: this environment's ST_HOME, daemon,
// hooks and plugin settings, for this st.
func doctorConfig(env *Env) (doctor.Config, error) {
	pc, err := pluginConfig(env)
	if err != nil {
		return doctor.Config{}, err
	}
	return doctor.Config{Home: env.Home(), Getenv: env.Getenv, Daemon: env.RunningClient(), // doctor says st is down; it never starts it
		Hooks: hooks.Options{Getenv: env.Getenv}, Plugin: pc}, nil
}

func runDoctor(ctx context.Context, env *Env, o doctorOptions) error {
	c, err := doctorConfig(env)
	if err != nil {
		return err
	}
	cs := doctor.Run(ctx, c)
	if o.JSON {
		if err := printJSON(env.Stdout, cs); err != nil {
			return err
		}
	} else {
		printChecks(env.Stdout, cs...)
	}
	if n := doctor.Failed(cs); n > 0 {
		msg := fmt.Errorf("%s; type the Try: line of each", pluginPlural(n, "problem", "problems"))
		if o.JSON {
			msg = nil // the JSON says it
		}
		return &exitError{code: 1, err: msg}
	}
	return nil
}

// printChecks prints a line per check, and under a problem (or a note)
// the command to type.
func printChecks(w io.Writer, cs ...doctor.Check) {
	for _, c := range cs {
		mark := "ok  "
		switch {
		case !c.OK:
			mark = "FAIL"
		case c.Try != "":
			mark = "note"
		}
		fmt.Fprintf(w, "%s  %s: %s\n", mark, c.Name, c.Detail)
		if c.Try != "" {
			fmt.Fprintf(w, "      Try: %s\n", c.Try)
		}
	}
}

type setupOptions struct{ Undo, TmuxStatus bool }

func newSetupCmd(env *Env, runF runFunc[setupOptions]) *cobra.Command {
	var o setupOptions
	cmd := &cobra.Command{
		Use:   "setup [--tmux-status] [--undo]",
		Short: "Start st and install its hooks, plugin, skills and commands for the agents on PATH (again: changes nothing); --undo takes it all out",
		Long: `st setup starts st's daemon (as st up), then for each of Claude Code, Codex,
Gemini CLI and opencode that is installed writes st's hooks (st hooks install;
opencode's plugin) and its plugin, skills or commands (st plugin install, with
the Codex rule that lets st's commands leave Codex's sandbox), for Claude Code
also st's status line (which passes the user's own through), checks each step
as st doctor does, and says what to type next. An agent that is not installed is skipped. Running it again
changes nothing.

st setup --tmux-status also puts a segment on tmux's status line that shows how
many agents need you (st attention lists them), from then on, after restarts of
tmux too.

For Claude Code it also makes st statusline Claude's status line: Claude hands
it its own cost and its account's usage limits, and st statusline prints your
own status line (the command you had, run as before) unchanged.

st setup --undo takes st's hooks, plugin, skills, commands, rule, Claude status
line and tmux status-line segment out again,
putting each file of yours back as it was, and stops the daemon. $ST_HOME (st's
runs and its log) stays.`,
		Args: cobra.NoArgs,
	}
	cmd.Flags().BoolVar(&o.Undo, "undo", false, "take out everything st setup put in, and stop the daemon")
	cmd.Flags().BoolVar(&o.TmuxStatus, "tmux-status", false, "also show on tmux's status line how many agents need you")
	return bind(cmd, env, &o, nil, runF, runSetup)
}

func runSetup(ctx context.Context, env *Env, o setupOptions) error {
	if o.Undo {
		return runUndo(ctx, env)
	}
	c, err := doctorConfig(env)
	if err != nil {
		return err
	}
	var cs []doctor.Check
	step := func(more ...doctor.Check) {
		printChecks(env.Stdout, more...)
		cs = append(cs, more...)
	}

	step(doctor.Tmux(ctx, env.Getenv("PATH")))
	// The daemon, as st up starts it; what st up prints is the check's.
	var quiet bytes.Buffer
	upErr := runUp(ctx, &Env{Stdin: env.Stdin, Stdout: &quiet, Stderr: &quiet, Getenv: env.Getenv}, upOptions{})
	_, daemon := doctor.Running(ctx, c.Daemon, c.Home)
	if upErr != nil && daemon.OK {
		daemon = doctor.Check{Name: "daemon", Detail: doctor.FirstLine(upErr.Error()), Try: "st up"}
	} else if upErr != nil {
		daemon.Detail += ": st up: " + doctor.FirstLine(upErr.Error())
		daemon.Try = "st daemon (to see it run in the foreground)"
	}
	step(daemon)

	verdicts := agent.CheckAgents(ctx, env.Getenv)
	present := doctor.Present(verdicts)
	var agents []string
	for _, v := range verdicts {
		if present[v.Kind] {
			agents = append(agents, v.Kind)
		}
	}
	for i, a := range doctor.Agents(verdicts) {
		if v := verdicts[i]; v.Support == agent.Missing {
			// Not a failed step: setup is for the agents that are here.
			a = doctor.Check{Name: a.Name, OK: true, Detail: fmt.Sprintf("%s is not on PATH: skipped (to add it later: npm install -g %s, then st setup again)",
				v.Kind, v.Tested.Package)}
		}
		step(a)
	}
	installFor(ctx, c, agents, present)
	for _, h := range doctor.Hooks(ctx, c.Hooks, present) {
		if present[strings.TrimPrefix(h.Name, "hooks ")] {
			step(h)
		}
	}
	if present[plugin.Claude] {
		step(doctor.StatusLine(c.Hooks, present))
	}
	for _, p := range doctor.Plugin(ctx, c.Plugin, present) {
		if !strings.Contains(p.Detail, "is not installed: not checked") {
			step(p)
		}
	}
	status, _ := c.Daemon.Status(ctx)
	step(doctor.Web(ctx, c.Daemon, status, nil))
	if o.TmuxStatus {
		step(tmuxStatusCheck(ctx, env, true))
	}

	if n := doctor.Failed(cs); n > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%s; type the Try: line of each, then st setup again", pluginPlural(n, "step went wrong", "steps went wrong"))}
	}
	printNext(env.Stdout, present)
	return nil
}

// installFor puts st's hooks, Claude's status line and the plugin,
// skills or commands in for agents. What went wrong shows in the checks
// that follow, which read the files again.
func installFor(ctx context.Context, c doctor.Config, agents []string, present map[string]bool) {
	if len(agents) == 0 {
		return
	}
	ho := c.Hooks
	ho.Agents = agents
	_, _ = hooks.Install(ctx, ho)
	if present[plugin.Claude] {
		_ = hooks.InstallStatusLine(c.Hooks)
	}
	pc := c.Plugin
	pc.Agents = pluginNeeded(ctx, pc, agents)
	if len(pc.Agents) > 0 {
		_, _ = plugin.Install(ctx, pc)
	}
}

// pluginNeeded are the agents whose plugin or skills are not current.
// Those that are current are left alone: claude's plugin commands rewrite
// settings.json (moving its keys about) even when nothing changes, and a
// second st setup must change nothing.
func pluginNeeded(ctx context.Context, c plugin.Config, agents []string) []string {
	s, err := plugin.GetStatus(ctx, c)
	if err != nil {
		return agents
	}
	var out []string
	for _, a := range s.Agents {
		for _, want := range agents {
			if a.Agent == want && !a.Current {
				out = append(out, want)
			}
		}
	}
	return out
}

// printNext says what to type once st is set up.
func printNext(w io.Writer, present map[string]bool) {
	switch {
	case present[plugin.Claude]:
		fmt.Fprintln(w, "Next: in a tmux session, start Claude Code and ask it to coordinate:")
		fmt.Fprintln(w, "  tmux new -s work")
		fmt.Fprintln(w, "  claude")
		fmt.Fprintln(w, "  /sophonz:orchestrate <the job, and which parts go to which agent>")
	case present[plugin.Codex]:
		fmt.Fprintln(w, "Next: in a tmux session, start Codex and ask it to coordinate:")
		fmt.Fprintln(w, "  tmux new -s work")
		fmt.Fprintln(w, "  codex")
		fmt.Fprintln(w, "  $"+plugin.CodexOrchestrate+" <the job, and which parts go to which agent>")
	case present[plugin.Gemini]:
		fmt.Fprintln(w, "Next: in a tmux session, start Gemini CLI and ask it to coordinate:")
		fmt.Fprintln(w, "  tmux new -s work")
		fmt.Fprintln(w, "  gemini")
		fmt.Fprintln(w, "  /"+plugin.GeminiNamespace+":orchestrate <the job, and which parts go to which agent>")
	case present[plugin.Opencode]:
		printNextOpencode(w)
	default:
		fmt.Fprintln(w, "Next: install Claude Code, Codex, Gemini CLI or opencode, then st setup again; until then st runs its simulated agent (scripts/demo)")
	}
}

// runUndo takes out what setup put in: the hooks, the plugin, the skills,
// the commands and the rule, each file back as it was, then stops the
// daemon.
func runUndo(ctx context.Context, env *Env) error {
	var cs []doctor.Check
	// The status line first: the hooks' uninstall puts settings.json
	// back byte for byte only once nothing of st's is left in it.
	if sl := hooks.UninstallStatusLine(hooks.Options{Getenv: env.Getenv}); sl.Error != "" {
		cs = append(cs, doctor.Check{Name: "status line claude", Detail: sl.Error, Try: cmp.Or(sl.Hint, "st setup --undo")})
	} else if sl.Changed {
		what := "took st's status line out of " + sl.File
		if sl.User != "" {
			what = "put your own status line back in " + sl.File
		}
		cs = append(cs, doctor.Check{Name: "status line claude", OK: true, Detail: what})
	}
	r, err := hooks.Uninstall(ctx, hooks.Options{Getenv: env.Getenv})
	if err != nil {
		cs = append(cs, doctor.Check{Name: "hooks", Detail: err.Error(), Try: "st hooks uninstall"})
	} else {
		for _, a := range r.Agents {
			cs = append(cs, undoHooksCheck(a))
		}
	}

	pc, err := pluginConfig(env)
	if err != nil {
		return err
	}
	rep, err := plugin.Uninstall(ctx, pc)
	if rep == nil {
		cs = append(cs, doctor.Check{Name: "plugin", Detail: err.Error(), Try: "st plugin uninstall"})
	} else {
		for _, a := range rep.Agents {
			c := doctor.Check{Name: "plugin " + a.Agent, OK: a.Error == ""}
			switch {
			case a.Error != "":
				c.Detail, c.Try = a.Error, a.Hint
			case a.Outcome == plugin.Removed:
				c.Detail = "removed " + pluginWhat(a.Agent) + " from " + a.Dir
				if a.Agent == plugin.Codex {
					c.Detail += " and st's rule " + pc.CodexRule()
				}
			default:
				c.Detail = "nothing of st's to remove in " + a.Dir
			}
			for _, n := range a.Notes {
				c.Detail += " (" + n + ")"
			}
			cs = append(cs, c)
		}
	}

	if _, err := os.Stat(filepath.Join(env.Home(), daemonTmuxStatusMark)); err == nil {
		cs = append(cs, tmuxStatusCheck(ctx, env, false))
	}

	var out bytes.Buffer
	down := doctor.Check{Name: "daemon", OK: true}
	if err := runDown(ctx, &Env{Stdin: env.Stdin, Stdout: &out, Stderr: &out, Getenv: env.Getenv}, downOptions{}); err != nil {
		down.OK, down.Detail, down.Try = false, doctor.FirstLine(err.Error()), "st down"
	} else {
		down.Detail = strings.TrimSpace(out.String())
	}
	cs = append(cs, down)
	printChecks(env.Stdout, cs...)
	if n := doctor.Failed(cs); n > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%s; type the Try: line of each, then st setup --undo again", pluginPlural(n, "step went wrong", "steps went wrong"))}
	}
	fmt.Fprintf(env.Stdout, "st's folder %s stays (its runs and its log); remove it yourself if you want it gone\n", env.Home())
	return nil
}

func undoHooksCheck(a hooks.AgentReport) doctor.Check {
	c := doctor.Check{Name: "hooks " + a.Agent, OK: true}
	switch {
	case a.Error != "":
		c.OK, c.Detail, c.Try = false, a.Error, cmp.Or(a.Hint, "st hooks uninstall --agent "+a.Agent)
	case a.Installed+len(a.Other) > 0:
		c.OK, c.Detail, c.Try = false, fmt.Sprintf("%d of st's hooks are still in %s", a.Installed+len(a.Other), a.File), "st hooks uninstall --agent "+a.Agent
	case a.Changed:
		c.Detail = "removed st's hooks from " + a.File
	default:
		c.Detail = "no st hooks in " + a.File
	}
	if a.Restored {
		c.Detail += "; it is as it was before st first changed it"
	}
	if t := a.Trust; t != nil {
		switch {
		case t.Error != "":
			c.OK, c.Detail, c.Try = false, c.Detail+"; trust: "+t.Error, cmp.Or(t.Hint, "st hooks uninstall --agent codex")
		case t.Changed:
			c.Detail += "; st's trust entries removed from " + t.File
			if t.Restored {
				c.Detail += ", which is as it was before st first changed it"
			}
		}
	}
	return c
}

// daemonTmuxStatusMark is the daemon's mark of the status-line segment
// (daemon.TmuxStatusMark; the command line links no daemon).
const daemonTmuxStatusMark = "tmux-status"

// tmuxStatusCheck puts st's attention segment on tmux's status line (on)
// or takes it off, through the daemon, and says what it did.
func tmuxStatusCheck(ctx context.Context, env *Env, on bool) doctor.Check {
	c := doctor.Check{Name: "tmux status", OK: true}
	s, err := env.Client().TmuxStatus(ctx, on)
	switch {
	case err != nil:
		c.OK, c.Detail = false, doctor.FirstLine(err.Error())
		c.Try = "st setup --tmux-status"
		if !on {
			c.Try = "st setup --undo"
		}
	case on && s.Changed:
		c.Detail = "status-right of " + s.Socket + " shows how many agents need you (st attention lists them)"
	case on:
		c.Detail = "status-right of " + s.Socket + " shows how many agents need you already"
	case s.Changed:
		c.Detail = "took st's segment off status-right of " + s.Socket
	default:
		c.Detail = "no st segment on status-right of " + s.Socket
	}
	return c
}

// printNextOpencode says how to start opencode as the coordinator.
func printNextOpencode(w io.Writer) {
	fmt.Fprintln(w, "Next: in a tmux session, start opencode and ask it to coordinate:")
	fmt.Fprintln(w, "  tmux new -s work")
	fmt.Fprintln(w, "  opencode")
	fmt.Fprintln(w, "  /"+plugin.OpencodeOrchestrate+" <the job, and which parts go to which agent>")
}
