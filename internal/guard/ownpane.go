package guard

import (
	"fmt"

	"github.com/sophonz/st/internal/shell"
)

// The agent's own pane. Typing into it (send-keys, paste-buffer,
// send-prefix, pipe-pane -I) is refused outright: an agent has no reason
// to type into itself, and C-d, exit or C-c there ends the agent, and with
// the server's last pane the server. Replacing its process (respawn-pane
// -k, respawn-window -k) is judged as killing it: the new process may end
// at once, and the last pane's end is the server's.

// typeSpecs are the getopt specs of the tmux commands that type into a
// pane, or replace its process.
var typeSpecs = map[string]string{
	"send-keys": "c:FHKlMN:Rt:X", "send-prefix": "2t:", "paste-buffer": "db:prs:t:", "pipe-pane": "IOot:",
	"respawn-pane": "c:e:kt:", "respawn-window": "c:e:kt:",
}

// ownPane judges, on the agent's own server, the commands that type into
// a pane or replace its process.
func (ch *checker) ownPane(d, name string, args []shell.Arg) string {
	spec, ok := typeSpecs[name]
	if !ok {
		return ""
	}
	f, _, ok := tmuxOpts(args, spec)
	switch {
	case !ok:
		return "" // tmux refuses it
	case name == "send-keys" && f.has('X'), name == "pipe-pane" && !f.has('I'):
		return "" // copy-mode commands; a pipe that only reads the pane
	case name == "respawn-pane" || name == "respawn-window":
		return ch.respawn(d, name, f)
	}
	if !f.has('t') {
		if ch.g.TmuxSocket == "" {
			return "" // the agent runs in no pane: tmux types into a client's current one
		}
		return ownPaneRefusal(d, "without -t it types into the pane the agent runs in")
	}
	t, known := f.val('t').Known()
	if !known {
		return unknown(fmt.Sprintf("%s: its target %s may be this agent's own pane", quote(d), show(f.val('t').String())),
			"Name the pane plainly (tmux "+name+" -t %N), after checking it is not the agent's own ($TMUX_PANE).")
	}
	if ch.g.Pane == "" {
		return "" // st does not know the agent's pane: a rail's blind spot
	}
	if t == ch.g.Pane {
		return ownPaneRefusal(d, t+" is the pane the agent runs in ($TMUX_PANE)")
	}
	s, err := ch.facts()
	if err != nil {
		return unknown(fmt.Sprintf("%s: st could not ask the tmux server whether %s is this agent's own pane (%v)", quote(d), quote(t), err),
			"Try again; tmux must answer `tmux list-panes -a` for st to let it through.")
	}
	if s.paneTarget(t)[ch.g.Pane] {
		return ownPaneRefusal(d, fmt.Sprintf("%s may be the pane the agent runs in (%s)", quote(t), ch.g.Pane))
	}
	return ""
}

// respawn judges respawn-pane -k and respawn-window -k as kill-pane and
// kill-window of the same target: without -k tmux respawns only a pane
// whose process has ended.
func (ch *checker) respawn(d, name string, f tmuxFlags) string {
	if !f.has('k') {
		return ""
	}
	kill := map[string]string{"respawn-pane": "kill-pane", "respawn-window": "kill-window"}[name]
	if !f.has('t') {
		// The agent's own pane, or its window.
		if ch.g.Pane == "" {
			return refuse(d + "; without -t it replaces the process of the agent's own " + kill[len("kill-"):] +
				", which may be the server's last, and the new one may end at once")
		}
		return ch.lastKill(d, kill, ch.g.Pane)
	}
	t, known := f.val('t').Known()
	if !known {
		return unknown(fmt.Sprintf("%s: its target %s may be the agent's own or the server's last, and replacing its process may end it", quote(d), show(f.val('t').String())),
			"Name the target plainly (tmux "+name+" -k -t NAME), after checking it is not the agent's own.")
	}
	return ch.lastKill(d, kill, t)
}

// ownPaneRefusal is the reason for typing into the agent's own pane.
func ownPaneRefusal(d, why string) string {
	return "st guard: this command types into this agent's own pane (" + d + "; " + why + "): an agent has no reason to type " +
		"into itself, and C-d, exit or C-c there ends the agent, and with the server's last pane the server. " +
		"To reach another agent use st worker send; to type into another pane, name it with -t %N."
}
