package peer

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/orch"
	"github.com/sophonz/st/internal/plain"
	"github.com/sophonz/st/internal/tmux"
)

// What another machine sends is untrusted until checked: its run ids
// become folder names under $ST_HOME, its names become tmux window names
// and words typed into agents, and what it answers is printed to people
// and typed into coordinators. Each is checked here with the rules local
// input meets, and a check fails closed: the request is refused, or the
// answer is not taken.

// (Plain loops rather than regular expressions: a counted repeat such as
// {0,62} compiles to dozens of states at every start of st, hooks
// included, and these run rarely.)

// allOf reports whether s has between min and max bytes, each in ok.
func allOf(s string, min, max int, ok func(byte) bool) bool {
	if len(s) < min || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func lowerHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

// ValidRunID reports whether id is a run id as st makes them (run- and
// hex), and so safe as a folder name.
func ValidRunID(id string) bool {
	rest, ok := strings.CutPrefix(id, "run-")
	return ok && allOf(rest, 6, 32, lowerHex)
}

// validRef reports whether s is a reference as st makes them (hex).
func validRef(s string) bool { return allOf(s, 8, 64, lowerHex) }

// validSlug reports whether s is a machine slug as the control plane
// makes them: lower-case letters, digits and '-', not starting with '-'.
func validSlug(s string) bool {
	return len(s) > 0 && s[0] != '-' && allOf(s, 1, 63, func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' })
}

// validEnvKey reports whether k is one of the simulated agent's knobs.
func validEnvKey(k string) bool {
	rest, ok := strings.CutPrefix(k, "ST_SIM_")
	return ok && allOf(rest, 1, 40, func(c byte) bool { return c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' })
}

// validRemoteID reports whether id is machine/%N (or a retired
// machine/%N~gen) or machine/name.
func validRemoteID(id string) bool {
	mach, rest, ok := api.SplitRemote(id)
	return ok && validSlug(mach) && (validPaneRef(rest) || orch.ValidName(rest))
}

// validPaneRef reports whether id is a pane id as st keeps them: %N, or
// the retired id of a pane of a tmux server that went (%N~gen), which is
// how every place names that pane (a new pane may have %N now).
func validPaneRef(id string) bool {
	pane, gen, ok := strings.Cut(id, api.RetiredMark)
	return tmux.ValidPaneID(pane) && (!ok || allOf(gen, 1, 13, func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }))
}

// peerRefused is the error for a request from another machine that
// breaks the rules; what it sent is not echoed back raw.
func peerRefused(from, what string) *api.Error {
	return errorf(api.KindUsage, "upgrade st on "+from+" (this machine refuses what it sent)",
		"refused: %s from %s", what, from)
}

// checkPlacement checks the placement fields of a start or adopt.
func checkPlacement(from, run, coordinator, parent, ref string, level, baseDepth int) error {
	switch {
	case !ValidRunID(run):
		return peerRefused(from, "a run id that is not of the form run-<hex>")
	case !tmux.ValidPaneID(coordinator) || !tmux.ValidPaneID(parent):
		return peerRefused(from, "a coordinator or parent that is not a pane id")
	case !validRef(ref):
		return peerRefused(from, "a bad reference")
	case level < 1 || level > orch.MaxChain || baseDepth < 0 || baseDepth > orch.MaxChain:
		return peerRefused(from, fmt.Sprintf("depths out of range (level %d, base %d)", level, baseDepth))
	}
	return nil
}

// checkPeerStart checks a start request from machine from.
func checkStart(from string, req *api.PeerStart) error {
	if err := checkPlacement(from, req.Run, req.Coordinator, req.Parent, req.Ref, req.Level, req.BaseDepth); err != nil {
		return err
	}
	if !agent.ValidKindName(req.Agent) {
		return peerRefused(from, "an agent name that is not of a kind's form")
	}
	if _, err := agent.Lookup(req.Agent); err != nil {
		// (Named: its form was checked. The kinds are this machine's, for
		// the user on the other one to choose from.)
		return errorf(api.KindUsage, "--agent "+strings.Join(agent.Kinds(), "|")+", or describe "+req.Agent+" in config.toml ([agents."+req.Agent+"]) on this machine",
			"refused: %s asked for an agent this machine cannot start: %v", from, err)
	}
	if req.Name != "" && !orch.ValidName(req.Name) {
		return peerRefused(from, "a worker name with characters that tmux or a shell would misread")
	}
	if req.Cwd != "" && (!filepath.IsAbs(req.Cwd) || plain.Line(req.Cwd) != nil) {
		return errorf(api.KindUsage, "pass an absolute folder of that machine with --cwd", "the worker's folder %q is not an absolute path", plain.Clean(req.Cwd))
	}
	if plain.Line(req.TaskName) != nil {
		return peerRefused(from, "a task file name with control characters")
	}
	if plain.Line(req.ParentName) != nil || len(req.ParentName) > 80 {
		return peerRefused(from, "a coordinator name with control characters")
	}
	for k, v := range req.Env {
		if !validEnvKey(k) || len(v) > 256 || plain.Line(v) != nil {
			return peerRefused(from, "a setting other than the simulated agent's knobs")
		}
	}
	return nil
}

// checkPeerID checks the id a machine names a worker or pane here by.
func checkID(from, id string) error {
	if !validPaneRef(id) && !orch.ValidName(id) {
		return peerRefused(from, "an id that is neither a pane id nor a worker name")
	}
	return nil
}

// checkPeerView checks what another machine answered about one of its
// workers before st keeps, prints or types any of it: the ids and name
// are typed into the coordinator's notices, the state drives waits, and
// the texts are printed. The agent's last answer is shown, never typed,
// so it is made printable rather than refused.
func checkView(v *api.WorkerView) error {
	bad := func(what string) error {
		return errorf(api.KindRemote, "upgrade st on that machine; this machine does not take what it sent",
			"refused: the other machine answered with %s", what)
	}
	switch {
	case !validPaneRef(v.ID):
		return bad("a worker id that is not a pane id")
	case !orch.ValidName(v.Name):
		return bad("a worker name with characters that tmux or a shell would misread")
	case !knownState(v.State):
		return bad("a state st does not know")
	case v.TeamOf < 0 || v.TeamDepth < 0 || v.TeamDepth > orch.MaxChain:
		return bad("a team size or depth out of range")
	case !v.Tokens.Valid() || (v.Tokens != nil && plain.Line(v.Tokens.PriceDate) != nil):
		// (They count against its coordinator's budget here.)
		return bad("token counts below zero or that do not add up")
	}
	// The machine that runs the agent decides which kinds exist there (its
	// config.toml may describe one this machine does not know): its name
	// is taken by its form alone, shown here as that machine's kind.
	if v.Agent != "" && !agent.ValidKindName(v.Agent) {
		return bad("an agent name that is not of a kind's form")
	}
	if v.Ref != "" && !validRef(v.Ref) {
		return bad("a bad reference")
	}
	for _, s := range []string{v.Summary, v.Error} {
		if plain.Text(s) != nil {
			return bad("a summary or error with control characters")
		}
	}
	for _, s := range v.Notes {
		if plain.Text(s) != nil {
			return bad("a note with control characters")
		}
	}
	for _, s := range []string{v.Parent, v.Run, v.Task, v.Cwd, v.Window, v.Session, v.Fan, v.AgentSession, v.For, v.ParentNow, v.TeamRun, v.ParentName, v.ParentMachineName, v.Transcript} {
		if plain.Line(s) != nil {
			return bad("a field with control characters")
		}
	}
	if v.Scope != nil {
		for _, g := range append([]string{v.Scope.Root}, v.Scope.Globs...) {
			if plain.Line(g) != nil {
				return bad("a scope with control characters")
			}
		}
	}
	if wt := v.Worktree; wt != nil {
		for _, s := range []string{wt.Path, wt.Branch, wt.Root, wt.Base} {
			if plain.Line(s) != nil {
				return bad("a worktree with control characters")
			}
		}
	}
	if p := v.Pause; p != nil {
		// (A boundary: another machine's words reach this machine's
		// listings and web UI.)
		for _, s := range []string{p.Reason, p.Text, p.By} {
			if plain.Line(s) != nil {
				return bad("a pause with control characters")
			}
		}
	}
	switch v.OnLimit {
	case "", "wait", "move", "fail":
	default:
		return bad("an on-limit choice st does not know")
	}
	v.LastAnswer = plain.Clean(v.LastAnswer)
	v.ReportAnswer = plain.Clean(v.ReportAnswer)
	return nil
}

// knownState reports whether s is a worker state of this st.
func knownState(s api.State) bool {
	switch s {
	case api.Starting, api.Blocked, api.Working, api.Waiting, api.Idle, api.Done, api.Failed, api.Gone, api.Unreachable, api.Paused:
		return true
	}
	return false
}

// CheckGraph keeps the agents of another machine's graph that pass the
// checks, for the web UI (the daemon asks the other machines for their
// graphs on its behalf): their ids, names and texts are shown.
func CheckGraph(g []api.GraphAgent) []api.GraphAgent {
	out := g[:0]
	for _, a := range g {
		okPane := tmux.ValidPaneID(a.Pane) || validRemoteID(a.Pane)
		okParent := a.Parent == "" || validPaneRef(a.Parent) || validRemoteID(a.Parent)
		okName := a.Name == "" || plain.Line(a.Name) == nil
		okRun := a.Run == "" || ValidRunID(a.Run)
		okKind := a.Kind == "" || agent.ValidKindName(a.Kind) // (its machine's kind, as in checkView)
		okRole := a.Role == "" || a.Role == "coordinator" || a.Role == "worker"
		okState := a.State == "" || knownState(api.State(a.State))
		if !okPane || !okParent || !okName || !okRun || !okKind || !okRole || !okState || plain.Text(a.Summary) != nil || a.TeamOf < 0 || !a.Tokens.Valid() {
			continue
		}
		a.Subagents = nil // another machine's subagents are its own business
		out = append(out, a)
	}
	return out
}

// Bounds of the attention items another machine sends: more than a
// person reads, less than would make one answer swell this machine's
// book and web UI.
const (
	maxAttention     = 100
	maxAttentionText = 2000
	maxAttnOptions   = 20
)

// checkAttention keeps of the attention items another machine sent about
// its workers those that pass the checks, made printable: the kind is one
// st carries across machines, the id and pane are as st makes them, and
// the texts, shown to people here, are bounded and cleaned as its
// workers' answers are. An item that fails is left out (not shown), and
// beyond maxAttention none is taken. Who the worker is (its name and
// agent) comes from this machine's own record, not from the item.
func checkAttention(items []api.Attention) (kept []api.Attention, dropped int) {
	if len(items) > maxAttention {
		return nil, len(items)
	}
	for _, a := range items {
		switch {
		case !validAttnID(a.ID), !validPaneRef(a.Pane), a.Opened.IsZero(), a.Closed != nil,
			!api.ValidAttentionKind(a.Kind) || a.Kind == api.AttnGate || a.Kind == api.AttnRunDone,
			len(a.Text) > maxAttentionText, len(a.Command) > maxAttentionText, len(a.Tool) > 100,
			len(a.Options) > maxAttnOptions:
			dropped++
			continue
		}
		opts := make([]string, 0, len(a.Options))
		for _, o := range a.Options {
			if len(o) > 200 {
				opts = nil
				break
			}
			opts = append(opts, plain.Clean(o))
		}
		if len(opts) != len(a.Options) {
			dropped++
			continue
		}
		kept = append(kept, api.Attention{ID: a.ID, Kind: a.Kind, Pane: a.Pane, Opened: a.Opened,
			Text: plain.Clean(a.Text), Tool: plain.Clean(a.Tool), Command: plain.Clean(a.Command), Options: opts,
			TextHidden: a.TextHidden})
	}
	return kept, dropped
}

// validAttnID reports whether id is an item id as st makes them (att-N).
func validAttnID(id string) bool {
	n, ok := strings.CutPrefix(id, "att-")
	return ok && n != "" && n[0] != '0' && allOf(n, 1, 20, func(c byte) bool { return c >= '0' && c <= '9' })
}
