package orch

import (
	"slices"
	"strings"
	"testing"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/tmux"
)

// A hook's conversation id is checked against its agent's form before st
// keeps it (issue 31, item 1): one with a leading "-" or shell characters
// becomes no part of the worker, nor of the command line that resumes it
// after a tmux restart.
func TestHookKeepsOnlyConversationIDsOfItsAgentsForm(t *testing.T) {
	for _, bad := range []string{"--dangerously-skip-permissions", "-x", "$(touch /tmp/st-pwned)", "a;b", "a b", "../x"} {
		t.Run(bad, func(t *testing.T) {
			h := newHarness(t, api.Working, nil)
			h.hook("UserPromptSubmit", "prompt", "go") // w1's conversation is agentSes
			h.hook("Stop", "session_id", bad, "last_assistant_message", "ok", "background_tasks", []any{})
			if got := h.worker().AgentSession; got != agentSes {
				t.Errorf("w1's conversation is %q after a hook named %q, want %s", got, bad, agentSes)
			}
			if got := h.worker().State; got != api.Idle {
				t.Errorf("w1 is %s: the rest of the event should still count", got)
			}
			argv := h.m.relaunch(tmux.LayoutPane{ID: workerID, Options: map[string]string{"@st_agent": "sim", "@st_agent_session": bad}}).argv
			if !slices.Equal(argv[len(argv)-2:], []string{"--resume", agentSes}) || strings.Contains(strings.Join(argv, " "), bad) {
				t.Errorf("w1 comes back with %q", argv)
			}
		})
	}
	// A pane's own option of another form, with no worker's to go by: no
	// command at all.
	h := newHarness(t, api.Working, nil)
	if argv := h.m.relaunch(tmux.LayoutPane{ID: coord, Options: map[string]string{"@st_agent": "sim", "@st_agent_session": "-x"}}).argv; argv != nil {
		t.Errorf("the coordinator comes back with %q", argv)
	}
}

// The restore starts an agent only in a pane of st's own (issue 31, item
// 1): a worker's (st opened it, or a person adopted its agent) or a run's
// coordinator's. Another pane's options, which any process may set, start
// nothing: it comes back with a shell.
func TestRestoreStartsAgentsOnlyInStsPanes(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	opts := map[string]string{"@st_agent": "sim", "@st_agent_session": agentSes}
	for _, tt := range []struct {
		pane  string
		start bool
	}{{workerID, true}, {coord, true}, {shell, false}, {"%42", false}} {
		argv := h.m.relaunch(tmux.LayoutPane{ID: tt.pane, Options: opts}).argv
		if got := argv != nil; got != tt.start {
			t.Errorf("%s comes back with %q, want an agent: %v", tt.pane, argv, tt.start)
		}
		if argv != nil && !slices.Equal(argv[len(argv)-2:], []string{"--resume", agentSes}) {
			t.Errorf("%s comes back with %q", tt.pane, argv)
		}
	}
}
