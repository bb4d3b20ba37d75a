package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/client"
	"github.com/sophonz/st/internal/orch"
)

// newHookCmd is what the agents' hooks run: `st hook claude Stop` with the
// event's JSON on stdin. It hands the event to the daemon with the pane it
// came from, returns within about a second, and exits 0 even when st is
// down, so that an agent is never held up by st.
func newHookCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:    "hook AGENT EVENT",
		Short:  "Hand an agent's hook event to st (run by the agents' hooks)",
		Hidden: true,
		Args:   exactArgs(2, "st hook claude|codex|sim EVENT < payload.json"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runHook(cmd.Context(), env, args[0], args[1])
		},
	}
}

// runHook is st hook AGENT EVENT. It runs on every event of every agent,
// so Main calls it before building the command tree, and it does the
// least work that hands the event over.
func runHook(ctx context.Context, env *Env, kind, event string) error {
	payload, err := readLimited(env.Stdin, 1<<20, time.Second)
	if err != nil {
		fmt.Fprintf(env.Stderr, "st hook: %v\n", err)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	pane := env.Getenv("TMUX_PANE")
	c := env.Client()
	// A report queued by st worker done inside a sandbox goes first, so
	// that the turn's end finds the worker done.
	if q, remove, ok := client.TakeQueued(pane); ok {
		if err := c.Call(ctx, "/v1/worker/done", q, nil); err == nil {
			remove()
		}
	}
	req := orch.HookRequest{Agent: kind, Event: event, Pane: pane, Payload: payload, Teammate: teammateOf(env, kind)}
	// The guard needs no daemon: it must work while st is down.
	if event == "PreToolUse" {
		if reason := guard(env, payload); reason != "" {
			deny(env, reason)
			c.Call(ctx, "/v1/hook", req, nil)
			return nil
		}
	}
	var res orch.HookResponse
	if err := c.Call(ctx, "/v1/hook", req, &res); err != nil && env.Getenv("ST_HOOK_DEBUG") != "" {
		fmt.Fprintf(env.Stderr, "st hook: %v\n", err)
	}
	if res.Deny && event == "PreToolUse" {
		deny(env, res.Reason)
	}
	return nil
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

// readLimited reads r up to max bytes, giving up after d (a hook's stdin
// that never closes must not hold the agent).
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
		b, err := io.ReadAll(io.LimitReader(r, max))
		ch <- res{b, err}
	}()
	select {
	case x := <-ch:
		return x.b, x.err
	case <-time.After(d):
		return nil, fmt.Errorf("no payload on stdin within %s", d)
	}
}

// guard refuses a Bash command that would stop the tmux server the agent
// runs in.
func guard(env *Env, payload []byte) string {
	var p struct {
		Tool  string `json:"tool_name"`
		Input struct {
			Command string `json:"command"`
			Cmd     string `json:"cmd"`
		} `json:"tool_input"`
	}
	if json.Unmarshal(payload, &p) != nil {
		return ""
	}
	cmd := p.Input.Command
	if cmd == "" {
		cmd = p.Input.Cmd
	}
	if cmd == "" {
		return ""
	}
	return agent.Guard(cmd, agent.GuardContext{TmuxSocket: env.Getenv("TMUX"), TmuxTmpdir: env.Getenv("TMUX_TMPDIR"), UID: os.Getuid()})
}

// deny tells the agent, in the form both Claude Code and Codex take from a
// PreToolUse hook, that the tool call is refused and why.
func deny(env *Env, reason string) {
	out, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason,
	}})
	fmt.Fprintln(env.Stdout, string(out))
}
