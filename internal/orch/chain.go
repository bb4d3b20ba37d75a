package orch

import (
	"fmt"
	"strings"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/syncs"
)

// The chain: how deep workers go. A worker at level L of run R is L
// below R's coordinator (at most MaxLevel), which may itself be a worker
// (a team lead) further down, or a coordinator on another machine whose
// depth its machine tells (Run.BaseDepth); the whole chain from the top
// coordinator is at most MaxChain. These are the registry's rules.

// MaxChain is how deep the whole chain may go from the top coordinator,
// teams included, across machines too.
const MaxChain = 4

// chainDepthLocked is how many levels below the top coordinator pane is: a
// worker at level L of run R is L below R's coordinator, which may itself
// be a worker (a team lead) further down.
func (reg *registry) chainDepthLocked(pane string) (int, []string) {
	syncs.AssertLocked(&reg.mu)
	d := 0
	path := []string{pane}
	cur := pane
	for i := 0; i < 16; i++ {
		w := reg.workers[cur]
		if w == nil || !w.State.Live() {
			break
		}
		d += w.Level
		r := reg.runOf[cur]
		// The panes between: the worker's parents within its run.
		for p := w.Parent; p != r.Coordinator; {
			path = append([]string{p}, path...)
			pw := reg.workers[p]
			if pw == nil || reg.runOf[p] != r {
				break
			}
			p = pw.Parent
		}
		path = append([]string{r.Coordinator}, path...)
		if r.CoordinatorMachine != "" {
			// The chain goes on on the coordinator's machine, which says
			// how deep its coordinator is (at the start or adoption, and
			// again whenever the chain above it changes).
			d += r.BaseDepth
			if r.BaseDepth > 0 {
				path = append([]string{fmt.Sprintf("%d level(s) above on %s", r.BaseDepth, r.CoordinatorMachine)}, path...)
			}
			break
		}
		cur = r.Coordinator
	}
	return d, path
}

// teamOfLocked returns the run that pane leads with live workers, or nil.
func (reg *registry) teamOfLocked(pane string) *Run {
	syncs.AssertLocked(&reg.mu)
	r := reg.currentRunLocked(pane)
	if r == nil {
		return nil
	}
	for _, w := range r.Workers {
		if w.State.Live() {
			return r
		}
	}
	return nil
}

// teamSizeLocked counts the live workers of run r, teams below included.
func (reg *registry) teamSizeLocked(r *Run, seen map[string]bool) int {
	syncs.AssertLocked(&reg.mu)
	if r == nil || seen[r.ID] {
		return 0
	}
	seen[r.ID] = true
	n := 0
	for _, w := range r.Workers {
		if w.State.Live() {
			n++
			if w.TeamRun != "" {
				n += reg.teamSizeLocked(reg.runs[w.TeamRun], seen)
			}
			n += w.TeamSize // a lead on another machine: its team, as that machine counts it
		}
	}
	return n
}

// subtreeDepthLocked is how many levels lie below pane, counting the teams it
// leads.
func (reg *registry) subtreeDepthLocked(pane string, seen map[string]bool) int {
	syncs.AssertLocked(&reg.mu)
	if seen[pane] {
		return 0
	}
	seen[pane] = true
	r := reg.teamOfLocked(pane)
	if r == nil {
		return 0
	}
	best := 0
	for _, w := range r.Workers {
		if !w.State.Live() {
			continue
		}
		d := w.Level
		if w.TeamRun != "" {
			d += reg.subtreeDepthLocked(w.ID, seen)
		}
		d += w.TeamDepth // a lead on another machine: its team's levels there
		if d > best {
			best = d
		}
	}
	return best
}

// checkChainLocked refuses a new worker of caller whose own tree goes below
// sub levels, when the whole chain would pass MaxChain.
func (reg *registry) checkChainLocked(caller string, sub int, what string) error {
	syncs.AssertLocked(&reg.mu)
	d, path := reg.chainDepthLocked(caller)
	if d+1+sub > MaxChain {
		chain := strings.Join(path, " → ") + " → " + what
		return errorf(api.KindDepth, "hand this part to a coordinator higher up, or do it in this pane",
			"refused: the whole chain would be %d levels deep from the top coordinator (%s); the limit is %d", d+1+sub, chain, MaxChain)
	}
	return nil
}

// MaxLevel is how deep workers may go below their run's coordinator.
const MaxLevel = 2
