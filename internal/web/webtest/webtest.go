// Package webtest has a fake web.Backend, for the web UI's tests and for
// looking at the UI without a daemon: it holds a Snapshot that a test
// changes at will, and records what the page asked for.
package webtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sophonz/st/internal/web"
)

// Call is one action the page asked of the Backend.
type Call struct {
	Method string   // Adopt, Release, AnswerGate
	Args   []string // in the method's order
}

func (c Call) String() string { return fmt.Sprintf("%s%q", c.Method, c.Args) }

// Backend is a fake web.Backend. Its actions change the Snapshot the way
// st would, roughly, so that a page sees their effect.
type Backend struct {
	mu      sync.Mutex
	snap    web.Snapshot
	changed chan struct{}
	calls   []Call
	// Err, when set, is what every action returns (and it changes nothing).
	Err error
}

// New returns a fake holding snap.
func New(snap web.Snapshot) *Backend {
	return &Backend{snap: snap, changed: make(chan struct{})}
}

// Snapshot returns a copy of the state, with Release set as st sets it
// (see records).
func (b *Backend) Snapshot(ctx context.Context) (web.Snapshot, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := clone(b.snap)
	for i := range s.Agents {
		s.Agents[i].Release = s.Agents[i].Release || record(s.Agents[i], s.Machine)
	}
	return s, nil
}

// record reports whether st would hold a as this machine's record of a
// worker, which a page of this machine may release: a worker here, or
// one on another machine whose coordinator (or shell) is here. Another
// machine's own workers (their parent written machine/%N) are not.
func record(a web.Agent, self string) bool {
	if a.Parent == "" {
		return false
	}
	return a.Machine == "" || a.Machine == self || !strings.Contains(a.Parent, "/")
}

// Changed is closed at the next Set or Update.
func (b *Backend) Changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed
}

// Set replaces the state and announces the change.
func (b *Backend) Set(snap web.Snapshot) {
	b.Update(func(s *web.Snapshot) { *s = snap })
}

// Update changes the state in place and announces the change.
func (b *Backend) Update(f func(*web.Snapshot)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f(&b.snap)
	close(b.changed)
	b.changed = make(chan struct{})
}

// Calls returns the actions asked for so far.
func (b *Backend) Calls() []Call {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.calls)
}

func (b *Backend) record(method string, args ...string) error {
	b.mu.Lock()
	b.calls = append(b.calls, Call{Method: method, Args: args})
	err := b.Err
	b.mu.Unlock()
	return err
}

// Adopt makes agent a worker of coordinator.
func (b *Backend) Adopt(ctx context.Context, coordinator, agent string) error {
	if err := b.record("Adopt", coordinator, agent); err != nil {
		return err
	}
	b.Update(func(s *web.Snapshot) {
		for i := range s.Agents {
			a := &s.Agents[i]
			switch a.Pane {
			case agent:
				a.Parent, a.ParentGone, a.Role = coordinator, false, web.RoleWorker
			case coordinator:
				if a.Role == "" {
					a.Role = web.RoleCoordinator
				}
			}
		}
	})
	return nil
}

// Release lets a worker go.
func (b *Backend) Release(ctx context.Context, worker string) error {
	if err := b.record("Release", worker); err != nil {
		return err
	}
	b.Update(func(s *web.Snapshot) {
		for i := range s.Agents {
			if a := &s.Agents[i]; a.Pane == worker {
				a.Parent, a.ParentGone, a.Role = "", false, ""
			}
		}
	})
	return nil
}

// ErrNoGate is what AnswerGate returns for a gate that is not open, as st
// refuses a second answer.
var ErrNoGate = errors.New("no such open gate")

// AnswerGate closes the gate.
func (b *Backend) AnswerGate(ctx context.Context, id, option string) error {
	if err := b.record("AnswerGate", id, option); err != nil {
		return err
	}
	b.mu.Lock()
	open := slices.ContainsFunc(b.snap.Gates, func(g web.Gate) bool { return g.ID == id })
	b.mu.Unlock()
	if !open {
		return ErrNoGate
	}
	b.Update(func(s *web.Snapshot) {
		s.Gates = slices.DeleteFunc(s.Gates, func(g web.Gate) bool { return g.ID == id })
	})
	return nil
}

// AnswerPrompt closes the prompt.
func (b *Backend) AnswerPrompt(ctx context.Context, id, option string) error {
	if err := b.record("AnswerPrompt", id, option); err != nil {
		return err
	}
	b.mu.Lock()
	open := slices.ContainsFunc(b.snap.Prompts, func(p web.Prompt) bool { return p.ID == id })
	b.mu.Unlock()
	if !open {
		return ErrNoGate
	}
	b.Update(func(s *web.Snapshot) {
		s.Prompts = slices.DeleteFunc(s.Prompts, func(p web.Prompt) bool { return p.ID == id })
	})
	return nil
}

// DismissAttention closes the item.
func (b *Backend) DismissAttention(ctx context.Context, id string) error {
	if err := b.record("DismissAttention", id); err != nil {
		return err
	}
	b.Update(func(s *web.Snapshot) {
		s.Attention = slices.DeleteFunc(s.Attention, func(a web.Attention) bool { return a.ID == id })
	})
	return nil
}

func clone(s web.Snapshot) web.Snapshot {
	c := s
	c.Sessions = slices.Clone(s.Sessions)
	for i := range c.Sessions {
		c.Sessions[i].Windows = slices.Clone(c.Sessions[i].Windows)
		for j := range c.Sessions[i].Windows {
			c.Sessions[i].Windows[j].Panes = slices.Clone(c.Sessions[i].Windows[j].Panes)
		}
	}
	c.Agents = slices.Clone(s.Agents)
	for i := range c.Agents {
		c.Agents[i].Subagents = slices.Clone(c.Agents[i].Subagents)
		c.Agents[i].Teammates = slices.Clone(c.Agents[i].Teammates)
	}
	c.Attention = slices.Clone(s.Attention)
	c.Gates = slices.Clone(s.Gates)
	for i := range c.Gates {
		c.Gates[i].Options = slices.Clone(c.Gates[i].Options)
	}
	c.Prompts = slices.Clone(s.Prompts)
	for i := range c.Prompts {
		c.Prompts[i].Options = slices.Clone(c.Prompts[i].Options)
	}
	return c
}

// Sample is a run to look at: in session main ($1), a Claude coordinator
// (%1, with a subagent at work) and three workers, api-tests and readme
// working and lint done, and api-tests asking a gate; session scratch ($2)
// has a shell.
func Sample(now time.Time) web.Snapshot {
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	return web.Snapshot{
		Machine: "devbox",
		Sessions: []web.Session{
			{ID: "$1", Name: "main", Windows: []web.Window{
				{ID: "@1", Index: "0", Name: "claude", Active: true, Panes: []web.Pane{{ID: "%1", Agent: "claude", Role: web.RoleCoordinator}}},
				{ID: "@2", Index: "1", Name: "api-tests", Panes: []web.Pane{{ID: "%2", Agent: "codex", Role: web.RoleWorker}}},
				{ID: "@3", Index: "2", Name: "readme", Panes: []web.Pane{{ID: "%3", Agent: "claude", Role: web.RoleWorker}}},
				{ID: "@4", Index: "3", Name: "lint", Panes: []web.Pane{{ID: "%4", Agent: "sim", Role: web.RoleWorker}}},
				{ID: "@5", Index: "4", Name: "zsh", Panes: []web.Pane{{ID: "%5"}}},
			}},
			{ID: "$2", Name: "scratch", Windows: []web.Window{
				{ID: "@6", Index: "0", Name: "bash", Active: true, Panes: []web.Pane{{ID: "%6"}}},
			}},
		},
		Agents: []web.Agent{
			{Pane: "%1", Name: "claude", Kind: "claude", Role: web.RoleCoordinator, State: "working", Since: ago(4 * time.Minute),
				Run: "run-1", Session: "$1", Window: "@1",
				Subagents: []web.Subagent{{ID: "sa-1", Type: "Explore", State: "working", Since: ago(40 * time.Second)}}},
			{Pane: "%2", Name: "api-tests", Kind: "codex", Role: web.RoleWorker, State: "working", Since: ago(3 * time.Minute),
				Parent: "%1", Run: "run-1", Session: "$1", Window: "@2"},
			{Pane: "%3", Name: "readme", Kind: "claude", Role: web.RoleWorker, State: "working", Since: ago(2 * time.Minute),
				Parent: "%1", Run: "run-1", Session: "$1", Window: "@3"},
			{Pane: "%4", Name: "lint", Kind: "sim", Role: web.RoleWorker, State: "done", Since: ago(time.Minute),
				Summary: "Fixed 12 lint warnings; go vet and the linter pass.", Parent: "%1", Run: "run-1", Session: "$1", Window: "@4"},
		},
		Gates: []web.Gate{
			{ID: "g-1", Question: "Drop the old v1 endpoints from the tests?", Options: []string{"Yes", "No"},
				Pane: "%2", Asked: ago(20 * time.Second)},
		},
	}
}

// TeamSample is a run with all that the Agents chart draws: in session
// main ($1), a Claude coordinator (%1) with a subagent at work, and two
// workers: api-tests (%2, Claude) leads an agent team of two, alpha at
// work in pane %5 and beta idle in pane %6 (both split off api-tests'
// window), and readme (%3, Codex) works.
func TeamSample(now time.Time) web.Snapshot {
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	return web.Snapshot{
		Machine: "devbox",
		Sessions: []web.Session{
			{ID: "$1", Name: "main", Windows: []web.Window{
				{ID: "@1", Index: "0", Name: "claude", Active: true, Panes: []web.Pane{{ID: "%1", Agent: "claude", Role: web.RoleCoordinator}}},
				{ID: "@2", Index: "1", Name: "api-tests", Panes: []web.Pane{{ID: "%2", Agent: "claude", Role: web.RoleWorker}, {ID: "%5"}, {ID: "%6"}}},
				{ID: "@3", Index: "2", Name: "readme", Panes: []web.Pane{{ID: "%3", Agent: "codex", Role: web.RoleWorker}}},
			}},
		},
		Agents: []web.Agent{
			{Pane: "%1", Name: "claude", Kind: "claude", Role: web.RoleCoordinator, State: "working", Since: ago(4 * time.Minute),
				Run: "run-1", Session: "$1", Window: "@1",
				Subagents: []web.Subagent{{ID: "a2cbef72153bff3a8", Type: "general-purpose", State: "working", Since: ago(30 * time.Second), Started: ago(30 * time.Second)}}},
			{Pane: "%2", Name: "api-tests", Kind: "claude", Role: web.RoleWorker, State: "idle", Since: ago(time.Minute),
				Parent: "%1", Run: "run-1", Session: "$1", Window: "@2",
				Teammates: []web.Teammate{
					{Name: "alpha", Team: "session-0702c391", Pane: "%5", Session: "$1", Window: "@2", Color: "blue", State: "working",
						Since: ago(50 * time.Second), Started: ago(70 * time.Second)},
					{Name: "beta", Team: "session-0702c391", Pane: "%6", Session: "$1", Window: "@2", Color: "green", State: "idle",
						Since: ago(10 * time.Second), Started: ago(68 * time.Second)},
				}},
			{Pane: "%3", Name: "readme", Kind: "codex", Role: web.RoleWorker, State: "working", Since: ago(2 * time.Minute),
				Parent: "%1", Run: "run-1", Session: "$1", Window: "@3"},
		},
		Gates: []web.Gate{},
	}
}

// DeepSample is a chain as deep as st allows (four levels below the top
// coordinator), with long names, in session main ($1): the coordinator
// %1 adopted frontend-integration-lead (%2) with its team; in that team
// api-contract-tests-runner (%3) leads a team of its own, whose worker
// snapshot-regression-checker (%4) started visual-diff-reviewer (%5), a
// worker of a worker. The states are the longest st has.
func DeepSample(now time.Time) web.Snapshot {
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	names := []string{"coordinator", "frontend-integration-lead", "api-contract-tests-runner", "snapshot-regression-checker", "visual-diff-reviewer-of-everything"}
	states := []string{"working", "working", "unreachable", "starting", "waiting"}
	snap := web.Snapshot{Machine: "devbox", Gates: []web.Gate{}}
	var wins []web.Window
	for i, n := range names {
		pane, win := fmt.Sprintf("%%%d", i+1), fmt.Sprintf("@%d", i+1)
		wins = append(wins, web.Window{ID: win, Index: fmt.Sprint(i), Name: n, Panes: []web.Pane{{ID: pane, Agent: "claude"}}})
		a := web.Agent{Pane: pane, Name: n, Kind: "claude", Role: web.RoleWorker, State: states[i], Since: ago(time.Duration(50-9*i) * time.Minute),
			Run: "run-1", Session: "$1", Window: win}
		if i == 0 {
			a.Role = web.RoleCoordinator
		} else {
			a.Parent = fmt.Sprintf("%%%d", i)
		}
		snap.Agents = append(snap.Agents, a)
	}
	snap.Agents[1].TeamOf, snap.Agents[1].Run = 3, "run-2"
	snap.Agents[2].TeamOf, snap.Agents[2].Run = 2, "run-2"
	snap.Agents[3].Run, snap.Agents[4].Run = "run-3", "run-3"
	snap.Sessions = []web.Session{{ID: "$1", Name: "main", Windows: wins}}
	return snap
}
