package orch

import (
	"sort"

	"github.com/sophonz/st/internal/api"
)

// What st shows of Claude's agent teams and subagents (teammates.go
// keeps them): the teammates and subagents under each lead, and which
// panes are teammates' own. paneFacts' methods, like teammates.go's.

// known says whether pane is a worker's. Called with f.mu and m.mu held.
func (f *paneFacts) known(pane string) bool {
	k, _ := f.worker(pane)
	return k
}

// teammatesOf lists the teammates of the teams led from pane, oldest
// first. One that became an st worker (a person dropped it on a
// coordinator) is left out. Called with m.mu held.
func (f *paneFacts) teammatesOf(pane string) []api.Teammate {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.teammatesOfLocked(pane)
}

func (f *paneFacts) teammatesOfLocked(pane string) []api.Teammate {
	var out []api.Teammate
	for _, t := range f.ledBy(pane) {
		for _, mt := range t.members {
			if _, live := f.worker(mt.Pane); mt.Pane != "" && live {
				continue
			}
			v := mt.Teammate
			v.For = roundDur(f.now().Sub(v.Since))
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Started.Equal(out[j].Started) {
			return out[i].Started.Before(out[j].Started)
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// subagentsOf lists the subagents of pane's agent, oldest first.
func (f *paneFacts) subagentsOf(pane string) []api.Subagent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.subagentsOfLocked(pane)
}

func (f *paneFacts) subagentsOfLocked(pane string) []api.Subagent {
	pi := f.panes[pane]
	if pi == nil {
		return nil
	}
	var out []api.Subagent
	for _, s := range pi.subagents {
		v := *s
		v.For = roundDur(f.now().Sub(v.Since))
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out
}

// teammatePane reports whether pane is a teammate's own, under a lead st
// sees: it is shown under that lead, not as an agent of its own. Called
// with f.mu and m.mu held.
func (f *paneFacts) teammatePane(pane string) bool {
	t, mt := f.mateByPane(pane)
	if mt == nil || f.leadOf(t) == "" {
		return false
	}
	_, live := f.worker(pane)
	return !live
}

// mateName is the name of the teammate whose own pane this is, or "".
func (f *paneFacts) mateName(pane string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, mt := f.mateByPane(pane); mt != nil {
		return mt.Name
	}
	return ""
}

// refuseTeammate refuses to adopt a teammate, unless a person asked (a
// card dropped on a coordinator): a teammate answers to its lead, and as
// an st worker it would get st's lines typed into it. Called with m.mu
// held.
func (f *paneFacts) refuseTeammate(pane string, byPerson bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if byPerson || !f.teammatePane(pane) {
		return nil
	}
	t, mt := f.mateByPane(pane)
	return errorf(api.KindConflict, "leave it to its lead; a person who wants it as a worker drops its card on a coordinator in st web",
		"refused: %s is teammate %s of %s's Claude agent team (%s), not an agent of its own", pane, mt.Name, f.leadOf(t), t.name)
}

// paneKind is what st ls says runs in pane: the agent's kind, and
// "teammate" after it for a teammate's own pane. Called with f.mu and
// m.mu held.
func (f *paneFacts) paneKind(pane, kind string) string {
	if kind != "" && f.teammatePane(pane) {
		return kind + " teammate"
	}
	return kind
}

// addTeammatePanes adds to agents (pane -> what st ls says runs there)
// the teammates' panes that their lead's spawn told of before any hook
// of their own came. Called with m.mu held.
func (f *paneFacts) addTeammatePanes(agents map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.teams {
		lead := f.leadOf(t)
		if lead == "" || f.panes[lead] == nil {
			continue
		}
		for _, mt := range t.members {
			if mt.Pane != "" && agents[mt.Pane] == "" && f.teammatePane(mt.Pane) {
				agents[mt.Pane] = f.panes[lead].agent + " teammate"
			}
		}
	}
}
