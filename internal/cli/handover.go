package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sync"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/client"
	"github.com/sophonz/st/internal/shell"
)

// A report that a sandbox kept from st (st worker done queued it) is
// handed over by the agent's own hook, which runs outside the sandbox.
// The queue's folder is open to every sandbox, so the hook takes only the
// report its own tool call vouches for: the PostToolUse of the call that
// ran st worker done, whose output (Codex hands it to the hook from
// outside the sandbox) names the digest of the file it queued. See
// internal/client's queue.go.

// digestRE finds the digest st worker done prints of a queued report.
var digestRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(regexp.QuoteMeta(digestMark) + `([0-9a-f]{64})`) })

// handOver gives st, before the hook's own event (so that the turn's end
// finds the worker done), the reports kept from it for pane: one a hook
// took while st was down, and at the PostToolUse of the call that queued
// one, that one.
func handOver(ctx context.Context, env *Env, c *client.Client, event, pane string, payload []byte) {
	if req, remove, ok := c.TakeKept(pane); ok {
		if err := giveReport(ctx, c, req); err == nil || !isTransient(err) {
			remove()
			tellRefused(env, pane, err)
		}
	}
	if event != "PostToolUse" {
		return
	}
	digest := vouched(payload)
	if digest == "" {
		return
	}
	req, remove, ok := c.TakeQueued(pane, digest)
	if !ok {
		fmt.Fprintf(env.Stderr, "st hook: the report this tool call queued for %s (%s%s) is not in the queue as it was written: "+
			"another hook of the call took it, or something removed or changed it.\nTry: st worker list shows whether it arrived; if not, st worker done again\n", pane, digestMark, digest)
		return
	}
	err := giveReport(ctx, c, req)
	if err != nil && isTransient(err) {
		// st is down or restarting: the report waits where no sandbox
		// may write, for a later hook of this pane.
		if kerr := c.KeepReport(req); kerr != nil {
			fmt.Fprintf(env.Stderr, "st hook: st did not take the queued report of %s (%v), and it could not be kept for later: %v\n", pane, err, kerr)
			return
		}
	}
	remove()
	tellRefused(env, pane, err)
}

// giveReport hands a report to st; nil once st has it.
func giveReport(ctx context.Context, c *client.Client, req api.DoneRequest) error {
	_, err := c.Done(ctx, req)
	return err
}

// tellRefused says on the hook's stderr that st refused a queued report
// (an answer, not a failure to reach it): it is not tried again.
func tellRefused(env *Env, pane string, err error) {
	if err != nil && !isTransient(err) {
		fmt.Fprintf(env.Stderr, "st hook: st refused the queued report of %s: %v\n", pane, err)
	}
}

// vouched is the digest of the report that this tool call queued, from
// the PostToolUse payload: the call ran st worker done, and its output
// names one digest. "" for any other call, or an output that names
// several (text the call printed besides st's line could name one too).
func vouched(payload []byte) string {
	if !bytes.Contains(payload, []byte(digestMark)) {
		return "" // every tool call's hook: no decoding for most
	}
	var p struct {
		Input    json.RawMessage `json:"tool_input"`
		Response json.RawMessage `json:"tool_response"`
	}
	if json.Unmarshal(payload, &p) != nil {
		return ""
	}
	found := map[string]bool{}
	for _, m := range digestRE().FindAllSubmatch(p.Response, -1) {
		found[string(m[1])] = true
	}
	if len(found) != 1 {
		return ""
	}
	cmd, err := commandOf(p.Input)
	if err != nil || !runsWorkerDone(cmd) {
		return ""
	}
	for d := range found {
		return d
	}
	return ""
}

// runsWorkerDone reports whether a shell command runs st worker done
// (st by any path, after wrappers and variables set before it).
func runsWorkerDone(cmd string) bool {
	for _, c := range shell.Read(cmd, shell.Env{}).Cmds {
		if len(c.Args) < 3 {
			continue
		}
		w, _ := c.Args[1].Known()
		d, _ := c.Args[2].Known()
		if w == "worker" && d == "done" {
			return true
		}
	}
	return false
}
