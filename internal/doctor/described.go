package doctor

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sophonz/st/internal/agent"
)

// Described checks each agent the user describes in config.toml
// ([agents.NAME]): a description st refused says what to fix; one it took
// says where its program is, and what st cannot do for it (no hooks: its
// states come from its screen; no busy or prompt marker: what st will not
// see).
func Described(home string, getenv func(string) string) []Check {
	var out []Check
	for _, err := range agent.LoadDescribed(home) {
		var de *agent.DescriptionError
		if errors.As(err, &de) {
			out = append(out, bad("agent "+de.Name+" (config.toml)", de.Problem+"; "+de.Fix, ""))
			continue
		}
		out = append(out, bad("agents in config.toml", err.Error(), ""))
	}
	for _, k := range agent.All() {
		if !k.Described {
			continue
		}
		name := "agent " + k.Name + " (config.toml)"
		path, err := agent.LookProgram(k.Name, k.Launch.Program, getenv("PATH"))
		if err != nil {
			out = append(out, bad(name, fmt.Sprintf("cannot start %s: %v", k.Title, err), ""))
			continue
		}
		var notes []string
		if k.ScreenStates() {
			notes = append(notes, fmt.Sprintf("no hooks: st reads its states from its screen (listings mark them so) and types only when %q is up", strings.Join(k.Screen.Ready, `" or "`)))
			if len(k.Screen.Busy) == 0 {
				notes = append(notes, "no busy marker: a turn ends for st only when its ready marker is back")
			}
			if len(k.Screen.Prompt) == 0 {
				notes = append(notes, "no prompt marker: a question on its screen reads as work, never as waiting")
			}
			if strings.Contains(k.Launch.Resume, "{id}") {
				notes = append(notes, "resume is of no use without hooks: st learns no conversation id, so after a tmux restart it starts it anew")
			}
		} else {
			notes = append(notes, fmt.Sprintf("Claude-like hooks, wired by you: its hooks must run %q for %s",
				"st hook "+k.Name+" EVENT", strings.Join(k.EventNames(), ", ")))
		}
		out = append(out, ok(name, fmt.Sprintf("%s at %s; %s", k.Title, path, strings.Join(notes, "; "))))
	}
	return out
}
