package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/client"
	"github.com/sophonz/st/internal/guard"
	"github.com/sophonz/st/internal/store"
)

type hookOptions struct{ Agent, Event string }

// newHookCmd is what the agents' hooks run: `st hook claude Stop` with the
// event's JSON on stdin. It hands the event to the daemon with the pane it
// came from, returns within about a second, and exits 0 even when st is
// down, so that an agent is never held up by st.
func newHookCmd(env *Env, runF runFunc[hookOptions]) *cobra.Command {
	var o hookOptions
	cmd := &cobra.Command{
		Use:    "hook AGENT EVENT",
		Short:  "Hand an agent's hook event to st (run by the agents' hooks)",
		Hidden: true,
		Args:   exactArgs(2, "st hook "+strings.Join(agent.Kinds(), "|")+" EVENT < payload.json"),
	}
	return bind(cmd, env, &o, takeArgs(&o.Agent, &o.Event), runF, runHook)
}

// runHook is st hook AGENT EVENT. It runs on every event of every agent,
// so Main calls it before building the command tree, and it does the
// least work that hands the event over.
func runHook(ctx context.Context, env *Env, o hookOptions) error {
	// The event where the guard and scopes answer a tool about to run,
	// and how a refusal is spelled, are the agent kind's. An unknown kind
	// is handed on as it is (the daemon refuses it) and refuses nothing.
	kind, _ := agent.Lookup(o.Agent)
	before := kind != nil && o.Event == kind.Hear.BeforeTool
	payload, err := readLimited(env.Stdin, maxPayload, time.Second)
	if err != nil {
		fmt.Fprintf(env.Stderr, "st hook: %v\n", err)
		if before {
			// A payload st cannot read whole may hold any command: the
			// guard fails closed.
			deny(env, kind, "st guard: st could not read this tool call ("+err.Error()+"), so it refuses it: "+
				"a command st cannot check could stop the tmux server this agent runs in. Split the call into smaller ones.")
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := store.CheckHome(env.Home()); err != nil {
		// Not st's to talk to: the guard still stands, and the agent goes on.
		fmt.Fprintf(env.Stderr, "st hook: %v\n", err)
		if before {
			if reason := checkCall(env, payload); reason != "" {
				deny(env, kind, reason)
			}
		}
		return nil
	}
	pane := callerPane(env)
	// A hook never starts st: the hooks fire in every session of the
	// agent on this machine, and st down (or st not yet started) must
	// stay so; a hook must also be back within a second. Nothing is lost:
	// st reads the panes and screens again when it starts, and a queued
	// report waits for the next hook.
	c := env.RunningClient()
	handOver(ctx, env, c, o.Event, pane, payload)
	req := api.HookRequest{Agent: o.Agent, Event: o.Event, Pane: pane, Payload: payload, Teammate: (*api.TeammateID)(teammateOf(env, o.Agent))}
	// The guard needs no daemon: it must work while st is down.
	if before {
		if reason := checkCall(env, payload); reason != "" {
			deny(env, kind, reason)
			c.Hook(ctx, req)
			return nil
		}
	}
	res, err := c.Hook(ctx, req)
	if err != nil && env.Getenv("ST_HOOK_DEBUG") != "" {
		fmt.Fprintf(env.Stderr, "st hook: %v\n", err)
	}
	if err == nil && res.Deny && before {
		deny(env, kind, res.Reason)
	}
	if err == nil && kind != nil && kind.Hear.Answers == o.Event {
		waitAnswer(env, c, kind, req)
	}
	return nil
}

// waitAnswer waits for a person's answer to the permission prompt of req
// (st's deadline, permission_wait, bounds it) and prints it in the
// agent's form. The agent's own dialog is on its screen all along
// (Claude 2.1.332 shows it while this hook runs), so every failure here
// prints nothing and leaves the answer to that dialog: it fails closed.
func waitAnswer(env *Env, c *client.Client, kind *agent.Kind, req api.HookRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), api.MaxPromptWait+10*time.Second)
	defer cancel()
	d, err := c.WaitPrompt(ctx, req)
	if err != nil {
		if env.Getenv("ST_HOOK_DEBUG") != "" {
			fmt.Fprintf(env.Stderr, "st hook: %v\n", err)
		}
		return
	}
	if out := kind.AnswerPrompt(d.Behavior, d.Option, d.By, req.Payload); out != nil {
		fmt.Fprintln(env.Stdout, string(out))
	}
}

// teammateOf is who a Claude agent is in an agent team, read from the
// command line of the Claude process that runs the hook ($CLAUDE_PID):
// no hook payload of a teammate says it is one, but its command line
// names it, its team and its lead. nil for any other agent, and where
// there is no /proc to read.
func teammateOf(env *Env, kind string) *agent.Teammate {
	if kind != "claude" {
		return nil
	}
	pid, err := strconv.Atoi(env.Getenv("CLAUDE_PID"))
	if err != nil || pid <= 1 {
		return nil
	}
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return nil
	}
	return agent.TeammateFromArgs(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"))
}

// maxPayload is the largest hook payload st reads: 1 MiB.
const maxPayload = 1 << 20

// readLimited reads r, giving up after d (a hook's stdin that never closes
// must not hold the agent). More than max bytes is an error, not a cut:
// a cut payload would hide the rest of the command from the guard.
func readLimited(r io.Reader, max int64, d time.Duration) ([]byte, error) {
	if r == nil {
		return nil, nil
	}
	type res struct {
		b   []byte
		err error
	}
	ch := make(chan res, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(r, max+1))
		if err == nil && int64(len(b)) > max {
			err = fmt.Errorf("the payload is more than %d bytes", max)
		}
		ch <- res{b, err}
	}()
	select {
	case x := <-ch:
		return x.b, x.err
	case <-time.After(d):
		return nil, fmt.Errorf("no payload on stdin within %s", d)
	}
}

// checkCall refuses a Bash command that may stop the tmux server the agent
// runs in. A payload it cannot read is refused too.
func checkCall(env *Env, payload []byte) string {
	var p struct {
		Input json.RawMessage `json:"tool_input"`
		Cwd   string          `json:"cwd"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return "st guard: st cannot read this tool call's hook payload (" + err.Error() + "), so it refuses it."
	}
	cmd, err := commandOf(p.Input)
	if err != nil {
		return "st guard: st cannot read this tool call's command (" + err.Error() + "), so it refuses it."
	}
	if cmd == "" {
		return ""
	}
	// The guard asks the agent's tmux server (read-only) only when a verdict
	// depends on it: a kill of a session, window, pane or pid.
	return guard.Check(cmd, guard.Context{TmuxSocket: env.Getenv("TMUX"), TmuxTmpdir: env.Getenv("TMUX_TMPDIR"), UID: os.Getuid(),
		Pane: env.Getenv("TMUX_PANE"), Cwd: p.Cwd, Ask: askSt(env)})
}

// askSt asks st's daemon about the agent's tmux server, for the guard: the
// hook runs no tmux, and the daemon drives that server. A daemon that is
// down, or that drives another server, cannot answer, and the guard then
// refuses what only the answer could let through (it says why).
func askSt(env *Env) func(socket string) (guard.Server, error) {
	return func(socket string) (guard.Server, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		g, err := env.RunningClient().GuardServer(ctx, env.Getenv("TMUX_PANE"), socket)
		var down *client.DownError
		switch {
		case errors.As(err, &down):
			return guard.Server{}, errors.New("st is not running, and the hook asks st about its tmux server: st up")
		case err != nil:
			return guard.Server{}, err
		}
		srv, err := guard.ParseServer(g.Panes)
		srv.Args = g.Args
		return srv, err
	}
}

// commandOf is the shell command of a tool call's input: "command" or
// "cmd", a string or an argument list.
func commandOf(input json.RawMessage) (string, error) {
	if len(input) == 0 || string(input) == "null" {
		return "", nil
	}
	var in map[string]json.RawMessage
	if err := json.Unmarshal(input, &in); err != nil {
		return "", nil // not an object: no command
	}
	for _, k := range []string{"command", "cmd"} {
		raw, ok := in[k]
		if !ok || string(raw) == "null" {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if s != "" {
				return s, nil
			}
			continue
		}
		var argv []string
		if err := json.Unmarshal(raw, &argv); err != nil {
			return "", fmt.Errorf("%q is neither text nor a list of words", k)
		}
		// An argument list: as a shell would see it quoted.
		q := make([]string, len(argv))
		for i, a := range argv {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		return strings.Join(q, " "), nil
	}
	return "", nil
}

// deny tells the agent, in its own form (the kind's Refusal), that the
// tool call is refused and why.
func deny(env *Env, kind *agent.Kind, reason string) {
	fmt.Fprintln(env.Stdout, string(kind.Refuse(reason)))
}
