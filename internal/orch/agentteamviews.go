package orch

import (
	"sort"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/syncs"
)

// What st shows of Claude's agent teams and subagents (agentteam.go
// keeps them): the teammates and subagents under each lead, and which
// panes are teammates' own. paneFacts' methods, like agentteam.go's; what
// the registry says of a pane comes in as workers (workerPanes).

// teammatesOf lists the teammates of the teams led from pane, oldest
// first. One that became an st worker (a person dropped it on a
// coordinator) is left out.
func (f *paneFacts) teammatesOf(pane string, workers workerPanes) []api.Teammate {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.teammatesOfLocked(pane, workers)
}

func (f *paneFacts) teammatesOfLocked(pane string, workers workerPanes) []api.Teammate {
	syncs.AssertLocked(&f.mu)
	var out []api.Teammate
	for _, t := range f.ledByLocked(pane) {
		for _, mt := range t.members {
			if mt.Pane != "" && workers.live(mt.Pane) {
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
	syncs.AssertLocked(&f.mu)
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

// teammatePaneLocked reports whether pane is a teammate's own, under a
// lead st sees, and no live worker's: it is shown under that lead, not as
// an agent of its own.
func (f *paneFacts) teammatePaneLocked(pane string, workers workerPanes) bool {
	syncs.AssertLocked(&f.mu)
	t, mt := f.mateByPaneLocked(pane)
	if mt == nil || f.leadOfLocked(t) == "" {
		return false
	}
	return !workers.live(pane)
}

// teammate is teammatePaneLocked, under the facts' lock.
func (f *paneFacts) teammate(pane string, workers workerPanes) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.teammatePaneLocked(pane, workers)
}

// mateName is the name of the teammate whose own pane this is, or "".
func (f *paneFacts) mateName(pane string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, mt := f.mateByPaneLocked(pane); mt != nil {
		return mt.Name
	}
	return ""
}

// refuseTeammate refuses to adopt a teammate, unless a person asked (a
// card dropped on a coordinator): a teammate answers to its lead, and as
// an st worker it would get st's lines typed into it.
func (f *paneFacts) refuseTeammate(pane string, byPerson bool, workers workerPanes) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if byPerson || !f.teammatePaneLocked(pane, workers) {
		return nil
	}
	t, mt := f.mateByPaneLocked(pane)
	return errorf(api.KindConflict, "leave it to its lead; a person who wants it as a worker drops its card on a coordinator in st web",
		"refused: %s is teammate %s of %s's Claude agent team (%s), not an agent of its own", pane, mt.Name, f.leadOfLocked(t), t.name)
}

// paneKindLocked is what st ls says runs in pane: the agent's kind, and
// "teammate" after it for a teammate's own pane.
func (f *paneFacts) paneKindLocked(pane, kind string, workers workerPanes) string {
	syncs.AssertLocked(&f.mu)
	if kind != "" && f.teammatePaneLocked(pane, workers) {
		return kind + " teammate"
	}
	return kind
}

// addTeammatePanes adds to agents (pane -> what st ls says runs there)
// the teammates' panes that their lead's spawn told of before any hook
// of their own came.
func (f *paneFacts) addTeammatePanes(agents map[string]string, workers workerPanes) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.teams {
		lead := f.leadOfLocked(t)
		if lead == "" || f.panes[lead] == nil {
			continue
		}
		for _, mt := range t.members {
			if mt.Pane != "" && agents[mt.Pane] == "" && f.teammatePaneLocked(mt.Pane, workers) {
				agents[mt.Pane] = f.panes[lead].agent + " teammate"
			}
		}
	}
}
